/**
 * The PostgreSQL store when its connections drop: a killed backend (pg_terminate_backend),
 * a COMMIT cut off before or after the server got it (through a proxy that cuts the
 * connection), and a server shut down and started again. The store connects again with
 * backoff; what was being committed is either committed or reported failed to what
 * waited for it, never lost silently; calls while the server is away fail at once; and the
 * listening connection, once open again, announces what was committed while it was away.
 *
 * Its own server: this file stops and starts it.
 */
import { Worker } from "node:worker_threads";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresEventStore } from "../../packages/gateway/src/store/postgres.js";
import { PostgresLink } from "../../packages/gateway/src/store/postgres-link.js";
import type { StoreError } from "../../packages/gateway/src/store/rules.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { RECORDED_AT, appendDelta, thread, thrownBy } from "./contract.js";

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the PostgreSQL reconnect tests: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;
afterAll(() => server?.stop());

const open: { close(): void }[] = [];
afterEach(() => {
  for (const store of open.splice(0).reverse()) store.close();
});

function storeOn(url: string): PostgresEventStore {
  const store = new PostgresEventStore(url, { now: () => RECORDED_AT });
  open.push(store);
  return store;
}

const committed = (store: PostgresEventStore) => new Promise<StoreError | undefined>((resolve) => store.afterCommit(resolve));

/** Terminates the backends of the database whose application is `application` (the store's is "turnspec"). */
function terminate(url: string, application: string): number {
  const admin = new PostgresLink(url, { applicationName: "turnspec test admin" });
  try {
    return admin.query(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
      [application],
    ).rows[0]!.n as number;
  } finally {
    admin.end();
  }
}

/**
 * A TCP proxy in front of the server that, once armed, cuts the connection at the next
 * COMMIT its client sends: before passing it on (the server never commits), or after
 * (the server commits, and its answer is not passed back). It runs in a worker thread:
 * the store's calls hold this thread while they wait. Arming and the count of cuts are
 * shared memory, seen at once by both threads.
 */
const CUTTER_SOURCE = `
const { workerData, parentPort } = require("node:worker_threads");
const net = require("node:net");
const state = new Int32Array(workerData.state);
const server = net.createServer((downstream) => {
  const upstream = net.connect(workerData.target, "127.0.0.1");
  let blocked = false;
  const cut = () => { Atomics.add(state, 1, 1); downstream.destroy(); upstream.destroy(); };
  downstream.on("data", (chunk) => {
    const armed = Atomics.load(state, 0);
    if (armed !== 0 && chunk.includes("COMMIT\\0")) {
      Atomics.store(state, 0, 0);
      blocked = true;
      if (armed === 1) return cut();
      upstream.write(chunk);
      // Long enough for the server to commit and answer; the answer is dropped.
      setTimeout(cut, 300);
      return;
    }
    upstream.write(chunk);
  });
  upstream.on("data", (chunk) => { if (!blocked) downstream.write(chunk); });
  for (const socket of [downstream, upstream]) socket.on("error", () => {}).on("close", () => { downstream.destroy(); upstream.destroy(); });
});
server.listen(0, "127.0.0.1", () => parentPort.postMessage(server.address().port));
`;

class CommitCutter {
  private readonly state = new Int32Array(new SharedArrayBuffer(8));
  private readonly worker: Worker;
  readonly port: Promise<number>;

  constructor(target: number) {
    this.worker = new Worker(CUTTER_SOURCE, { eval: true, workerData: { target, state: this.state.buffer } });
    this.port = new Promise((resolve) => this.worker.once("message", resolve));
  }

  arm(when: "before" | "after"): void {
    Atomics.store(this.state, 0, when === "before" ? 1 : 2);
  }

  get cut(): number {
    return Atomics.load(this.state, 1);
  }

  close(): void {
    void this.worker.terminate();
  }
}

describe.skipIf(server === undefined)("PostgresEventStore when the connection drops", () => {
  let url: string;
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  beforeEach(async () => {
    url = await server!.createDatabase();
    warnings.length = 0;
    process.on("warning", onWarning);
  });
  afterEach(() => {
    process.off("warning", onWarning);
  });

  it.each([
    ["a read, which is run again on a new one", (store: PostgresEventStore) => expect(store.getThread("thr_a")?.id).toBe("thr_a")],
    // Its lock read leaves with the group's BEGIN: nothing of the group had reached the server.
    ["an append, whose group is opened again on a new one", () => undefined],
  ])("reads and writes on through a terminated backend when what meets the dead connection first is %s", async (_what, first) => {
    const store = storeOn(url);
    store.createThread(thread("thr_a"));
    store.createTurn("thr_a", "trn_1", "t");
    appendDelta(store, "trn_1", "before");
    expect(await committed(store)).toBeUndefined();
    expect(terminate(url, "turnspec")).toBe(1);
    first(store);
    expect(appendDelta(store, "trn_1", "after").sequence).toBe(2);
    expect(await committed(store)).toBeUndefined();
    expect(store.events("trn_1").map((e) => e.params.delta)).toEqual(["before", "after"]);
    await expect.poll(() => warnings.join("\n")).toContain("connected to PostgreSQL again");
    expect(warnings.join("\n")).toContain("lost the connection to PostgreSQL");
  });

  it("fails the group a terminated backend held open, for what waited for it; the next append takes the sequence again", async () => {
    const store = storeOn(url);
    store.createThread(thread("thr_a"));
    store.createTurn("thr_a", "trn_1", "t");
    appendDelta(store, "trn_1", "kept");
    expect(await committed(store)).toBeUndefined();
    expect(appendDelta(store, "trn_1", "lost").sequence).toBe(2);
    // The group with event 2 is open on the backend being killed.
    expect(terminate(url, "turnspec")).toBe(1);
    const failure = await committed(store);
    expect(failure?.kind).toBe("commit_failed");
    expect(failure?.message).toMatch(/a commit failed and its writes are lost/);
    expect(appendDelta(store, "trn_1", "again").sequence).toBe(2);
    expect(await committed(store)).toBeUndefined();
    expect(store.events("trn_1").map((e) => [e.sequence, e.params.delta])).toEqual([
      [1, "kept"],
      [2, "again"],
    ]);
  });

  it("asks the server, once connected again, what became of a COMMIT whose answer was cut off", async () => {
    const cutter = new CommitCutter(server!.port);
    open.push(cutter);
    const through = url.replace(`:${server!.port}/`, `:${await cutter.port}/`);
    const store = storeOn(through);
    store.createThread(thread("thr_a"));
    store.createTurn("thr_a", "trn_1", "t");

    // Cut after the server got it: it committed, and the store says so.
    cutter.arm("after");
    appendDelta(store, "trn_1", "committed");
    expect(await committed(store)).toBeUndefined();
    expect(cutter.cut).toBe(1);
    expect(store.events("trn_1").map((e) => e.params.delta)).toEqual(["committed"]);
    expect(appendDelta(store, "trn_1", "next").sequence).toBe(2);
    expect(await committed(store)).toBeUndefined();

    // Cut before the server got it: it rolled back, and the store reports the failure.
    cutter.arm("before");
    appendDelta(store, "trn_1", "rolled back");
    const failure = await committed(store);
    expect(cutter.cut).toBe(2);
    expect(failure?.kind).toBe("commit_failed");
    expect(failure?.message).toContain("the server then rolled back");
    expect(store.events("trn_1").map((e) => e.params.delta)).toEqual(["committed", "next"]);
    expect(appendDelta(store, "trn_1", "after").sequence).toBe(3);
  });

  it("announces, once listening again, the commits made while its listening connection was cut", async () => {
    const watcher = storeOn(url);
    const writer = storeOn(url);
    const heard: [string, number, number][] = [];
    writer.createThread(thread("thr_a"));
    // A turn whose events all came before the watcher listened: never heard of.
    writer.createTurn("thr_a", "trn_idle", "t");
    appendDelta(writer, "trn_idle");
    appendDelta(writer, "trn_idle");
    expect(await committed(writer)).toBeUndefined();
    await watcher.shared.watch((turnId, first, last) => heard.push([turnId, first, last]));
    writer.createTurn("thr_a", "trn_old", "t");
    appendDelta(writer, "trn_old");
    await expect.poll(() => heard).toEqual([["trn_old", 1, 1]]);
    const relistening = new Promise<void>((resolve) => process.once("warning", () => resolve()));
    expect(terminate(url, "turnspec listener")).toBe(1);
    await relistening;
    // Committed while nobody listens (the connection is opened again a second later): a
    // turn heard of, a new one, and the idle one taken up again (its lease claimed) by the writer.
    appendDelta(writer, "trn_old");
    appendDelta(writer, "trn_old");
    writer.createTurn("thr_a", "trn_new", "t");
    appendDelta(writer, "trn_new");
    expect(writer.claimTurn("trn_idle", 60_000)).toBe(1);
    appendDelta(writer, "trn_idle");
    expect(await committed(writer)).toBeUndefined();
    // Caught up in creation order, each from where the watcher's knowledge of it ended.
    await expect
      .poll(() => heard, { timeout: 10_000 })
      .toEqual([
        ["trn_old", 1, 1],
        ["trn_idle", 3, 3],
        ["trn_old", 2, 3],
        ["trn_new", 1, 1],
      ]);
    appendDelta(writer, "trn_new");
    expect(await committed(writer)).toBeUndefined();
    await expect.poll(() => heard.at(-1)).toEqual(["trn_new", 2, 2]);
  });

  it("fails calls at once while the server is down, and works again, listening included, once it is back", async () => {
    const store = storeOn(url);
    const watcher = storeOn(url);
    const heard: [string, number, number][] = [];
    await watcher.shared.watch((turnId, first, last) => heard.push([turnId, first, last]));
    store.createThread(thread("thr_a"));
    store.createTurn("thr_a", "trn_1", "t");
    appendDelta(store, "trn_1", "before");
    expect(await committed(store)).toBeUndefined();
    await expect.poll(() => heard).toEqual([["trn_1", 1, 1]]);

    await server!.shutDown();
    const down = thrownBy(() => store.getThread("thr_a")) as StoreError;
    expect(down.kind).toBe("database_error");
    expect(down.message).toContain("the connection to PostgreSQL was lost");
    await server!.start();

    // Back: the next call after the backoff connects again.
    await expect
      .poll(
        () => {
          try {
            return store.getThread("thr_a")?.id;
          } catch (error) {
            return (error as Error).message;
          }
        },
        { timeout: 15_000, interval: 200 },
      )
      .toBe("thr_a");
    expect(appendDelta(store, "trn_1", "after").sequence).toBe(2);
    expect(await committed(store)).toBeUndefined();
    expect(store.events("trn_1").map((e) => e.params.delta)).toEqual(["before", "after"]);
    // The watcher hears it, announced live or caught up once it listens again, once.
    await expect
      .poll(() => heard, { timeout: 15_000 })
      .toEqual([
        ["trn_1", 1, 1],
        ["trn_1", 2, 2],
      ]);
  });
});
