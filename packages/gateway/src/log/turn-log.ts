/**
 * The turn log: the one way an event gets into a turn's log and out to whoever observes it.
 *
 * It owns four things that must move together:
 *   - recording: an event is appended to the store with its per-turn sequence, after the
 *     strict check of its params against their schema (a gateway bug fails here, loudly,
 *     instead of reaching a client or the log);
 *   - commit bookkeeping: a commit that fails loses the events it held, and the turn it
 *     lost them of is told so by its next record (see `record`);
 *   - the memoised fold of each turn (its TurnFold, inside whatever fold the log was given
 *     to keep: the work view's, in the gateway), caught up with the store by sequence, so
 *     that reading a turn's state or a view folded with it costs the events since the last
 *     read, not the whole turn;
 *   - publishing: observers (the connections, the derived views) are handed each event
 *     that is published, in order. The log knows nothing of who they are, nor of the views.
 */
import { randomUUID } from "node:crypto";
import type { ServerNotificationName, NotificationParamsOf } from "@turnspec/protocol/registry";
import type { TurnPermissionAuditEvent } from "@turnspec/protocol/types";
import { notificationIssues, strictNotificationValidators } from "@turnspec/protocol/validators";
import type { ItemDeltaNotification, ItemDeltaStream } from "@turnspec/protocol/types";
import { CommitQueue } from "../store/commit-queue.js";
import { isTurnFenced, presetEncoding, StoreError } from "../store/rules.js";
import type { EventStore, StoredEvent } from "../store/store.js";
import { isActive, type TurnFold, type TurnState } from "./fold.js";

/** Who records an event: the turn's own run (which a lost commit is reported to), or a request about the turn. */
export type RecordedBy = "turn" | "request";

/** The params of a notification as a recorder gives them: the log adds the thread, the turn and the sequence. */
export type EventParams<N extends ServerNotificationName> = Omit<NotificationParamsOf<N>, "thread_id" | "turn_id" | "sequence">;

/** The notifications that carry a delta (ItemDeltaNotification params). */
export type DeltaMethod = {
  [N in ServerNotificationName]: NotificationParamsOf<N> extends ItemDeltaNotification ? N : never;
}[ServerNotificationName];

/** An event checked and serialised ahead of its append (TurnLog.prepareFirst). */
export interface PreparedEvent {
  readonly method: ServerNotificationName;
  /** Its params as stored, the thread, the turn and the sequence included. */
  readonly params: Record<string, unknown>;
  /** Their JSON text. */
  readonly text: string;
}

/** Receives each published event, in the order published. */
export type EventObserver = (event: StoredEvent) => void;

/** The turn a memoised fold is of. */
export interface FoldedTurn {
  readonly workspaceId: string;
  readonly threadId: string;
  readonly turnId: string;
}

/**
 * What the log keeps of each turn: a fold of its events, one at a time, that holds the
 * turn's own fold. A view folded from the same events may be kept in it (the work view is).
 */
export interface MemoisedFold {
  readonly turn: TurnFold;
  apply(event: StoredEvent): void;
}

export interface TurnLogPorts<F extends MemoisedFold> {
  readonly store: EventStore;
  /** Makes the fold a turn's events are kept in. */
  readonly newFold: (turn: FoldedTurn) => F;
  /** The clock the audit records' times are read from. */
  readonly clock: { nowIso(): string };
  /** Diagnostics for the operator. */
  readonly diagnose: (message: string) => void;
}

/** How many ended turns' folds are kept; a turn read after its fold was dropped is folded again from the store. */
const MEMOISED_TURNS = 512;

export class TurnLog<F extends MemoisedFold = MemoisedFold> {
  private readonly observers: EventObserver[] = [];
  private readonly lostListeners: ((turnId: string) => void)[] = [];
  /** The turn of each record, until the commit holding it ends: a failed one is reported to the turn (see onCommit). */
  private readonly uncommitted: CommitQueue<string>;
  /** The turns each failed commit was reported to. */
  private readonly markedBy = new WeakMap<StoreError, Set<string>>();
  /** Turns whose events a failed commit lost, until the failure is reported to the turn: the next record() for it throws it. */
  private readonly lostEvents = new Map<string, Error>();
  /**
   * The generation this instance holds of each turn it runs (EventStore.claimTurn), which
   * every write for the turn carries; with the refusal that fenced it, once the store
   * refused one: from then on the log refuses the turn's writes itself.
   */
  private readonly held = new Map<string, { readonly generation: number; fenced?: StoreError }>();
  private readonly fencedListeners: ((turnId: string, refusal: StoreError) => void)[] = [];
  /** Each turn's fold, most recently used last. */
  private readonly folds = new Map<string, F>();
  /** The fold the last append moved on, while `folds` holds it: a turn's appends come in runs. */
  private lastFold: { readonly turnId: string; readonly fold: F } | undefined;
  /**
   * The event `build` builds next: set by record() just before the store calls `build`
   * (which it does at once, never reentrantly), so an append allocates no closure.
   */
  private building: { threadId: string; turnId: string; method: ServerNotificationName; params: object } = {
    threadId: "",
    turnId: "",
    method: "turn/started",
    params: {},
  };

  /** The delta `buildDelta` builds next, set like `building`. */
  private buildingDelta: { threadId: string; turnId: string; method: DeltaMethod; itemId: string; stream: ItemDeltaStream; delta: string } =
    {
      threadId: "",
      turnId: "",
      method: "item/agent_message/delta",
      itemId: "",
      stream: "agent_message",
      delta: "",
    };
  /** The strict validator of the last delta method built (strictNotificationValidators is looked up once per run of one method). */
  private deltaCheck: { method: DeltaMethod | ""; validate: (params: unknown) => boolean } = { method: "", validate: () => false };
  /** The text of a delta's params before the sequence, and between the sequence and the delta, for the turn and the item last given one. */
  private deltaHead = { threadId: "", turnId: "", text: "" };
  private deltaMiddle = { itemId: "", stream: "", text: "" };

  constructor(private readonly ports: TurnLogPorts<F>) {
    // One entry per record, not per commit: a store may commit in a pipeline (the next
    // group fills while the last one commits), so a commit's end says nothing of later records.
    this.uncommitted = new CommitQueue(ports.store, this.onCommit);
  }

  /**
   * A delta's params, checked strictly like every event's, with their JSON text made from
   * parts that stay the same along a turn and an item: what JSON.stringify gives for the
   * object (its keys in the same order), for a fraction of its cost on the event most of a
   * turn's log is made of.
   */
  private readonly buildDelta = (sequence: number): Record<string, unknown> => {
    const { threadId, turnId, method, itemId, stream, delta } = this.buildingDelta;
    let check = this.deltaCheck;
    if (check.method !== method) check = this.deltaCheck = { method, validate: strictNotificationValidators[method] };
    const params = { thread_id: threadId, turn_id: turnId, sequence, item_id: itemId, stream, delta };
    if (!check.validate(params)) checkedParams(method, params);
    const head = this.deltaHead;
    if (head.turnId !== turnId || head.threadId !== threadId) {
      head.threadId = threadId;
      head.turnId = turnId;
      head.text = `{"thread_id":${JSON.stringify(threadId)},"turn_id":${JSON.stringify(turnId)},"sequence":`;
    }
    const middle = this.deltaMiddle;
    if (middle.itemId !== itemId || middle.stream !== stream) {
      middle.itemId = itemId;
      middle.stream = stream;
      middle.text = `,"item_id":${JSON.stringify(itemId)},"stream":${JSON.stringify(stream)},"delta":`;
    }
    // Left in its parts: the store and the transport each copy it once, as they join what
    // they keep or write (see eventFrame).
    return presetEncoding(params, `${head.text}${sequence}${middle.text}${jsonString(delta)}}`);
  };

  /** The event `buildPrepared` gives the store, set by recordPrepared like `building`. */
  private prepared: PreparedEvent | undefined;

  private readonly buildPrepared = (): Record<string, unknown> => presetEncoding(this.prepared!.params, this.prepared!.text);

  /** The params the store appends: the recorder's, after the thread, the turn and the sequence, checked strictly. */
  private readonly build = (sequence: number): Record<string, unknown> => {
    const { threadId, turnId, method, params } = this.building;
    return checkedParams(method, { thread_id: threadId, turn_id: turnId, sequence, ...params });
  };

  /**
   * A new turn's first events (sequences 1, 2, …), checked and serialised before any is
   * stored: throws what recording them would throw part-way (an event its schema refuses,
   * or params that cannot be serialised, nested too deep for the JSON encoder, say).
   * Recorded with recordPrepared, each is stored as the text made here: a turn's input,
   * which its first events carry twice, is checked and serialised once.
   */
  prepareFirst(threadId: string, turnId: string, events: readonly (readonly [ServerNotificationName, object])[]): PreparedEvent[] {
    // The text up to and including an event's sequence, the first of its fields.
    const head = (sequence: number) =>
      `{"thread_id":${JSON.stringify(threadId)},"turn_id":${JSON.stringify(turnId)},"sequence":${sequence}`;
    const prepared: PreparedEvent[] = [];
    events.forEach(([method, params], i) => {
      const full = checkedParams(method, { thread_id: threadId, turn_id: turnId, sequence: i + 1, ...params });
      // Events given the same params object (an item that opens and completes at once) share
      // its text but for the sequence, which comes first.
      if (i > 0 && events[i - 1]![1] === params && !("thread_id" in params || "turn_id" in params || "sequence" in params)) {
        prepared.push({ method, params: full, text: `${head(i + 1)}${prepared[i - 1]!.text.slice(head(i).length)}` });
        return;
      }
      try {
        prepared.push({ method, params: full, text: JSON.stringify(full) });
      } catch (error) {
        throw new Error(`its ${method} cannot be stored: ${(error as Error).message}`);
      }
    });
    return prepared;
  }

  /**
   * Appends an event prepareFirst made, without publishing it, as record() does. The store
   * refuses it (StoreError invalid_params) unless it lands on the sequence it was made for.
   */
  recordPrepared(event: PreparedEvent): StoredEvent {
    this.prepared = event;
    const { thread_id: threadId, turn_id: turnId, sequence } = event.params as { thread_id: string; turn_id: string; sequence: number };
    // A new turn's fold starts with it: its events are folded as they are appended, never
    // read back from the store and parsed again (a turn's input is in its first events).
    if (sequence === 1) this.fold(threadId, turnId);
    return this.append(threadId, turnId, event.method, this.buildPrepared, "turn");
  }

  /** Adds an observer of every event published from now on. */
  observe(observer: EventObserver): void {
    this.observers.push(observer);
  }

  /**
   * Appends a notification to a turn's log, without publishing it. A failed commit that
   * lost events of the turn is thrown here, by the turn's next record, as a failed append
   * is: whoever runs the turn must not build on events the log does not hold. A record
   * made for a request (`by: "request"`, an approval's answer) throws it too, but leaves it
   * to be reported to the turn: the turn, not the request, ends Failed.
   */
  record<N extends ServerNotificationName>(
    threadId: string,
    turnId: string,
    method: N,
    params: EventParams<N>,
    by: RecordedBy = "turn",
  ): StoredEvent {
    const building = this.building;
    building.threadId = threadId;
    building.turnId = turnId;
    building.method = method;
    building.params = params;
    return this.append(threadId, turnId, method, this.build, by);
  }

  /** The store's append of what `build` builds, with the commit watched and the turn's fold moved on. */
  private append(
    threadId: string,
    turnId: string,
    method: ServerNotificationName,
    build: (sequence: number) => Record<string, unknown>,
    by: RecordedBy,
  ): StoredEvent {
    if (this.lostEvents.size > 0) {
      const lost = by === "turn" ? this.takeLostEvents(turnId) : this.lostEvents.get(turnId);
      if (lost) throw lost;
    }
    const held = this.held.get(turnId);
    if (held?.fenced) throw held.fenced;
    let event: StoredEvent;
    try {
      event = this.ports.store.append(turnId, method, build, held?.generation);
    } catch (error) {
      // When the append failed because its own commit did, this throw is the turn's report.
      if (by === "turn") this.lostEvents.delete(turnId);
      if (held && isTurnFenced(error)) this.fence(turnId, error);
      throw error;
    }
    // If the commit holding this record fails, the turn's next record throws (see onCommit).
    this.uncommitted.push(turnId);
    // The fold moves on with the event just appended, when it is the next one it needs.
    let fold = this.lastFold;
    if (fold === undefined || fold.turnId !== turnId) {
      const found = this.folds.get(turnId);
      if (found === undefined) return event;
      fold = this.lastFold = { turnId, fold: found };
    }
    if (fold.fold.turn.lastSequence === event.sequence - 1) fold.fold.apply(event);
    return event;
  }

  /** Appends a delta to a turn's log and publishes it: publish() for the one event whose params the log serialises itself. */
  publishDelta(threadId: string, turnId: string, method: DeltaMethod, itemId: string, stream: ItemDeltaStream, delta: string): StoredEvent {
    const building = this.buildingDelta;
    building.threadId = threadId;
    building.turnId = turnId;
    building.method = method;
    building.itemId = itemId;
    building.stream = stream;
    building.delta = delta;
    const event = this.append(threadId, turnId, method, this.buildDelta, "turn");
    this.deliver(event);
    return event;
  }

  /** Appends a notification to a turn's log, then publishes it. */
  publish<N extends ServerNotificationName>(
    threadId: string,
    turnId: string,
    method: N,
    params: EventParams<N>,
    by: RecordedBy = "turn",
  ): StoredEvent {
    const event = this.record(threadId, turnId, method, params, by);
    this.deliver(event);
    return event;
  }

  /** Appends and publishes a turn/permission/audit record. */
  audit(
    threadId: string,
    turnId: string,
    fields: Omit<TurnPermissionAuditEvent, "thread_id" | "turn_id" | "sequence" | "audit_id" | "recorded_at">,
    by: RecordedBy = "turn",
  ): StoredEvent {
    return this.publish(
      threadId,
      turnId,
      "turn/permission/audit",
      { audit_id: `aud_${randomUUID().replace(/-/g, "")}`, recorded_at: this.ports.clock.nowIso(), ...fields },
      by,
    );
  }

  /** Hands an already recorded event to every observer. */
  deliver(event: StoredEvent): void {
    for (const observer of this.observers) observer(event);
  }

  /**
   * A write for the turn failed where nobody could be told (an output handler, an agent's
   * notification): it is reported to the turn as a lost commit is, by the turn's next
   * record, which ends it Failed. A turn this instance was fenced off is not: it is another
   * instance's now.
   */
  writeFailed(turnId: string, error: unknown): void {
    if (this.isFenced(turnId) || isTurnFenced(error) || this.lostEvents.has(turnId)) return;
    const failure = error instanceof Error ? error : new Error(String(error));
    this.ports.diagnose(`a write for turn ${turnId} failed: ${failure.message}; the turn ends Failed (internal)`);
    this.lostEvents.set(turnId, failure);
    this.dropFold(turnId);
  }

  /** Every write for the turn from now on carries `generation`, the claim this instance holds of it (its run's). */
  hold(turnId: string, generation: number): void {
    this.held.set(turnId, { generation });
  }

  /** The turn no longer runs here: what is written for it from now on (a request's resolution) carries no generation. */
  letGo(turnId: string): void {
    this.held.delete(turnId);
  }

  /**
   * The turn this instance held was taken from it (a write was refused, or its lease was
   * found taken over): every write of it is refused here from now on, and the listeners
   * are told, once, until the turn is let go.
   */
  fence(turnId: string, refusal: StoreError): void {
    const held = this.held.get(turnId);
    if (held === undefined || held.fenced) return;
    held.fenced = refusal;
    for (const listener of this.fencedListeners) listener(turnId, refusal);
  }

  /**
   * Runs a write made for the turn other than an append (a resolution's claim) under the
   * generation this instance holds the turn by, if it holds it: refused at once once the
   * turn was fenced off, and a refusal by the turn's generation fences it off, as an
   * append's does.
   */
  underHold<T>(turnId: string, write: (generation: number | undefined) => T): T {
    const held = this.held.get(turnId);
    if (held?.fenced) throw held.fenced;
    try {
      return write(held?.generation);
    } catch (error) {
      if (held && isTurnFenced(error)) this.fence(turnId, error);
      throw error;
    }
  }

  /** Whether this instance's hold of the turn was fenced. */
  isFenced(turnId: string): boolean {
    return this.held.get(turnId)?.fenced !== undefined;
  }

  /** Adds a listener told of each turn this instance was fenced off (see fence). */
  onFenced(listener: (turnId: string, refusal: StoreError) => void): void {
    this.fencedListeners.push(listener);
  }

  /** The failure a turn's lost events are still to be reported with, taken: it is reported once. */
  takeLostEvents(turnId: string): Error | undefined {
    const failure = this.lostEvents.get(turnId);
    if (failure !== undefined) this.lostEvents.delete(turnId);
    return failure;
  }

  /** The id the next item of a turn gets: unique in the turn, as it names the log position it opens at. */
  nextItemId(turnId: string): string {
    return `${turnId}_item_${this.ports.store.lastSequence(turnId) + 1}`;
  }

  /** Resolves once everything written so far is committed (or its commit failed). */
  committed(): Promise<void> {
    return new Promise((resolve) => this.ports.store.afterCommit(() => resolve()));
  }

  /** A turn's state as of its last event; undefined for a turn the log holds no turn/started of. */
  state(turnId: string): TurnState | undefined {
    const threadId = this.ports.store.turnThread(turnId);
    return threadId === undefined ? undefined : this.fold(threadId, turnId).turn.state();
  }

  /**
   * A turn's fold as of at least the event at `sequence`: caught up with the store only when
   * it does not hold that event yet. For an observer of delivered events, which is handed
   * every later event in turn.
   */
  foldThrough(threadId: string, turnId: string, sequence: number): F {
    const fold = this.folds.get(turnId);
    return fold !== undefined && fold.turn.lastSequence >= sequence ? fold : this.fold(threadId, turnId);
  }

  /** A turn's fold, caught up with the store: what was appended since the last read is applied. */
  fold(threadId: string, turnId: string): F {
    let fold = this.folds.get(turnId);
    if (fold === undefined) {
      const thread = this.ports.store.getThread(threadId);
      if (thread === undefined) throw new Error(`turn ${turnId} names thread ${threadId}, which the store does not hold`);
      fold = this.ports.newFold({ workspaceId: thread.workspace_id, threadId, turnId });
      if (this.folds.size >= MEMOISED_TURNS) this.evictOneEnded();
    } else {
      this.folds.delete(turnId);
    }
    this.folds.set(turnId, fold);
    // Another writer of the same store (a second gateway on the file) may have appended too.
    for (const event of this.ports.store.events(turnId, fold.turn.lastSequence)) fold.apply(event);
    return fold;
  }

  /** Drops the least recently read fold of a turn that has ended; the folds of running turns are kept, however many. */
  private evictOneEnded(): void {
    for (const [turnId, fold] of this.folds) {
      const turn = fold.turn.currentTurn;
      if (turn === undefined || !isActive(turn)) {
        this.dropFold(turnId);
        return;
      }
    }
  }

  /** Forgets a turn's fold: the next read folds the turn again from the store. */
  private dropFold(turnId: string): void {
    this.folds.delete(turnId);
    if (this.lastFold?.turnId === turnId) this.lastFold = undefined;
  }

  /** Released by `uncommitted` for each record, when the commit holding it ends. */
  private readonly onCommit = (turnId: string, failure: StoreError | undefined): void => {
    if (failure === undefined) return;
    // One failure is reported once per turn, however many of its records (or commits) it lost.
    let marked = this.markedBy.get(failure);
    if (marked === undefined) this.markedBy.set(failure, (marked = new Set()));
    if (marked.has(turnId)) return;
    marked.add(turnId);
    this.ports.diagnose(`${failure.message}; lost the latest events of turn ${turnId}, which ends Failed (internal)`);
    this.lostEvents.set(turnId, failure);
    // The fold holds what was lost: the next read folds the turn again from what the store kept.
    this.dropFold(turnId);
    for (const listener of this.lostListeners) listener(turnId);
  };

  /** Adds a listener told of each turn whose latest events a failed commit lost (a view built on them starts over). */
  onLost(listener: (turnId: string) => void): void {
    this.lostListeners.push(listener);
  }
}

/** What JSON.stringify escapes in a string: quotes, backslashes, control characters and (when unpaired) surrogates. */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * JSON.stringify(text), without its cost on the text of most deltas (a few words): a text
 * with nothing to escape is its own JSON body. Any surrogate goes the long way, paired or
 * not, so the result is always exactly JSON.stringify's.
 */
export function jsonString(text: string): string {
  return ESCAPED.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** `full` if its method's strict schema accepts it: one direct call per event, the issues listed only for params it refused. */
function checkedParams(method: ServerNotificationName, full: Record<string, unknown>): Record<string, unknown> {
  if (!strictNotificationValidators[method](full))
    throw new Error(`the gateway built an invalid ${method}: ${JSON.stringify(notificationIssues(method, full, "strict"))}`);
  return full;
}
