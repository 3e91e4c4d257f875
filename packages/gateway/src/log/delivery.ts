/**
 * On a store several instances share: the events other instances committed, handed to this
 * instance's observers (its connections and views) after the last event they were handed of
 * the turn, read from the log in sequence order, so each reaches them once and in order,
 * interleaved with this instance's own as the log has them. Those that matter to a request
 * waiting here (an answer recorded elsewhere) go on to the request flows.
 */
import type { EventStore, StoredEvent } from "../store/store.js";
import type { EventObserver, TurnLog } from "./turn-log.js";

/** How often, and how far apart, the events another instance announced are read again when the store could not read them. */
const DELIVERY_ATTEMPTS = 10;
const DELIVERY_RETRY_MS = 250;

export interface DeliveryPorts {
  readonly log: Pick<TurnLog, "deliver">;
  readonly store: Pick<EventStore, "events">;
  /** Diagnostics for the operator. */
  readonly diagnose: (message: string) => void;
}

export class SharedDelivery {
  /** Per turn, the highest sequence handed to the observers: another instance's events are delivered from there, each once. */
  private readonly delivered = new Map<string, number>();
  private readonly foreign: EventObserver[] = [];

  constructor(private readonly ports: DeliveryPorts) {}

  /** Adds an observer of the events other instances committed, told of each after the log's observers. */
  observeForeign(observer: EventObserver): void {
    this.foreign.push(observer);
  }

  /**
   * The log observer that keeps `delivered` up to date. Another instance may have appended
   * to a turn this one writes too (an approval's answer): its events, not announced here
   * yet, are handed to the observers first, so they see the turn in sequence order.
   */
  readonly onPublished = (event: StoredEvent): void => {
    const last = this.delivered.get(event.turn_id);
    if (last !== undefined && event.sequence <= last) return;
    this.delivered.set(event.turn_id, event.sequence);
    if (last === undefined || event.sequence === last + 1) return;
    this.delivered.set(event.turn_id, last);
    for (const missing of this.ports.store.events(event.turn_id, last, event.sequence - 1 - last)) this.ports.log.deliver(missing);
    this.delivered.set(event.turn_id, event.sequence);
  };

  /** Another instance committed events of a turn from `first` on (the shared store's watch). */
  readonly deliver = (turnId: string, first: number): void => this.deliverFrom(turnId, first, 0);

  /** Hands the observers what other instances committed of the turn since the last event they were handed. */
  catchUp(turnId: string): void {
    this.deliverFrom(turnId, (this.delivered.get(turnId) ?? 0) + 1, 0);
  }

  private deliverFrom(turnId: string, first: number, attempt: number): void {
    try {
      const after = this.delivered.get(turnId) ?? first - 1;
      for (const event of this.ports.store.events(turnId, after)) {
        this.ports.log.deliver(event);
        for (const observer of this.foreign) observer(event);
      }
    } catch (error) {
      // The store may be connecting again: what was announced stays in the log, and is read again.
      const again = attempt < DELIVERY_ATTEMPTS;
      this.ports.diagnose(
        `could not deliver the events of turn ${turnId} from another instance: ${(error as Error).message}${again ? "; trying again" : ""}`,
      );
      if (again) setTimeout(() => this.deliverFrom(turnId, first, attempt + 1), DELIVERY_RETRY_MS * (attempt + 1)).unref();
    }
  }
}
