/**
 * The event store the reference gateway runs on: one SQLite file through better-sqlite3.
 *
 * Group commit: the appends of one turn of the event loop (and the turns registered with
 * them) form a batch, which ends on setImmediate or when it holds GROUP_COMMIT_LIMIT
 * appends, whichever comes first. One commit per batch instead of one per event is what
 * lets the gateway stream at the speed of its transport. `afterCommit` is the barrier
 * callers wait on before telling anyone about a write; a kill before the commit loses only
 * writes nobody was told about.
 *
 * The commit runs off the event loop: a writer thread with its own connection to the file
 * (sqlite-writer.ts) inserts and commits each batch. The main thread hands out the
 * sequence, builds and encodes the params and adds the event to its turn's run (a batch's
 * events of one turn are stored as one row: EventRuns in sqlite-writer.ts); at the batch's
 * end it posts the batch in one message and goes on at once, so the next batch fills while
 * the writer commits this one (a pipeline, first in first out). When the writer answers, the batch's
 * `afterCommit` callbacks run in order, with the StoreError if it failed. A batch that
 * registers a new turn is waited for at its end: the code that runs the turn starts on the
 * next turn of the event loop and must know whether the turn exists.
 *
 * Sequences: while a turn has rows queued or in flight, this store knows its thread and
 * last sequence; otherwise the next append to it reads them from the file. The writer
 * checks, under the write lock, that each turn's first event of a batch follows what the
 * file holds, and fails the batch otherwise (another writer appended, or an earlier batch
 * of the turn failed): sequences stay gap-free and strictly increasing across a restart and
 * with a second store on the file, and a failed batch fails those after it that continue
 * the same turn.
 *
 * Checkpoints (copying the WAL back into the file, with its fsyncs) run on a thread of
 * their own: once a file has taken CHECKPOINT_EVERY appends, a worker with its own
 * connection checkpoints it (PASSIVE, so it never holds a writer up) after every
 * CHECKPOINT_EVERY more. Done by the writer, as SQLite does by default after a commit, the
 * fsyncs would hold up the commits behind it: measured, a connection that checkpoints at
 * SQLite's default takes about twice as long per event as one that does not (its wait on
 * the disk included), which is longer than the event loop takes to produce the event.
 *
 * Reads answer what this store wrote: from what it knows where that is exact (the last
 * sequence of a turn in flight, or that no event follows the one asked after), and
 * otherwise after a flush (post what is queued, then wait for every answer: Atomics.wait
 * on a counter the writer bumps). Threads, routes, idempotency keys and settings are
 * written on the main connection, each at once, after the writer has finished what it was
 * given (so neither waits for the other's lock). Route ordinals and generations are read
 * and written by one statement each, never remembered between calls.
 *
 * Without a writer (":memory:", which a second connection cannot open, or once the writer
 * failed: what it held fails with commit_failed) the main connection does the work
 * itself: a batch is a transaction (BEGIN IMMEDIATE) that every write joins, committed
 * on the event loop.
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { Worker } from "node:worker_threads";
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
import { requireOptional, resolveOptional } from "../optional.js";
import { EventRuns, INSERT_RUN, insertRuns, LAST_SEQUENCE, SqliteWriter, TURN_COLUMNS } from "./sqlite-writer.js";

export interface SqliteEventStoreOptions {
  /** The clock for `recorded_at`; an RFC 3339 time. */
  readonly now?: () => string;
  /** How long a write waits for another connection's lock before failing, in ms. */
  readonly busyTimeoutMs?: number;
}

/**
 * Each entry moves the schema from version i to i + 1 (`PRAGMA user_version`). Entries
 * are only ever added: a released file may be at any earlier version.
 */
const MIGRATIONS: readonly string[] = [
  // 1: threads, turns in creation order, and the events of each turn.
  `
  CREATE TABLE threads (
    id             TEXT NOT NULL PRIMARY KEY,
    workspace_id   TEXT NOT NULL,
    cwd            TEXT NOT NULL,
    mode           TEXT NOT NULL,
    model_provider TEXT,
    model          TEXT,
    created_at     TEXT NOT NULL
  ) STRICT;

  -- ordinal, not created_at, orders a thread's turns: two turns may share a timestamp,
  -- and times are stored exactly as given, so they need not sort as text.
  CREATE TABLE turns (
    turn_id    TEXT NOT NULL PRIMARY KEY,
    thread_id  TEXT NOT NULL REFERENCES threads (id),
    created_at TEXT NOT NULL,
    ordinal    INTEGER NOT NULL UNIQUE
  ) STRICT;
  CREATE INDEX turns_of_thread ON turns (thread_id, ordinal);

  -- Clustered on (turn_id, sequence): a turn's events are stored together in sequence
  -- order, which is the order every read wants.
  CREATE TABLE events (
    turn_id     TEXT NOT NULL REFERENCES turns (turn_id),
    sequence    INTEGER NOT NULL CHECK (sequence > 0),
    thread_id   TEXT NOT NULL,
    method      TEXT NOT NULL,
    params      TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (turn_id, sequence)
  ) WITHOUT ROWID, STRICT;
  `,
  // 2: delegation routes in creation order, idempotency keys, and gateway settings.
  `
  -- The projection is the route; route_id, source_execution_id and generation are copies
  -- of its fields, kept so lookups, agent/route/list and the compare-and-set of an
  -- update are answered by an index instead of by parsing every projection.
  CREATE TABLE routes (
    route_id            TEXT NOT NULL PRIMARY KEY,
    ordinal             INTEGER NOT NULL UNIQUE,
    source_execution_id TEXT NOT NULL,
    generation          INTEGER NOT NULL,
    projection          TEXT NOT NULL
  ) STRICT;
  CREATE INDEX routes_of_source ON routes (source_execution_id, ordinal);

  -- No reference to routes: a caller may record the key before or after the route it names.
  CREATE TABLE idempotency (
    operation     TEXT NOT NULL,
    key           TEXT NOT NULL,
    params_digest TEXT NOT NULL,
    route_id      TEXT NOT NULL,
    PRIMARY KEY (operation, key)
  ) WITHOUT ROWID, STRICT;

  CREATE TABLE meta (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
  ) WITHOUT ROWID, STRICT;
  `,
  // 3: a turn's events stored in runs, one row per batch and turn (the columns are
  // described at EventRuns, sqlite-writer.ts); the events of earlier versions become runs of one.
  `
  CREATE TABLE event_runs (
    turn_id        TEXT NOT NULL REFERENCES turns (turn_id),
    last_sequence  INTEGER NOT NULL,
    first_sequence INTEGER NOT NULL CHECK (first_sequence > 0 AND first_sequence <= last_sequence),
    thread_id      TEXT NOT NULL,
    methods        TEXT NOT NULL,
    recorded_at    TEXT NOT NULL,
    ends           TEXT NOT NULL,
    params         TEXT NOT NULL,
    PRIMARY KEY (turn_id, last_sequence)
  ) STRICT;
  INSERT INTO event_runs (turn_id, last_sequence, first_sequence, thread_id, methods, recorded_at, ends, params)
    SELECT turn_id, sequence, sequence, thread_id, json_array(json_array(method, 1)), json_array(json_array(recorded_at, 1)), '[]', params
    FROM events ORDER BY turn_id, sequence;
  DROP TABLE events;
  `,
];

/** The schema version this code writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * The most appends one batch holds: a burst that never yields to the event loop (a
 * provider's chunk holding many deltas) still commits, and its frames leave, every this
 * many events.
 */
export const GROUP_COMMIT_LIMIT = 256;

/** Appends between two checkpoints of the checkpointing thread (measured: about 250 WAL pages, 1 MiB, of typical events). */
export const CHECKPOINT_EVERY = 4096;

/**
 * WAL frames past which the checkpointing thread starts the log over (a RESTART checkpoint,
 * which has the writer wait while it copies what is left): 4,096 frames of 4 KiB, 16 MiB.
 * PASSIVE checkpoints alone never catch up with a writer that keeps appending.
 */
export const RESTART_FRAMES = 4096;

/**
 * WAL pages at which a committing connection (the writer's, or the main one without a
 * writer) checkpoints by itself while the checkpointing thread runs: only if that thread
 * falls far behind. Without it, SQLite's default, 1,000, applies.
 */
const FALLBACK_AUTOCHECKPOINT = 50_000;

/** How long a synchronous wait for the writer goes without an answer, beyond the busy timeout, before the writer is given up. */
const WRITER_STALL_MARGIN_MS = 30_000;

type CommitCallback = (failure?: StoreError) => void;

/** What this store knows of a turn while a batch not yet answered holds rows of it (or its registration). */
interface TurnState {
  readonly turnId: string;
  readonly threadId: string;
  /** The sequence of its last append. */
  last: number;
  /** Batches not yet answered that hold it; at 0 the state is forgotten and the file is read again. */
  batches: number;
  /** The batch it was last added to. */
  batch: Batch | undefined;
  /** A batch holding it failed: the file will not hold what `last` says; the next call on it waits for the rest and reads the file. */
  stale: boolean;
}

/** One group commit: its rows, its new turns and what waits for it. */
interface Batch {
  /** Committed on the main connection, in a transaction of its own (there is no writer). */
  readonly onMain: boolean;
  appends: number;
  readonly waiting: CommitCallback[];
  /**
   * Its events, in runs, and the turns it registers (dropped once it is posted or committed).
   * With the writer they are posted at its end; on the main connection they are inserted
   * before a read and at the commit.
   */
  runs: EventRuns | undefined;
  /** The turns it holds rows or the registration of. */
  readonly touched: TurnState[];
  /** Answered: committed, or failed with `failure`. Its callbacks run once every batch before it has run its own. */
  done: boolean;
  failure: StoreError | undefined;
}

/**
 * The open stores of this process on each file. A store that waits for its own writer or
 * lock while another store of the process holds a batch on the file would wait on itself:
 * every call on a store first has the others on its file commit what they hold, so within
 * one process two stores on a file see each other's writes as soon as they are made.
 */
const storesOfFile = new Map<string, Set<SqliteEventStore>>();

export class SqliteEventStore implements EventStore {
  /** The path as given, for error messages. */
  readonly file: string;
  private readonly db: Database;
  private readonly now: () => string;
  private readonly busyTimeoutMs: number;
  private readonly statements: Statements;
  /** The resolved path; undefined for ":memory:". */
  private readonly path: string | undefined;
  /** The stores of this process open on the same file, this one included. */
  private readonly siblings: Set<SqliteEventStore> | undefined;
  private appendingTo: string | undefined;
  /** Every batch whose callbacks have not all run, oldest first; the last one is where afterCommit waits. */
  private readonly batches: Batch[] = [];
  /** The batch appends go to, until it ends. */
  private open: Batch | undefined;
  /** Batches posted to the writer and not yet answered, oldest first. */
  private readonly inFlight: Batch[] = [];
  /** The turns some batch not yet answered holds. */
  private readonly known = new Map<string, TurnState>();
  /** The generation of each turn a run of this process claimed (claimTurn). */
  private readonly generations = new TurnGenerations();
  /** Turn registrations in batches not yet answered. */
  private newTurns = 0;
  /** The writer, once started; null where there is none (":memory:", or it failed). */
  private writer: SqliteWriter | null | undefined;
  /** Whether callbacks are being run, so that a callback's flush leaves the rest to the loop already running them. */
  private runningCallbacks = false;
  /** Appends committed since the last checkpoint was asked for. */
  private sinceCheckpoint = 0;
  /** The checkpointing thread, once started; null once it failed (the committing connection checkpoints by itself again). */
  private checkpointer: Worker | null | undefined;

  /** Opens (creating it and its parent folders if needed) the store at `file`, or an in-memory one for ":memory:". */
  constructor(file: string, options: SqliteEventStoreOptions = {}) {
    this.file = file;
    this.now = options.now ?? nowRfc3339;
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    const inMemory = file === ":memory:";
    this.path = inMemory ? undefined : resolve(file);
    try {
      if (!inMemory) mkdirSync(dirname(resolve(file)), { recursive: true });
      const Database = betterSqlite3();
      this.db = new Database(file, { timeout: this.busyTimeoutMs });
    } catch (error) {
      throw new StoreError("open_failed", `cannot open event store ${file}: ${(error as Error).message}`, { cause: error });
    }
    try {
      // WAL: readers never block the writer, and a commit is one append to the log.
      this.db.pragma("journal_mode = WAL");
      // NORMAL in WAL mode syncs at checkpoints, not at every commit. A commit is in the
      // OS's hands as soon as the transaction ends, so it survives the process being
      // killed (SIGKILL, OOM killer), which is the crash a gateway must survive; only an
      // OS crash or power loss can lose the last few transactions, and never corrupts
      // the file. FULL would fsync every event delta for no gain against process death.
      // The writer's connection does the same.
      this.db.pragma("synchronous = NORMAL");
      this.db.pragma("foreign_keys = ON");
      this.migrate();
      this.statements = prepareStatements(this.db);
    } catch (error) {
      this.db.close();
      if (error instanceof StoreError) throw error;
      throw new StoreError("open_failed", `cannot open event store ${file}: ${(error as Error).message}`, { cause: error });
    }
    if (this.path !== undefined) {
      let siblings = storesOfFile.get(this.path);
      if (siblings === undefined) storesOfFile.set(this.path, (siblings = new Set()));
      siblings.add(this);
      this.siblings = siblings;
    }
  }

  createThread(thread: ThreadRecord): void {
    this.enterToWrite();
    const { changes } = this.statements.insertThread.run({
      id: thread.id,
      workspace_id: thread.workspace_id,
      cwd: thread.cwd,
      mode: thread.mode,
      model_provider: thread.model_provider ?? null,
      model: thread.model ?? null,
      created_at: thread.created_at,
    });
    if (changes === 0) throw storeErrors.threadExists(thread.id);
  }

  getThread(id: string): ThreadRecord | undefined {
    this.enter();
    const row = this.statements.selectThread.get(id);
    if (row === undefined) return undefined;
    return {
      id: row.id,
      workspace_id: row.workspace_id,
      cwd: row.cwd,
      mode: row.mode,
      ...(row.model_provider === null ? {} : { model_provider: row.model_provider }),
      ...(row.model === null ? {} : { model: row.model }),
      created_at: row.created_at,
    };
  }

  createTurn(threadId: string, turnId: string, createdAt: string): boolean {
    this.enter();
    if (this.statements.selectThreadExists.get(threadId) === undefined) throw storeErrors.unknownThread(threadId);
    // In the batch, with the turn's first events: they commit together, or a failed
    // commit loses the turn with them and leaves its id (and its thread) free.
    if (this.startWriter() === null) {
      this.open ?? this.beginBatch(true);
      return this.statements.insertTurn.run(turnId, threadId, createdAt).changes === 1;
    }
    let turn = this.known.get(turnId);
    if (turn?.stale) {
      // Its registration or events may yet fail and leave the id free.
      this.flush();
      turn = this.known.get(turnId);
    }
    if (turn !== undefined || this.statements.selectTurnThread.get(turnId) !== undefined) return false;
    // The flush may have found the writer gone.
    if (this.writer === null) return this.createTurn(threadId, turnId, createdAt);
    const batch = this.open ?? this.beginBatch(false);
    batch.runs!.turns.push(turnId, threadId, createdAt);
    this.newTurns++;
    turn = { turnId, threadId, last: 0, batches: 0, batch: undefined, stale: false };
    this.known.set(turnId, turn);
    this.hold(batch, turn);
    return true;
  }

  turnThread(turnId: string): string | undefined {
    this.enter();
    const turn = this.known.get(turnId);
    if (turn !== undefined) {
      if (!turn.stale) return turn.threadId;
      this.flush();
    }
    return this.statements.selectTurnThread.get(turnId)?.thread_id;
  }

  turnsOfThread(threadId: string): TurnRef[] {
    this.enter();
    if (this.newTurns > 0) this.flush();
    return this.statements.selectTurnsOfThread.all(threadId);
  }

  allTurns(): TurnRef[] {
    this.enter();
    if (this.newTurns > 0) this.flush();
    return this.statements.selectAllTurns.all();
  }

  claimTurn(turnId: string, ttlMs: number): number {
    if (this.turnThread(turnId) === undefined) throw storeErrors.unknownTurn(turnId, "claim");
    return this.generations.claim(turnId, ttlMs);
  }

  append(turnId: string, method: string, build: (sequence: number) => Record<string, unknown>, generation?: number): StoredEvent {
    // Not enter(): on the main connection, this append joins the batch's pending rows rather than inserting them.
    if (!this.db.open) throw storeErrors.closed();
    if (this.siblings !== undefined && this.siblings.size > 1) this.settleSiblings();
    if (this.appendingTo !== undefined) throw storeErrors.reentrant(turnId, this.appendingTo);
    let turn = this.known.get(turnId);
    if (turn?.stale) {
      this.flush();
      turn = this.known.get(turnId);
    }
    const onMain = this.startWriter() === null;
    // A write that failed outside append may have made SQLite roll the main connection's batch back.
    if (this.open?.onMain && !this.db.inTransaction) {
      this.fail(this.open, commitFailed(this.file, new Error("the transaction was rolled back")));
      turn = this.known.get(turnId);
    }
    const batch = this.open ?? this.beginBatch(onMain);
    if (turn === undefined) {
      // On the main connection, read in the batch's transaction, which holds the write lock.
      const stored = this.statements.selectTurnThread.get(turnId);
      if (stored === undefined) throw storeErrors.unknownTurn(turnId, `append ${method}`);
      turn = {
        turnId,
        threadId: stored.thread_id,
        last: this.statements.selectLastSequence.get(turnId)?.last ?? 0,
        batches: 0,
        batch: undefined,
        stale: false,
      };
      this.known.set(turnId, turn);
    }
    this.generations.check(turnId, method, generation);
    if (turn.batch !== batch) this.hold(batch, turn);
    const sequence = turn.last + 1;
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
    turn.last = sequence;
    batch.runs!.add(turnId, sequence, turn.threadId, method, params, recordedAt);
    // The object just serialised is the event's params: parsing its text back would make a copy of it.
    const event: StoredEvent = {
      thread_id: turn.threadId,
      turn_id: turnId,
      sequence,
      method,
      params: built,
      paramsJson: params,
      recorded_at: recordedAt,
    };
    if (++batch.appends >= GROUP_COMMIT_LIMIT) {
      // On the main connection the event just appended is in this commit: if it fails, so does
      // this append. With the writer the batch is posted, and its callbacks hear how it went.
      const failure = this.end(batch);
      if (failure) throw failure;
    }
    return event;
  }

  afterCommit(fn: CommitCallback): void {
    // The newest batch holds every write made so far; its callbacks run after those of every
    // batch before it. Registered by a callback being run, fn runs after the rest of them.
    const last = this.batches[this.batches.length - 1];
    if (last !== undefined) last.waiting.push(fn);
    else fn();
  }

  pendingCommit(): object | undefined {
    return this.batches[this.batches.length - 1];
  }

  events(turnId: string, afterSequence = 0, limit?: number): StoredEvent[] {
    this.enter();
    checkPaging(`events of turn ${turnId}`, "afterSequence", afterSequence, limit);
    const turn = this.known.get(turnId);
    if (turn !== undefined) {
      // Nothing after the last append: what a fold that is caught up asks, per event.
      if (!turn.stale && afterSequence >= turn.last) return [];
      if (this.writer) this.flush();
    }
    // Each run holds one event at least, so `limit` runs are enough; a negative LIMIT is SQLite's "no limit".
    const events: StoredEvent[] = [];
    const most = limit ?? Number.POSITIVE_INFINITY;
    for (const run of this.statements.selectRuns.all(turnId, afterSequence, limit ?? -1)) {
      expandRun(this.file, turnId, run, afterSequence, most, events);
      if (events.length >= most) break;
    }
    return events;
  }

  lastSequence(turnId: string): number {
    this.enter();
    const turn = this.known.get(turnId);
    if (turn !== undefined) {
      if (!turn.stale) return turn.last;
      this.flush();
    }
    return this.statements.selectLastSequence.get(turnId)?.last ?? 0;
  }

  insertRoute(route: RouteRecord["route"]): RouteRecord {
    this.enterToWrite();
    const encoded = encodeRoute("insert", route);
    // One statement: the ordinal subquery and the insert run under the write lock, so two
    // connections to the file cannot hand out the same ordinal.
    const row = this.statements.insertRoute.get(encoded);
    if (row === undefined) throw storeErrors.routeExists(encoded.route_id);
    return { route: decodeRoute(encoded.projection), ordinal: row.ordinal };
  }

  updateRoute(route: RouteRecord["route"], expectedGeneration: number): boolean {
    this.enterToWrite();
    const encoded = encodeRoute("update", route);
    checkUpdateGeneration(encoded, expectedGeneration);
    // The generation is compared in the UPDATE's WHERE, not read first: the compare and
    // the write are one statement, atomic against another connection.
    const { changes } = this.statements.updateRoute.run({ ...encoded, expected_generation: expectedGeneration });
    return changes === 1;
  }

  getRoute(routeId: string): RouteRecord | undefined {
    this.enter();
    const row = this.statements.selectRoute.get(routeId);
    return row === undefined ? undefined : toRoute(row);
  }

  routesBySource(sourceExecutionId: string, afterOrdinal = 0, limit?: number): RouteRecord[] {
    this.enter();
    checkPaging(`routes of source ${sourceExecutionId}`, "afterOrdinal", afterOrdinal, limit);
    return this.statements.selectRoutesBySource.all(sourceExecutionId, afterOrdinal, limit ?? -1).map(toRoute);
  }

  allRoutes(): RouteRecord[] {
    this.enter();
    return this.statements.selectAllRoutes.all().map(toRoute);
  }

  getIdempotency(operation: string, key: string): IdempotencyRecord | undefined {
    this.enter();
    return this.statements.selectIdempotency.get(operation, key);
  }

  putIdempotency(key: string, record: IdempotencyRecord): boolean {
    this.enterToWrite();
    const { operation, params_digest, route_id } = checkIdempotency(key, record);
    const { changes } = this.statements.insertIdempotency.run({ operation, key, params_digest, route_id });
    return changes === 1;
  }

  getMeta(key: string): string | undefined {
    this.enter();
    return this.statements.selectMeta.get(key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.enterToWrite();
    checkMetaValue(key, value);
    this.statements.upsertMeta.run(key, value);
  }

  /**
   * Commits everything (what waits for it runs here), stops the writer, then closes the
   * file; in WAL mode the last connection to close also checkpoints the log into it.
   */
  close(): void {
    if (!this.db.open) return;
    try {
      this.flush();
    } finally {
      const writer = this.writer;
      this.writer = null;
      writer?.close();
      this.stopCheckpointer();
      this.siblings?.delete(this);
      if (this.path !== undefined && this.siblings?.size === 0) storesOfFile.delete(this.path);
      this.db.close();
    }
  }

  /** The writer, started by the first write that needs it; null where there is none. */
  private startWriter(): SqliteWriter | null {
    if (this.writer !== undefined) return this.writer;
    if (this.path === undefined) return (this.writer = null);
    try {
      this.writer = new SqliteWriter(
        this.path,
        this.busyTimeoutMs,
        this.busyTimeoutMs + WRITER_STALL_MARGIN_MS,
        { answered: (failure) => this.answered(failure), gone: (reason) => this.writerGone(reason) },
        betterSqlite3Path(),
      );
      if (this.checkpointer) this.writer.setAutocheckpoint(FALLBACK_AUTOCHECKPOINT);
    } catch {
      // No thread to be had: the main connection writes, as it does for ":memory:".
      this.writer = null;
    }
    return this.writer;
  }

  /**
   * Opens a batch. On the main connection, IMMEDIATE takes the write lock before any
   * sequence is read, so another connection to the file cannot read the same highest
   * sequence in between; it waits until the batch commits (or out the busy timeout) instead.
   */
  private beginBatch(onMain: boolean): Batch {
    if (onMain) this.statements.begin.run();
    const batch: Batch = { onMain, appends: 0, waiting: [], runs: new EventRuns(), touched: [], done: false, failure: undefined };
    this.open = batch;
    this.batches.push(batch);
    setImmediate(() => {
      if (this.open === batch) this.end(batch);
    });
    return batch;
  }

  /** Notes that a batch holds a turn. */
  private hold(batch: Batch, turn: TurnState): void {
    turn.batch = batch;
    turn.batches++;
    batch.touched.push(turn);
  }

  /**
   * Ends a batch: on the main connection it commits here, and its failure, if any, is
   * returned; with the writer it is posted, and a batch that registers a turn is waited for
   * (whoever runs the turn next must know whether it exists).
   */
  private end(batch: Batch): StoreError | undefined {
    if (this.open === batch) this.open = undefined;
    if (batch.onMain) {
      let failure: StoreError | undefined;
      try {
        this.insertPending(batch);
        this.statements.commit.run();
      } catch (error) {
        failure = commitFailed(this.file, error);
        this.rollback();
      }
      this.settle(batch, failure);
      this.runCallbacks();
      return failure;
    }
    const runs = batch.runs!;
    if (runs.events === 0 && runs.turns.length === 0) {
      this.settle(batch, undefined);
      this.runCallbacks();
      return undefined;
    }
    this.inFlight.push(batch);
    this.writer!.post(runs);
    if (runs.turns.length > 0) this.writer!.drain();
    return undefined;
  }

  /** The writer answered its oldest batch. */
  private answered(failure: string | undefined): void {
    const batch = this.inFlight.shift()!;
    // Failed already, with an earlier batch whose rows it continues (the writer refused it too).
    if (batch.done) return;
    if (failure === undefined) this.settle(batch, undefined);
    else this.failWithFollowers(batch, commitFailed(this.file, new Error(failure)));
    this.runCallbacks();
  }

  /**
   * Fails a batch and, with the same error, every later one holding a turn it held (or one
   * of theirs): their rows continue the ones lost, so the writer would refuse them, and
   * whoever waits on them hears of the one failure at once.
   */
  private failWithFollowers(batch: Batch, failure: StoreError): void {
    const lost = new Set(batch.touched.map((turn) => turn.turnId));
    this.settle(batch, failure);
    const open = this.open !== undefined && !this.open.onMain ? this.open : undefined;
    for (const later of open === undefined ? this.inFlight : [...this.inFlight, open]) {
      if (later.done || !later.touched.some((turn) => lost.has(turn.turnId))) continue;
      for (const turn of later.touched) lost.add(turn.turnId);
      // The open batch is never posted; one in flight is answered later, and that answer is passed over.
      if (later === this.open) this.open = undefined;
      this.settle(later, failure);
    }
  }

  /** The writer is gone: what it held fails, and so does the open batch, which continues it; the main connection writes from now on. */
  private writerGone(reason: string): void {
    this.writer = null;
    if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${this.checkpointer ? FALLBACK_AUTOCHECKPOINT : 1000}`);
    const failure = commitFailed(this.file, new Error(reason));
    const lost = this.inFlight.splice(0);
    if (this.open !== undefined && !this.open.onMain) {
      lost.push(this.open);
      this.open = undefined;
    }
    // Those failed already, with a batch whose rows they continue, are passed over.
    for (const batch of lost) if (!batch.done) this.settle(batch, failure);
    this.runCallbacks();
  }

  /** Records how a batch ended and forgets the turns no batch holds any more; its callbacks run in turn (runCallbacks). */
  private settle(batch: Batch, failure: StoreError | undefined): void {
    batch.done = true;
    batch.failure = failure;
    if (failure === undefined && (this.sinceCheckpoint += batch.appends) >= CHECKPOINT_EVERY) this.askForCheckpoint();
    // Registrations are counted where the writer makes them; the main connection inserts its own at once.
    if (!batch.onMain && batch.runs !== undefined) this.newTurns -= batch.runs.turns.length / TURN_COLUMNS;
    for (const turn of batch.touched) {
      if (failure !== undefined) turn.stale = true;
      if (--turn.batches === 0 && this.known.get(turn.turnId) === turn) this.known.delete(turn.turnId);
    }
    // Posted (a copy) or committed: the runs are not needed any more.
    batch.runs = undefined;
  }

  /** A batch on the main connection is lost before its commit. */
  private fail(batch: Batch, failure: StoreError): void {
    if (this.open === batch) this.open = undefined;
    this.settle(batch, failure);
    this.runCallbacks();
  }

  /** Runs the callbacks of the answered batches at the head, in order; a callback's own flush leaves them to the loop running. */
  private runCallbacks(): void {
    if (this.runningCallbacks) return;
    this.runningCallbacks = true;
    let thrown: { error: unknown } | undefined;
    try {
      while (this.batches.length > 0 && this.batches[0]!.done) {
        const { waiting, failure } = this.batches[0]!;
        // By index: a callback may register another, which runs after the ones before it.
        for (let i = 0; i < waiting.length; i++) {
          try {
            waiting[i]!(failure);
          } catch (error) {
            thrown ??= { error };
          }
        }
        this.batches.shift();
      }
    } finally {
      this.runningCallbacks = false;
    }
    if (thrown) throw thrown.error;
  }

  /** Posts what is queued and waits until the writer has answered everything (on the main connection: commits the batch). */
  private flush(): void {
    if (this.open !== undefined) this.end(this.open);
    if (this.inFlight.length > 0) this.writer?.drain();
  }

  /** Has the other stores of this process on the file commit what they hold. */
  private settleSiblings(): void {
    for (const other of this.siblings!) if (other !== this) other.flush();
  }

  /** Inserts a main-connection batch's pending runs, checked as the writer checks them. */
  private insertPending(batch: Batch): void {
    const runs = batch.runs;
    if (runs === undefined || runs.events === 0) return;
    const material = runs.material();
    runs.clearEvents();
    insertRuns({ lastSequence: this.statements.selectLastSequence, insertRun: this.statements.insertRun }, material);
  }

  /** Inserts the pending rows of a main-connection batch; an insert that fails loses the batch, as a failed commit would, and is thrown. */
  private insertPendingOrFail(batch: Batch): void {
    try {
      this.insertPending(batch);
    } catch (error) {
      const failure = commitFailed(this.file, error);
      this.rollback();
      this.fail(batch, failure);
      throw failure;
    }
  }

  private rollback(): void {
    try {
      if (this.db.inTransaction) this.statements.rollback.run();
    } catch {
      // The failure reported is the commit's; a connection that cannot even roll back fails its next write.
    }
  }

  /** Has the checkpointing thread checkpoint the WAL, starting it the first time. */
  private askForCheckpoint(): void {
    this.sinceCheckpoint = 0;
    if (this.path === undefined || this.checkpointer === null || !this.db.open) return;
    if (this.checkpointer === undefined) {
      try {
        this.checkpointer = startCheckpointer(this.path, this.busyTimeoutMs, () => this.checkpointerFailed());
        this.db.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT}`);
        this.writer?.setAutocheckpoint(FALLBACK_AUTOCHECKPOINT);
      } catch {
        this.checkpointerFailed();
        return;
      }
    }
    this.checkpointer.postMessage("checkpoint");
  }

  /** The checkpointing thread is gone or failed: the committing connections checkpoint by themselves again, as SQLite does by default. */
  private checkpointerFailed(): void {
    this.stopCheckpointer();
    this.checkpointer = null;
    if (this.db.open) this.db.pragma("wal_autocheckpoint = 1000");
    this.writer?.setAutocheckpoint(1000);
  }

  private stopCheckpointer(): void {
    const worker = this.checkpointer;
    if (!worker) return;
    this.checkpointer = undefined;
    worker.removeAllListeners();
    // It closes its connection and ends; nothing waits for it.
    worker.on("error", () => undefined);
    worker.postMessage("close");
  }

  private migrate(): void {
    // Read and upgrade under one write lock, so two processes opening a new file at once
    // do not both run the same step.
    this.db
      .transaction(() => {
        const version = this.db.pragma("user_version", { simple: true }) as number;
        if (version > MIGRATIONS.length) {
          throw new StoreError(
            "schema_version",
            `event store ${this.file} has schema version ${version}, newer than the ${MIGRATIONS.length} this gateway knows; use a newer turnspec`,
          );
        }
        for (let next = version; next < MIGRATIONS.length; next++) {
          this.db.exec(MIGRATIONS[next]!);
          this.db.pragma(`user_version = ${next + 1}`);
        }
      })
      .immediate();
  }

  /**
   * Every call but append starts here: a closed store refuses it, another store of this
   * process on the file commits what it holds, and on the main connection the batch's
   * pending rows are inserted, so a read sees them.
   */
  private enter(): void {
    if (!this.db.open) throw storeErrors.closed();
    if (this.siblings !== undefined && this.siblings.size > 1) this.settleSiblings();
    const open = this.open;
    if (open?.onMain && open.runs !== undefined && open.runs.events > 0) this.insertPendingOrFail(open);
  }

  /** A write on the main connection starts here: the writer finishes what it was given first, so neither waits for the other's lock. */
  private enterToWrite(): void {
    this.enter();
    if (this.inFlight.length > 0) this.writer?.drain();
  }
}

/**
 * The thread that checkpoints a file: its own connection, which on each "checkpoint"
 * message copies what it can of the WAL into the file (PASSIVE: it takes no lock a writer
 * waits for), and on "close" closes and ends. It keeps no process alive.
 */
function startCheckpointer(file: string, busyTimeoutMs: number, failed: () => void): Worker {
  const worker = new Worker(CHECKPOINTER_SOURCE, {
    eval: true,
    workerData: { file, module: betterSqlite3Path(), busyTimeoutMs, restartFrames: RESTART_FRAMES },
  });
  worker.on("error", failed);
  worker.on("message", failed);
  worker.on("exit", failed);
  // After the listeners: a "message" listener holds the worker's port (ref) again.
  worker.unref();
  return worker;
}

const CHECKPOINTER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.module);
let db;
try {
  db = new Database(workerData.file, { fileMustExist: true, timeout: 0 });
  db.pragma("synchronous = NORMAL");
} catch (error) {
  parentPort.postMessage(String(error && error.message));
}
parentPort.on("message", (message) => {
  if (message === "close") {
    if (db) db.close();
    parentPort.close();
    return;
  }
  try {
    if (db) {
      // PASSIVE copies what it can without holding anyone up. But the log starts over only
      // when a write begins with every frame copied, which a writer committing batch after
      // batch never leaves time for: the log would grow without end, and every page lookup
      // in it with it. Past restartFrames, one RESTART waits for the writer's transaction to
      // end, copies the rest while the writer waits, and the next commit starts the log over.
      const [{ log }] = db.pragma("wal_checkpoint(PASSIVE)");
      if (log > workerData.restartFrames) {
        db.pragma("busy_timeout = " + workerData.busyTimeoutMs);
        try {
          db.pragma("wal_checkpoint(RESTART)");
        } finally {
          db.pragma("busy_timeout = 0");
        }
      }
    }
  } catch (error) {
    parentPort.postMessage(String(error && error.message));
  }
});
`;

function commitFailed(file: string, cause: unknown): StoreError {
  return new StoreError("commit_failed", `event store ${file}: a commit failed and its writes are lost: ${(cause as Error).message}`, {
    cause,
  });
}

/**
 * Appends to `out` the events of a run after `afterSequence`, until `out` holds `limit`.
 * A run whose columns do not agree with each other is refused, naming it.
 */
function expandRun(file: string, turnId: string, run: RunRow, afterSequence: number, limit: number, out: StoredEvent[]): void {
  const count = run.last_sequence - run.first_sequence + 1;
  const ends = JSON.parse(run.ends) as number[];
  const methods = JSON.parse(run.methods) as [string, number][];
  const times = JSON.parse(run.recorded_at) as [string, number][];
  const total = (pairs: [string, number][]) => pairs.reduce((sum, [, n]) => sum + n, 0);
  if (ends.length !== count - 1 || total(methods) !== count || total(times) !== count) {
    throw new StoreError(
      "corrupt_run",
      `event store ${file}: the run of turn ${turnId} holding sequences ${run.first_sequence} to ${run.last_sequence} does not agree with itself (${ends.length + 1} texts, ${total(methods)} methods, ${total(times)} times for ${count} events)`,
    );
  }
  let method = 0;
  let methodLeft = methods[0]![1];
  let time = 0;
  let timeLeft = times[0]![1];
  let start = 0;
  for (let i = 0; i < count && out.length < limit; i++) {
    const end = i < count - 1 ? ends[i]! : run.params.length;
    const sequence = run.first_sequence + i;
    if (sequence > afterSequence) {
      const json = run.params.slice(start, end);
      out.push({
        thread_id: run.thread_id,
        turn_id: turnId,
        sequence,
        method: methods[method]![0],
        params: decodeParams(json),
        paramsJson: json,
        recorded_at: times[time]![0],
      });
    }
    start = end;
    if (--methodLeft === 0 && ++method < methods.length) methodLeft = methods[method]![1];
    if (--timeLeft === 0 && ++time < times.length) timeLeft = times[time]![1];
  }
}

function toRoute(row: RouteRow): RouteRecord {
  return { route: decodeRoute(row.projection), ordinal: row.ordinal };
}

interface RouteRow {
  ordinal: number;
  projection: string;
}

interface ThreadRow {
  id: string;
  workspace_id: string;
  cwd: string;
  mode: ThreadRecord["mode"];
  model_provider: string | null;
  model: string | null;
  created_at: string;
}

interface RunRow {
  first_sequence: number;
  last_sequence: number;
  thread_id: string;
  methods: string;
  recorded_at: string;
  ends: string;
  params: string;
}

type Statements = ReturnType<typeof prepareStatements>;

/** Prepared once per store and reused for every call. */
function prepareStatements(db: Database) {
  return {
    begin: db.prepare<[]>(`BEGIN IMMEDIATE`),
    commit: db.prepare<[]>(`COMMIT`),
    rollback: db.prepare<[]>(`ROLLBACK`),
    insertThread: db.prepare<[ThreadRow]>(
      `INSERT INTO threads (id, workspace_id, cwd, mode, model_provider, model, created_at)
       VALUES (@id, @workspace_id, @cwd, @mode, @model_provider, @model, @created_at)
       ON CONFLICT (id) DO NOTHING`,
    ),
    selectThread: db.prepare<[string], ThreadRow>(
      `SELECT id, workspace_id, cwd, mode, model_provider, model, created_at FROM threads WHERE id = ?`,
    ),
    selectThreadExists: db.prepare<[string], { one: 1 }>(`SELECT 1 AS one FROM threads WHERE id = ?`),
    insertTurn: db.prepare<[string, string, string]>(
      `INSERT INTO turns (turn_id, thread_id, created_at, ordinal)
       VALUES (?, ?, ?, (SELECT IFNULL(MAX(ordinal), 0) + 1 FROM turns))
       ON CONFLICT (turn_id) DO NOTHING`,
    ),
    selectTurnThread: db.prepare<[string], { thread_id: string }>(`SELECT thread_id FROM turns WHERE turn_id = ?`),
    selectTurnsOfThread: db.prepare<[string], TurnRef>(
      `SELECT turn_id, thread_id, created_at FROM turns WHERE thread_id = ? ORDER BY ordinal`,
    ),
    selectAllTurns: db.prepare<[], TurnRef>(`SELECT turn_id, thread_id, created_at FROM turns ORDER BY ordinal`),
    // MAX over the primary key's prefix is one index seek, not a scan of the turn's runs.
    selectLastSequence: db.prepare<[string], { last: number }>(LAST_SEQUENCE),
    insertRun: db.prepare<[(string | number)[]]>(INSERT_RUN),
    // The runs holding a sequence after the one given, in order: a seek in the primary key.
    selectRuns: db.prepare<[string, number, number], RunRow>(
      `SELECT first_sequence, last_sequence, thread_id, methods, recorded_at, ends, params FROM event_runs
       WHERE turn_id = ? AND last_sequence > ? ORDER BY turn_id, last_sequence LIMIT ?`,
    ),
    // RETURNING gives no row when the id exists (DO NOTHING), which is how a duplicate is told apart.
    insertRoute: db.prepare<[EncodedRoute], { ordinal: number }>(
      `INSERT INTO routes (route_id, ordinal, source_execution_id, generation, projection)
       VALUES (@route_id, (SELECT IFNULL(MAX(ordinal), 0) + 1 FROM routes), @source_execution_id, @generation, @projection)
       ON CONFLICT (route_id) DO NOTHING
       RETURNING ordinal`,
    ),
    updateRoute: db.prepare<[EncodedRoute & { expected_generation: number }]>(
      `UPDATE routes SET source_execution_id = @source_execution_id, generation = @generation, projection = @projection
       WHERE route_id = @route_id AND generation = @expected_generation`,
    ),
    selectRoute: db.prepare<[string], RouteRow>(`SELECT ordinal, projection FROM routes WHERE route_id = ?`),
    selectRoutesBySource: db.prepare<[string, number, number], RouteRow>(
      `SELECT ordinal, projection FROM routes
       WHERE source_execution_id = ? AND ordinal > ? ORDER BY source_execution_id, ordinal LIMIT ?`,
    ),
    selectAllRoutes: db.prepare<[], RouteRow>(`SELECT ordinal, projection FROM routes ORDER BY ordinal`),
    selectIdempotency: db.prepare<[string, string], IdempotencyRecord>(
      `SELECT operation, params_digest, route_id FROM idempotency WHERE operation = ? AND key = ?`,
    ),
    insertIdempotency: db.prepare<[{ operation: string; key: string; params_digest: string; route_id: string }]>(
      `INSERT INTO idempotency (operation, key, params_digest, route_id)
       VALUES (@operation, @key, @params_digest, @route_id)
       ON CONFLICT (operation, key) DO NOTHING`,
    ),
    selectMeta: db.prepare<[string], { value: string }>(`SELECT value FROM meta WHERE key = ?`),
    upsertMeta: db.prepare<[string, string]>(
      `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    ),
  };
}

// better-sqlite3 ships no types and @types/better-sqlite3 is not a dependency, so the
// little of its API this file uses is declared here and the module loaded through
// require, keeping the import typed without a declaration file.

interface RunResult {
  readonly changes: number;
}

interface Statement<Params extends unknown[], Row = never> {
  run(...params: Params): RunResult;
  get(...params: Params): Row | undefined;
  all(...params: Params): Row[];
}

interface Transaction<F extends (...args: never[]) => unknown> {
  (...args: Parameters<F>): ReturnType<F>;
  immediate(...args: Parameters<F>): ReturnType<F>;
}

interface Database {
  readonly open: boolean;
  readonly inTransaction: boolean;
  prepare<Params extends unknown[], Row = never>(sql: string): Statement<Params, Row>;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  exec(sql: string): Database;
  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F>;
  close(): Database;
}

type DatabaseConstructor = new (file: string, options?: { timeout?: number }) => Database;

/** better-sqlite3, loaded when the first SQLite store opens. */
function betterSqlite3(): DatabaseConstructor {
  return requireOptional<DatabaseConstructor>("better-sqlite3", "the SQLite event store");
}
/** Where better-sqlite3 is, for the writer and checkpointing threads to load the same module. */
function betterSqlite3Path(): string {
  return resolveOptional("better-sqlite3", "the SQLite event store");
}
