/**
 * The derived views' notifications: what a published event changed in its turn's work view
 * (turn/work/items/changed, turn/work/state/changed) and in its thread's timeline
 * (thread/timeline/blocks/changed). An observer of the turn log: the views are not stored,
 * and their notifications carry the view's freshness, not a log sequence.
 */
import type { TurnWorkBlock } from "@turnspec/protocol/types";
import type { StoredEvent } from "../store/store.js";
import { notificationsDeclaring } from "../log/fold.js";
import type { TurnLog } from "../log/turn-log.js";
import type { Connections } from "./connections.js";
import { blockChanged, type WorkFold } from "./work.js";

/**
 * Events after which a turn's work view may have changed (`x-changes-views` names "work"): an
 * item opens, changes or ends, not every delta, which clients already get.
 */
const WORK_EVENTS: ReadonlySet<string> = notificationsDeclaring("x-changes-views", (v) => Array.isArray(v) && v.includes("work"));

/** Events after which a thread's timeline blocks changed (`x-changes-views` names "timeline"). */
const TIMELINE_EVENTS: ReadonlySet<string> = notificationsDeclaring("x-changes-views", (v) => Array.isArray(v) && v.includes("timeline"));

/** Events after which either view may have changed. */
const VIEW_EVENTS: ReadonlySet<string> = new Set([...WORK_EVENTS, ...TIMELINE_EVENTS]);

export interface ViewPorts {
  /** The turn's work fold, caught up with the log. */
  readonly log: Pick<TurnLog<WorkFold>, "foldThrough">;
  /** The connections following a thread, which the notifications go to. */
  readonly connections: Pick<Connections, "notifyThread">;
}

export class DerivedViews {
  /** The block last sent for each turn whose view is live here; a turn absent is compared with nothing. */
  private readonly lastBlock = new Map<string, TurnWorkBlock>();

  constructor(private readonly ports: ViewPorts) {}

  /** The turn log observer. */
  readonly onEvent = (event: StoredEvent): void => {
    // Most events (the deltas) change neither view: one look tells.
    if (!VIEW_EVENTS.has(event.method)) return;
    if (WORK_EVENTS.has(event.method)) this.workChanged(event.thread_id, event.turn_id, event.sequence);
    if (TIMELINE_EVENTS.has(event.method)) {
      this.ports.connections.notifyThread(event.thread_id, "thread/timeline/blocks/changed", {
        threadId: event.thread_id,
        changedBlockIds: [`blk_${event.turn_id}`],
        turnId: event.turn_id,
      });
    }
  };

  /** Forgets what was sent for a turn whose latest events were lost (a TurnLog.onLost listener): its next notification is compared with nothing. */
  readonly forget = (turnId: string): void => {
    this.lastBlock.delete(turnId);
  };

  private workChanged(threadId: string, turnId: string, sequence: number): void {
    // As of this event at least: the events after it come to onEvent in turn.
    const fold = this.ports.log.foldThrough(threadId, turnId, sequence);
    const after = fold.view();
    if (!after) return;
    const before = this.lastBlock.get(turnId);
    const taken = fold.takeChanged();
    // Compared with nothing, every row is new to whoever listens.
    const changed = before === undefined ? after.items.map((row) => row.workItemId) : taken;
    const freshness = { threadId, turnId, ...after.freshness };
    if (changed.length)
      this.ports.connections.notifyThread(threadId, "turn/work/items/changed", { ...freshness, changedWorkItemIds: changed });
    if (blockChanged(before && { block: before }, after))
      this.ports.connections.notifyThread(threadId, "turn/work/state/changed", { ...freshness, work: after.block });
    if (after.block.state === "running" || after.block.state === "awaiting_approval") this.lastBlock.set(turnId, after.block);
    else this.lastBlock.delete(turnId);
  }
}
