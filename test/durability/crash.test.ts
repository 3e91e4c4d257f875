/**
 * Crash durability: `turnspec serve` on a SQLite file runs many turns at once (streaming
 * answers, file writes, approvals left pending, some turns already done), and is killed
 * with SIGKILL at a point chosen by a seed. Restarted on the same file, it must hold
 * every notification a client received before the kill, with the same sequence and
 * content, with no gap in any turn's sequence and no turn left InProgress.
 *
 * Then the turns the kill cut off: they come back Blocked (reason
 * runtime_shutdown_continuation), and turn/resume runs each to completion, continuing
 * the same sequence.
 *
 * DURABILITY_SEEDS=1,2,3 picks other kill points.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startWebSocketGateway, tempDb, type ServeProcess } from "../../bench/gateway-process.js";
import { compareWithItems, receivedFor, startTurn, type TurnPlan } from "../../bench/turn-driver.js";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItemsResponse } from "../../generated/types.js";
import { connectWebSocket } from "../../packages/rpc/src/transport/websocket.js";
import { startStrictClient, type StrictClient } from "../../bench/strict-client.js";

const SEEDS = (process.env.DURABILITY_SEEDS ?? "11,23,37").split(",").map(Number);
const CLIENTS = 4;
const THREADS_PER_CLIENT = 5;

const processes: ServeProcess[] = [];
const clients: StrictClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.client.close().catch(() => undefined);
  for (const p of processes.splice(0)) await p.stop();
});

/** mulberry32: the same seed, the same plans and kill point. */
function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    let t = (state = (state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface PlannedTurn {
  readonly client: number;
  readonly threadId: string;
  readonly turnId: string;
  readonly plan: TurnPlan;
  /** The client grants this turn's approval; otherwise the request stays open until the kill. */
  readonly approve: boolean;
}

interface Crash {
  readonly db: string;
  readonly turns: PlannedTurn[];
  /** What each client had received when the gateway was killed. */
  readonly live: Map<string, AnyNotification[]>;
}

/** A strict client over WebSocket, and a promise settled when its connection has closed. */
async function connect(url: string): Promise<StrictClient & { readonly closed: Promise<void> }> {
  const transport = await connectWebSocket(url);
  const client = await startStrictClient(transport);
  clients.push(client);
  // Chained after the client's own handler, which fails its pending requests.
  const onclose = transport.onclose;
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => {
      onclose?.();
      resolve();
    };
  });
  return { ...client, closed };
}

/** Runs the seed's turns on a gateway over a fresh SQLite file and kills it mid-flight. */
async function runAndKill(seed: number): Promise<Crash> {
  const random = rng(seed);
  const db = tempDb();
  const cwd = mkdtempSync(join(tmpdir(), "turnspec-durability-"));
  const gateway = await startWebSocketGateway({ db, cwd });
  processes.push(gateway);
  const sessions = await Promise.all(Array.from({ length: CLIENTS }, () => connect(gateway.url)));
  const turns: PlannedTurn[] = [];
  for (const [c, session] of sessions.entries()) {
    for (let t = 0; t < THREADS_PER_CLIENT; t++) {
      const { thread } = await session.client.threadStart({ cwd });
      const kind = Math.floor(random() * 4);
      const turnId = `trn_crash_${c}_${t}`;
      // 0: done quickly; 1: a long, slow answer; 2: an approval granted, then an answer; 3: an approval never answered.
      const plan: TurnPlan =
        kind === 0
          ? { deltas: 5 + Math.floor(random() * 20) }
          : kind === 1
            ? { deltas: 100 + Math.floor(random() * 200), writeFile: `slow-${c}-${t}.txt`, delayMs: Math.floor(random() * 1500) }
            : {
                deltas: 20 + Math.floor(random() * 60),
                writeFile: `asked-${c}-${t}.txt`,
                approval: true,
                delayMs: Math.floor(random() * 800),
              };
      turns.push({ client: c, threadId: thread.id, turnId, plan, approve: kind === 2 });
    }
  }
  for (const [c, session] of sessions.entries()) {
    const approved = new Set(turns.filter((t) => t.client === c && t.approve).map((t) => t.turnId));
    session.client.onAny((n) => {
      if (n.method === "turn/permission/request/opened" && approved.has(n.params.turn_id)) {
        void session.client
          .turnPermissionRequestRespond({
            request_id: n.params.request.request_id,
            resolve_token: n.params.request.resolve_token,
            resolution: "allow_once",
          })
          .catch(() => undefined);
      }
    });
  }
  // The kill comes once the clients together have received this many notifications.
  const killAfter = 40 + Math.floor(random() * 400);
  let received = 0;
  const reached = new Promise<void>((resolve) => {
    for (const session of sessions) session.client.onAny(() => ++received >= killAfter && resolve());
  });
  await Promise.all(turns.map((t) => startTurn(sessions[t.client]!, t.threadId, t.turnId, t.plan)));
  await reached;
  await gateway.kill();
  // Frames the gateway wrote before it died may still be in flight: each client reads until its connection closes.
  await Promise.all(sessions.map((s) => s.closed));
  const live = new Map(turns.map((t) => [t.turnId, receivedFor(sessions[t.client]!, t.turnId)]));
  for (const s of sessions) expect(s.protocolErrors).toEqual([]);
  return { db, turns, live };
}

describe.each(SEEDS)("a gateway killed with SIGKILL mid-flight (seed %i), restarted on the same SQLite file", (seed) => {
  it("holds every notification a client received, in sequence, without gaps, with no turn InProgress; turn/resume completes the cut-off turns", async () => {
    const crash = await runAndKill(seed);
    const restarted = await startWebSocketGateway({ db: crash.db });
    processes.push(restarted);
    const reader = await connect(restarted.url);
    const problems: string[] = [];
    const cutOff: PlannedTurn[] = [];
    const kept = new Map<string, TurnItemsResponse>();
    for (const turn of crash.turns) {
      const live = crash.live.get(turn.turnId)!;
      const items = await reader.client.turnItems({ thread_id: turn.threadId, turn_id: turn.turnId });
      kept.set(turn.turnId, items);
      problems.push(...compareWithItems(turn.turnId, live, items, { prefix: true }));
      const { turn: state } = await reader.client.turnGet({ thread_id: turn.threadId, turn_id: turn.turnId });
      if (state.status === "InProgress") problems.push(`${turn.turnId} is still InProgress after the restart`);
      if (!live.some((n) => n.method === "turn/completed" || n.method === "turn/failed")) cutOff.push(turn);
    }
    expect(problems).toEqual([]);
    // The seed's kill point cut turns off: the checks above and below had something to hold.
    expect(cutOff.length).toBeGreaterThan(0);

    // The cut-off turns come back Blocked, and turn/resume runs them to the end. With no
    // one left to ask, the resumed turns have their approvals granted by this client.
    reader.client.onAny((n) => {
      if (n.method === "turn/permission/request/opened")
        void reader.client
          .turnPermissionRequestRespond({
            request_id: n.params.request.request_id,
            resolve_token: n.params.request.resolve_token,
            resolution: "allow_once",
          })
          .catch(() => undefined);
    });
    let resumed = 0;
    for (const turn of cutOff) {
      const { turn: state } = await reader.client.turnGet({ thread_id: turn.threadId, turn_id: turn.turnId });
      // A turn whose end was stored just before the kill (not yet received) keeps that end.
      if (state.status !== "Blocked") {
        expect(state.status, turn.turnId).toBe("Completed");
        continue;
      }
      const before = kept.get(turn.turnId)!;
      expect(before.events.at(-1), turn.turnId).toMatchObject({
        method: "turn/blocked",
        params: { reason: "runtime_shutdown_continuation" },
      });
      const terminal = reader.waitFor(
        (n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turn.turnId,
      );
      await reader.client.turnResume({ thread_id: turn.threadId, turn_id: turn.turnId });
      expect((await terminal).method, turn.turnId).toBe("turn/completed");
      // The resumed turn continues the same log: what was kept stays, in order, without gaps.
      const after = await reader.client.turnItems({ thread_id: turn.threadId, turn_id: turn.turnId });
      expect(after.events.slice(0, before.events.length)).toEqual(before.events);
      expect(after.events.map((e) => e.sequence)).toEqual(after.events.map((_, i) => i + 1));
      resumed++;
    }
    expect(resumed).toBeGreaterThan(0);
    expect(reader.protocolErrors).toEqual([]);
  }, 120_000);
});
