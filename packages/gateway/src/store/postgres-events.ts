/**
 * How the PostgreSQL store moves events in bulk: reading a turn's events a run at a time,
 * keeping the committed ones it has seen, and announcing a commit to the other instances
 * with the events themselves when they are small.
 *
 * A turn's log is append-only and gap-free, and a committed event never changes: the
 * events 1…k of a turn, once committed, are the same for every reader forever. So what
 * this instance committed, or was told another committed, is kept, and a read asks the
 * server only for what comes after it.
 */
import { decodeParams } from "./rules.js";
import type { StoredEvent } from "./store.js";

/**
 * The runs (migration 7 in postgres.ts) holding a turn's events after sequence $2, the
 * first $3 of them (LIMIT NULL: all). The log is gap-free, so those are the sequences
 * $2 + 1 … $2 + $3: a run holds one of them when it ends after $2 and starts by $2 + $3.
 * A run comes as a few texts, each holding one field of all its events, so the driver
 * decodes a row per run instead of per event, and the texts cross from the link's worker
 * as strings rather than thousands of cloned objects.
 */
export const EVENTS_SQL = `SELECT first, thread_id, methods, params, recorded_at FROM event_runs
  WHERE turn_id = $1 AND last > $2 AND ($3::integer IS NULL OR first <= $2 + $3) ORDER BY first`;

/** The events of the runs EVENTS_SQL returns, after `after`, at most `limit` of them. */
export function eventsFromRuns(
  turnId: string,
  rows: readonly Record<string, unknown>[],
  after: number,
  limit: number | undefined,
): StoredEvent[] {
  const events: StoredEvent[] = [];
  const until = limit === undefined ? Infinity : after + limit;
  for (const row of rows) {
    const first = row.first as number;
    const threadId = row.thread_id as string;
    const methods = (row.methods as string).split("\x1e");
    const params = (row.params as string).split("\x1e");
    const recordedAt = (row.recorded_at as string).split("\x1e");
    for (let i = Math.max(0, after + 1 - first); i < params.length && first + i <= until; i++) {
      const paramsJson = params[i]!;
      events.push({
        thread_id: threadId,
        turn_id: turnId,
        sequence: first + i,
        method: methods[i]!,
        params: decodeParams(paramsJson),
        paramsJson,
        recorded_at: recordedAt[i]!,
      });
    }
  }
  return events;
}

/** How many committed events the store keeps, over all turns; the turns read least recently go first. */
export const COMMITTED_EVENTS_KEPT = 50_000;

/** How many ended turns the store remembers the last sequence of, beyond the events it keeps. */
export const ENDED_TURNS_KEPT = 50_000;

/**
 * The committed events 1…k of recently used turns. Only ever extended by the next
 * sequence: a range that does not follow what is kept is not kept (a later read fills the
 * gap from the server).
 *
 * And the sequence of each turn's end (an event whose method is one of `ends`) among the
 * committed events it was given, kept after the events themselves are let go: nothing
 * follows a turn's end, so that is the turn's last sequence for good. Reading a thread's
 * earlier turns (a model's history) then asks the server nothing about them.
 */
export class CommittedEvents {
  /** Per turn, its events from sequence 1 on; a Map keeps the turns in the order last used. */
  private readonly turns = new Map<string, StoredEvent[]>();
  private size = 0;
  /** Per ended turn, the sequence of its end; the oldest go first past `endsLimit`. */
  private readonly endings = new Map<string, number>();

  constructor(
    private readonly ends: ReadonlySet<string>,
    private readonly limit = COMMITTED_EVENTS_KEPT,
    private readonly endsLimit = ENDED_TURNS_KEPT,
  ) {}

  /** The highest sequence kept of a turn, 0 when none is. */
  last(turnId: string): number {
    return this.turns.get(turnId)?.length ?? 0;
  }

  /** The sequence of the turn's end, when a committed end of it was seen: nothing can follow it. */
  endedAt(turnId: string): number | undefined {
    return this.endings.get(turnId);
  }

  /** Kept events of a turn with a sequence above `after`, at most `limit`. */
  read(turnId: string, after: number, limit: number | undefined): StoredEvent[] {
    const kept = this.turns.get(turnId);
    if (kept === undefined || after >= kept.length) return [];
    this.touch(turnId, kept);
    return kept.slice(after, limit === undefined ? undefined : after + limit);
  }

  /** Notes the end of a turn, when the last of its committed `events` is one. */
  noteEnd(turnId: string, events: readonly StoredEvent[]): void {
    const end = events[events.length - 1];
    if (end === undefined || !this.ends.has(end.method) || this.endings.has(turnId)) return;
    this.endings.set(turnId, end.sequence);
    if (this.endings.size > this.endsLimit) this.endings.delete(this.endings.keys().next().value!);
  }

  /** Adds committed events of one turn, in sequence order; those that do not continue what is kept are left out. */
  add(turnId: string, events: readonly StoredEvent[]): void {
    if (events.length === 0) return;
    this.noteEnd(turnId, events);
    let kept = this.turns.get(turnId);
    const next = (kept?.length ?? 0) + 1;
    const from = next - events[0]!.sequence;
    if (from < 0 || from >= events.length) return;
    if (kept === undefined) {
      kept = [];
      this.turns.set(turnId, kept);
    } else this.touch(turnId, kept);
    for (let i = from; i < events.length; i++) kept.push(events[i]!);
    this.size += events.length - from;
    this.evict();
  }

  private touch(turnId: string, kept: StoredEvent[]): void {
    this.turns.delete(turnId);
    this.turns.set(turnId, kept);
  }

  private evict(): void {
    for (const [turnId, kept] of this.turns) {
      if (this.size <= this.limit) return;
      this.turns.delete(turnId);
      this.size -= kept.length;
    }
  }
}

/**
 * A commit announced on the events channel: its instance and, per turn, the range of
 * sequences committed, with the events themselves when they fit (`t`: thread id, `e`:
 * [method, recorded_at, params text] from `first` on). A listener hands carried events
 * on as they are and reads only the ranges that came without them.
 */
export interface Announcement {
  readonly instance: string;
  readonly turns: readonly AnnouncedRange[];
}

export type AnnouncedRange = readonly [
  turnId: string,
  first: number,
  last: number,
  carried?: { readonly t: string; readonly e: readonly (readonly [string, string, string])[] },
];

/** NOTIFY payloads must stay under 8000 bytes (counted in UTF-8). */
const PAYLOAD_BYTES = 7_900;

/** How every payload of an instance's announcements begins. */
export function announcementHead(instance: string): string {
  return `{"instance":${JSON.stringify(instance)},"turns":[`;
}

/**
 * The NOTIFY payloads announcing `events` (those of one commit, grouped by turn in sequence
 * order), in order. Without `carry`, each turn's range goes alone: a listener reads it.
 */
export function announce(instance: string, turns: ReadonlyMap<string, readonly StoredEvent[]>, carry = true): string[] {
  const head = announcementHead(instance);
  const payloads: string[] = [];
  let parts: string[] = [];
  let bytes = head.length + 2;
  const push = (part: string): void => {
    const size = Buffer.byteLength(part) + 1;
    if (parts.length > 0 && bytes + size > PAYLOAD_BYTES) {
      payloads.push(`${head}${parts.join(",")}]}`);
      parts = [];
      bytes = head.length + 2;
    }
    parts.push(part);
    bytes += size;
  };
  for (const [turnId, events] of turns) {
    if (events.length === 0) continue;
    const id = JSON.stringify(turnId);
    if (!carry) {
      push(`[${id},${events[0]!.sequence},${events[events.length - 1]!.sequence}]`);
      continue;
    }
    const thread = JSON.stringify(events[0]!.thread_id);
    // Events packed into ranges that each fit a payload; an event too large for one goes by its range alone.
    let run: string[] = [];
    let runFirst = 0;
    let runBytes = 0;
    const fixed = Buffer.byteLength(id) + Buffer.byteLength(thread) + 48;
    const endRun = (last: number): void => {
      if (run.length > 0) push(`[${id},${runFirst},${last},{"t":${thread},"e":[${run.join(",")}]}]`);
      run = [];
    };
    for (const event of events) {
      const encoded = JSON.stringify([event.method, event.recorded_at, event.paramsJson]);
      const size = Buffer.byteLength(encoded) + 1;
      if (fixed + size + head.length + 2 > PAYLOAD_BYTES) {
        endRun(event.sequence - 1);
        push(`[${id},${event.sequence},${event.sequence}]`);
        continue;
      }
      if (run.length > 0 && fixed + runBytes + size + head.length + 2 > PAYLOAD_BYTES) endRun(event.sequence - 1);
      if (run.length === 0) {
        runFirst = event.sequence;
        runBytes = 0;
      }
      run.push(encoded);
      runBytes += size;
    }
    endRun(events[events.length - 1]!.sequence);
  }
  if (parts.length > 0) payloads.push(`${head}${parts.join(",")}]}`);
  return payloads;
}

/** The events a range carries, as stored; undefined when it came without them. */
export function carriedEvents(turnId: string, range: AnnouncedRange): StoredEvent[] | undefined {
  const carried = range[3];
  if (carried === undefined) return undefined;
  return carried.e.map(([method, recordedAt, paramsJson], i) => ({
    thread_id: carried.t,
    turn_id: turnId,
    sequence: range[1] + i,
    method,
    params: decodeParams(paramsJson),
    paramsJson,
    recorded_at: recordedAt,
  }));
}
