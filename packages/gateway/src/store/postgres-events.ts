/**
 * How the PostgreSQL store moves events in bulk: reading a turn's events as one value,
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
 * The events of a turn as one row of text: the server joins them (sequence, method,
 * recorded_at and params, split by U+001F; events by U+001E), so the driver decodes one
 * value instead of a row object per event, and the text crosses from the link's worker as
 * one string rather than thousands of cloned objects. Neither separator can occur in a
 * field: params is JSON text (which escapes control characters), a method a protocol
 * name, recorded_at an RFC 3339 time. LIMIT NULL is PostgreSQL's "no limit".
 */
export const EVENTS_SQL = `SELECT min(thread_id) AS thread_id, string_agg(sequence || E'\\x1f' || method || E'\\x1f' || recorded_at || E'\\x1f' || params, E'\\x1e' ORDER BY sequence) AS events
  FROM (SELECT thread_id, sequence, method, params, recorded_at FROM events WHERE turn_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3) e`;

/** Decodes the row EVENTS_SQL returns. */
export function eventsFromText(turnId: string, row: Record<string, unknown>): StoredEvent[] {
  const text = row.events as string | null;
  if (text === null) return [];
  const threadId = row.thread_id as string;
  return text.split("\x1e").map((record) => {
    const a = record.indexOf("\x1f");
    const b = record.indexOf("\x1f", a + 1);
    const c = record.indexOf("\x1f", b + 1);
    const paramsJson = record.slice(c + 1);
    return {
      thread_id: threadId,
      turn_id: turnId,
      sequence: Number(record.slice(0, a)),
      method: record.slice(a + 1, b),
      params: decodeParams(paramsJson),
      paramsJson,
      recorded_at: record.slice(b + 1, c),
    };
  });
}

/** How many committed events the store keeps, over all turns; the turns read least recently go first. */
export const COMMITTED_EVENTS_KEPT = 50_000;

/**
 * The committed events 1…k of recently used turns. Only ever extended by the next
 * sequence: a range that does not follow what is kept is not kept (a later read fills the
 * gap from the server).
 */
export class CommittedEvents {
  /** Per turn, its events from sequence 1 on; a Map keeps the turns in the order last used. */
  private readonly turns = new Map<string, StoredEvent[]>();
  private size = 0;

  constructor(private readonly limit = COMMITTED_EVENTS_KEPT) {}

  /** The highest sequence kept of a turn, 0 when none is. */
  last(turnId: string): number {
    return this.turns.get(turnId)?.length ?? 0;
  }

  /** Kept events of a turn with a sequence above `after`, at most `limit`. */
  read(turnId: string, after: number, limit: number | undefined): StoredEvent[] {
    const kept = this.turns.get(turnId);
    if (kept === undefined || after >= kept.length) return [];
    this.touch(turnId, kept);
    return kept.slice(after, limit === undefined ? undefined : after + limit);
  }

  /** Adds committed events of one turn, in sequence order; those that do not continue what is kept are left out. */
  add(turnId: string, events: readonly StoredEvent[]): void {
    if (events.length === 0) return;
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

/** The NOTIFY payloads announcing `events` (those of one commit, grouped by turn in sequence order), in order. */
export function announce(instance: string, turns: ReadonlyMap<string, readonly StoredEvent[]>): string[] {
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
