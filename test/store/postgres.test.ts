/**
 * The PostgreSQL event store on a real server: the shared contract (contract.ts), then
 * what a shared database adds: a reopened store continues each turn's sequence, two
 * stores on one database (as two instances are) share ordinals, sequences and the route
 * compare-and-set, the commit barrier waits for the server, and a database of a newer
 * schema or an unreachable server is refused with a clear error.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  POSTGRES_CHAIN_MAX_GROUPS,
  POSTGRES_GROUP_COMMIT_LIMIT,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  POSTGRES_TURN_WRITER_LOCK,
  PostgresEventStore,
} from "../../packages/gateway/src/store/postgres.js";
import { PostgresLink } from "../../packages/gateway/src/store/postgres-link.js";
import { openStore } from "../../packages/gateway/src/store/open.js";
import type { StoreError } from "../../packages/gateway/src/store/rules.js";
import type { StoredEvent } from "../../packages/gateway/src/store/store.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { RECORDED_AT, appendDelta, committed, ids, route, storeContract, thread, thrownBy } from "./contract.js";

/** Claims a resolution the way a store does, holds the transaction open for half a second, then ends it as told. */
const OTHER_CLAIM = `
const { workerData, parentPort } = require("node:worker_threads");
const pg = require(workerData.pgPath);
(async () => {
  const client = new pg.Client({ connectionString: workerData.url });
  await client.connect();
  await client.query("BEGIN");
  await client.query("SELECT 1 FROM turns WHERE turn_id = 'trn_1' FOR NO KEY UPDATE");
  await client.query("INSERT INTO resolutions (turn_id, subject, owner) VALUES ('trn_1', $1, 'ins_other')", [workerData.subject]);
  parentPort.postMessage("claimed");
  setTimeout(async () => {
    await client.query(workerData.end);
    await client.end();
  }, 500);
})();
`;

/** Another instance's claim of trn_1 in flight: the turn's row locked and its generation raised, committed half a second later. */
const OTHER_TAKEOVER = `
const { workerData, parentPort } = require("node:worker_threads");
const pg = require(workerData.pgPath);
(async () => {
  const client = new pg.Client({ connectionString: workerData.url });
  await client.connect();
  await client.query("BEGIN");
  await client.query("SELECT 1 FROM turns WHERE turn_id = 'trn_1' FOR NO KEY UPDATE");
  await client.query("UPDATE turns SET generation = generation + 1 WHERE turn_id = 'trn_1'");
  parentPort.postMessage("claimed");
  if (workerData.claimed) {
    Atomics.store(workerData.claimed, 0, 1);
    Atomics.notify(workerData.claimed, 0);
  }
  setTimeout(async () => {
    await client.query("COMMIT");
    await client.end();
  }, 500);
})();
`;

/**
 * Another instance's append to trn_1, the way a store makes one: the turn's writer lock,
 * its row lock, its highest sequence, a run after it. Connects, says so, waits for the
 * test's go (a shared flag, so the test's event loop need not run), then appends and
 * posts the sequence it took.
 */
const OTHER_APPEND = `
const { workerData, parentPort } = require("node:worker_threads");
const pg = require(workerData.pgPath);
(async () => {
  const client = new pg.Client({ connectionString: workerData.url });
  await client.connect();
  parentPort.postMessage({ connected: true });
  Atomics.wait(workerData.go, 0, 0);
  await client.query("BEGIN");
  await client.query("SELECT pg_advisory_xact_lock($1, hashtext('trn_1'))", [workerData.writerLock]);
  await client.query("SELECT 1 FROM turns WHERE turn_id = 'trn_1' FOR NO KEY UPDATE");
  const { rows } = await client.query("SELECT COALESCE(MAX(last), 0) AS last FROM event_runs WHERE turn_id = 'trn_1'");
  const sequence = rows[0].last + 1;
  await client.query(
    "INSERT INTO event_runs (turn_id, first, last, thread_id, methods, params, recorded_at) VALUES ('trn_1', $1, $1, 'thr_a', 'other/append', '{}', 't')",
    [sequence],
  );
  await client.query("COMMIT");
  parentPort.postMessage({ sequence });
  await client.end();
})();
`;

/** Waits, blocking this thread (so that no timer of the event loop runs meanwhile), until `done` holds; 10 s at most. */
function spinUntil(what: string, done: () => boolean): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`waited 10 s for ${what}`);
    Atomics.wait(pause, 0, 0, 2);
  }
}

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the PostgreSQL store tests: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;

afterAll(() => server?.stop());

describe.skipIf(server === undefined)("PostgresEventStore", () => {
  let url: string;
  beforeEach(async () => {
    url = await server!.createDatabase();
  });

  storeContract(
    "contract",
    (now) => new PostgresEventStore(url, now === undefined ? {} : { now }),
    // A real failure of PostgreSQL's COMMIT: a deferred constraint trigger on the event raises there.
    async (_store, method) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`
        CREATE FUNCTION doom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the commit of ${method} is doomed'; END $$;
        CREATE CONSTRAINT TRIGGER doom AFTER INSERT ON event_runs DEFERRABLE INITIALLY DEFERRED
          FOR EACH ROW WHEN (position(E'\\x1e${method}\\x1e' in E'\\x1e' || NEW.methods || E'\\x1e') > 0) EXECUTE FUNCTION doom();
      `);
      return async () => {
        await client.query(`DROP TRIGGER doom ON event_runs; DROP FUNCTION doom();`);
        await client.end();
      };
    },
  );

  describe("on a shared database", () => {
    const open: PostgresEventStore[] = [];
    const connect = () => {
      const store = new PostgresEventStore(url, { now: () => RECORDED_AT });
      open.push(store);
      return store;
    };
    afterEach(() => {
      for (const store of open.splice(0)) store.close();
    });

    it("gives a reopened store everything back, and continues each turn's sequence without a gap", () => {
      const first = connect();
      first.createThread(thread("thr_a", { model: "gpt-test" }));
      first.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
      first.createTurn("thr_a", "trn_2", "2025-01-01T00:00:02Z");
      for (let i = 0; i < 5; i++) appendDelta(first, "trn_2", `d${i}`);
      first.insertRoute(route("rte_1", "exe_1"));
      first.close();

      const second = connect();
      expect(second.getThread("thr_a")).toStrictEqual(thread("thr_a", { model: "gpt-test" }));
      expect(second.turnsOfThread("thr_a").map((t) => t.turn_id)).toEqual(["trn_1", "trn_2"]);
      expect(second.lastSequence("trn_2")).toBe(5);
      expect(appendDelta(second, "trn_2").sequence).toBe(6);
      expect(second.events("trn_2").map((e) => e.params.delta)).toEqual(["d0", "d1", "d2", "d3", "d4", "x"]);
      expect(second.insertRoute(route("rte_2", "exe_1")).ordinal).toBe(2);
    });

    it("lets two stores on one database interleave appends to one turn without a gap or a repeat", () => {
      const one = connect();
      const two = connect();
      one.createThread(thread("thr_a"));
      one.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
      const sequences: number[] = [];
      for (let i = 0; i < 10; i++) sequences.push(appendDelta(i % 2 === 0 ? one : two, "trn_1", `d${i}`).sequence);
      expect(sequences).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(one.events("trn_1").map((e) => e.params.delta)).toEqual(two.events("trn_1").map((e) => e.params.delta));
      expect(two.lastSequence("trn_1")).toBe(10);
    });

    it("shares turn and route ordinals, idempotency keys and the route compare-and-set between two stores", () => {
      const one = connect();
      const two = connect();
      one.createThread(thread("thr_a"));
      expect(one.createTurn("thr_a", "trn_1", "t")).toBe(true);
      expect(two.createTurn("thr_a", "trn_1", "t")).toBe(false);
      expect(two.createTurn("thr_a", "trn_2", "t")).toBe(true);
      expect(one.turnsOfThread("thr_a").map((t) => t.turn_id)).toEqual(["trn_1", "trn_2"]);

      one.insertRoute(route("rte_1", "exe_1"));
      two.insertRoute(route("rte_2", "exe_1"));
      expect(ids(one.routesBySource("exe_1"))).toEqual([
        ["rte_1", 1],
        ["rte_2", 2],
      ]);
      expect((thrownBy(() => two.insertRoute(route("rte_1", "exe_1"))) as StoreError).kind).toBe("route_exists");

      expect(one.updateRoute(route("rte_1", "exe_1", { generation: 2, status: "revoked" }), 1)).toBe(true);
      // The second instance read generation 1 too: its compare-and-set must lose.
      expect(two.updateRoute(route("rte_1", "exe_1", { generation: 2, status: "active" }), 1)).toBe(false);
      expect(two.getRoute("rte_1")?.route.status).toBe("revoked");

      const record = { operation: "agent/route/create", params_digest: "d", route_id: "rte_1" };
      expect(one.putIdempotency("key_1", record)).toBe(true);
      expect(two.putIdempotency("key_1", { ...record, route_id: "rte_2" })).toBe(false);
      expect(two.getIdempotency("agent/route/create", "key_1")).toEqual(record);
    });

    it("decides each resolution once across stores, and draws one token secret for all of them", async () => {
      const one = connect();
      const two = connect();
      one.createThread(thread("thr_a"));
      one.createTurn("thr_a", "trn_1", "t");
      one.createTurn("thr_a", "trn_2", "t");
      expect(one.shared.claimResolution("trn_1", "permission:perm_1")).toBe(true);
      // Not yet committed: the other store has this one's group committed first, then loses.
      expect(two.shared.claimResolution("trn_1", "permission:perm_1")).toBe(false);
      expect(one.shared.claimResolution("trn_1", "permission:perm_1")).toBe(false);
      expect(two.shared.claimResolution("trn_2", "permission:perm_1")).toBe(true);
      expect(two.shared.claimResolution("trn_1", "question:call_1#0")).toBe(true);
      await new Promise<void>((resolve) => two.afterCommit(() => resolve()));
      expect(one.shared.claimResolution("trn_1", "question:call_1#0")).toBe(false);
      expect(one.shared.tokenSecret()).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(two.shared.tokenSecret()).toBe(one.shared.tokenSecret());
      expect(connect().shared.tokenSecret()).toBe(one.shared.tokenSecret());
      const other = new PostgresEventStore(await server!.createDatabase());
      open.push(other);
      expect(other.shared.tokenSecret()).not.toBe(one.shared.tokenSecret());
    });

    it("makes a claim wait for another instance's claim still in flight, and lose to it if committed, win if rolled back", async () => {
      const store = connect();
      store.createThread(thread("thr_a"));
      store.createTurn("thr_a", "trn_1", "t");
      await new Promise<void>((resolve) => store.afterCommit(() => resolve()));
      for (const [end, wins] of [
        ["COMMIT", false],
        ["ROLLBACK", true],
      ] as const) {
        // Another instance's claim, in a thread of its own: it holds its transaction open a
        // while (this thread is blocked meanwhile, waiting in the database), then ends it.
        const other = new Worker(OTHER_CLAIM, {
          eval: true,
          workerData: { url, pgPath: createRequire(import.meta.url).resolve("pg"), subject: `permission:perm_${end}`, end },
        });
        await new Promise((resolve) => other.once("message", resolve));
        expect(store.shared.claimResolution("trn_1", `permission:perm_${end}`), end).toBe(wins);
        await new Promise<void>((resolve) => store.afterCommit(() => resolve()));
        await other.terminate();
      }
    });

    it("fences an instance whose lease another took over: its writes carrying the old generation are refused", async () => {
      const one = connect();
      const two = connect();
      one.createThread(thread("thr_a"));
      one.createTurn("thr_a", "trn_1", "t");
      const held = one.claimTurn("trn_1", 300)!;
      expect(appendDelta(one, "trn_1", "a").sequence).toBe(1);
      expect(await committed(one)).toBeUndefined();
      // Held and unexpired: the other instance cannot take it.
      expect(two.claimTurn("trn_1", 60_000)).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 400));
      const taken = two.claimTurn("trn_1", 60_000)!;
      expect(taken).toBeGreaterThan(held);
      expect(await committed(two)).toBeUndefined();
      // The first instance wakes up and writes on: refused, nothing of it stored.
      const refused = thrownBy(() =>
        one.append(
          "trn_1",
          "item/agent_message/delta",
          (sequence) => ({ thread_id: "thr_a", turn_id: "trn_1", sequence, item_id: "i", stream: "agent_message", delta: "late" }),
          held,
        ),
      ) as StoreError;
      expect(refused.kind).toBe("turn_fenced");
      // Its lease is gone too; it cannot take the turn back while the other holds it.
      expect(one.shared.renewLeases(60_000, ["trn_1"])).toEqual([]);
      expect(one.claimTurn("trn_1", 60_000)).toBeUndefined();
      expect(
        two.append(
          "trn_1",
          "item/agent_message/delta",
          (sequence) => ({ thread_id: "thr_a", turn_id: "trn_1", sequence, item_id: "i", stream: "agent_message", delta: "b" }),
          taken,
        ).sequence,
      ).toBe(2);
      expect(await committed(two)).toBeUndefined();
      expect(one.events("trn_1").map((e) => e.params.delta)).toEqual(["a", "b"]);
    });

    it("refuses a resolution claim carrying a generation another instance's takeover replaced, and leaves the subject to the turn's holder", async () => {
      const one = connect();
      const two = connect();
      one.createThread(thread("thr_a"));
      one.createTurn("thr_a", "trn_1", "t");
      const held = one.claimTurn("trn_1", 300)!;
      expect(one.shared.claimResolution("trn_1", "permission:req_1", held)).toBe(true);
      expect(await committed(one)).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 400));
      const taken = two.claimTurn("trn_1", 60_000)!;
      expect(await committed(two)).toBeUndefined();
      // The first instance wakes up and its timer resolves another request: refused, nothing claimed.
      const refused = thrownBy(() => one.shared.claimResolution("trn_1", "permission:req_2", held)) as StoreError;
      expect(refused.kind).toBe("turn_fenced");
      expect(refused.message).toContain(`generation ${held}`);
      expect(await committed(one)).toBeUndefined();
      // The subject is the holder's to claim, once; what was claimed before the takeover stays claimed.
      expect(two.shared.claimResolution("trn_1", "permission:req_2", taken)).toBe(true);
      expect(two.shared.claimResolution("trn_1", "permission:req_1", taken)).toBe(false);
      // An instance that does not run the turn (an answer that reached it) claims without a generation.
      expect(one.shared.claimResolution("trn_1", "question:call_1:0")).toBe(true);
      expect(await committed(two)).toBeUndefined();
      expect(await committed(one)).toBeUndefined();
    });

    it("compares an append's generation after a claim in flight commits, not before", async () => {
      const store = connect();
      store.createThread(thread("thr_a"));
      store.createTurn("thr_a", "trn_1", "t");
      const held = store.claimTurn("trn_1", 60_000)!;
      expect(await committed(store)).toBeUndefined();
      const other = new Worker(OTHER_TAKEOVER, { eval: true, workerData: { url, pgPath: createRequire(import.meta.url).resolve("pg") } });
      await new Promise((resolve) => other.once("message", resolve));
      // The append waits for the other instance's claim (its row lock), then reads the generation it committed.
      const late = thrownBy(() =>
        store.append(
          "trn_1",
          "item/agent_message/delta",
          (sequence) => ({ thread_id: "thr_a", turn_id: "trn_1", sequence, item_id: "i", stream: "agent_message", delta: "late" }),
          held,
        ),
      ) as StoreError;
      expect(late.kind).toBe("turn_fenced");
      expect(await committed(store)).toBeUndefined();
      await other.terminate();
      expect(store.lastSequence("trn_1")).toBe(0);
    });

    it("runs afterCommit only once the server has committed the events, and another connection then sees them", async () => {
      const store = connect();
      store.createThread(thread("thr_a"));
      store.createTurn("thr_a", "trn_1", "t");
      // A synchronous connection: it looks without letting the event loop (and the commit) run.
      const observer = new PostgresLink(url);
      try {
        const count = () => observer.query("SELECT count(*)::int AS n FROM events").rows[0]!.n;
        for (let i = 0; i < 3; i++) appendDelta(store, "trn_1");
        let committed = false;
        const seen = new Promise<StoreError | undefined>((resolve) =>
          store.afterCommit((failure) => {
            committed = true;
            resolve(failure);
          }),
        );
        // Still inside the turn of the event loop that appended: nothing is committed yet.
        expect(committed).toBe(false);
        expect(count()).toBe(0);
        expect(await seen).toBeUndefined();
        expect(count()).toBe(3);
      } finally {
        observer.end();
      }
    });

    // A read that reached the server while another connection holds the log's tables would
    // wait this long and fail; opening the store is a call too, and on a busy machine it can
    // take longer than a second, so the bound is not tighter than this.
    const BLOCKED_READ_MS = 10_000;

    it("answers what follows a turn's end, and its last sequence, without waiting for the server", async () => {
      const store = new PostgresEventStore(url, { now: () => RECORDED_AT, callTimeoutMs: BLOCKED_READ_MS });
      open.push(store);
      store.createThread(thread("thr_a"));
      store.createTurn("thr_a", "trn_1", "t");
      appendDelta(store, "trn_1", "a");
      appendDelta(store, "trn_1", "b");
      store.append("trn_1", "turn/completed", (sequence) => ({ thread_id: "thr_a", turn_id: "trn_1", sequence }));
      expect(await committed(store)).toBeUndefined();
      // Another connection holds every table of the log: a read that went to the server would time out.
      const whileBlocked = async (reads: () => void) => {
        const blocker = new pg.Client({ connectionString: url });
        await blocker.connect();
        try {
          await blocker.query("BEGIN");
          await blocker.query("LOCK TABLE event_runs, turns IN ACCESS EXCLUSIVE MODE");
          reads();
        } finally {
          await blocker.query("ROLLBACK");
          await blocker.end();
        }
      };
      await whileBlocked(() => {
        expect(store.events("trn_1", 3)).toEqual([]);
        expect(store.events("trn_1", 7, 5)).toEqual([]);
        expect(store.lastSequence("trn_1")).toBe(3);
        expect(store.turnThread("trn_1")).toBe("thr_a");
      });
      // The events it appended are not kept (their end is); once read, they are.
      expect(store.events("trn_1").map((e) => e.params.delta ?? e.method)).toEqual(["a", "b", "turn/completed"]);
      await whileBlocked(() => {
        expect(store.events("trn_1", 1).map((e) => e.method)).toEqual(["item/agent_message/delta", "turn/completed"]);
      });
      // And the end stays final: nothing is appended after it.
      expect((thrownBy(() => appendDelta(store, "trn_1")) as StoreError).kind).toBe("turn_fenced");
    });

    it("refuses an append after a turn's end in the same group too, and keeps nothing of it", async () => {
      const store = connect();
      store.createThread(thread("thr_a"));
      store.createTurn("thr_a", "trn_1", "t");
      appendDelta(store, "trn_1", "a");
      store.append("trn_1", "turn/failed", (sequence) => ({ thread_id: "thr_a", turn_id: "trn_1", sequence }));
      const refused = thrownBy(() => appendDelta(store, "trn_1", "late")) as StoreError;
      expect(refused.kind).toBe("turn_fenced");
      expect(refused.message).toContain("the turn ended with turn/failed at sequence 2");
      expect(await committed(store)).toBeUndefined();
      expect(
        connect()
          .events("trn_1")
          .map((e) => e.method),
      ).toEqual(["item/agent_message/delta", "turn/failed"]);
    });

    it("answers the log of a turn its own open group created without the server", async () => {
      const store = new PostgresEventStore(url, { now: () => RECORDED_AT, callTimeoutMs: BLOCKED_READ_MS });
      open.push(store);
      store.createThread(thread("thr_a"));
      expect(await committed(store)).toBeUndefined();
      // Another connection holds the log's table: a read of it would time out.
      const blocker = new pg.Client({ connectionString: url });
      await blocker.connect();
      try {
        await blocker.query("BEGIN");
        await blocker.query("LOCK TABLE event_runs IN ACCESS EXCLUSIVE MODE");
        store.createTurn("thr_a", "trn_1", "t");
        expect(store.events("trn_1")).toEqual([]);
        expect(store.lastSequence("trn_1")).toBe(0);
        expect(store.turnThread("trn_1")).toBe("thr_a");
      } finally {
        await blocker.query("ROLLBACK");
        await blocker.end();
      }
      expect(await committed(store)).toBeUndefined();
      expect(connect().turnThread("trn_1")).toBe("thr_a");
    });

    it("appends to a turn its own open group created without locking it again, from sequence 1 and at the generation it claimed", () => {
      const store = connect();
      store.createThread(thread("thr_a"));
      store.createTurn("thr_a", "trn_1", "t");
      const generation = store.claimTurn("trn_1", 30_000)!;
      expect(generation).toBe(1);
      expect(store.turnThread("trn_1")).toBe("thr_a");
      expect(store.append("trn_1", "item/agent_message/delta", (sequence) => ({ turn_id: "trn_1", sequence }), generation).sequence).toBe(
        1,
      );
      expect(
        (thrownBy(() => store.append("trn_1", "item/agent_message/delta", (sequence) => ({ turn_id: "trn_1", sequence }), 0)) as StoreError)
          .kind,
      ).toBe("turn_fenced");
      expect(store.lastSequence("trn_1")).toBe(1);
      // Another store sees the turn and its event once this one's group commits, and goes on from there.
      const other = connect();
      expect(appendDelta(other, "trn_1").sequence).toBe(2);
      expect(other.events("trn_1").map((e) => e.sequence)).toEqual([1, 2]);
    });

    it("commits a burst that never yields every POSTGRES_GROUP_COMMIT_LIMIT appends, so its first frames can leave", () => {
      const store = connect();
      store.createThread(thread("thr_a"));
      store.createTurn("thr_a", "trn_1", "t");
      const observer = new PostgresLink(url);
      try {
        const count = () => observer.query("SELECT count(*)::int AS n FROM events").rows[0]!.n as number;
        const committedAt: number[] = [];
        for (let i = 1; i <= POSTGRES_GROUP_COMMIT_LIMIT + 10; i++) {
          appendDelta(store, "trn_1");
          if (i === 1) store.afterCommit(() => committedAt.push(count()));
        }
        // Without yielding: the first group was committed at the limit, and its callback ran.
        expect(committedAt).toEqual([POSTGRES_GROUP_COMMIT_LIMIT]);
        expect(count()).toBe(POSTGRES_GROUP_COMMIT_LIMIT);
      } finally {
        observer.end();
      }
    });

    it("reports a lost commit to what waited for it, and the next append reuses the sequence", async () => {
      const store = connect();
      store.createThread(thread("thr_a"));
      store.createTurn("thr_a", "trn_1", "t");
      appendDelta(store, "trn_1");
      await new Promise<void>((resolve) => store.afterCommit(() => resolve()));
      // Another writer that ignores the turn's row lock takes sequence 2 while this
      // store's group holds it: the group's insert of 2 then fails at the commit.
      const intruder = new PostgresLink(url);
      try {
        expect(appendDelta(store, "trn_1", "lost").sequence).toBe(2);
        intruder.query(
          "INSERT INTO event_runs (turn_id, first, last, thread_id, methods, params, recorded_at) VALUES ('trn_1', 2, 2, 'thr_a', 'm', '{}', 't')",
        );
        const failure = await new Promise<StoreError | undefined>((resolve) => store.afterCommit(resolve));
        expect(failure?.kind).toBe("commit_failed");
        expect(failure?.message).toMatch(/a commit failed and its writes are lost: duplicate key value/);
        expect(store.events("trn_1").map((e) => [e.sequence, e.method])).toEqual([
          [1, "item/agent_message/delta"],
          [2, "m"],
        ]);
        expect(appendDelta(store, "trn_1").sequence).toBe(3);
      } finally {
        intruder.end();
      }
    });

    describe("a burst held on to from one group to the next", () => {
      const BURST = 100;
      const nextTurnOfLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
      /** The turns' writer locks on the server: held (granted) and waited for. */
      const writerLocks = (observer: PostgresLink) =>
        observer.query(
          `SELECT count(*) FILTER (WHERE granted)::int AS held, count(*) FILTER (WHERE NOT granted)::int AS waiting
           FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::bigint::oid`,
          [POSTGRES_TURN_WRITER_LOCK],
        ).rows[0] as { held: number; waiting: number };
      /** A turn the store runs: created, committed, and claimed (its appends carry the generation the claim got). */
      const burstTurn = async () => {
        const store = connect();
        store.createThread(thread("thr_a"));
        store.createTurn("thr_a", "trn_1", "t");
        expect(await committed(store)).toBeUndefined();
        const generation = store.claimTurn("trn_1", 60_000)!;
        expect(await committed(store)).toBeUndefined();
        return { store, generation };
      };
      const round = ({ store, generation }: { store: PostgresEventStore; generation: number }) => {
        for (let i = 0; i < BURST; i++)
          store.append("trn_1", "item/agent_message/delta", (sequence) => ({ turn_id: "trn_1", sequence, delta: "x" }), generation);
      };

      it("keeps another instance's append waiting while it streams, lets it in after POSTGRES_CHAIN_MAX_GROUPS groups, and numbers after it", async () => {
        const running = await burstTurn();
        const { store } = running;
        const observer = new PostgresLink(url);
        const go = new Int32Array(new SharedArrayBuffer(4));
        const other = new Worker(OTHER_APPEND, {
          eval: true,
          workerData: { url, pgPath: createRequire(import.meta.url).resolve("pg"), go, writerLock: POSTGRES_TURN_WRITER_LOCK },
        });
        try {
          let taken: number | undefined;
          other.on("message", (message: { sequence?: number }) => (taken ??= message.sequence));
          await new Promise((resolve) => other.once("message", resolve));
          round(running);
          // The first group's commit is sent: it holds on to the turn's writer lock. From here
          // to the next round nothing lets the event loop run, so nothing lets the lock go.
          await nextTurnOfLoop();
          spinUntil("the writer lock to be held", () => writerLocks(observer).held === 1);
          Atomics.store(go, 0, 1);
          Atomics.notify(go, 0);
          spinUntil("the other instance to wait for it", () => writerLocks(observer).waiting === 1);
          let rounds = 1;
          while (taken === undefined && rounds < 3 * POSTGRES_CHAIN_MAX_GROUPS) {
            round(running);
            rounds++;
            await nextTurnOfLoop();
          }
          // Held through the commit of group POSTGRES_CHAIN_MAX_GROUPS + 1 and let go after it;
          // the other instance then takes the turn's row lock between two groups.
          expect(taken).toBeGreaterThanOrEqual((POSTGRES_CHAIN_MAX_GROUPS + 1) * BURST + 1);
          expect((taken! - 1) % BURST).toBe(0);
          expect(await committed(store)).toBeUndefined();
          const log = store.events("trn_1");
          expect(log.map((e) => e.sequence)).toEqual(Array.from({ length: rounds * BURST + 1 }, (_, i) => i + 1));
          expect(log.filter((e) => e.method === "other/append").map((e) => e.sequence)).toEqual([taken]);
          // Nothing is held on to once the burst ends.
          await expect.poll(() => writerLocks(observer)).toEqual({ held: 0, waiting: 0 });
        } finally {
          observer.end();
          await other.terminate();
        }
      });

      it("lets go of it for another store of the same process, which appends after the burst and before the next", async () => {
        const running = await burstTurn();
        const { store } = running;
        const other = connect();
        round(running);
        await nextTurnOfLoop();
        // Waiting for the lock on this event loop would never end: the holder lets it go first.
        expect(appendDelta(other, "trn_1", "other").sequence).toBe(BURST + 1);
        round(running);
        expect(store.lastSequence("trn_1")).toBe(2 * BURST + 1);
        expect(await committed(store)).toBeUndefined();
        expect(store.events("trn_1").map((e) => e.sequence)).toEqual(Array.from({ length: 2 * BURST + 1 }, (_, i) => i + 1));
      });

      it("does not hold up another instance's takeover, and fails its next group as fenced off", async () => {
        const running = await burstTurn();
        const { store, generation } = running;
        const observer = new PostgresLink(url);
        const claimed = new Int32Array(new SharedArrayBuffer(4));
        try {
          round(running);
          await nextTurnOfLoop();
          spinUntil("the writer lock to be held", () => writerLocks(observer).held === 1);
          // A claim takes no writer lock: it is not held up while this instance holds on to it.
          const other = new Worker(OTHER_TAKEOVER, {
            eval: true,
            workerData: { url, pgPath: createRequire(import.meta.url).resolve("pg"), claimed },
          });
          try {
            spinUntil("the other instance's claim", () => Atomics.load(claimed, 0) === 1);
            round(running);
            const failure = await committed(store);
            expect(failure?.kind).toBe("commit_failed");
            expect(failure?.message).toContain(
              `expected {"generation":${generation},"last":${BURST}}, found {"generation":${generation + 1},"last":${BURST}}`,
            );
            expect(store.lastSequence("trn_1")).toBe(BURST);
          } finally {
            await other.terminate();
          }
        } finally {
          observer.end();
        }
      });

      it("fails the group numbered from memory when another writer that takes no writer lock got in between, and goes on from what that writer left", async () => {
        const running = await burstTurn();
        const { store, generation } = running;
        const observer = new PostgresLink(url);
        try {
          round(running);
          await nextTurnOfLoop();
          spinUntil("the writer lock to be held", () => writerLocks(observer).held === 1);
          observer.query(
            `INSERT INTO event_runs (turn_id, first, last, thread_id, methods, params, recorded_at)
             VALUES ('trn_1', $1, $1, 'thr_a', 'intruder', '{}', 't')`,
            [BURST + 1],
          );
          round(running);
          const failure = await committed(store);
          expect(failure?.kind).toBe("commit_failed");
          expect(failure?.message).toContain(
            `turn trn_1 changed while this instance held on to it (another instance took it over, or a writer took no writer lock): expected {"generation":${generation},"last":${BURST}}, found {"generation":${generation},"last":${BURST + 1}}`,
          );
          // Nothing of the failed group is stored, and nothing is held on to any more.
          const log = store.events("trn_1");
          expect(log.map((e) => e.sequence)).toEqual(Array.from({ length: BURST + 1 }, (_, i) => i + 1));
          expect(log.at(-1)!.method).toBe("intruder");
          expect(writerLocks(observer)).toEqual({ held: 0, waiting: 0 });
          expect(appendDelta(store, "trn_1").sequence).toBe(BURST + 2);
          expect(await committed(store)).toBeUndefined();
        } finally {
          observer.end();
        }
      });
    });

    it("fails a transaction whose posted statement does not find the row it expects, and commits nothing of it", async () => {
      const link = new PostgresLink(url);
      try {
        link.query("CREATE TABLE expected (n integer)");
        link.begin();
        link.post([
          { sql: "INSERT INTO expected VALUES (1)" },
          { sql: "SELECT count(*)::int AS n FROM expected", expect: { row: { n: 2 }, otherwise: "one row, not two" } },
          { sql: "INSERT INTO expected VALUES (2)" },
        ]);
        const failure = await new Promise<Error | undefined>((resolve) => link.commit(resolve));
        expect(failure?.message).toBe('one row, not two: expected {"n":2}, found {"n":1}');
        expect(link.query("SELECT count(*)::int AS n FROM expected").rows).toEqual([{ n: 0 }]);
        link.begin();
        link.post([
          { sql: "SELECT n FROM expected", expect: { row: null, otherwise: "no row" } },
          { sql: "INSERT INTO expected VALUES (3)" },
        ]);
        expect(await new Promise<Error | undefined>((resolve) => link.commit(resolve))).toBeUndefined();
        expect(link.query("SELECT n FROM expected").rows).toEqual([{ n: 3 }]);
      } finally {
        link.end();
      }
    });

    it("compresses the texts of event runs with lz4 where the server has it", async () => {
      connect();
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const lz4 = await admin.query(`SELECT 'lz4' = ANY (enumvals) AS has FROM pg_settings WHERE name = 'default_toast_compression'`);
        const columns = await admin.query(
          `SELECT attname, attcompression FROM pg_attribute WHERE attrelid = 'event_runs'::regclass AND attname IN ('methods', 'params', 'recorded_at') ORDER BY attname`,
        );
        const expected = lz4.rows[0]?.has === true ? "l" : "";
        expect(columns.rows).toEqual(["methods", "params", "recorded_at"].map((attname) => ({ attname, attcompression: expected })));
      } finally {
        await admin.end();
      }
    });

    it("announces another store's commits to a watcher, turn by turn with their first and last sequence, never its own", async () => {
      const watcher = connect();
      const writer = connect();
      const heard: [string, number, number][] = [];
      await watcher.shared.watch((turnId, first, last) => heard.push([turnId, first, last]));
      writer.createThread(thread("thr_a"));
      writer.createTurn("thr_a", "trn_1", "t");
      writer.createTurn("thr_a", "trn_2", "t");
      for (let i = 0; i < 3; i++) appendDelta(writer, "trn_1");
      appendDelta(writer, "trn_2");
      await new Promise<void>((resolve) => writer.afterCommit(() => resolve()));
      appendDelta(watcher, "trn_2");
      await new Promise<void>((resolve) => watcher.afterCommit(() => resolve()));
      appendDelta(writer, "trn_1");
      await new Promise<void>((resolve) => writer.afterCommit(() => resolve()));
      await expect
        .poll(() => heard)
        .toEqual([
          ["trn_1", 1, 3],
          ["trn_2", 1, 1],
          ["trn_1", 4, 4],
        ]);
    });

    it("announces the events themselves, in payloads PostgreSQL accepts, and an event too large for one by its range alone", async () => {
      const watcher = connect();
      const writer = connect();
      const heard: { turnId: string; first: number; last: number; events: readonly StoredEvent[] | undefined }[] = [];
      await watcher.shared.watch((turnId, first, last, events) => heard.push({ turnId, first, last, events }));
      writer.createThread(thread("thr_a"));
      writer.createTurn("thr_a", "trn_1", "t");
      const written: StoredEvent[] = [];
      // Several payloads' worth, in characters of one to four UTF-8 bytes, and one event larger than any payload.
      for (let i = 0; i < 150; i++) written.push(appendDelta(writer, "trn_1", `é${"€".repeat(i % 40)}😀 ${i}`));
      written.push(appendDelta(writer, "trn_1", "ü".repeat(9000)));
      written.push(appendDelta(writer, "trn_1", "after the large one"));
      await new Promise<void>((resolve) => writer.afterCommit(() => resolve()));
      await expect.poll(() => heard.at(-1)?.last).toBe(written.length);
      // Consecutive ranges covering every event once, in order.
      expect(heard.map((h) => h.first)).toEqual([1, ...heard.slice(0, -1).map((h) => h.last + 1)]);
      expect(heard.length).toBeGreaterThan(2);
      const carried = heard.flatMap((h) => h.events ?? []);
      const large = heard.find((h) => h.first === 151);
      expect(large).toEqual({ turnId: "trn_1", first: 151, last: 151, events: undefined });
      const expected = written.filter((e) => e.sequence !== 151).map((e) => ({ ...e }));
      expect(carried.map((e) => ({ ...e }))).toEqual(expected);
      // What the watcher was handed it keeps; a read gives every event, the large one from the server.
      expect(watcher.events("trn_1").map((e) => e.paramsJson)).toEqual(written.map((e) => e.paramsJson));
      // And what another store appends after that is read after what is kept.
      const more = appendDelta(writer, "trn_1", "more");
      await new Promise<void>((resolve) => writer.afterCommit(() => resolve()));
      expect(watcher.events("trn_1", 150).map((e) => e.paramsJson)).toEqual([...written.slice(150), more].map((e) => e.paramsJson));
      expect(watcher.events("trn_1", 10, 3).map((e) => e.sequence)).toEqual([11, 12, 13]);
    });

    it("carries the events in its announcements only while another instance listens", async () => {
      const writer = connect();
      // The writer's own listening connection: it looks whether anyone else listens.
      await writer.shared.watch(() => undefined);
      const raw = new pg.Client({ connectionString: url, application_name: "turnspec test" });
      await raw.connect();
      const payloads: string[] = [];
      raw.on("notification", (message) => payloads.push(message.payload ?? ""));
      await raw.query("LISTEN turnspec_events");
      try {
        writer.createThread(thread("thr_a"));
        writer.createTurn("thr_a", "trn_1", "t");
        const carriedLast = async () => {
          appendDelta(writer, "trn_1", "word");
          await new Promise<void>((resolve) => writer.afterCommit(() => resolve()));
          while (payloads.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
          const announced = JSON.parse(payloads.splice(0).at(-1)!) as { turns: unknown[][] };
          return announced.turns.at(-1)!.length === 4;
        };
        // Nobody but this test's connection listens: the ranges go alone once the writer has looked.
        await expect.poll(carriedLast, { interval: 200 }).toBe(false);
        const watcher = connect();
        const heard: { first: number; events: readonly StoredEvent[] | undefined }[] = [];
        await watcher.shared.watch((_turnId, first, _last, events) => heard.push({ first, events }));
        await expect.poll(carriedLast, { interval: 200 }).toBe(true);
        // The watcher hears it after this test's connection did, in its own time.
        await expect.poll(() => heard.at(-1)?.events?.map((e) => e.params.delta)).toEqual(["word"]);
        // Once it has gone, they go alone again.
        watcher.close();
        await expect.poll(carriedLast, { interval: 200 }).toBe(false);
      } finally {
        await raw.end();
      }
    });

    it("stores and announces params holding the separators its statements join texts with, exactly as they were", async () => {
      const watcher = connect();
      const writer = connect();
      const heard: StoredEvent[] = [];
      await watcher.shared.watch((_turnId, _first, _last, events) => heard.push(...(events ?? [])));
      writer.createThread(thread("thr_a"));
      writer.createTurn("thr_a", "trn_1", "t");
      // U+001E and U+001F join the params of a group's rows and its payloads; JSON escapes them.
      const texts = ["a\u001eb", "\u001f\u001e", 'quote " and back\\slash', '{"not":"json"}', ""];
      const written = texts.map((text) => appendDelta(writer, "trn_1", text));
      await new Promise<void>((resolve) => writer.afterCommit(() => resolve()));
      await expect.poll(() => heard.length).toBe(texts.length);
      expect(heard.map((e) => e.params.delta)).toEqual(texts);
      // Read from the server by a store that keeps nothing of them.
      const reader = connect();
      expect(reader.events("trn_1").map((e) => e.paramsJson)).toEqual(written.map((e) => e.paramsJson));
      expect(reader.events("trn_1").map((e) => e.params.delta)).toEqual(texts);
    });

    it("listens again after its listening connection is cut, and hears the commits after that", async () => {
      const watcher = connect();
      const writer = connect();
      const heard: string[] = [];
      await watcher.shared.watch((turnId) => heard.push(turnId));
      writer.createThread(thread("thr_a"));
      writer.createTurn("thr_a", "trn_before", "t");
      writer.createTurn("thr_a", "trn_after", "t");
      appendDelta(writer, "trn_before");
      await expect.poll(() => heard).toEqual(["trn_before"]);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      const warned = new Promise<void>((resolve) => process.once("warning", () => resolve()));
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'turnspec listener' AND datname = current_database()",
      );
      await admin.end();
      await warned;
      await expect
        .poll(
          async () => {
            appendDelta(writer, "trn_after");
            await new Promise<void>((resolve) => writer.afterCommit(() => resolve()));
            await new Promise((resolve) => setTimeout(resolve, 100));
            return heard.includes("trn_after");
          },
          { timeout: 10_000, interval: 200 },
        )
        .toBe(true);
    });

    it("moves the events of a schema 6 database into runs, keeps a view of them, and goes on from them", async () => {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`CREATE TABLE turnspec_schema (version integer NOT NULL); INSERT INTO turnspec_schema VALUES (6)`);
      for (const step of POSTGRES_MIGRATIONS.slice(0, 6)) await admin.query(step);
      const stored = [
        [1, "turn/started", '{"turn_id":"trn_1","sequence":1}', "2025-01-01T00:00:01Z"],
        [2, "item/agent_message/delta", '{"sequence":2,"delta":"a\\u001eb"}', "2025-01-01T00:00:02Z"],
      ] as const;
      await admin.query(
        `INSERT INTO threads (id, workspace_id, cwd, mode, created_at) VALUES ('thr_a', 'ws', '/w', 'default', 't');
         INSERT INTO turns (turn_id, thread_id, created_at) VALUES ('trn_1', 'thr_a', 't')`,
      );
      for (const [sequence, method, params, at] of stored)
        await admin.query(`INSERT INTO events VALUES ('trn_1', $1, 'thr_a', $2, $3, $4)`, [sequence, method, params, at]);
      const store = connect();
      expect(store.events("trn_1").map((e) => [e.sequence, e.method, e.paramsJson, e.recorded_at])).toEqual(stored);
      expect(store.events("trn_1", 1).map((e) => e.sequence)).toEqual([2]);
      expect(appendDelta(store, "trn_1").sequence).toBe(3);
      expect(await committed(store)).toBeUndefined();
      const runs = await admin.query(`SELECT first, last FROM event_runs ORDER BY first`);
      expect(runs.rows).toEqual([
        { first: 1, last: 1 },
        { first: 2, last: 2 },
        { first: 3, last: 3 },
      ]);
      const view = await admin.query(`SELECT sequence, method, params FROM events WHERE turn_id = 'trn_1' ORDER BY sequence`);
      expect(view.rows.map((row) => [row.sequence, row.method])).toEqual([
        [1, "turn/started"],
        [2, "item/agent_message/delta"],
        [3, "item/agent_message/delta"],
      ]);
      expect(view.rows[1].params).toBe(stored[1][2]);
      await admin.end();
    });

    it("refuses a database of a newer schema version", async () => {
      connect().close();
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query("UPDATE turnspec_schema SET version = $1", [POSTGRES_SCHEMA_VERSION + 1]);
      await admin.end();
      const error = thrownBy(() => new PostgresEventStore(url)) as StoreError;
      expect(error.kind).toBe("schema_version");
      expect(error.message).toContain(
        `has schema version ${POSTGRES_SCHEMA_VERSION + 1}, newer than the ${POSTGRES_SCHEMA_VERSION} this gateway knows`,
      );
    });

    it("is what openStore opens for a postgres:// URL", () => {
      const store = openStore({ url });
      try {
        expect(store).toBeInstanceOf(PostgresEventStore);
        store.createThread(thread("thr_a"));
        expect(store.getThread("thr_a")?.id).toBe("thr_a");
      } finally {
        store.close();
      }
    });
  });

  it("refuses an unreachable server with open_failed, naming the database without its password", () => {
    const unreachable = `postgres://turnspec:secret@127.0.0.1:${server!.port}/no_such_database`;
    const error = thrownBy(() => new PostgresEventStore(unreachable, { connectTimeoutMs: 2000 })) as StoreError;
    expect(error.kind).toBe("open_failed");
    expect(error.message).toContain("cannot open event store postgres://turnspec:***@127.0.0.1:");
    expect(error.message).toContain('database "no_such_database" does not exist');
    expect(error.message).not.toContain("secret");
  });
});
