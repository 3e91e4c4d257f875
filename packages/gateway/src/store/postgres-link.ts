/**
 * A synchronous link to one PostgreSQL connection, for a store whose API is synchronous.
 *
 * The `pg` client runs in a worker thread (so `pg` is loaded only when a PostgreSQL store
 * is opened). A call posts its statements to the worker and waits on a shared flag
 * (Atomics.wait) until the worker has answered, then takes the answer off its port with
 * receiveMessageOnPort. A post does not wait: the worker runs everything in the order it
 * was sent, so a later call sees what an earlier post wrote, and a post's failure inside
 * a transaction fails that transaction's commit. A commit is asynchronous: its answer
 * arrives as an ordinary message, in order.
 */
import { resolveOptional } from "../optional.js";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";

export interface Statement {
  readonly sql: string;
  readonly params?: readonly unknown[];
  /**
   * Prepares the statement once per connection under this name, and only binds it after:
   * for statements run often, whose text never changes with their parameters.
   */
  readonly name?: string;
  /**
   * For a statement posted in the group transaction: what its first row must hold (null:
   * no row). Otherwise the transaction fails with `otherwise`, what was found beside it, and
   * its commit rolls it back. The commit is not sent before the answer is checked.
   */
  readonly expect?: { readonly row: Readonly<Record<string, unknown>> | null; readonly otherwise: string };
}

export interface StatementResult {
  readonly rows: Record<string, unknown>[];
  readonly rowCount: number;
}

/** An error of the server or the connection, as the worker saw it. */
export class PostgresLinkError extends Error {
  /** The SQLSTATE, when the server sent one (23505: unique violation, 40P01: deadlock, …). */
  readonly code: string | undefined;

  constructor(message: string, code: string | undefined) {
    super(message);
    this.name = "PostgresLinkError";
    this.code = code;
  }
}

interface Reply {
  readonly id: number;
  readonly ok: boolean;
  readonly results?: StatementResult[];
  readonly error?: { readonly message: string; readonly code?: string };
  /** A message of the worker for the operator, with id 0: not an answer. */
  readonly notice?: string;
}

/**
 * The worker's code, as plain JavaScript evaluated in the worker: it must not depend on
 * how this module was compiled. Requests run one at a time, in arrival order.
 *
 * - `run` runs statements; with `guard`, as one unit: inside a transaction under a
 *   savepoint (a failure undoes only them), outside one in a transaction of their own.
 *   A failure of unguarded statements inside a transaction marks it failed.
 * - `begin` / `commit`: the group transaction. Its BEGIN is not sent on its own: it leaves
 *   with the transaction's first statements, in one flight with them when they are waited
 *   for. A commit of a failed transaction rolls it
 *   back and answers with the first failure. Inside it the client pipelines: statements
 *   are sent as they come, without waiting for the answers of those before them, so a
 *   group's lock and sequence reads leave together, and its events, announcement and
 *   COMMIT too.
 *
 * A lost connection (the server restarted, the backend was terminated) is opened again in
 * the background, at once and then after waits that double up to 2 s; a request meanwhile
 * waits for at most the attempt in flight (1 s at most), then fails, saying so. What the lost connection held open is gone: the
 * group transaction fails at its commit, as any failed commit does, and a guarded write
 * reports its failure. A read outside a transaction is run again on the new connection.
 * A COMMIT whose answer was lost is not guessed at: once connected again, the server is
 * asked (txid_status of the id the transaction was given at BEGIN) whether it committed.
 */
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { url, pgPath, signal, requests, syncReplies, asyncReplies, connectTimeoutMs, applicationName, outcomeWaitMs } = workerData;
const pg = require(pgPath);
let client = null;
let inTransaction = false;
let failed = null;
/** Why the connection was lost, until a new one is open. */
let lost = null;
/** When the next attempt to connect again may be made, and how long the wait after a failed one is. */
let retryAt = 0;
let backoff = 0;
/** The id of the open group transaction: after a commit whose answer the connection took with it, the server says what became of it. */
let xid = null;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const notice = (text) => asyncReplies.postMessage({ id: 0, ok: true, notice: text });
/** Server errors carry a SQLSTATE; those of class 08, 57P01-03 and none at all mean the connection is gone. */
const isConnectionError = (error) => !error || !error.code || /^08/.test(error.code) || /^57P0[123]$/.test(error.code);
let ending = false;
function loseConnection(error) {
  if (lost || ending) return;
  lost = error || new Error("the connection to PostgreSQL was closed");
  // Given up for good: the server rolls back what it had open, which is what is reported.
  if (client) client.end().catch(() => {});
  // The group transaction died with the connection: it can only fail now.
  if (inTransaction) failed = failed || lost;
  notice("lost the connection to PostgreSQL (" + lost.message + "); connecting again");
  reconnectInBackground();
}
function unavailable(detail) {
  const error = new Error("the connection to PostgreSQL was lost (" + lost.message + ")" + detail);
  error.code = "08006";
  return error;
}
async function connect() {
  const next = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs, application_name: applicationName, pipeline: true });
  next.on("error", (error) => { if (client === next) loseConnection(error); });
  next.on("end", () => { if (client === next) loseConnection(null); });
  await next.connect();
  const first = client === null;
  client = next;
  lost = null;
  backoff = 0;
  retryAt = 0;
  attemptFailure = null;
  if (!first) notice("connected to PostgreSQL again");
}
/** The connect attempt in flight, while the connection is lost; why the last one failed. */
let attempt = null;
let attemptFailure = null;
let reconnecting = false;
/**
 * Connects again in the background, until connected: at once, then after waits that
 * double up to 2 s. Requests never wait for more than one attempt, and that for at most
 * ATTEMPT_WAIT_MS, so a server that is gone, even one whose host no longer answers,
 * cannot hold the caller for long.
 */
function reconnectInBackground() {
  if (reconnecting || ending) return;
  reconnecting = true;
  void (async () => {
    while (lost && !ending) {
      const wait = retryAt - Date.now();
      if (wait > 0) await sleep(wait);
      attempt = connect().then(
        () => true,
        (error) => {
          attemptFailure = error;
          backoff = Math.min(backoff === 0 ? 100 : backoff * 2, 2000);
          retryAt = Date.now() + backoff;
          return false;
        },
      );
      await attempt;
      attempt = null;
    }
    reconnecting = false;
  })();
}
const ATTEMPT_WAIT_MS = 1000;
/** Resolves once connected; throws at once (or after the attempt in flight) while the connection is lost. */
async function ensureConnected() {
  if (!lost) return;
  reconnectInBackground();
  if (attempt) await Promise.race([attempt, sleep(ATTEMPT_WAIT_MS)]);
  if (!lost) return;
  const failure = attemptFailure ? " and connecting again failed (" + attemptFailure.message + ")" : "";
  throw unavailable(failure + "; it is being opened again, the next attempt in " + Math.max(0, retryAt - Date.now()) + " ms");
}
/** What became of the transaction whose COMMIT was cut off: asked once connected again, within outcomeWaitMs. */
async function outcomeOf(id, cause) {
  loseConnection(cause);
  const deadline = Date.now() + outcomeWaitMs;
  let last = cause;
  while (Date.now() < deadline) {
    let status;
    try {
      await ensureConnected();
      status = (await client.query("SELECT txid_status($1) AS status", [id])).rows[0].status;
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      last = error;
    }
    if (status === "committed") return;
    // Aborted, or unknown to the server (null): not committed.
    if (status !== undefined && status !== "in progress") throw new Error("the connection to PostgreSQL was lost during a commit, which the server then rolled back (" + cause.message + ")");
    await sleep(100);
  }
  throw new Error("the connection to PostgreSQL was lost during a commit, and whether the server committed it could not be learned within " + outcomeWaitMs + " ms (" + last.message + ")");
}
/**
 * After a group transaction that did not commit: lets go of the session's advisory locks,
 * which the store holds on to only for what the group wrote (its chains), now lost. A
 * connection lost took them with it.
 */
async function letGoOfSessionLocks() {
  if (!lost) await client.query("SELECT pg_advisory_unlock_all()").catch(() => {});
}
const toQuery = (statement) => (statement.name === undefined ? statement.sql : { name: statement.name, text: statement.sql });
/**
 * Statements posted in the group transaction whose answers have not arrived: the client
 * pipelines (each query is sent at once, its answers read in order), so a group's events,
 * its announcement and its COMMIT leave together. Each records its failure in \`failed\`.
 */
let inflight = [];
/** Those of them with an expectation (Statement.expect): the commit waits for them before it sends COMMIT. */
let checks = [];
function markFailed(error) {
  if (isConnectionError(error)) loseConnection(error);
  else failed = failed || error;
}
/** Fails the transaction when a statement's first row is not the one it expects. */
function checkExpected(statement, result) {
  const { row: wanted, otherwise } = statement.expect;
  const found = result.rows[0] ?? null;
  const same = wanted === null ? found === null : found !== null && Object.keys(wanted).every((key) => found[key] === wanted[key]);
  if (same) return;
  const error = new Error(otherwise + ": expected " + JSON.stringify(wanted) + ", found " + JSON.stringify(found));
  error.code = "TS001";
  failed = failed || error;
}
/**
 * Statements in the group transaction, sent at once behind what was posted before them.
 * Posted ones are not waited for. Guarded ones run under a savepoint: a failure undoes
 * only them. Once a statement failed, those after it in the transaction fail too (25P02);
 * the first failure is the one reported.
 */
async function runInTransaction(request) {
  const guard = request.guard;
  const queries = [];
  if (guard) queries.push(client.query("SAVEPOINT turnspec_guard"));
  const sent = request.statements.map((statement) => client.query(toQuery(statement), statement.params));
  queries.push(...sent);
  if (guard) queries.push(client.query("RELEASE SAVEPOINT turnspec_guard"));
  if (!request.sync && !request.answer) {
    const first = guard ? 1 : 0;
    queries.forEach((query, i) => {
      const statement = request.statements[i - first];
      const expected = statement !== undefined && statement.expect !== undefined;
      const settled = query.then(expected ? (result) => checkExpected(statement, result) : () => undefined, markFailed);
      inflight.push(settled);
      if (expected) checks.push(settled);
    });
    return [];
  }
  const pending = inflight;
  inflight = [];
  await Promise.all(pending);
  const settled = await Promise.allSettled(queries);
  if (failed) throw failed;
  const rejected = settled.find((outcome) => outcome.status === "rejected");
  if (rejected) {
    const error = rejected.reason;
    if (isConnectionError(error)) {
      loseConnection(error);
      throw error;
    }
    if (guard) await client.query("ROLLBACK TO SAVEPOINT turnspec_guard").catch(() => {});
    else failed = failed || error;
    throw error;
  }
  const results = settled.slice(guard ? 1 : 0, guard ? -1 : undefined);
  return results.map((outcome) => ({ rows: outcome.value.rows, rowCount: outcome.value.rowCount ?? 0 }));
}
/**
 * A BEGIN not sent yet: it leaves with the transaction's first statements. When those are
 * waited for, they go in one flight with it (runFirst); otherwise it is sent and waited for
 * first (begun).
 */
let beginPending = false;
/** Opens the group transaction and asks the id it was given (see outcomeOf). */
const OPEN_TRANSACTION = "BEGIN; SELECT txid_current() AS xid";
/** Opens the transaction; a connection found dead at BEGIN is opened again and BEGIN sent again there (nothing was open yet). */
async function openTransaction(retried) {
  try {
    const [, assigned] = await client.query(OPEN_TRANSACTION);
    return assigned.rows[0].xid;
  } catch (error) {
    if (!isConnectionError(error) || retried) throw error;
    loseConnection(error);
    failed = null;
    await ensureConnected();
    return openTransaction(true);
  }
}
/** Sends the pending BEGIN and waits for it; if it fails, so does everything after it in the transaction, and its commit. */
async function begun() {
  if (!beginPending) return;
  beginPending = false;
  failed = null;
  try {
    if (lost) await ensureConnected();
    xid = await openTransaction(false);
  } catch (error) {
    failed = failed || error;
  }
}
/**
 * The first statements of a transaction, awaited: sent in one flight with its BEGIN. On a
 * connection found dead, BEGIN and they are sent again on a new one: nothing of the
 * transaction had reached the server.
 */
async function runFirst(request, retried) {
  beginPending = false;
  // Nothing of the transaction had been sent: a connection lost meanwhile did not touch it.
  failed = null;
  let beginFailure = null;
  const opening = client.query(OPEN_TRANSACTION).then(
    ([, assigned]) => assigned.rows[0].xid,
    (error) => {
      beginFailure = error;
      throw error;
    },
  );
  try {
    const [assigned, results] = await Promise.all([opening, runInTransaction(request)]);
    xid = assigned;
    return results;
  } catch (error) {
    if (isConnectionError(error) && !retried) {
      loseConnection(error);
      await ensureConnected();
      return runFirst(request, true);
    }
    // The statements' own failures are handled where they ran; one of BEGIN fails the transaction.
    if (beginFailure) failed = failed || beginFailure;
    throw error;
  }
}
async function run(request) {
  if (request.op === "end") {
    ending = true;
    if (client) await client.end().catch(() => {});
    return [];
  }
  if (request.op === "connect") {
    await connect();
    return [];
  }
  if (request.op === "begin") {
    // Sent with what the transaction runs first (see begun and runFirst).
    inTransaction = true;
    failed = null;
    xid = null;
    checks = [];
    beginPending = true;
    return [];
  }
  if (lost && !inTransaction) await ensureConnected();
  switch (request.op) {
    case "commit": {
      inTransaction = false;
      // Nothing was sent in it: there is nothing to commit.
      if (beginPending) {
        beginPending = false;
        return [];
      }
      const id = xid;
      xid = null;
      // A commit is never sent before what the transaction expects was found (Statement.expect).
      if (checks.length > 0) {
        const expecting = checks;
        checks = [];
        await Promise.all(expecting);
      }
      // Sent behind the statements posted before it, in one flight with them.
      const pending = inflight;
      inflight = [];
      if (lost) failed = failed || lost;
      const committing = failed ? null : client.query("COMMIT");
      await Promise.all(pending);
      if (failed) {
        const first = failed;
        failed = null;
        // A COMMIT of a transaction a statement failed in rolls it back.
        if (committing) await committing.catch(() => {});
        else if (!lost) await client.query("ROLLBACK").catch(() => {});
        await letGoOfSessionLocks();
        throw first;
      }
      try {
        const result = await committing;
        if (result.command !== "COMMIT") {
          await letGoOfSessionLocks();
          throw new Error("the server rolled the transaction back instead of committing it (" + result.command + ")");
        }
      } catch (error) {
        if (!isConnectionError(error)) throw error;
        await outcomeOf(id, error);
      }
      return [];
    }
    case "run": {
      if (inTransaction && beginPending && (request.sync || request.answer) && !lost) return runFirst(request);
      if (inTransaction) await begun();
      if (inTransaction && failed) throw failed;
      if (inTransaction) return runInTransaction(request);
      const guard = request.guard;
      if (guard) await client.query("BEGIN");
      const results = [];
      try {
        for (const statement of request.statements) {
          const result = await client.query(toQuery(statement), statement.params);
          results.push({ rows: result.rows, rowCount: result.rowCount ?? 0 });
        }
      } catch (error) {
        if (isConnectionError(error)) {
          loseConnection(error);
          // Outside a transaction, statements cut off before their COMMIT changed nothing
          // (the server rolled them back): they are run again on a new connection.
          if (!request.retried) return run({ ...request, retried: true });
          throw error;
        }
        if (guard) await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
      if (guard) {
        try {
          await client.query("COMMIT");
        } catch (error) {
          // A COMMIT whose answer was lost may or may not have been applied: reported, never run twice.
          if (isConnectionError(error)) loseConnection(error);
          throw error;
        }
      }
      return results;
    }
  }
  throw new Error("unknown request " + request.op);
}
let chain = Promise.resolve();
requests.on("message", (request) => {
  chain = chain.then(async () => {
    let reply;
    try {
      reply = { id: request.id, ok: true, results: await run(request) };
    } catch (error) {
      reply = { id: request.id, ok: false, error: { message: String(error && error.message || error), code: error && error.code } };
    }
    if (request.sync) {
      syncReplies.postMessage(reply);
      Atomics.store(signal, 0, 1);
      Atomics.notify(signal, 0);
    } else if (request.answer) {
      asyncReplies.postMessage(reply);
    }
    if (request.op === "end") requests.close();
  });
});
`;

export interface PostgresLinkOptions {
  /** How long a call waits for its answer before the link is given up, in ms. */
  readonly callTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Shown in pg_stat_activity. */
  readonly applicationName?: string;
  /** Told when the connection is lost and when it is open again (for the operator's log). */
  readonly onNotice?: (message: string) => void;
}

/**
 * How long the worker tries, after a COMMIT whose answer the lost connection took with it,
 * to connect again and ask the server whether it committed (txid_status). Calls wait behind it.
 */
const COMMIT_OUTCOME_WAIT_MS = 5_000;

export class PostgresLink {
  private readonly worker: Worker;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private readonly requests: MessagePort;
  private readonly syncReplies: MessagePort;
  private readonly asyncReplies: MessagePort;
  private readonly callTimeoutMs: number;
  private readonly onNotice: ((message: string) => void) | undefined;
  private nextId = 1;
  /** Answers awaited by asynchronous requests, in the order they were sent. */
  private readonly awaiting = new Map<number, (reply: Reply) => void>();
  private broken: Error | undefined;
  private ended = false;

  /** Starts the worker and connects; throws a PostgresLinkError when the server cannot be reached. */
  constructor(url: string, options: PostgresLinkOptions = {}) {
    this.callTimeoutMs = options.callTimeoutMs ?? 30_000;
    this.onNotice = options.onNotice;
    const requests = new MessageChannel();
    const syncReplies = new MessageChannel();
    const asyncReplies = new MessageChannel();
    this.requests = requests.port1;
    this.syncReplies = syncReplies.port1;
    this.asyncReplies = asyncReplies.port1;
    const pgPath = resolveOptional("pg", "the PostgreSQL event store");
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        url,
        pgPath,
        signal: this.signal,
        requests: requests.port2,
        syncReplies: syncReplies.port2,
        asyncReplies: asyncReplies.port2,
        connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
        outcomeWaitMs: COMMIT_OUTCOME_WAIT_MS,
        applicationName: options.applicationName ?? "turnspec",
      },
      transferList: [requests.port2, syncReplies.port2, asyncReplies.port2],
    });
    // The worker never keeps the process alive; a commit awaited does, through its port.
    this.worker.unref();
    this.asyncReplies.on("message", (reply: Reply) => this.settle(reply));
    this.asyncReplies.unref();
    try {
      this.call({ op: "connect" });
    } catch (error) {
      this.end();
      throw error;
    }
  }

  /** Runs statements and waits for their results; `guard` makes them one unit (see WORKER_SOURCE). */
  run(statements: readonly Statement[], guard = false): StatementResult[] {
    return this.call({ op: "run", statements, guard });
  }

  /** One statement, waited for. */
  query(sql: string, params: readonly unknown[] = []): StatementResult {
    return this.run([{ sql, params }])[0]!;
  }

  /**
   * Runs statements as one unit, as `run(statements, true)` does, without waiting: `done`
   * gets the failure, if any, once the server has answered.
   */
  runLater(statements: readonly Statement[], done: (failure?: Error) => void): void {
    this.request({ op: "run", statements, guard: true }, (reply) => done(reply.ok ? undefined : toError(reply)));
  }

  /** Sends statements without waiting: a failure inside a transaction fails its commit. */
  post(statements: readonly Statement[]): void {
    this.send({ op: "run", statements, guard: false, sync: false, answer: false });
  }

  /**
   * Opens the group transaction without waiting: what follows runs in it, and if it could
   * not be opened, what follows in it fails with that, and so does its commit.
   */
  begin(): void {
    this.send({ op: "begin", sync: false, answer: false });
  }

  /** Commits the open transaction; `done` gets the failure, if any, once the server has answered. */
  commit(done: (failure?: Error) => void): void {
    this.request({ op: "commit" }, (reply) => done(reply.ok ? undefined : toError(reply)));
  }

  /** Commits the open transaction and waits for the answer; returns the failure, if any. */
  commitNow(): Error | undefined {
    try {
      this.call({ op: "commit" });
      return undefined;
    } catch (error) {
      return error as Error;
    }
  }

  /**
   * Ends the connection once everything sent before has run, delivers the answers still
   * awaited (at once, in order), then stops the worker.
   */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    try {
      if (this.broken === undefined) this.call({ op: "end" });
    } catch {
      // Ending is best effort: the worker is stopped below either way.
    }
    for (let message = receiveMessageOnPort(this.asyncReplies); message; message = receiveMessageOnPort(this.asyncReplies)) {
      this.settle(message.message as Reply);
    }
    const gone: Reply = { id: 0, ok: false, error: { message: "the connection to PostgreSQL was closed before it answered" } };
    for (const [id] of [...this.awaiting]) this.settle({ ...gone, id });
    this.requests.close();
    this.syncReplies.close();
    this.asyncReplies.close();
    void this.worker.terminate();
  }

  private request(body: Record<string, unknown>, onReply: (reply: Reply) => void): void {
    const id = this.nextId++;
    this.awaiting.set(id, onReply);
    this.asyncReplies.ref();
    this.send({ ...body, id, sync: false, answer: true });
  }

  private settle(reply: Reply): void {
    if (reply.notice !== undefined) {
      this.onNotice?.(reply.notice);
      return;
    }
    const onReply = this.awaiting.get(reply.id);
    if (onReply === undefined) return;
    this.awaiting.delete(reply.id);
    if (this.awaiting.size === 0) this.asyncReplies.unref();
    onReply(reply);
  }

  private send(body: Record<string, unknown>): void {
    if (this.broken) throw this.broken;
    if (this.ended && body.op !== "end") throw new PostgresLinkError("the connection to PostgreSQL is closed", undefined);
    this.requests.postMessage(body);
  }

  private call(body: Record<string, unknown>): StatementResult[] {
    const id = this.nextId++;
    Atomics.store(this.signal, 0, 0);
    this.send({ ...body, id, sync: true });
    const deadline = Date.now() + this.callTimeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0 || Atomics.wait(this.signal, 0, 0, left) === "timed-out") {
        // A late answer would be taken for the next call's: the link cannot be used again.
        this.broken = new PostgresLinkError(`PostgreSQL did not answer within ${this.callTimeoutMs} ms`, undefined);
        throw this.broken;
      }
      const message = receiveMessageOnPort(this.syncReplies);
      if (message === undefined) continue;
      const reply = message.message as Reply;
      if (reply.id !== id) continue;
      if (!reply.ok) throw toError(reply);
      return reply.results ?? [];
    }
  }
}

function toError(reply: Reply): PostgresLinkError {
  return new PostgresLinkError(reply.error?.message ?? "unknown PostgreSQL error", reply.error?.code);
}
