/**
 * A failed turn/start leaves no turn behind on PostgreSQL, as on SQLite
 * (test/security/turn-start.test.ts): when the commit holding a new turn's first events
 * fails, turn/start answers an error, the database holds no row of the turn, the thread
 * has no turn in progress, and the next turn/start runs, under the same id. And the id is
 * decided in the database: an instance inserting a turn id another instance holds
 * uncommitted waits for that commit, then loses to it, or takes the id after a rollback.
 * The failures are real ones of PostgreSQL: a deferred constraint trigger raising at COMMIT.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import pg from "pg";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { PostgresEventStore } from "../../packages/gateway/src/store/postgres.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { startHarness, text, type Harness } from "../gateway/harness.js";
import { thread as threadRecord } from "../store/contract.js";

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the PostgreSQL turn/start tests: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;
afterAll(() => server?.stop());

/** Another instance's turn/start, in a thread of its own: it inserts a turn, holds its transaction open half a second, then ends it as told. */
const OTHER_START = `
const { workerData, parentPort } = require("node:worker_threads");
const pg = require(workerData.pgPath);
(async () => {
  const client = new pg.Client({ connectionString: workerData.url });
  await client.connect();
  await client.query("BEGIN");
  await client.query("INSERT INTO turns (turn_id, thread_id, created_at) VALUES ($1, 'thr_other', 't')", [workerData.turnId]);
  parentPort.postMessage("inserted");
  setTimeout(async () => {
    await client.query(workerData.end);
    await client.end();
  }, 500);
})();
`;

let url: string;
let raw: pg.Client | undefined;
let h: Harness | undefined;
beforeEach(async () => {
  if (server) url = await server.createDatabase();
});
afterEach(async () => {
  await h?.close();
  h?.store.close();
  h = undefined;
  await raw?.end();
  raw = undefined;
});

async function open(): Promise<string> {
  h = await startHarness({ store: new PostgresEventStore(url) });
  raw = new pg.Client({ connectionString: url });
  await raw.connect();
  return h.thread();
}

/** Makes the commit holding an event whose method is `method` fail, at COMMIT. */
async function failCommitOf(method: string): Promise<void> {
  await raw!.query(`
    CREATE FUNCTION doom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the commit of ${method} is doomed'; END $$;
    CREATE CONSTRAINT TRIGGER doom AFTER INSERT ON event_runs DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW WHEN (position(E'\\x1e${method}\\x1e' in E'\\x1e' || NEW.methods || E'\\x1e') > 0) EXECUTE FUNCTION doom();
  `);
}
const heal = () => raw!.query(`DROP TRIGGER doom ON event_runs; DROP FUNCTION doom();`);

describe.skipIf(server === undefined)("turn/start on PostgreSQL", () => {
  it.each(["turn/started", "item/completed"])(
    "when the commit holding %s fails: an error, no turn row, no lease, the thread free",
    async (method) => {
      const thread = await open();
      await failCommitOf(method);
      const error = (await h!.client
        .turnStart({ thread_id: thread, turn_id: "trn_lost", input: text("hi") })
        .catch((e: unknown) => e)) as RpcError;
      expect(error.code).toBe(-32603);
      await heal();
      expect((await raw!.query(`SELECT turn_id FROM turns`)).rows).toEqual([]);
      expect((await raw!.query(`SELECT turn_id FROM events`)).rows).toEqual([]);
      expect((await raw!.query(`SELECT turn_id FROM turn_leases`)).rows).toEqual([]);
      expect(h!.store.turnsOfThread(thread)).toEqual([]);
      expect((await h!.client.threadGet({ thread_id: thread })).thread.active_turn_id).toBeUndefined();
      // The thread runs its next turn, under the same id.
      const end = await h!.runTurn({ thread_id: thread, turn_id: "trn_lost", input: text("hi") });
      expect(end.method).toBe("turn/completed");
      expect((await raw!.query(`SELECT turn_id FROM turns`)).rows).toEqual([{ turn_id: "trn_lost" }]);
    },
  );

  it("makes a new turn's id wait for another instance's insert still in flight: lost to it if committed, taken if rolled back", async () => {
    const store = new PostgresEventStore(url);
    try {
      store.createThread(threadRecord("thr_mine"));
      store.createThread(threadRecord("thr_other"));
      await new Promise<void>((resolve) => store.afterCommit(() => resolve()));
      for (const [end, wins] of [
        ["COMMIT", false],
        ["ROLLBACK", true],
      ] as const) {
        const turnId = `trn_${end.toLowerCase()}`;
        const other = new Worker(OTHER_START, {
          eval: true,
          workerData: { url, pgPath: createRequire(import.meta.url).resolve("pg"), turnId, end },
        });
        await new Promise((resolve) => other.once("message", resolve));
        // This thread waits in the database (the event loop with it) until the other ends its transaction.
        expect(store.createTurn("thr_mine", turnId, "t"), end).toBe(wins);
        await new Promise<void>((resolve) => store.afterCommit(() => resolve()));
        expect(store.turnThread(turnId), end).toBe(wins ? "thr_mine" : "thr_other");
        await other.terminate();
      }
    } finally {
      store.close();
    }
  });
});
