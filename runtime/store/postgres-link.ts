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
import { createRequire } from "node:module";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";

export interface Statement {
  readonly sql: string;
  readonly params?: readonly unknown[];
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
}

/**
 * The worker's code, as plain JavaScript evaluated in the worker: it must not depend on
 * how this module was compiled. Requests run one at a time, in arrival order.
 *
 * - `run` runs statements; with `guard`, as one unit: inside a transaction under a
 *   savepoint (a failure undoes only them), outside one in a transaction of their own.
 *   A failure of unguarded statements inside a transaction marks it failed.
 * - `begin` / `commit`: the group transaction. A commit of a failed transaction rolls it
 *   back and answers with the first failure.
 */
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { url, pgPath, signal, requests, syncReplies, asyncReplies, connectTimeoutMs, applicationName } = workerData;
const pg = require(pgPath);
const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs, application_name: applicationName });
let inTransaction = false;
let failed = null;
let lost = null;
client.on("error", (error) => { lost = lost || error; });
async function run(request) {
  if (lost && request.op !== "end") throw lost;
  switch (request.op) {
    case "connect":
      await client.connect();
      return [];
    case "begin":
      await client.query("BEGIN");
      inTransaction = true;
      failed = null;
      return [];
    case "commit": {
      inTransaction = false;
      if (failed) {
        const first = failed;
        failed = null;
        await client.query("ROLLBACK").catch(() => {});
        throw first;
      }
      await client.query("COMMIT");
      return [];
    }
    case "run": {
      if (inTransaction && failed) throw failed;
      const guard = request.guard;
      if (guard) await client.query(inTransaction ? "SAVEPOINT turnspec_guard" : "BEGIN");
      const results = [];
      try {
        for (const statement of request.statements) {
          const result = await client.query(statement.sql, statement.params);
          results.push({ rows: result.rows, rowCount: result.rowCount ?? 0 });
        }
      } catch (error) {
        if (guard) await client.query(inTransaction ? "ROLLBACK TO SAVEPOINT turnspec_guard" : "ROLLBACK").catch(() => {});
        else if (inTransaction) failed = failed || error;
        throw error;
      }
      if (guard) await client.query(inTransaction ? "RELEASE SAVEPOINT turnspec_guard" : "COMMIT");
      return results;
    }
    case "end":
      await client.end().catch(() => {});
      return [];
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
}

export class PostgresLink {
  private readonly worker: Worker;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private readonly requests: MessagePort;
  private readonly syncReplies: MessagePort;
  private readonly asyncReplies: MessagePort;
  private readonly callTimeoutMs: number;
  private nextId = 1;
  /** Answers awaited by asynchronous requests, in the order they were sent. */
  private readonly awaiting = new Map<number, (reply: Reply) => void>();
  private broken: Error | undefined;
  private ended = false;

  /** Starts the worker and connects; throws a PostgresLinkError when the server cannot be reached. */
  constructor(url: string, options: PostgresLinkOptions = {}) {
    this.callTimeoutMs = options.callTimeoutMs ?? 30_000;
    const requests = new MessageChannel();
    const syncReplies = new MessageChannel();
    const asyncReplies = new MessageChannel();
    this.requests = requests.port1;
    this.syncReplies = syncReplies.port1;
    this.asyncReplies = asyncReplies.port1;
    const pgPath = createRequire(import.meta.url).resolve("pg");
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

  /** Sends statements without waiting: a failure inside a transaction fails its commit. */
  post(statements: readonly Statement[]): void {
    this.send({ op: "run", statements, guard: false, sync: false, answer: false });
  }

  begin(): void {
    this.call({ op: "begin" });
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
