/**
 * An event store held in memory, for tests. It keeps the same rules as the SQLite store
 * (see rules.ts), and stores params as JSON text like it does, so a test that passes
 * here does not depend on sharing objects with the store.
 *
 * Every write is committed when its call returns, except while a test makes commits fail
 * (`failCommitsOf`): then the writes of one turn of the event loop are grouped, as the
 * SQLite store groups them, and a group holding an event of a doomed method is undone at
 * its end, its `afterCommit` callbacks told so, as a failed commit would lose it.
 */
import type { EventStore, IdempotencyRecord, RouteRecord, StoredEvent, ThreadRecord, TurnRef } from "./store.js";
import {
  StoreError,
  checkIdempotency,
  checkMetaValue,
  checkPaging,
  checkUpdateGeneration,
  decodeParams,
  decodeRoute,
  encodeParams,
  encodeRoute,
  nowRfc3339,
  storeErrors,
  TurnGenerations,
  type EncodedRoute,
} from "./rules.js";

export interface MemoryEventStoreOptions {
  /** The clock for `recorded_at`; an RFC 3339 time. */
  readonly now?: () => string;
}

/**
 * A turn's events. The JSON text of their params is kept as UTF-8, one Buffer per CHUNK
 * events, with where each event's text ends in its chunk: a long turn leaves the garbage
 * collector nothing per event to copy or walk, and its texts, held outside the JavaScript
 * heap, are not moved by every collection while the turn streams (on a long turn those
 * copies were most of the collector's time on this store). The chunk being filled holds
 * the texts as given. Methods and times are shared strings (one per method, one per
 * millisecond).
 */
class TurnEvents {
  /** The UTF-8 of the joined texts of every full chunk. */
  private readonly chunks: Buffer[] = [];
  /**
   * Per full chunk, where each of its events' UTF-8 ends; undefined for a chunk of ASCII
   * text, where that is where its text ends (`ends`).
   */
  private readonly byteEnds: (readonly number[] | undefined)[] = [];
  /** The texts of the chunk being filled. */
  private open: string[] = [];
  /** Where the text of event i ends in its chunk, in UTF-16 units (it starts where event i - 1's ends, or at 0). */
  private readonly ends: number[] = [];
  private readonly methods: string[] = [];
  private readonly times: string[] = [];
  private openLength = 0;

  get length(): number {
    return this.ends.length;
  }

  push(method: string, params: string, recordedAt: string): void {
    this.openLength += params.length;
    this.ends.push(this.openLength);
    this.open.push(params);
    this.methods.push(method);
    this.times.push(recordedAt);
    if (this.open.length === CHUNK) {
      const bytes = Buffer.from(this.open.join(""), "utf8");
      this.chunks.push(bytes);
      this.byteEnds.push(bytes.length === this.openLength ? undefined : utf8Ends(this.open));
      this.open = [];
      this.openLength = 0;
    }
  }

  /** Removes the last event (a write undone by a failed commit, see failCommitsOf). */
  pop(): void {
    if (this.ends.length === 0) return;
    if (this.open.length === 0) {
      // The last chunk was just closed: split it back into the texts it was made of.
      const joined = this.chunks.pop()!.toString("utf8");
      this.byteEnds.pop();
      const first = this.ends.length - CHUNK;
      let start = 0;
      for (let i = first; i < this.ends.length; i++) {
        this.open.push(joined.slice(start, this.ends[i]!));
        start = this.ends[i]!;
      }
      this.openLength = joined.length;
    }
    this.openLength -= this.open.pop()!.length;
    this.ends.pop();
    this.methods.pop();
    this.times.pop();
  }

  /** Event i (sequence i + 1) of the turn. */
  event(ref: TurnRef, i: number): StoredEvent {
    const chunk = Math.floor(i / CHUNK);
    let json: string;
    if (chunk < this.chunks.length) {
      const at = i % CHUNK;
      const bytes = this.byteEnds[chunk];
      const start = at === 0 ? 0 : bytes ? bytes[at - 1]! : this.ends[i - 1]!;
      json = this.chunks[chunk]!.toString("utf8", start, bytes ? bytes[at]! : this.ends[i]!);
    } else {
      json = this.open[i % CHUNK]!;
    }
    return {
      thread_id: ref.thread_id,
      turn_id: ref.turn_id,
      sequence: i + 1,
      method: this.methods[i]!,
      params: decodeParams(json),
      paramsJson: json,
      recorded_at: this.times[i]!,
    };
  }
}

/** Where the UTF-8 of each of `texts`, written one after the other, ends. */
function utf8Ends(texts: readonly string[]): number[] {
  let end = 0;
  return texts.map((text) => (end += Buffer.byteLength(text, "utf8")));
}

/**
 * Events whose texts are joined into one chunk. Measured side by side: 1,024 spent more
 * time in all, the fresh memory each chunk takes included, than 64.
 */
export const CHUNK = 64;

interface RouteRow extends EncodedRoute {
  readonly ordinal: number;
}

interface TurnEntry {
  readonly ref: TurnRef;
  readonly events: TurnEvents;
}

type CommitCallback = (failure?: StoreError) => void;

/** The writes of one turn of the event loop while commits are made to fail: how to undo each, and who waits for them. */
interface Group {
  readonly undo: (() => void)[];
  readonly waiting: CommitCallback[];
  /** The doomed method an event of this group has: its commit fails. */
  doomedBy: string | undefined;
}

export class MemoryEventStore implements EventStore {
  private readonly threads = new Map<string, ThreadRecord>();
  // Map iteration order is insertion order, which is the creation order turnsOfThread needs.
  private readonly turns = new Map<string, TurnEntry>();
  // Routes are never deleted and an update replaces the row in place, so insertion order
  // is creation order and the map's size is the last ordinal given.
  private readonly routes = new Map<string, RouteRow>();
  // Keyed by operation, then key: a key is scoped by the operation it was used for.
  private readonly idempotency = new Map<string, Map<string, IdempotencyRecord>>();
  private readonly meta = new Map<string, string>();
  private readonly now: () => string;
  private appendingTo: string | undefined;
  /** The turn last appended to, while the store holds it. */
  private lastAppended: TurnEntry | undefined;
  private closed = false;
  /** Methods whose events make the commit holding them fail (failCommitsOf); while any, writes are grouped. */
  private readonly failingMethods = new Set<string>();
  private failingGroup: Group | undefined;
  private readonly generations = new TurnGenerations();

  constructor(options: MemoryEventStoreOptions = {}) {
    this.now = options.now ?? nowRfc3339;
  }

  /**
   * For tests of what a failed commit does: from now on, the commit holding an event whose
   * method is `method` fails, and every write grouped with it (the turn of the event loop
   * it was made in) is lost. Returns what ends that; a group already open still fails.
   */
  failCommitsOf(method: string): () => void {
    this.failingMethods.add(method);
    return () => {
      this.failingMethods.delete(method);
    };
  }

  createThread(thread: ThreadRecord): void {
    this.assertOpen();
    if (this.threads.has(thread.id)) throw storeErrors.threadExists(thread.id);
    this.threads.set(thread.id, copyThread(thread));
    this.wrote(() => this.threads.delete(thread.id));
  }

  getThread(id: string): ThreadRecord | undefined {
    this.assertOpen();
    const thread = this.threads.get(id);
    return thread === undefined ? undefined : copyThread(thread);
  }

  createTurn(threadId: string, turnId: string, createdAt: string): boolean {
    this.assertOpen();
    if (!this.threads.has(threadId)) throw storeErrors.unknownThread(threadId);
    if (this.turns.has(turnId)) return false;
    this.turns.set(turnId, { ref: { turn_id: turnId, thread_id: threadId, created_at: createdAt }, events: new TurnEvents() });
    this.wrote(() => {
      this.turns.delete(turnId);
      if (this.lastAppended?.ref.turn_id === turnId) this.lastAppended = undefined;
    });
    return true;
  }

  turnThread(turnId: string): string | undefined {
    this.assertOpen();
    return this.turns.get(turnId)?.ref.thread_id;
  }

  turnsOfThread(threadId: string): TurnRef[] {
    this.assertOpen();
    const refs: TurnRef[] = [];
    for (const { ref } of this.turns.values()) {
      if (ref.thread_id === threadId) refs.push({ ...ref });
    }
    return refs;
  }

  allTurns(): TurnRef[] {
    this.assertOpen();
    return [...this.turns.values()].map(({ ref }) => ({ ...ref }));
  }

  claimTurn(turnId: string, ttlMs: number): number {
    this.assertOpen();
    if (!this.turns.has(turnId)) throw storeErrors.unknownTurn(turnId, "claim");
    return this.generations.claim(turnId, ttlMs);
  }

  append(turnId: string, method: string, build: (sequence: number) => Record<string, unknown>, generation?: number): StoredEvent {
    this.assertOpen();
    if (this.appendingTo !== undefined) throw storeErrors.reentrant(turnId, this.appendingTo);
    // A turn's appends come in runs: the entry of the last one is at hand.
    let turn = this.lastAppended;
    if (turn === undefined || turn.ref.turn_id !== turnId) {
      turn = this.turns.get(turnId);
      if (turn === undefined) throw storeErrors.unknownTurn(turnId, `append ${method}`);
      this.lastAppended = turn;
    }
    this.generations.check(turnId, method, generation);
    const sequence = turn.events.length + 1;
    let params: string;
    let built: Record<string, unknown>;
    this.appendingTo = turnId;
    try {
      built = build(sequence);
      params = encodeParams(turnId, method, sequence, built);
    } finally {
      this.appendingTo = undefined;
    }
    const recordedAt = this.now();
    turn.events.push(method, params, recordedAt);
    // The hot path: no undo closure unless a test made commits fail (failCommitsOf).
    if (this.failingGroup !== undefined || this.failingMethods.size > 0) {
      this.wrote(() => turn.events.pop());
      if (this.failingGroup && this.failingMethods.has(method)) this.failingGroup.doomedBy ??= method;
    }
    // The object just serialised is the event's params: parsing its text back would make a copy of it.
    return { thread_id: turn.ref.thread_id, turn_id: turnId, sequence, method, params: built, paramsJson: params, recorded_at: recordedAt };
  }

  /** Every write is committed when its call returns: `fn` runs at once, unless a group is open (see failCommitsOf). */
  afterCommit(fn: CommitCallback): void {
    if (this.failingGroup) this.failingGroup.waiting.push(fn);
    else fn();
  }

  pendingCommit(): object | undefined {
    return this.failingGroup;
  }

  events(turnId: string, afterSequence = 0, limit?: number): StoredEvent[] {
    this.assertOpen();
    checkPaging(`events of turn ${turnId}`, "afterSequence", afterSequence, limit);
    const turn = this.turns.get(turnId);
    if (turn === undefined) return [];
    // Event i has sequence i + 1, so the events after `afterSequence` start at that index.
    const end = limit === undefined ? turn.events.length : Math.min(turn.events.length, afterSequence + limit);
    const page: StoredEvent[] = [];
    for (let i = afterSequence; i < end; i++) page.push(turn.events.event(turn.ref, i));
    return page;
  }

  lastSequence(turnId: string): number {
    this.assertOpen();
    return this.turns.get(turnId)?.events.length ?? 0;
  }

  insertRoute(route: RouteRecord["route"]): RouteRecord {
    this.assertOpen();
    const encoded = encodeRoute("insert", route);
    if (this.routes.has(encoded.route_id)) throw storeErrors.routeExists(encoded.route_id);
    const row: RouteRow = { ...encoded, ordinal: this.routes.size + 1 };
    this.routes.set(row.route_id, row);
    this.wrote(() => this.routes.delete(row.route_id));
    return toRoute(row);
  }

  updateRoute(route: RouteRecord["route"], expectedGeneration: number): boolean {
    this.assertOpen();
    const encoded = encodeRoute("update", route);
    checkUpdateGeneration(encoded, expectedGeneration);
    const stored = this.routes.get(encoded.route_id);
    if (stored === undefined || stored.generation !== expectedGeneration) return false;
    this.routes.set(encoded.route_id, { ...encoded, ordinal: stored.ordinal });
    this.wrote(() => this.routes.set(encoded.route_id, stored));
    return true;
  }

  getRoute(routeId: string): RouteRecord | undefined {
    this.assertOpen();
    const row = this.routes.get(routeId);
    return row === undefined ? undefined : toRoute(row);
  }

  routesBySource(sourceExecutionId: string, afterOrdinal = 0, limit?: number): RouteRecord[] {
    this.assertOpen();
    checkPaging(`routes of source ${sourceExecutionId}`, "afterOrdinal", afterOrdinal, limit);
    const page: RouteRecord[] = [];
    for (const row of this.routes.values()) {
      if (limit !== undefined && page.length >= limit) break;
      if (row.source_execution_id === sourceExecutionId && row.ordinal > afterOrdinal) page.push(toRoute(row));
    }
    return page;
  }

  allRoutes(): RouteRecord[] {
    this.assertOpen();
    return [...this.routes.values()].map(toRoute);
  }

  getIdempotency(operation: string, key: string): IdempotencyRecord | undefined {
    this.assertOpen();
    const record = this.idempotency.get(operation)?.get(key);
    return record === undefined ? undefined : { ...record };
  }

  putIdempotency(key: string, record: IdempotencyRecord): boolean {
    this.assertOpen();
    const copy = checkIdempotency(key, record);
    let keys = this.idempotency.get(copy.operation);
    if (keys === undefined) {
      keys = new Map();
      this.idempotency.set(copy.operation, keys);
    }
    if (keys.has(key)) return false;
    keys.set(key, copy);
    this.wrote(() => keys.delete(key));
    return true;
  }

  getMeta(key: string): string | undefined {
    this.assertOpen();
    return this.meta.get(key);
  }

  setMeta(key: string, value: string): void {
    this.assertOpen();
    checkMetaValue(key, value);
    const previous = this.meta.get(key);
    this.meta.set(key, value);
    this.wrote(() => (previous === undefined ? this.meta.delete(key) : this.meta.set(key, previous)));
  }

  /** Ends the open group first: what waits for it is told how its commit went. */
  close(): void {
    if (this.failingGroup) this.endGroup(this.failingGroup);
    this.closed = true;
  }

  /** Keeps how to undo a write, in the open group (one is opened) while commits are made to fail. */
  private wrote(undo: () => void): void {
    if (this.failingGroup === undefined) {
      if (this.failingMethods.size === 0) return;
      const group: Group = { undo: [], waiting: [], doomedBy: undefined };
      this.failingGroup = group;
      setImmediate(() => {
        if (this.failingGroup === group) this.endGroup(group);
      });
    }
    this.failingGroup.undo.push(undo);
  }

  /** Commits a group, or undoes all of it when it holds a doomed event; then runs what waited for it, in order. */
  private endGroup(group: Group): void {
    this.failingGroup = undefined;
    let failure: StoreError | undefined;
    if (group.doomedBy !== undefined) {
      for (let i = group.undo.length - 1; i >= 0; i--) group.undo[i]!();
      failure = new StoreError(
        "commit_failed",
        `memory event store: a commit failed and its writes are lost: it held ${group.doomedBy}, whose commits a test made fail`,
      );
    }
    let thrown: { error: unknown } | undefined;
    for (const fn of group.waiting) {
      try {
        fn(failure);
      } catch (error) {
        thrown ??= { error };
      }
    }
    if (thrown) throw thrown.error;
  }

  private assertOpen(): void {
    if (this.closed) throw storeErrors.closed();
  }
}

function toRoute(row: RouteRow): RouteRecord {
  return { route: decodeRoute(row.projection), ordinal: row.ordinal };
}

/**
 * A copy holding only the record's own fields, the optional ones present only when set:
 * what the SQLite store reads back from its columns.
 */
function copyThread(thread: ThreadRecord): ThreadRecord {
  const { id, workspace_id, cwd, mode, model_provider, model, created_at } = thread;
  return {
    id,
    workspace_id,
    cwd,
    mode,
    ...(model_provider === undefined ? {} : { model_provider }),
    ...(model === undefined ? {} : { model }),
    created_at,
  };
}
