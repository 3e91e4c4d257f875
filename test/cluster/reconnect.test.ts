/**
 * Two `turnspec serve` instances on one PostgreSQL database while their database
 * connections drop, in the middle of a turn: once when every gateway backend is killed
 * (pg_terminate_backend), once when the server is shut down and started again. The
 * instances connect again; the turn ends (Completed, or Failed with kind internal when a
 * commit was lost), never left InProgress; and the clients of both instances receive
 * exactly the turn's log, in order, each event once: nothing a client was sent is missing
 * from the log, and live delivery to the other instance resumes without a gap.
 *
 * Its own server: this file stops and starts it.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import pg from "pg";
import { createInMemoryPair } from "../../packages/rpc/src/index.js";
import { resolveConfig } from "../../packages/gateway/src/config.js";
import { Gateway } from "../../packages/gateway/src/engine/gateway.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { PostgresEventStore } from "../../packages/gateway/src/store/postgres.js";
import { builtinTools } from "../../packages/gateway/src/tools/registry.js";
import { startStrictClient } from "../../bench/strict-client.js";
import type { AnyNotification } from "../../generated/registry.js";
import { script, text } from "../gateway/harness.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { connectClient, sequenced, startInstance } from "./serve-instance.js";

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the reconnect tests of several instances: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;
afterAll(() => server?.stop());

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const STEPS = 8;
/** A turn of STEPS shell commands a quarter of a second apart, then an answer. */
const SLOW_TURN = script(
  ...Array.from({ length: STEPS }, (_, i) => ({ tool: "shell", args: { command: `echo step-${i}` }, delay_ms: 250 })),
  { say: "all steps done" },
);

const isEnd = (turnId: string) => (n: AnyNotification) =>
  (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId;

async function terminateGatewayBackends(url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'turnspec%' AND pid <> pg_backend_pid()",
    );
  } finally {
    await admin.end();
  }
}

/** Runs SLOW_TURN on A with a client of B following it, cuts the connections with `drop` after a few steps, and checks the outcome. */
async function turnThroughADrop(drop: (url: string) => Promise<void>): Promise<void> {
  const store = await server!.createDatabase();
  const settings = { lease_timeout_ms: 3000 };
  const [a, b] = await Promise.all([startInstance(store, settings, cleanups), startInstance(store, settings, cleanups)]);
  const [onA, onB] = await Promise.all([connectClient(a, cleanups), connectClient(b, cleanups)]);
  const { thread } = await onA.client.threadStart({});
  await onB.client.threadGet({ thread_id: thread.id });
  const commands = (n: AnyNotification) =>
    n.method === "item/completed" && n.params.turn_id === "trn_slow" && (n.params.item as { type: string }).type === "commandExecution";
  const third = new Promise<void>((resolve) => {
    let seen = 0;
    void onB.waitFor((n) => commands(n) && ++seen === 3).then(() => resolve());
  });
  const endOnA = onA.waitFor(isEnd("trn_slow"));
  const endOnB = onB.waitFor(isEnd("trn_slow"));
  await onA.client.turnStart({ thread_id: thread.id, turn_id: "trn_slow", input: text(SLOW_TURN) });
  await third;
  await drop(store);

  // A turn that never ends on a client fails here, with what the instances logged, rather than at the test's timeout.
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const tail = (text: string) => text.slice(-4000);
      reject(
        new Error(
          `the turn did not end on both clients within 40 s (A: ${onA.received.length} notifications, B: ${onB.received.length})\n` +
            `instance A logged:\n${tail(a.stderr())}\ninstance B logged:\n${tail(b.stderr())}`,
        ),
      );
    }, 40_000);
  });
  const [ended, endedOnB] = await Promise.race([Promise.all([endOnA, endOnB]), stuck]).finally(() => clearTimeout(timer));
  expect(endedOnB).toEqual(ended);
  if (ended.method === "turn/failed") {
    // A commit the drop cut off: the turn says so, as any failed commit does.
    expect(ended.params).toMatchObject({ turn: { status: "Failed", error: { kind: "internal" } } });
  } else {
    expect(ended.method).toBe("turn/completed");
  }
  const items = await onB.client.turnItems({ thread_id: thread.id, turn_id: "trn_slow" });
  expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
  const logged = items.events.map((e) => ({ sequence: e.sequence, method: e.method, params: e.params }));
  // Each client got exactly the log: nothing it was sent is missing from it, nothing came twice, no gap.
  expect(sequenced(onA.received, "trn_slow")).toEqual(logged);
  expect(sequenced(onB.received, "trn_slow")).toEqual(logged);
  expect(await onA.client.turnItems({ thread_id: thread.id, turn_id: "trn_slow" })).toEqual(items);
  expect((await onA.client.threadGet({ thread_id: thread.id })).thread.active_turn_id).toBeFalsy();
  // And both instances serve a new turn on the same database afterwards.
  const next = onA.waitFor(isEnd("trn_after"));
  await onB.client.turnStart({ thread_id: thread.id, turn_id: "trn_after", input: text(script({ say: "still here" })) });
  expect((await next).method).toBe("turn/completed");
  expect(onA.protocolErrors).toEqual([]);
  expect(onB.protocolErrors).toEqual([]);
}

describe.skipIf(server === undefined)("gateway instances when their database connections drop", () => {
  it("go on after every gateway backend is killed mid-turn: the turn ends, both clients get exactly its log", async () => {
    await turnThroughADrop((url) => terminateGatewayBackends(url));
  });

  it("go on after the server is shut down and started again mid-turn: the turn ends, both clients get exactly its log", async () => {
    await turnThroughADrop(async () => {
      await server!.shutDown();
      await new Promise((resolve) => setTimeout(resolve, 500));
      await server!.start();
    });
  });
});

describe.skipIf(server === undefined)("a gateway whose database is away when its turn ends", () => {
  it("ends the turn Failed (internal) once the database is back, when its end could not be written before", async () => {
    const store = new PostgresEventStore(await server!.createDatabase());
    const cwd = mkdtempSync(join(tmpdir(), "turnspec-reconnect-"));
    const logs: string[] = [];
    const gateway = new Gateway({
      store,
      config: resolveConfig({ tools: { default_cwd: cwd } }),
      providers: new Map([["scripted", new ScriptedProvider()]]),
      tools: builtinTools(),
      log: (message) => logs.push(message),
      leaseTimeoutMs: 900,
    });
    await gateway.ready;
    const [clientSide, serverSide] = createInMemoryPair();
    gateway.connect(serverSide);
    const { client, waitFor } = await startStrictClient(clientSide);
    cleanups.push(
      () => store.close(),
      () => gateway.close(),
      () => client.close(),
    );
    const { thread } = await client.threadStart({ cwd });
    const running = waitFor((n) => n.method === "item/started" && (n.params.item as { type: string }).type === "commandExecution");
    const ended = waitFor(isEnd("trn_cut"));
    await client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_cut",
      input: text(script({ tool: "shell", args: { command: "sleep 2" } }, { say: "never said" })),
    });
    await running;
    await server!.shutDown();
    // The command ends while the database is away: nothing of the turn can be written, its end included.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(logs.join("\n")).toContain("ending it is tried again");
    await server!.start();
    expect(await ended).toMatchObject({ method: "turn/failed", params: { turn: { status: "Failed", error: { kind: "internal" } } } });
    const items = await client.turnItems({ thread_id: thread.id, turn_id: "trn_cut" });
    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    expect(items.events.at(-1)?.method).toBe("turn/failed");
  });
});
