/**
 * The event store the reference gateway runs on: one SQLite file through better-sqlite3.
 *
 * Sequences are never cached beyond a write transaction: an append reads the turn's
 * highest sequence (once per group transaction, which holds the write lock) and inserts
 * the next one inside it, so they stay gap-free and strictly increasing across a
 * restart, and even with a second store open on the file.
 * Route ordinals and route generations are likewise read and written by one statement
 * each, never remembered between calls.
 *
 * Group commit: the first append of a turn of the event loop opens a write transaction
 * (BEGIN IMMEDIATE) and every write after it joins it, until it commits on setImmediate
 * or when it holds GROUP_COMMIT_LIMIT appends, whichever comes first. One commit per
 * group instead of one per event is what lets the gateway stream at the speed of its
 * transport. `afterCommit` is the barrier callers wait on before telling anyone about a
 * write; a kill before the commit loses only writes nobody was told about.
 *
 * Checkpoints (copying the WAL back into the file, with its fsyncs) run off the event
 * loop: once a file has taken CHECKPOINT_EVERY appends, a worker thread with its own
 * connection checkpoints it (PASSIVE, so it never holds the writer up) after every
 * CHECKPOINT_EVERY more. Done by the committing connection, as SQLite does by default,
 * a checkpoint stalls every append and frame of the gateway for as long as the disk takes.
 */
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { dirname, resolve } from "node:path";
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
  type EncodedRoute,
} from "./rules.js";

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
];

/** The schema version this code writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * The most appends one transaction groups: a burst that never yields to the event loop
 * (a provider's chunk holding many deltas) still commits, and its frames leave, every
 * this many events.
 */
export const GROUP_COMMIT_LIMIT = 256;

/** Appends between two checkpoints of the worker thread (about 1,000 WAL pages of typical events). */
export const CHECKPOINT_EVERY = 4096;

/**
 * WAL pages at which the committing connection checkpoints by itself while the worker runs:
 * only if the worker falls far behind. SQLite's default, 1,000, applies without a worker.
 */
const FALLBACK_AUTOCHECKPOINT = 50_000;

/** Events per multi-row insert: one prepared statement inserts this many of a group's appends at once. */
const INSERT_BATCH = 64;
/** The values of one event row in the insert statements. */
const EVENT_COLUMNS = 6;

type CommitCallback = (failure?: StoreError) => void;

/** An open group transaction: how many appends it holds and what waits for its commit. */
interface Group {
  appends: number;
  readonly waiting: CommitCallback[];
  /**
   * The thread and highest sequence of each turn appended to in this group, read once:
   * the group holds the file's write lock, so no other connection can change them until
   * it ends, and this one changes them only through append. Forgotten with the group.
   */
  readonly turns: Map<string, { readonly thread_id: string; last: number }>;
  /**
   * The events appended in this group not yet inserted, as the insert statement's values,
   * six per event: they go to SQLite INSERT_BATCH at a time, and the rest before anything
   * reads the file through this connection and before the commit.
   */
  readonly pending: (string | number)[];
}

/**
 * The store of this process holding each file's group transaction. Another store of the
 * same process writing to that file would wait on the write lock for the whole busy
 * timeout, since the commit it waits for runs on this same event loop; so any call on
 * another store of the file commits the holder's group first, and within one process
 * two stores on a file see each other's writes as soon as they are made.
 */
const groupHolders = new Map<string, SqliteEventStore>();

export class SqliteEventStore implements EventStore {
  /** The path as given, for error messages. */
  readonly file: string;
  private readonly db: Database;
  private readonly now: () => string;
  private readonly statements: Statements;
  /** The resolved path, to find another store of this process on the same file; undefined for ":memory:". */
  private readonly path: string | undefined;
  private appendingTo: string | undefined;
  /** The open group transaction, if any. */
  private group: Group | undefined;
  /** The callbacks of a commit being run, so one registered meanwhile keeps its place behind them. */
  private running: CommitCallback[] | undefined;
  /** Appends committed since the last checkpoint was asked for. */
  private sinceCheckpoint = 0;
  /** The checkpointing worker, once started; null once it failed (the connection checkpoints by itself again). */
  private checkpointer: Worker | null | undefined;

  /** Opens (creating it and its parent folders if needed) the store at `file`, or an in-memory one for ":memory:". */
  constructor(file: string, options: SqliteEventStoreOptions = {}) {
    this.file = file;
    this.now = options.now ?? nowRfc3339;
    const inMemory = file === ":memory:";
    this.path = inMemory ? undefined : resolve(file);
    try {
      if (!inMemory) mkdirSync(dirname(resolve(file)), { recursive: true });
      this.db = new BetterSqlite3(file, { timeout: options.busyTimeoutMs ?? 5000 });
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
      this.db.pragma("synchronous = NORMAL");
      this.db.pragma("foreign_keys = ON");
      this.migrate();
      this.statements = prepareStatements(this.db);
    } catch (error) {
      this.db.close();
      if (error instanceof StoreError) throw error;
      throw new StoreError("open_failed", `cannot open event store ${file}: ${(error as Error).message}`, { cause: error });
    }
  }

  createThread(thread: ThreadRecord): void {
    this.enter();
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
    // In the group transaction, with the turn's first events: they commit together, or a
    // failed commit loses the turn with them and leaves its id (and its thread) free.
    this.group ?? this.beginGroup();
    const { changes } = this.statements.insertTurn.run(turnId, threadId, createdAt);
    return changes === 1;
  }

  turnThread(turnId: string): string | undefined {
    this.enter();
    return this.statements.selectTurnThread.get(turnId)?.thread_id;
  }

  turnsOfThread(threadId: string): TurnRef[] {
    this.enter();
    return this.statements.selectTurnsOfThread.all(threadId);
  }

  allTurns(): TurnRef[] {
    this.enter();
    return this.statements.selectAllTurns.all();
  }

  append(turnId: string, method: string, build: (sequence: number) => Record<string, unknown>): StoredEvent {
    // Not enter(): this append joins the group's pending events rather than flushing them.
    if (!this.db.open) throw storeErrors.closed();
    this.commitOtherGroup();
    if (this.appendingTo !== undefined) throw storeErrors.reentrant(turnId, this.appendingTo);
    // A write that failed outside append may have made SQLite roll the group back.
    if (this.group && !this.db.inTransaction) this.endGroup(this.group, commitFailed(this.file, new Error("the transaction was rolled back")));
    const group = this.group ?? this.beginGroup();
    let event: StoredEvent;
    try {
      event = this.appendInTransaction(group, turnId, method, build);
    } catch (error) {
      // A failed statement undoes only itself, except that SQLite rolls the whole
      // transaction back on some errors (disk full, I/O error): then the group is lost.
      if (!this.db.inTransaction) this.endGroup(group, commitFailed(this.file, error));
      throw error;
    }
    if (++group.appends >= GROUP_COMMIT_LIMIT) {
      // The event just appended is in this commit: if it fails, so does this append.
      const failure = this.commitGroup(group);
      if (failure) throw failure;
    }
    return event;
  }

  afterCommit(fn: CommitCallback): void {
    if (this.group) this.group.waiting.push(fn);
    // Registered by a callback of a commit being run: its place is behind the rest of them.
    else if (this.running) this.running.push(() => fn());
    else fn();
  }

  events(turnId: string, afterSequence = 0, limit?: number): StoredEvent[] {
    this.enter();
    checkPaging(`events of turn ${turnId}`, "afterSequence", afterSequence, limit);
    // A negative LIMIT is SQLite's "no limit".
    return this.statements.selectEvents.all(turnId, afterSequence, limit ?? -1).map(toEvent);
  }

  lastSequence(turnId: string): number {
    this.enter();
    return this.statements.selectLastSequence.get(turnId)?.last ?? 0;
  }

  insertRoute(route: RouteRecord["route"]): RouteRecord {
    this.enter();
    const encoded = encodeRoute("insert", route);
    // One statement: the ordinal subquery and the insert run under the write lock, so two
    // connections to the file cannot hand out the same ordinal.
    const row = this.statements.insertRoute.get(encoded);
    if (row === undefined) throw storeErrors.routeExists(encoded.route_id);
    return { route: decodeRoute(encoded.projection), ordinal: row.ordinal };
  }

  updateRoute(route: RouteRecord["route"], expectedGeneration: number): boolean {
    this.enter();
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
    this.enter();
    const { operation, params_digest, route_id } = checkIdempotency(key, record);
    const { changes } = this.statements.insertIdempotency.run({ operation, key, params_digest, route_id });
    return changes === 1;
  }

  getMeta(key: string): string | undefined {
    this.enter();
    return this.statements.selectMeta.get(key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.enter();
    checkMetaValue(key, value);
    this.statements.upsertMeta.run(key, value);
  }

  /** Commits the open group, then closes the file; in WAL mode the last connection to close also checkpoints the log into it. */
  close(): void {
    if (this.group) this.commitGroup(this.group);
    this.stopCheckpointer();
    if (this.db.open) this.db.close();
  }

  /**
   * Opens a group transaction. IMMEDIATE takes the write lock before any sequence is
   * read, so another connection to the file cannot read the same highest sequence in
   * between; it waits until the group commits (or out the busy timeout) instead.
   */
  private beginGroup(): Group {
    this.statements.begin.run();
    const group: Group = { appends: 0, waiting: [], turns: new Map(), pending: [] };
    this.group = group;
    if (this.path !== undefined) groupHolders.set(this.path, this);
    setImmediate(() => {
      if (this.group === group) this.commitGroup(group);
    });
    return group;
  }

  /** Commits a group and runs what waited for it; returns the failure it also gave them, if the commit failed. */
  private commitGroup(group: Group): StoreError | undefined {
    let failure: StoreError | undefined;
    try {
      this.insertPending(group);
      this.statements.commit.run();
      this.sinceCheckpoint += group.appends;
      if (this.sinceCheckpoint >= CHECKPOINT_EVERY) this.askForCheckpoint();
    } catch (error) {
      failure = commitFailed(this.file, error);
      try {
        if (this.db.inTransaction) this.statements.rollback.run();
      } catch {
        // The failure reported is the commit's; a connection that cannot even roll back fails its next write.
      }
    }
    this.endGroup(group, failure);
    return failure;
  }

  /** Forgets a group that committed or was lost, then runs its callbacks in order. */
  private endGroup(group: Group, failure: StoreError | undefined): void {
    this.group = undefined;
    if (this.path !== undefined && groupHolders.get(this.path) === this) groupHolders.delete(this.path);
    const outer = this.running;
    this.running = group.waiting;
    let thrown: { error: unknown } | undefined;
    try {
      // By index: a callback may register another, which runs after the ones before it.
      for (let i = 0; i < group.waiting.length; i++) {
        try {
          group.waiting[i]!(failure);
        } catch (error) {
          thrown ??= { error };
        }
      }
    } finally {
      this.running = outer;
    }
    if (thrown) throw thrown.error;
  }

  /** Commits the group another store of this process holds on the same file, so this one's write does not wait for it. */
  private commitOtherGroup(): void {
    if (this.path === undefined || groupHolders.size === 0) return;
    const holder = groupHolders.get(this.path);
    if (holder !== undefined && holder !== this && holder.group) holder.commitGroup(holder.group);
  }

  private appendInTransaction(group: Group, turnId: string, method: string, build: (sequence: number) => Record<string, unknown>): StoredEvent {
    let turn = group.turns.get(turnId);
    if (turn === undefined) {
      const stored = this.statements.selectTurnThread.get(turnId);
      if (stored === undefined) throw storeErrors.unknownTurn(turnId, `append ${method}`);
      turn = { thread_id: stored.thread_id, last: this.statements.selectLastSequence.get(turnId)?.last ?? 0 };
      group.turns.set(turnId, turn);
    }
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
    group.pending.push(turnId, sequence, turn.thread_id, method, params, recordedAt);
    if (group.pending.length >= INSERT_BATCH * EVENT_COLUMNS) this.insertPending(group);
    turn.last = sequence;
    // The object just serialised is the event's params: parsing its text back would make a copy of it.
    return { thread_id: turn.thread_id, turn_id: turnId, sequence, method, params: built, paramsJson: params, recorded_at: recordedAt };
  }

  /** Inserts the group's pending events: INSERT_BATCH rows per statement, then the rest one by one. */
  private insertPending(group: Group): void {
    const values = group.pending;
    if (values.length === 0) return;
    const batch = INSERT_BATCH * EVENT_COLUMNS;
    let at = 0;
    try {
      for (; at + batch <= values.length; at += batch) this.statements.insertEvents.run(values.slice(at, at + batch));
      for (; at < values.length; at += EVENT_COLUMNS) this.statements.insertEvent.run(values.slice(at, at + EVENT_COLUMNS));
    } finally {
      values.length = 0;
    }
  }

  /**
   * Inserts what this connection's group has pending before a read, so the read sees every
   * append; an insert that fails loses the group, as a failed commit would.
   */
  private readPending(): void {
    const group = this.group;
    if (group === undefined || group.pending.length === 0) return;
    try {
      this.insertPending(group);
    } catch (error) {
      const failure = commitFailed(this.file, error);
      try {
        if (this.db.inTransaction) this.statements.rollback.run();
      } catch {
        // The failure reported is the insert's.
      }
      this.endGroup(group, failure);
      throw failure;
    }
  }

  /** Has the worker checkpoint the WAL, starting it the first time. */
  private askForCheckpoint(): void {
    this.sinceCheckpoint = 0;
    if (this.path === undefined || this.checkpointer === null) return;
    if (this.checkpointer === undefined) {
      try {
        this.checkpointer = startCheckpointer(this.path, () => this.checkpointerFailed());
        this.db.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT}`);
      } catch {
        this.checkpointerFailed();
        return;
      }
    }
    this.checkpointer.postMessage("checkpoint");
  }

  /** The worker is gone or failed: this connection checkpoints by itself again, as SQLite does by default. */
  private checkpointerFailed(): void {
    this.stopCheckpointer();
    this.checkpointer = null;
    if (this.db.open) this.db.pragma("wal_autocheckpoint = 1000");
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

  /** Every call starts here: a closed store refuses it, and another store of this process on the file commits its group first. */
  private enter(): void {
    if (!this.db.open) throw storeErrors.closed();
    this.commitOtherGroup();
    this.readPending();
  }
}

/**
 * The worker that checkpoints a file: its own connection, which on each "checkpoint"
 * message copies what it can of the WAL into the file (PASSIVE: it takes no lock a writer
 * waits for), and on "close" closes and ends. It keeps no process alive.
 */
function startCheckpointer(file: string, failed: () => void): Worker {
  const worker = new Worker(CHECKPOINTER_SOURCE, { eval: true, workerData: { file, module: BETTER_SQLITE3 } });
  worker.unref();
  worker.on("error", failed);
  worker.on("message", failed);
  worker.on("exit", failed);
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
    if (db) db.pragma("wal_checkpoint(PASSIVE)");
  } catch (error) {
    parentPort.postMessage(String(error && error.message));
  }
});
`;

function commitFailed(file: string, cause: unknown): StoreError {
  return new StoreError("commit_failed", `event store ${file}: a commit failed and its writes are lost: ${(cause as Error).message}`, { cause });
}

function toEvent(row: EventRow): StoredEvent {
  return {
    thread_id: row.thread_id,
    turn_id: row.turn_id,
    sequence: row.sequence,
    method: row.method,
    params: decodeParams(row.params),
    paramsJson: row.params,
    recorded_at: row.recorded_at,
  };
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

interface EventRow {
  thread_id: string;
  turn_id: string;
  sequence: number;
  method: string;
  params: string;
  recorded_at: string;
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
    // MAX over the primary key's prefix is one index seek, not a scan of the turn's events.
    selectLastSequence: db.prepare<[string], { last: number }>(
      `SELECT IFNULL(MAX(sequence), 0) AS last FROM events WHERE turn_id = ?`,
    ),
    insertEvent: db.prepare<[(string | number)[]]>(`INSERT INTO events (turn_id, sequence, thread_id, method, params, recorded_at) VALUES (?, ?, ?, ?, ?, ?)`),
    insertEvents: db.prepare<[(string | number)[]]>(
      `INSERT INTO events (turn_id, sequence, thread_id, method, params, recorded_at) VALUES ${Array(INSERT_BATCH).fill("(?, ?, ?, ?, ?, ?)").join(", ")}`,
    ),
    selectEvents: db.prepare<[string, number, number], EventRow>(
      `SELECT thread_id, turn_id, sequence, method, params, recorded_at FROM events
       WHERE turn_id = ? AND sequence > ? ORDER BY turn_id, sequence LIMIT ?`,
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

const requireHere = createRequire(import.meta.url);
const BetterSqlite3 = requireHere("better-sqlite3") as DatabaseConstructor;
/** Where better-sqlite3 is, for the checkpointing worker to load the same module. */
const BETTER_SQLITE3 = requireHere.resolve("better-sqlite3");
