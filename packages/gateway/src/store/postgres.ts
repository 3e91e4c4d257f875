/**
 * The event store on PostgreSQL, for gateways that share one database: several instances
 * behind a load balancer, or a team's existing server instead of a file.
 *
 * Same contract as the SQLite store (store.ts), on a synchronous link to one connection
 * (postgres-link.ts). The first append to a turn in a group takes the turn's row lock
 * (SELECT … FOR NO KEY UPDATE) and only then reads its highest sequence, so two instances
 * appending to one turn take turns and the sequence stays gap-free and strictly
 * increasing; the primary key (turn_id, first) backs that up. An instance streaming a burst
 * into a turn it runs holds on to the turn's writer lock (an advisory lock that a write from
 * another instance waits for) from one group to the next (Chain), numbering the next
 * group's events at once and checking, before its commit, that the turn is as it left it.
 * Turn and route ordinals are handed out under a transaction-scoped advisory lock, and
 * route generations compared in the UPDATE's WHERE, as in SQLite.
 *
 * Group commit: the first append of a turn of the event loop opens a transaction and
 * every write after it joins it. The events themselves are sent without waiting, when the
 * group commits (on setImmediate, or at GROUP_COMMIT_LIMIT appends) or before any read
 * that must see them: the events of one turn sent together are one row of `event_runs`
 * (as in the SQLite store), so the server indexes and logs one row where it would
 * otherwise write hundreds. The commit does not block the event loop (but for a burst
 * that reaches the limit without yielding): `afterCommit` callbacks run when the server
 * has answered it, in order, and nothing that reports a write may be sent before that.
 *
 * Connections that drop are opened again (postgres-link.ts for the main one; the
 * listening one a second later, catching up from the log on what it missed). Decisions
 * several instances could take at once are taken in the database: a turn's sequence and a
 * thread's active turn under row locks, a new turn's id by its row (inserted with the turn's
 * first events, in their transaction), a route create under a lock per workspace, a
 * request's resolution by whoever inserts its row first; and the instances sign tokens
 * with one secret drawn once into the database.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { requireOptional } from "../optional.js";
import type {
  CommitListener,
  EventStore,
  IdempotencyRecord,
  RouteRecord,
  SharedStore,
  StoredEvent,
  ThreadRecord,
  TurnRef,
} from "./store.js";
import { PostgresLink, type Statement } from "./postgres-link.js";
import {
  CommittedEvents,
  EVENTS_SQL,
  announce,
  announcementHead,
  carriedEvents,
  eventsFromRuns,
  type Announcement,
} from "./postgres-events.js";
import { orderingRules } from "@turnspec/protocol/ordering";
import {
  StoreError,
  checkIdempotency,
  checkLeaseTime,
  checkMetaValue,
  checkPaging,
  checkUpdateGeneration,
  decodeRoute,
  encodeParams,
  encodeRoute,
  nowRfc3339,
  storeErrors,
} from "./rules.js";

export interface PostgresEventStoreOptions {
  /** The clock for `recorded_at`; an RFC 3339 time. */
  readonly now?: () => string;
  /** How long one call waits for the server (a lock held by another instance included), in ms. */
  readonly callTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
}

/**
 * Each entry moves the schema from version i to i + 1 (the row of `turnspec_schema`).
 * Entries are only ever added: a released database may be at any earlier version.
 * Integers are `integer` (int4), which `pg` returns as numbers.
 */
/** The notifications that end a turn, as the protocol's ordering rules name them (TURN-ORDER-ONE-TERMINAL): nothing of the turn follows one. */
const TURN_TERMINALS: ReadonlySet<string> = new Set(
  orderingRules.flatMap((rule) =>
    rule.kind === "single_terminal" && "terminals" in rule ? [...(rule.terminals as readonly string[])] : [],
  ),
);

export const POSTGRES_MIGRATIONS: readonly string[] = [
  // 1: threads, turns in creation order, and the events of each turn.
  `
  CREATE TABLE threads (
    id             text NOT NULL PRIMARY KEY,
    workspace_id   text NOT NULL,
    cwd            text NOT NULL,
    mode           text NOT NULL,
    model_provider text,
    model          text,
    created_at     text NOT NULL
  );

  -- ordinal, not created_at, orders a thread's turns: two turns may share a timestamp,
  -- and times are stored exactly as given.
  CREATE TABLE turns (
    turn_id    text NOT NULL PRIMARY KEY,
    thread_id  text NOT NULL REFERENCES threads (id),
    created_at text NOT NULL,
    -- An identity, not MAX + 1 under a lock: a turn/start never waits for another
    -- instance's to commit. Values a conflict used are skipped; only their order counts.
    ordinal    integer GENERATED ALWAYS AS IDENTITY UNIQUE
  );
  CREATE INDEX turns_of_thread ON turns (thread_id, ordinal);

  -- params is text, not jsonb: what is stored is the exact text every frame carries.
  CREATE TABLE events (
    turn_id     text NOT NULL REFERENCES turns (turn_id),
    sequence    integer NOT NULL CHECK (sequence > 0),
    thread_id   text NOT NULL,
    method      text NOT NULL,
    params      text NOT NULL,
    recorded_at text NOT NULL,
    PRIMARY KEY (turn_id, sequence)
  );
  `,
  // 2: delegation routes in creation order, idempotency keys, and gateway settings.
  `
  CREATE TABLE routes (
    route_id            text NOT NULL PRIMARY KEY,
    ordinal             integer NOT NULL UNIQUE,
    source_execution_id text NOT NULL,
    generation          integer NOT NULL,
    projection          text NOT NULL
  );
  CREATE INDEX routes_of_source ON routes (source_execution_id, ordinal);

  CREATE TABLE idempotency (
    operation     text NOT NULL,
    key           text NOT NULL,
    params_digest text NOT NULL,
    route_id      text NOT NULL,
    PRIMARY KEY (operation, key)
  );

  CREATE TABLE meta (
    key   text NOT NULL PRIMARY KEY,
    value text NOT NULL
  );
  `,
  // 3: which instance runs each running turn, until when (the database's clock, so the
  // instances' clocks need not agree).
  `
  CREATE TABLE turn_leases (
    turn_id    text NOT NULL PRIMARY KEY REFERENCES turns (turn_id),
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX turn_leases_of_owner ON turn_leases (owner);
  `,
  // 4: the secret the instances sign resolve and answer tokens with (one row, drawn by the
  // first instance under the migration lock), and the decision of each request's resolution.
  `
  CREATE TABLE token_secret (
    single boolean NOT NULL PRIMARY KEY DEFAULT true CHECK (single),
    secret text NOT NULL
  );

  -- subject: "permission:<request id>" or "question:<call id>:<index>". Whoever inserts the
  -- row first records the resolution; every other instance is told it was already resolved.
  CREATE TABLE resolutions (
    turn_id text NOT NULL REFERENCES turns (turn_id),
    subject text NOT NULL,
    owner   text NOT NULL,
    PRIMARY KEY (turn_id, subject)
  );

  -- The turn's highest sequence when its owner took the lease: an instance that stopped
  -- listening for a while catches up on a turn taken meanwhile from there.
  ALTER TABLE turn_leases ADD COLUMN claimed_after integer NOT NULL DEFAULT 0;
  `,
  // 5: each turn's generation, its fencing token: raised by every claim of the turn, and
  // compared by every append that carries one. On the turn's row, not the lease's: a lease
  // is deleted on release, and a generation must never be given twice.
  `
  ALTER TABLE turns ADD COLUMN generation integer NOT NULL DEFAULT 0;
  `,
  // 6: no foreign key from events to turns. Every append reads the turn's row under a lock
  // in its own transaction before it inserts (and refuses a turn that has none), and no
  // turn is ever deleted, so the key only cost a lookup per event row: more than half the
  // time of inserting a group's events.
  `
  ALTER TABLE events DROP CONSTRAINT IF EXISTS events_turn_id_fkey;
  `,
  // 7: the events of one turn that one group commit sent together are one row, a run:
  // sequences first…last, each field of the events joined by U+001E, in sequence order
  // (JSON text escapes every control character, and methods and times hold none). One row
  // per group where there were hundreds: the server's share of an append is mostly its
  // per-row work (the tuple, the index entry, the WAL record). The runs of a turn never
  // overlap: each is written under the turn's row lock, from the highest sequence read
  // under it. A view named events shows them one row per event, for queries by hand.
  `
  CREATE TABLE event_runs (
    turn_id     text NOT NULL,
    first       integer NOT NULL CHECK (first > 0),
    last        integer NOT NULL CHECK (last >= first),
    thread_id   text NOT NULL,
    methods     text NOT NULL,
    params      text NOT NULL,
    recorded_at text NOT NULL,
    PRIMARY KEY (turn_id, first)
  );
  INSERT INTO event_runs (turn_id, first, last, thread_id, methods, params, recorded_at)
    SELECT turn_id, sequence, sequence, thread_id, method, params, recorded_at FROM events;
  DROP TABLE events;
  CREATE VIEW events AS
    SELECT r.turn_id, r.first + e.n::integer - 1 AS sequence, r.thread_id, e.method, e.params, e.recorded_at
    FROM event_runs r CROSS JOIN LATERAL unnest(
      string_to_array(r.methods, E'\\x1e'), string_to_array(r.params, E'\\x1e'), string_to_array(r.recorded_at, E'\\x1e')
    ) WITH ORDINALITY AS e (method, params, recorded_at, n);
  `,
  // 8: a run's texts compressed with lz4 where the server has it (PostgreSQL 14 and later,
  // built with it): a run's params are tens of kilobytes, and pglz, the default, took half
  // of the server's time to store them. Rows already stored keep how they were compressed.
  `
  DO $$
  BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
      ALTER TABLE event_runs ALTER COLUMN methods SET COMPRESSION lz4,
        ALTER COLUMN params SET COMPRESSION lz4, ALTER COLUMN recorded_at SET COMPRESSION lz4;
    END IF;
  END
  $$;
  `,
];

/** The schema version this code writes. */
export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS.length;

/**
 * The most appends one transaction groups. Above the 256 model events a turn's run takes
 * between two turns of the event loop (runner.ts), with room for the events around them:
 * a burst of one turn then commits as the run yields, without waiting (a full group waits
 * for its commit). Several turns bursting at once still wait at this many, which keeps
 * the frames they hold back to one group's worth.
 */
export const POSTGRES_GROUP_COMMIT_LIMIT = 384;

/** The application name of each instance's listening connection, by which instances see each other's. */
const LISTENER_NAME = "turnspec listener";
/** How often a listening connection looks whether another instance listens too. */
const LISTENERS_LOOK_MS = 1_000;
const OTHER_LISTENERS_SQL = `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
  WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()) AS others`;

/**
 * Advisory lock keys: one per counter handed out as MAX + 1, one for migrations, and the
 * class of each turn's writer lock (with the hash of the turn's id; see TURN_WRITER).
 */
const LOCK = { migrate: 7_401_001, routeOrdinal: 7_401_003, routesOfWorkspace: 7_401_004, turnWriter: 7_401_005 } as const;

/**
 * The first key of each turn's writer lock; the second is hashtext(turn_id). Whatever
 * writes into a turn it does not run (an answer's resolution, recorded by the instance
 * that took it) takes it first (pg_advisory_xact_lock), then the turn's row lock.
 */
export const POSTGRES_TURN_WRITER_LOCK = LOCK.turnWriter;

/**
 * A turn's writer lock. A write into a turn from an instance that does not run it (one
 * carrying no generation) waits for it, before the row lock; the instance running the
 * turn only tries for it (a stalled or fenced-off holder must not hold up a takeover, whose
 * claim takes no writer lock), and holds on to it past the transaction, at session level,
 * only when it got it (see Chain). Held to the end of the transaction otherwise, as the
 * row lock is.
 */
const TURN_WRITER = {
  xact: (turnId: string): Statement => ({ sql: `SELECT pg_advisory_xact_lock($1, hashtext($2))`, params: [LOCK.turnWriter, turnId] }),
  tryXact: (turnId: string): Statement => ({
    sql: `SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS writer`,
    params: [LOCK.turnWriter, turnId],
  }),
  hold: (turnId: string): Statement => ({ sql: `SELECT pg_advisory_lock($1, hashtext($2))`, params: [LOCK.turnWriter, turnId] }),
  letGo: (turnId: string): Statement => ({ sql: `SELECT pg_advisory_unlock($1, hashtext($2))`, params: [LOCK.turnWriter, turnId] }),
};

/** A group that appended at least this many events to a turn holds on to the turn's writer lock for the next group (see Chain). */
const CHAIN_MIN_APPENDS = 64;
/**
 * How long a turn's writer lock is held on to after a commit when no group appends to the
 * turn meanwhile, in ms: a burst's next group comes sooner; a turn that waits (for its
 * model, a tool, an answer) lets it go.
 */
const CHAIN_IDLE_MS = 5;
/** After this many groups in a row, the writer lock is let go: another instance waiting to append to the turn gets its turn. */
export const POSTGRES_CHAIN_MAX_GROUPS = 32;

/**
 * A turn whose writer lock this instance holds on to between groups: a burst of events,
 * whose next group would otherwise wait, for its first append, for the previous group's
 * commit to take the row lock and read the highest sequence again. No other instance
 * appends to the turn meanwhile (a write from another instance takes the writer lock
 * first), so the next group numbers its events from `last` at once. It still takes the
 * row lock and reads the generation and the highest sequence, without waiting for them:
 * the commit waits for that answer, and a turn found otherwise (another instance took it
 * over, whose claim takes no writer lock; or a writer took none) fails the group.
 */
interface Chain {
  readonly thread_id: string;
  readonly last: number;
  readonly generation: number;
  /** The groups in a row that held on to it. */
  readonly groups: number;
}

/** The channel commits are announced on: JSON payloads { instance, turns: [[turn_id, first, last, events?], …] } (postgres-events.ts). */
const CHANNEL = "turnspec_events";
/** The channel cancels are asked on: { instance, turn_id, reason }. */
const CANCEL_CHANNEL = "turnspec_cancel";

type CommitCallback = (failure?: StoreError) => void;

/** The events of one turn appended and not yet sent, from sequence `first` on: one row of event_runs. */
interface PendingRun {
  readonly threadId: string;
  readonly first: number;
  readonly methods: string[];
  readonly params: string[];
  readonly recordedAt: string[];
}

/**
 * One row per run. Each run's fields go joined by U+001E (as stored), and the runs by
 * U+001D, in one text per column: the server splits it in one pass, where an array of
 * JSON texts would have every quote in them escaped, and unescaped again, one by one.
 */
const INSERT_RUNS_SQL = `INSERT INTO event_runs (turn_id, first, last, thread_id, methods, params, recorded_at)
  SELECT * FROM unnest($1::text[], $2::integer[], $3::integer[], $4::text[],
    string_to_array($5::text, E'\\x1d'), string_to_array($6::text, E'\\x1d'), string_to_array($7::text, E'\\x1d'))`;

/** The columns of pending runs, for INSERT_RUNS_SQL. */
function insertRunsParams(runs: ReadonlyMap<string, PendingRun>): unknown[] {
  const turnIds: string[] = [];
  const firsts: number[] = [];
  const lasts: number[] = [];
  const threads: string[] = [];
  const methods: string[] = [];
  const params: string[] = [];
  const recordedAt: string[] = [];
  for (const [turnId, run] of runs) {
    turnIds.push(turnId);
    firsts.push(run.first);
    lasts.push(run.first + run.params.length - 1);
    threads.push(run.threadId);
    methods.push(run.methods.join("\x1e"));
    params.push(run.params.join("\x1e"));
    recordedAt.push(run.recordedAt.join("\x1e"));
  }
  return [turnIds, firsts, lasts, threads, methods.join("\x1d"), params.join("\x1d"), recordedAt.join("\x1d")];
}

/** The highest sequence of the turn whose id is the SQL expression `turnId`: the last of its newest run, or 0. */
const lastOfTurn = (turnId: string) => `COALESCE((SELECT last FROM event_runs WHERE turn_id = ${turnId} ORDER BY first DESC LIMIT 1), 0)`;

/**
 * What a group numbering a held-on-to turn from memory (see Chain) expects under the turn's
 * row lock: the generation and the highest sequence it numbers from. One statement: nobody
 * that takes the writer lock can have the row lock meanwhile. A claim (which takes none)
 * that made it wait shows in the generation, read from the row as locked. Another writer
 * that took no writer lock and made it wait may not show in the sequence, read as it was
 * before: its run then begins at the sequence this group's does, and the primary key
 * refuses this group's insert.
 */
function chainCheck(turnId: string, chain: Chain): Statement {
  return {
    name: "turnspec_chain_check",
    sql: `SELECT generation, ${lastOfTurn("$1")} AS last FROM turns WHERE turn_id = $1 FOR NO KEY UPDATE`,
    params: [turnId],
    expect: {
      row: { generation: chain.generation, last: chain.last },
      otherwise: `turn ${turnId} changed while this instance held on to it (another instance took it over, or a writer took no writer lock)`,
    },
  };
}

interface Group {
  appends: number;
  readonly waiting: CommitCallback[];
  /** Each turn appended to in this group, with its thread and highest sequence, read under the turn's row lock. */
  readonly turns: Map<
    string,
    {
      readonly thread_id: string;
      readonly first: number;
      last: number;
      generation: number;
      ended?: string;
      /** Whether this group holds the turn's writer lock (or holds on to it from an earlier one): only then is it held on to after the commit. */
      readonly writer: boolean;
    }
  >;
  /** The events appended in this group, per turn in sequence order: announced with the commit; where a turn ended is kept once it succeeds. */
  readonly appended: Map<string, StoredEvent[]>;
  /** Per turn, the events appended and not yet sent to the server. */
  pending: Map<string, PendingRun>;
  /**
   * Each turn this group inserted, with its thread and generation: no other transaction
   * sees the row before this one commits, so nobody else appends to the turn or claims it
   * meanwhile, and what a read in this transaction would find is known here.
   */
  readonly created: Map<string, { readonly threadId: string; generation: number }>;
}

/**
 * The store of this process holding an open group on each database: another store of the
 * process on the same database first has that group committed, since a lock it holds
 * would otherwise make the other store wait on its own event loop, and so that within
 * one process two stores see each other's writes as soon as they are made.
 */
const groupHolders = new Map<string, PostgresEventStore>();

/**
 * The stores of this process holding on to turns' writer locks on each database (see
 * Chain): another store of the process on the database has them let go first, since an
 * append of its own would otherwise wait for them on its own event loop.
 */
const chainHolders = new Map<string, Set<PostgresEventStore>>();

export class PostgresEventStore implements EventStore {
  /** The URL without its password, for messages. */
  readonly location: string;
  readonly instanceId = `ins_${randomUUID().replace(/-/g, "").slice(0, 16)}`;
  readonly shared: SharedStore;
  /** The connection that LISTENs for other instances' commits, once something watches. */
  private readonly cancelListeners: ((turnId: string, reason: string) => void)[] = [];
  private listener: { client: Promise<ListeningClient>; readonly listeners: CommitListener[] } | undefined;
  /** Per turn, the last sequence another instance's commit was announced with: where a catch-up after a gap starts. */
  private readonly heard = new Map<string, number>();
  /**
   * Whether another instance's listening connection is open on the database: only then do
   * announcements carry the events (see finishGroup). True until the listening connection
   * has looked (and whenever it cannot), so that nobody is left reading back what it could
   * have been handed.
   */
  private othersListen = true;
  /** What the last LISTEN found: the highest turn ordinal, and the last sequence of each turn then leased (running). */
  private horizon: { readonly ordinal: number; readonly running: ReadonlyMap<string, number> } | undefined;
  private readonly url: string;
  private readonly link: PostgresLink;
  private readonly now: () => string;
  private appendingTo: string | undefined;
  private group: Group | undefined;
  /** The turns whose writer lock this instance holds on to between groups (see Chain). */
  private readonly chains = new Map<string, Chain>();
  /** Groups whose commit was sent and not yet answered, oldest first. */
  private readonly committing: Group[] = [];
  /** The callbacks of a commit being run, so one registered meanwhile keeps its place behind them. */
  private running: CommitCallback[] | undefined;
  private closed = false;
  /** Committed events of recently read turns, and where turns ended (postgres-events.ts). */
  private readonly committed = new CommittedEvents(TURN_TERMINALS);
  /**
   * Committed threads, and the thread of each committed turn: neither changes once
   * committed, nor is ever deleted, so a read of them need not wait, behind the commits in
   * flight on the connection, for the server. Only what is known committed is kept.
   */
  private readonly knownThreads = new Known<ThreadRecord>();
  private readonly knownTurns = new Known<string>();
  /** The secret every instance on the database signs tokens with (see migration 4). */
  private readonly tokenSecret: string;

  /** Connects to `url` (postgres://user:password@host:port/database) and brings the schema up to date. */
  constructor(url: string, options: PostgresEventStoreOptions = {}) {
    this.url = url;
    this.location = redact(url);
    this.now = options.now ?? nowRfc3339;
    try {
      this.link = new PostgresLink(url, {
        ...(options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs }),
        ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
        onNotice: (message) => process.emitWarning(`event store ${this.location}: ${message}`),
      });
    } catch (error) {
      throw new StoreError("open_failed", `cannot open event store ${this.location}: ${(error as Error).message}`, { cause: error });
    }
    this.shared = {
      instanceId: this.instanceId,
      tokenSecret: () => this.tokenSecret,
      claimResolution: (turnId, subject, generation) => this.claimResolution(turnId, subject, generation),
      watch: (listener) => this.watch(listener),
      lockThread: (threadId) => this.lockThread(threadId),
      lockRoutes: (workspaceId) =>
        this.lockInGroup(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, [LOCK.routesOfWorkspace, workspaceId]),
      renewLeases: (ttlMs, turnIds) => this.renewLeases(ttlMs, turnIds),
      releaseTurn: (turnId) => this.releaseTurn(turnId),
      expiredLeases: () => this.expiredLeases(),
      requestCancel: (turnId, reason) => {
        this.write([
          {
            sql: `SELECT pg_notify($1, $2)`,
            params: [CANCEL_CHANNEL, JSON.stringify({ instance: this.instanceId, turn_id: turnId, reason })],
          },
        ]);
      },
      onCancelRequest: (listener) => {
        this.cancelListeners.push(listener);
      },
    };
    try {
      this.tokenSecret = this.migrate();
    } catch (error) {
      this.link.end();
      if (error instanceof StoreError) throw error;
      throw new StoreError("open_failed", `cannot open event store ${this.location}: ${(error as Error).message}`, { cause: error });
    }
  }

  createThread(thread: ThreadRecord): void {
    const [result] = this.write([
      {
        sql: `INSERT INTO threads (id, workspace_id, cwd, mode, model_provider, model, created_at)
              VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
        params: [
          thread.id,
          thread.workspace_id,
          thread.cwd,
          thread.mode,
          thread.model_provider ?? null,
          thread.model ?? null,
          thread.created_at,
        ],
      },
    ]);
    if (result!.rowCount === 0) throw storeErrors.threadExists(thread.id);
  }

  getThread(id: string): ThreadRecord | undefined {
    this.enter();
    const known = this.knownThreads.get(id);
    if (known !== undefined) return known;
    const row = this.read(`SELECT id, workspace_id, cwd, mode, model_provider, model, created_at FROM threads WHERE id = $1`, [id])[0];
    if (row === undefined) return undefined;
    const thread: ThreadRecord = {
      id: row.id as string,
      workspace_id: row.workspace_id as string,
      cwd: row.cwd as string,
      mode: row.mode as ThreadRecord["mode"],
      ...(row.model_provider === null ? {} : { model_provider: row.model_provider as string }),
      ...(row.model === null ? {} : { model: row.model as string }),
      created_at: row.created_at as string,
    };
    if (this.allCommitted()) this.knownThreads.set(id, thread);
    return thread;
  }

  createTurn(threadId: string, turnId: string, createdAt: string): boolean {
    // A thread known committed exists for good (none is ever deleted): only another is looked up.
    if (this.knownThreads.get(threadId) === undefined && this.read(`SELECT 1 FROM threads WHERE id = $1`, [threadId]).length === 0)
      throw storeErrors.unknownThread(threadId);
    // In the group transaction, with the turn's first events: they commit together, or a
    // failed commit loses the turn with them and leaves its id (and its thread) free. The
    // uncommitted row holds the id: another instance's insert of it waits for this commit,
    // then finds the turn (DO NOTHING) or, after a rollback, takes the id itself.
    if (this.group === undefined) this.beginGroup();
    const [inserted] = this.write([
      {
        sql: `INSERT INTO turns (turn_id, thread_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (turn_id) DO NOTHING`,
        params: [turnId, threadId, createdAt],
      },
    ]);
    if (inserted!.rowCount !== 1) return false;
    this.group?.created.set(turnId, { threadId, generation: 0 });
    return true;
  }

  turnThread(turnId: string): string | undefined {
    this.enter();
    const known = this.knownTurns.get(turnId) ?? this.group?.turns.get(turnId)?.thread_id ?? this.group?.created.get(turnId)?.threadId;
    if (known !== undefined) return known;
    const threadId = this.read(`SELECT thread_id FROM turns WHERE turn_id = $1`, [turnId])[0]?.thread_id as string | undefined;
    if (threadId !== undefined && this.allCommitted()) this.knownTurns.set(turnId, threadId);
    return threadId;
  }

  /** Whether every write of this store is committed: a read then saw nothing that a failed commit could still undo. */
  private allCommitted(): boolean {
    return this.group === undefined && this.committing.length === 0;
  }

  turnsOfThread(threadId: string): TurnRef[] {
    return this.read(`SELECT turn_id, thread_id, created_at FROM turns WHERE thread_id = $1 ORDER BY ordinal`, [
      threadId,
    ]) as unknown as TurnRef[];
  }

  allTurns(): TurnRef[] {
    return this.read(`SELECT turn_id, thread_id, created_at FROM turns ORDER BY ordinal`) as unknown as TurnRef[];
  }

  append(turnId: string, method: string, build: (sequence: number) => Record<string, unknown>, generation?: number): StoredEvent {
    this.enter();
    if (this.appendingTo !== undefined) throw storeErrors.reentrant(turnId, this.appendingTo);
    const group = this.group ?? this.beginGroup();
    let turn = group.turns.get(turnId);
    const created = turn === undefined ? group.created.get(turnId) : undefined;
    if (created !== undefined) {
      // Inserted by this group: no lock to take, and no events yet.
      turn = { thread_id: created.threadId, first: 1, last: 0, generation: created.generation, writer: false };
      group.turns.set(turnId, turn);
      group.appended.set(turnId, []);
    } else if (turn === undefined && this.chains.has(turnId)) {
      // Held on to since an earlier group (see Chain): numbered at once, checked by the commit.
      const chain = this.chains.get(turnId)!;
      turn = { thread_id: chain.thread_id, first: chain.last + 1, last: chain.last, generation: chain.generation, writer: true };
      this.call(() => this.link.post([chainCheck(turnId, chain)]));
      group.turns.set(turnId, turn);
      group.appended.set(turnId, []);
    } else if (turn === undefined) {
      this.flush(group);
      // A write into a turn this instance does not run waits for the turn's writer lock:
      // nothing held on to is held meanwhile, since an instance waiting for one of them may
      // hold that lock. (The instance running a turn only tries for it.)
      if (generation === undefined) this.letGoChains(group);
      // The writer lock (waited for by a write into a turn this instance does not run, only
      // tried for by one into a turn it runs), then the row lock, then the highest sequence:
      // a statement that had to wait for the lock would otherwise read the sequence as it
      // was before the other commit. NO KEY UPDATE: it excludes another appender, not the
      // key-share lock of a foreign key check.
      const [writer, locked, last] = this.call(() =>
        this.link.run([
          generation === undefined ? TURN_WRITER.xact(turnId) : TURN_WRITER.tryXact(turnId),
          { sql: `SELECT thread_id, generation FROM turns WHERE turn_id = $1 FOR NO KEY UPDATE`, params: [turnId] },
          {
            sql: `SELECT last AS sequence, substring(methods from E'[^\\x1e]*$') AS method FROM event_runs WHERE turn_id = $1 ORDER BY first DESC LIMIT 1`,
            params: [turnId],
          },
        ]),
      );
      const row = locked!.rows[0];
      if (row === undefined) throw storeErrors.unknownTurn(turnId, `append ${method}`);
      const lastRow = last!.rows[0];
      const highest = lastRow === undefined ? 0 : (lastRow.sequence as number);
      // Fenced, under the turn's row lock, against what this instance's view of the log may
      // not show yet: nothing follows a turn's end.
      if (lastRow !== undefined && TURN_TERMINALS.has(lastRow.method as string))
        throw storeErrors.turnEnded(turnId, method, lastRow.method as string, highest);
      turn = {
        thread_id: row.thread_id as string,
        first: highest + 1,
        last: highest,
        generation: row.generation as number,
        writer: generation !== undefined && writer!.rows[0]?.writer === true,
      };
      group.turns.set(turnId, turn);
      group.appended.set(turnId, []);
    }
    // The generation read under the row lock, which a claim takes too (claimTurn) and this
    // transaction holds until it commits: no claim lands between this check and the commit.
    // (For a turn held on to, the generation it had then, checked under the row lock before
    // the commit.) A run that lost the turn (it stalled past its lease; another instance
    // took the turn over) writes nothing more to it, whatever its run still had in hand.
    if (generation !== undefined && generation !== turn.generation)
      throw storeErrors.staleGeneration(turnId, method, generation, turn.generation);
    // Nor within a group: a turn's end is its last event (what knownLast relies on).
    if (turn.ended !== undefined) throw storeErrors.turnEnded(turnId, method, turn.ended, turn.last);
    const sequence = turn.last + 1;
    let built: Record<string, unknown>;
    let params: string;
    this.appendingTo = turnId;
    try {
      built = build(sequence);
      params = encodeParams(turnId, method, sequence, built);
    } finally {
      this.appendingTo = undefined;
    }
    const recordedAt = this.now();
    let run = group.pending.get(turnId);
    if (run === undefined)
      group.pending.set(turnId, (run = { threadId: turn.thread_id, first: sequence, methods: [], params: [], recordedAt: [] }));
    run.methods.push(method);
    run.params.push(params);
    run.recordedAt.push(recordedAt);
    turn.last = sequence;
    if (TURN_TERMINALS.has(method)) turn.ended = method;
    const event: StoredEvent = {
      thread_id: turn.thread_id,
      turn_id: turnId,
      sequence,
      method,
      params: built,
      paramsJson: params,
      recorded_at: recordedAt,
    };
    group.appended.get(turnId)!.push(event);
    if (++group.appends >= POSTGRES_GROUP_COMMIT_LIMIT) {
      // A burst that never yields waits for its commit here: the event just appended is
      // in it, so if it fails, so does this append.
      const failure = this.commitGroupNow(group);
      if (failure) throw failure;
    }
    return event;
  }

  afterCommit(fn: CommitCallback): void {
    if (this.group) this.group.waiting.push(fn);
    else if (this.committing.length > 0) this.committing[this.committing.length - 1]!.waiting.push(fn);
    // Registered by a callback of a commit being run: its place is behind the rest of them.
    else if (this.running) this.running.push(() => fn());
    else fn();
  }

  pendingCommit(): object | undefined {
    return this.group ?? this.committing[this.committing.length - 1] ?? this.running;
  }

  events(turnId: string, afterSequence = 0, limit?: number): StoredEvent[] {
    checkPaging(`events of turn ${turnId}`, "afterSequence", afterSequence, limit);
    this.enter();
    // Nothing follows the known end of a turn: asked for what comes after it, the answer is
    // known without asking the server (see knownLast).
    const last = this.knownLast(turnId);
    if (last !== undefined && afterSequence >= last) return [];
    // What is kept is committed and never changes: only what follows it is read.
    const kept = this.committed.read(turnId, afterSequence, limit);
    const left = limit === undefined ? undefined : limit - kept.length;
    if (left === 0) return kept;
    const after = kept.length === 0 ? afterSequence : kept[kept.length - 1]!.sequence;
    if (last !== undefined && after >= last) return kept;
    const read = eventsFromRuns(turnId, this.read(EVENTS_SQL, [turnId, after, left ?? null]), after, left);
    // Kept only when none of them can be this store's own, not yet committed.
    if (read.length > 0 && !this.holdsUncommitted(turnId)) this.committed.add(turnId, read);
    return kept.length === 0 ? read : read.length === 0 ? kept : kept.concat(read);
  }

  /**
   * A turn's highest sequence, when this store knows it exactly without the server: the
   * open group holds the turn's row lock (every append takes it) or inserted the turn, so
   * nobody else appends to it until it commits and the last it appended is the last there
   * is; or the turn ended, which the store itself makes final (append refuses anything
   * after an end), and a committed end of it was seen (CommittedEvents.endedAt).
   */
  private knownLast(turnId: string): number | undefined {
    const held = this.group?.turns.get(turnId);
    if (held !== undefined) return held.last;
    // Inserted by the open group, and not appended to yet: it has no events.
    if (this.group?.created.has(turnId) === true) return 0;
    return this.committed.endedAt(turnId);
  }

  /** Whether a group of this store not yet committed (open, or sent and unanswered) appended to the turn. */
  private holdsUncommitted(turnId: string): boolean {
    return this.group?.turns.has(turnId) === true || this.committing.some((group) => group.turns.has(turnId));
  }

  lastSequence(turnId: string): number {
    const last = this.knownLast(turnId);
    if (last !== undefined) return last;
    return this.read(`SELECT ${lastOfTurn("$1")} AS last`, [turnId])[0]!.last as number;
  }

  insertRoute(route: RouteRecord["route"]): RouteRecord {
    const encoded = encodeRoute("insert", route);
    const [, inserted] = this.write([
      { sql: `SELECT pg_advisory_xact_lock($1)`, params: [LOCK.routeOrdinal] },
      {
        sql: `INSERT INTO routes (route_id, ordinal, source_execution_id, generation, projection)
              VALUES ($1, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM routes), $2, $3, $4)
              ON CONFLICT (route_id) DO NOTHING RETURNING ordinal`,
        params: [encoded.route_id, encoded.source_execution_id, encoded.generation, encoded.projection],
      },
    ]);
    const row = inserted!.rows[0];
    if (row === undefined) throw storeErrors.routeExists(encoded.route_id);
    return { route: decodeRoute(encoded.projection), ordinal: row.ordinal as number };
  }

  updateRoute(route: RouteRecord["route"], expectedGeneration: number): boolean {
    const encoded = encodeRoute("update", route);
    checkUpdateGeneration(encoded, expectedGeneration);
    // Compared in the WHERE: an update that waited for another instance's update of the
    // row re-checks the generation against what that one wrote.
    const [updated] = this.write([
      {
        sql: `UPDATE routes SET source_execution_id = $2, generation = $3, projection = $4
              WHERE route_id = $1 AND generation = $5`,
        params: [encoded.route_id, encoded.source_execution_id, encoded.generation, encoded.projection, expectedGeneration],
      },
    ]);
    return updated!.rowCount === 1;
  }

  getRoute(routeId: string): RouteRecord | undefined {
    const row = this.read(`SELECT ordinal, projection FROM routes WHERE route_id = $1`, [routeId])[0];
    return row === undefined ? undefined : toRoute(row);
  }

  routesBySource(sourceExecutionId: string, afterOrdinal = 0, limit?: number): RouteRecord[] {
    checkPaging(`routes of source ${sourceExecutionId}`, "afterOrdinal", afterOrdinal, limit);
    return this.read(`SELECT ordinal, projection FROM routes WHERE source_execution_id = $1 AND ordinal > $2 ORDER BY ordinal LIMIT $3`, [
      sourceExecutionId,
      afterOrdinal,
      limit ?? null,
    ]).map(toRoute);
  }

  allRoutes(): RouteRecord[] {
    return this.read(`SELECT ordinal, projection FROM routes ORDER BY ordinal`).map(toRoute);
  }

  getIdempotency(operation: string, key: string): IdempotencyRecord | undefined {
    const row = this.read(`SELECT operation, params_digest, route_id FROM idempotency WHERE operation = $1 AND key = $2`, [
      operation,
      key,
    ])[0];
    return row === undefined
      ? undefined
      : { operation: row.operation as string, params_digest: row.params_digest as string, route_id: row.route_id as string };
  }

  putIdempotency(key: string, record: IdempotencyRecord): boolean {
    const { operation, params_digest, route_id } = checkIdempotency(key, record);
    const [inserted] = this.write([
      {
        sql: `INSERT INTO idempotency (operation, key, params_digest, route_id) VALUES ($1, $2, $3, $4)
              ON CONFLICT (operation, key) DO NOTHING`,
        params: [operation, key, params_digest, route_id],
      },
    ]);
    return inserted!.rowCount === 1;
  }

  getMeta(key: string): string | undefined {
    return this.read(`SELECT value FROM meta WHERE key = $1`, [key])[0]?.value as string | undefined;
  }

  setMeta(key: string, value: string): void {
    checkMetaValue(key, value);
    this.write([
      { sql: `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, params: [key, value] },
    ]);
  }

  /** Commits the open group, waits for every commit sent, runs what waited for them, then disconnects. */
  close(): void {
    if (this.closed) return;
    if (this.group) this.commitGroupNow(this.group);
    // Ending the connection lets go of them on the server.
    this.forgetChains();
    this.closed = true;
    if (this.listener) void this.listener.client.then((client) => client.end()).catch(() => undefined);
    // Ending the link delivers the answers of the commits still in flight, in order.
    this.link.end();
  }

  private watch(listener: CommitListener): Promise<void> {
    this.enter();
    if (this.listener === undefined) {
      const listeners: CommitListener[] = [];
      this.listener = { client: this.listen(listeners), listeners };
    }
    this.listener.listeners.push(listener);
    return this.listener.client.then(() => undefined);
  }

  /**
   * Opens the LISTEN connection (pg in this thread, loaded now: only a watched store needs
   * it). When it fails it is opened again, a second later, until the store closes: commits
   * announced meanwhile are not lost for good, since the next announcement of a turn has
   * it read from the last sequence delivered, which catches up with what came before.
   */
  private async listen(listeners: readonly CommitListener[]): Promise<ListeningClient> {
    const pg = requireOptional<{ Client: new (options: { connectionString: string; application_name: string }) => ListeningClient }>(
      "pg",
      "the PostgreSQL event store",
    );
    const client = new pg.Client({ connectionString: this.url, application_name: LISTENER_NAME });
    let failed = false;
    // An error, or the server closing the connection without one (a network cut): opened again either way.
    client.on("end", () => lose(new Error("the server closed the connection")));
    client.on("error", (error: Error) => lose(error));
    // Until it listens, a failure is the caller's to retry (listen rejects); after, it is handled here.
    let listening = false;
    const lose = (error: Error): void => {
      if (!listening || failed || this.closed) return;
      failed = true;
      this.othersListen = true;
      process.emitWarning(`event store ${this.location}: the listening connection failed (${error.message}); it is opened again in 1 s`);
      void client.end().catch(() => undefined);
      const retry = (): void => {
        if (this.closed || this.listener === undefined) return;
        const again = this.listen(listeners);
        this.listener = { client: again, listeners: this.listener.listeners };
        again.catch(() => setTimeout(retry, 1000).unref());
      };
      setTimeout(retry, 1000).unref();
    };
    const ownHead = announcementHead(this.instanceId);
    client.on("notification", (message: { channel: string; payload?: string }) => {
      if (message.payload === undefined || this.closed) return;
      if (message.channel === CANCEL_CHANNEL) {
        const asked = JSON.parse(message.payload) as { instance: string; turn_id: string; reason: string };
        if (asked.instance !== this.instanceId) for (const listener of this.cancelListeners) listener(asked.turn_id, asked.reason);
        return;
      }
      if (message.channel !== CHANNEL) return;
      // This instance's own commits come back too: told apart by how announce() begins its
      // payloads, without parsing events it already holds.
      if (message.payload.startsWith(ownHead)) return;
      const announced = JSON.parse(message.payload) as Announcement;
      if (announced.instance === this.instanceId) return;
      for (const range of announced.turns) {
        const [turnId, first, last] = range;
        this.heard.set(turnId, Math.max(this.heard.get(turnId) ?? 0, last));
        const events = carriedEvents(turnId, range);
        if (events !== undefined) this.committed.add(turnId, events);
        for (const listener of listeners) listener(turnId, first, last, events);
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      await client.query(`LISTEN ${CANCEL_CHANNEL}`);
      // Read after LISTEN: whatever commits after this is announced to this connection.
      const top = (await client.query(`SELECT COALESCE(MAX(ordinal), 0) AS ordinal FROM turns`)).rows[0]!.ordinal as number;
      const running = await client.query(`SELECT turn_id, ${lastOfTurn("l.turn_id")} AS last FROM turn_leases l`);
      if (this.horizon) await this.catchUp(client, this.horizon, listeners);
      // Kept only once caught up: a catch-up that failed is made again from the same point.
      this.horizon = { ordinal: top, running: new Map(running.rows.map((row) => [row.turn_id as string, row.last as number])) };
      listening = true;
      this.lookForOtherListeners(client, () => failed);
    } catch (error) {
      failed = true;
      void client.end().catch(() => undefined);
      throw error;
    }
    return client;
  }

  /**
   * Looks, now and every LISTENERS_LOOK_MS while the listening connection stays open,
   * whether another instance listens on the database. An announcement made without the
   * events is still one: an instance that starts listening in between reads the range from
   * the log, as it does one whose events were too large to carry.
   */
  private lookForOtherListeners(client: ListeningClient, lost: () => boolean): void {
    const look = (): void => {
      if (lost() || this.closed) {
        clearInterval(timer);
        return;
      }
      client.query(OTHER_LISTENERS_SQL, [LISTENER_NAME]).then(
        ({ rows }) => {
          if (!lost() && !this.closed) this.othersListen = rows[0]!.others === true;
        },
        () => {
          this.othersListen = true;
        },
      );
    };
    const timer = setInterval(look, LISTENERS_LOOK_MS);
    timer.unref();
    look();
  }

  /**
   * After a gap in listening: announces to the listeners what was committed while nobody
   * listened, read from the log, as if the announcements had arrived. It covers the turns
   * heard of before and those running at the previous LISTEN, from the last sequence known
   * of each; those created since, from their start; and those leased now, from where their
   * lease was taken. The gateway hands its observers only what comes after what it
   * delivered, so nothing reaches them twice.
   */
  private async catchUp(
    client: ListeningClient,
    previous: NonNullable<PostgresEventStore["horizon"]>,
    listeners: readonly CommitListener[],
  ): Promise<void> {
    const known = new Map(previous.running);
    for (const [turnId, last] of this.heard) known.set(turnId, Math.max(known.get(turnId) ?? 0, last));
    const { rows } = await client.query(
      `SELECT t.turn_id, t.ordinal, l.claimed_after, ${lastOfTurn("t.turn_id")} AS last
       FROM turns t LEFT JOIN turn_leases l ON l.turn_id = t.turn_id
       WHERE t.ordinal > $1 OR t.turn_id = ANY($2::text[]) OR l.turn_id IS NOT NULL
       ORDER BY t.ordinal`,
      [previous.ordinal, [...known.keys()]],
    );
    for (const row of rows) {
      const turnId = row.turn_id as string;
      const last = row.last as number;
      const after = known.get(turnId) ?? ((row.ordinal as number) > previous.ordinal ? 0 : (row.claimed_after as number));
      if (last <= after) continue;
      this.heard.set(turnId, last);
      for (const listener of listeners) listener(turnId, after + 1, last);
    }
  }

  private lockThread(threadId: string): void {
    this.lockInGroup(`SELECT 1 FROM threads WHERE id = $1 FOR NO KEY UPDATE`, [threadId]);
  }

  /**
   * Takes a lock in the group transaction: it is held until the decision taken under it is
   * committed. Under a savepoint: a wait that fails (a deadlock with another instance) is
   * reported to the caller and undoes nothing else of the group.
   */
  private lockInGroup(sql: string, params: readonly unknown[]): void {
    this.enter();
    if (this.group === undefined) this.beginGroup();
    this.write([{ sql, params }]);
  }

  /**
   * Decides a resolution in the group transaction, under the turn's row lock (taken in the
   * order an append takes it): of two instances resolving one request, the second waits
   * for the first's commit, then finds its row and loses.
   */
  private claimResolution(turnId: string, subject: string, generation?: number): boolean {
    this.enter();
    if (this.group === undefined) this.beginGroup();
    // As one unit: should the wait for the lock fail (a deadlock with another instance),
    // only the claim is undone and reported, never the group it joins. The insert holds its
    // own generation check, read under the lock the first statement takes: a run fenced off
    // the turn claims nothing, so no subject is taken by a resolution it could not record.
    // From an instance that does not run the turn: after the writer lock, as its append.
    const written = this.write([
      ...(generation === undefined ? [TURN_WRITER.xact(turnId)] : []),
      { sql: `SELECT generation FROM turns WHERE turn_id = $1 FOR NO KEY UPDATE`, params: [turnId] },
      {
        sql: `INSERT INTO resolutions (turn_id, subject, owner)
          SELECT $1, $2, $3 WHERE $4::integer IS NULL OR EXISTS (SELECT 1 FROM turns WHERE turn_id = $1 AND generation = $4)
          ON CONFLICT (turn_id, subject) DO NOTHING`,
        params: [turnId, subject, this.instanceId, generation ?? null],
      },
    ]);
    const [locked, claimed] = written.slice(-2);
    const current = locked!.rows[0]?.generation as number | undefined;
    if (generation !== undefined && current !== generation) throw storeErrors.staleClaim(turnId, subject, generation, current);
    return claimed!.rowCount === 1;
  }

  /**
   * Takes the lease and raises the turn's generation as one unit, under the turn's row lock:
   * the lock every append takes before it compares its generation, so a claim waits for the
   * commit of an append that checked the old generation, and an append after the claim
   * reads the new one.
   */
  claimTurn(turnId: string, ttlMs: number): number | undefined {
    checkLeaseTime(turnId, ttlMs);
    const lease: Statement = {
      // From the turn's row: an unknown turn is refused below, not by the foreign key.
      sql: `INSERT INTO turn_leases (turn_id, owner, expires_at, claimed_after)
            SELECT turn_id, $2::text, clock_timestamp() + $3::integer * interval '1 millisecond', ${lastOfTurn("$1")}
            FROM turns WHERE turn_id = $1
            ON CONFLICT (turn_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at,
              claimed_after = CASE WHEN turn_leases.owner = excluded.owner THEN turn_leases.claimed_after ELSE excluded.claimed_after END
            WHERE turn_leases.owner = excluded.owner OR turn_leases.expires_at < clock_timestamp()`,
      params: [turnId, this.instanceId, ttlMs],
    };
    const raise = (expected?: number): Statement => ({
      sql: `UPDATE turns SET generation = generation + 1
            WHERE turn_id = $1 AND EXISTS (SELECT 1 FROM turn_leases WHERE turn_id = $1 AND owner = $2 AND expires_at > clock_timestamp())
            RETURNING generation`,
      params: [turnId, this.instanceId],
      ...(expected === undefined ? {} : { expect: { row: { generation: expected }, otherwise: `turn ${turnId} could not be claimed` } }),
    });
    this.enter();
    const created = this.group?.created.get(turnId);
    if (created !== undefined) {
      // Inserted by the open group: no other transaction sees the turn before it commits, so
      // nobody else holds a lease of it, appends to it or claims it, and the claim is known
      // to succeed. It is sent with the group, whose commit checks it.
      this.flush(this.group!);
      const generation = created.generation + 1;
      this.call(() => this.link.post([lease, raise(generation)]));
      created.generation = generation;
      const appended = this.group!.turns.get(turnId);
      if (appended !== undefined) appended.generation = generation;
      return generation;
    }
    // No writer lock: an instance holding on to it that stalled must not hold up a takeover.
    // It finds the generation raised when it checks its next group (see Chain).
    const [locked, , raised] = this.write([
      { sql: `SELECT 1 FROM turns WHERE turn_id = $1 FOR NO KEY UPDATE`, params: [turnId] },
      lease,
      raise(),
    ]);
    if (locked!.rowCount === 0) throw storeErrors.unknownTurn(turnId, "claim");
    const generation = raised!.rows[0]?.generation as number | undefined;
    // An append of this group already read the turn's generation: from now on it is this one.
    const appended = this.group?.turns.get(turnId) ?? this.group?.created.get(turnId);
    if (appended !== undefined && generation !== undefined) appended.generation = generation;
    return generation;
  }

  private renewLeases(ttlMs: number, turnIds: readonly string[]): string[] {
    const [renewed] = this.write([
      {
        sql: `UPDATE turn_leases SET expires_at = clock_timestamp() + $2 * interval '1 millisecond' WHERE owner = $1 AND turn_id = ANY($3::text[]) RETURNING turn_id`,
        params: [this.instanceId, ttlMs, turnIds],
      },
    ]);
    return renewed!.rows.map((row) => row.turn_id as string);
  }

  /**
   * Not waited for: nothing waits on a release, and one that fails only leaves the lease to
   * expire (another instance then finds the turn ended). Said as a warning if it does.
   */
  private releaseTurn(turnId: string): void {
    this.enter();
    this.call(() =>
      this.link.runLater(
        [{ sql: `DELETE FROM turn_leases WHERE turn_id = $1 AND owner = $2`, params: [turnId, this.instanceId] }],
        (failure) => {
          if (failure !== undefined)
            process.emitWarning(`event store ${this.location}: the lease of turn ${turnId} could not be released: ${failure.message}`);
        },
      ),
    );
  }

  private expiredLeases(): string[] {
    return this.read(`SELECT turn_id FROM turn_leases WHERE expires_at < clock_timestamp() ORDER BY turn_id`).map(
      (row) => row.turn_id as string,
    );
  }

  /** A read sees this store's own writes: the events of the open group are sent first. */
  private read(sql: string, params: readonly unknown[] = []): Record<string, unknown>[] {
    this.enter();
    if (this.group) this.flush(this.group);
    return this.call(() => this.link.query(sql, params)).rows;
  }

  /** Writes as one unit: a failure undoes only these statements, never the group they join. */
  private write(statements: readonly Statement[]) {
    this.enter();
    if (this.group) this.flush(this.group);
    return this.call(() => this.link.run(statements, true));
  }

  private call<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (error instanceof StoreError) throw error;
      throw new StoreError("database_error", `event store ${this.location}: ${(error as Error).message}`, { cause: error });
    }
  }

  private beginGroup(): Group {
    this.call(() => this.link.begin());
    const group: Group = { appends: 0, waiting: [], turns: new Map(), appended: new Map(), pending: new Map(), created: new Map() };
    this.group = group;
    groupHolders.set(this.url, this);
    setImmediate(() => {
      if (this.group === group) this.commitGroup(group);
    });
    return group;
  }

  /**
   * Sends the group's pending events as one INSERT of a run per turn, without waiting: a
   * prepared statement, so the server parses and plans it once per connection however
   * many runs a group holds.
   */
  private flush(group: Group): void {
    if (group.pending.size === 0) return;
    const runs = group.pending;
    group.pending = new Map();
    this.link.post([{ name: "turnspec_insert_runs", sql: INSERT_RUNS_SQL, params: insertRunsParams(runs) }]);
  }

  /**
   * Sends the group's events and, in the same transaction, their announcement: it is
   * delivered only if the commit succeeds. The announcement carries the events (in as many
   * payloads as they need), so a listener hands them on without reading them back.
   */
  private finishGroup(group: Group): void {
    this.flush(group);
    const payloads = announce(this.instanceId, group.appended, this.othersListen);
    // One statement however many payloads: unnest yields them in order, and their NOTIFYs are delivered in that order.
    if (payloads.length > 0)
      this.link.post([
        {
          name: "turnspec_announce",
          sql: `SELECT pg_notify($1, payload) FROM unnest(string_to_array($2::text, E'\\x1e')) AS payload`,
          params: [CHANNEL, payloads.join("\x1e")],
        },
      ]);
  }

  /** Keeps what a group that committed made known for good: where its turns ended, and their threads. */
  private keepCommitted(group: Group): void {
    // The events themselves are not kept, only where a turn ended: whoever appended them
    // holds what it needs of them (the folds, the deliveries), and keeping every event a
    // burst appends alive until the cache lets it go cost 10 to 18% of the gateway's CPU
    // (collecting them). A read of a turn keeps what it reads.
    for (const [turnId, events] of group.appended) this.committed.noteEnd(turnId, events);
    for (const [turnId, turn] of group.turns) this.knownTurns.set(turnId, turn.thread_id);
    for (const [turnId, created] of group.created) this.knownTurns.set(turnId, created.threadId);
  }

  /** Sends the group's commit; its callbacks run when the server answers. */
  private commitGroup(group: Group): void {
    this.detach(group);
    this.finishGroup(group);
    const lettingGo = this.holdOn(group);
    this.committing.push(group);
    this.link.commit((failure) => {
      this.committing.splice(this.committing.indexOf(group), 1);
      if (failure === undefined) this.keepCommitted(group);
      else this.forgetChains();
      this.endGroup(group, failure === undefined ? undefined : this.commitFailed(failure));
    });
    if (lettingGo.length > 0) this.link.post(lettingGo);
  }

  /** Commits the group and waits for the answer (and for the commits sent before it). */
  private commitGroupNow(group: Group): StoreError | undefined {
    this.detach(group);
    this.finishGroup(group);
    const lettingGo = this.holdOn(group);
    const error = this.link.commitNow();
    if (lettingGo.length > 0) this.link.post(lettingGo);
    const failure = error === undefined ? undefined : this.commitFailed(error);
    if (failure === undefined) this.keepCommitted(group);
    else this.forgetChains();
    this.endGroup(group, failure);
    return failure;
  }

  /**
   * Before a group's COMMIT: holds on to the writer lock of each turn the group appended a
   * burst to (see Chain), in the transaction, whose own hold of it has it granted at once;
   * returns the statements that let go of those it held on to and does not go on with, to
   * be sent after the COMMIT. One that no group appends to within CHAIN_IDLE_MS is let go then.
   */
  private holdOn(group: Group): Statement[] {
    const holding: Statement[] = [];
    const lettingGo: Statement[] = [];
    const held: [string, Chain][] = [];
    for (const [turnId, turn] of group.turns) {
      const chain = this.chains.get(turnId);
      const groups = (chain?.groups ?? 0) + 1;
      if (
        turn.writer &&
        turn.ended === undefined &&
        group.appended.get(turnId)!.length >= CHAIN_MIN_APPENDS &&
        groups <= POSTGRES_CHAIN_MAX_GROUPS
      ) {
        if (chain === undefined) holding.push(TURN_WRITER.hold(turnId));
        const next: Chain = { thread_id: turn.thread_id, last: turn.last, generation: turn.generation, groups };
        this.chains.set(turnId, next);
        held.push([turnId, next]);
      } else if (chain !== undefined) {
        this.chains.delete(turnId);
        lettingGo.push(TURN_WRITER.letGo(turnId));
      }
    }
    if (holding.length > 0) this.link.post(holding);
    if (held.length > 0) setTimeout(() => this.letGoIdle(held), CHAIN_IDLE_MS).unref();
    this.chainsChanged();
    return lettingGo;
  }

  /** Lets go of the turns `held` on to by a commit that no group has appended to since. */
  private letGoIdle(held: readonly [string, Chain][]): void {
    this.letGo(held.filter(([turnId, chain]) => this.chains.get(turnId) === chain && this.group?.turns.has(turnId) !== true));
  }

  /** Lets go of the writer lock of every turn held on to that `group` (the open one) does not append to. */
  private letGoChains(group: Group): void {
    this.letGo([...this.chains].filter(([turnId]) => !group.turns.has(turnId)));
  }

  private letGo(chains: readonly [string, Chain][]): void {
    if (chains.length === 0 || this.closed) return;
    for (const [turnId] of chains) this.chains.delete(turnId);
    this.chainsChanged();
    this.link.post(chains.map(([turnId]) => TURN_WRITER.letGo(turnId)));
  }

  /** After a commit that failed: the worker let go of every writer lock held on to (see WORKER_SOURCE), and what they numbered from is lost. */
  private forgetChains(): void {
    this.chains.clear();
    this.chainsChanged();
  }

  private chainsChanged(): void {
    let holders = chainHolders.get(this.url);
    if (this.chains.size > 0) {
      if (holders === undefined) chainHolders.set(this.url, (holders = new Set()));
      holders.add(this);
    } else if (holders?.delete(this) === true && holders.size === 0) {
      chainHolders.delete(this.url);
    }
  }

  private detach(group: Group): void {
    if (this.group === group) this.group = undefined;
    if (groupHolders.get(this.url) === this) groupHolders.delete(this.url);
  }

  /** Runs a finished group's callbacks in order. */
  private endGroup(group: Group, failure: StoreError | undefined): void {
    const outer = this.running;
    this.running = group.waiting;
    let thrown: { error: unknown } | undefined;
    try {
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

  private commitFailed(cause: Error): StoreError {
    return new StoreError("commit_failed", `event store ${this.location}: a commit failed and its writes are lost: ${cause.message}`, {
      cause,
    });
  }

  /** Brings the schema up to date; returns the instances' token secret. */
  private migrate(): string {
    // Read and upgrade under one advisory lock, so two instances starting on a new database
    // do not both run the same step. DDL is transactional: a failed step leaves nothing.
    this.link.run(
      [
        { sql: `SELECT pg_advisory_xact_lock(${LOCK.migrate})` },
        { sql: `CREATE TABLE IF NOT EXISTS turnspec_schema (version integer NOT NULL)` },
        { sql: `INSERT INTO turnspec_schema (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM turnspec_schema)` },
      ],
      true,
    );
    // The link's own transaction: a statement in it is never run again on a new connection.
    // On a failure the store is not opened, and ending the link rolls the transaction back.
    this.link.begin();
    this.link.query(`SELECT pg_advisory_xact_lock(${LOCK.migrate})`);
    const version = this.link.query(`SELECT version FROM turnspec_schema`).rows[0]!.version as number;
    if (version > POSTGRES_MIGRATIONS.length) {
      throw new StoreError(
        "schema_version",
        `event store ${this.location} has schema version ${version}, newer than the ${POSTGRES_MIGRATIONS.length} this gateway knows; use a newer turnspec`,
      );
    }
    for (let next = version; next < POSTGRES_MIGRATIONS.length; next++) {
      this.link.query(POSTGRES_MIGRATIONS[next]!);
      this.link.query(`UPDATE turnspec_schema SET version = $1`, [next + 1]);
    }
    // Drawn once, by whichever instance gets here first; the others read it.
    this.link.query(`INSERT INTO token_secret (secret) VALUES ($1) ON CONFLICT (single) DO NOTHING`, [
      randomBytes(32).toString("base64url"),
    ]);
    const secret = this.link.query(`SELECT secret FROM token_secret`).rows[0]!.secret as string;
    const failure = this.link.commitNow();
    if (failure) throw failure;
    return secret;
  }

  /** Every call starts here: a closed store refuses it, and another store of this process on the database commits its group first. */
  private enter(): void {
    if (this.closed) throw storeErrors.closed();
    if (groupHolders.size === 0 && chainHolders.size === 0) return;
    const holder = groupHolders.get(this.url);
    // Waited for: a read of this store must see what the other store of the process wrote.
    if (holder !== undefined && holder !== this && holder.group) holder.commitGroupNow(holder.group);
    for (const other of chainHolders.get(this.url) ?? []) if (other !== this) other.letGo([...other.chains]);
  }
}

/** How many records of a kind a store keeps known (Known): past it, it starts again from none. */
const KNOWN_KEPT = 100_000;

/** Records that never change once committed, by id: at most KNOWN_KEPT of them. */
class Known<T> {
  private readonly records = new Map<string, T>();

  get(id: string): T | undefined {
    return this.records.get(id);
  }

  set(id: string, record: T): void {
    if (this.records.size >= KNOWN_KEPT && !this.records.has(id)) this.records.clear();
    this.records.set(id, record);
  }
}

/** The little of pg's Client the listening connection uses. */
interface ListeningClient {
  connect(): Promise<void>;
  query(sql: string, params?: readonly unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
  on(event: "error", listener: (error: Error) => void): void;
  on(event: "end", listener: () => void): void;
  on(event: "notification", listener: (message: { channel: string; payload?: string }) => void): void;
}

function toRoute(row: Record<string, unknown>): RouteRecord {
  return { route: decodeRoute(row.projection as string), ordinal: row.ordinal as number };
}

/** The URL with its password replaced, for messages and logs. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return "postgres://…";
  }
}
