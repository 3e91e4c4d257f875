/**
 * The event store: append throughput of the SQLite store (WAL, a file on disk) against
 * the memory store, in alternating rounds; and the gateway's cost of answering
 * `turn/items`, `turn/work/page` (newest 50) and `turn/work/items/get` (5 ids) for a turn
 * of 10,001 events on each store, measured
 * at the dispatcher (from the request frame to the serialized reply), median of several
 * calls. The turn is real: a scripted turn streaming that many deltas.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/store.ts [--appends N] [--events N]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProtocolClient } from "../generated/client.js";
import { resolveConfig } from "../packages/gateway/src/config.js";
import { Gateway } from "../packages/gateway/src/engine/gateway.js";
import { ScriptedProvider } from "../packages/gateway/src/providers/scripted.js";
import { createInMemoryPair } from "../packages/rpc/src/index.js";
import { MemoryEventStore } from "../packages/gateway/src/store/memory.js";
import { SqliteEventStore } from "../packages/gateway/src/store/sqlite.js";
import type { EventStore } from "../packages/gateway/src/store/store.js";
import { builtinTools } from "../packages/gateway/src/tools/registry.js";
import { tempDb } from "./gateway-process.js";
import { fmtOps, isMain, median, now, numberOption, resultTable, type ResultRow } from "./lib.js";
import { planMessage } from "./turn-driver.js";

export interface StoreBenchOptions {
  readonly appends?: number;
  readonly events?: number;
  readonly rounds?: number;
  readonly log?: (line: string) => void;
}

const THREAD = "thr_store_bench";

/** Appends `n` delta events, shaped as the gateway stores them, to a fresh turn; returns milliseconds. */
function appendRound(store: EventStore, turnId: string, n: number): number {
  store.createTurn(THREAD, turnId, new Date().toISOString());
  const t0 = now();
  for (let i = 0; i < n; i++) {
    store.append(turnId, "item/agent_message/delta", (sequence) => ({
      thread_id: THREAD,
      turn_id: turnId,
      sequence,
      item_id: `${turnId}_item_1`,
      delta: `word${i} `,
    }));
  }
  return now() - t0;
}

interface ReadCosts {
  readonly events: number;
  readonly itemsMs: number;
  readonly workPageMs: number;
  readonly workItemsMs: number;
}

/** Runs a turn of about `events` events on an in-process gateway over `store`, then times turn/items and turn/work/page. */
async function readCosts(store: EventStore, events: number, calls: number): Promise<ReadCosts> {
  const cwd = mkdtempSync(join(tmpdir(), "turnspec-store-bench-"));
  const gateway = new Gateway({
    store,
    config: resolveConfig({ tools: { default_cwd: cwd } }),
    providers: new Map([["scripted", new ScriptedProvider()]]),
    tools: builtinTools(),
  });
  const [clientSide, serverSide] = createInMemoryPair();
  const connection = gateway.connect(serverSide);
  const client = new ProtocolClient(clientSide, { validateIncoming: false });
  await client.start();
  try {
    const { thread } = await client.threadStart({ cwd });
    const turnId = "trn_store_bench";
    const done = new Promise<void>((resolve) =>
      client.onAny((n) => (n.method === "turn/completed" || n.method === "turn/failed") && resolve()),
    );
    // The other events of a turn (started, items, audits, completed) come on top of the deltas.
    await client.turnStart({
      thread_id: thread.id,
      turn_id: turnId,
      input: [{ type: "text", text: planMessage({ deltas: events - 8 }), textElements: [] }],
    });
    await done;
    const count = store.lastSequence(turnId);
    const time = async (frame: string) => {
      const samples: number[] = [];
      for (let i = 0; i < calls; i++) {
        const t0 = now();
        const reply = await gateway.dispatcher.handleFrame(frame, connection);
        samples.push(now() - t0);
        if (!reply || reply.includes('"error"')) throw new Error(`${frame} failed: ${reply?.slice(0, 300)}`);
      }
      return median(samples);
    };
    const itemsMs = await time(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "turn/items", params: { thread_id: thread.id, turn_id: turnId } }),
    );
    const workPageMs = await time(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "turn/work/page",
        params: { threadId: thread.id, turnId, anchor: { kind: "newest" }, limit: 50 },
      }),
    );
    // Five ids of the turn's rows (as many as it has, up to five), and one it never had.
    const page = await client.turnWorkPage({ threadId: thread.id, turnId, anchor: { kind: "oldest" }, limit: 4 });
    const ids = [...page.items.map((row) => row.workItemId), "work_never_existed"].slice(0, 5);
    const workItemsMs = await time(
      JSON.stringify({ jsonrpc: "2.0", id: 3, method: "turn/work/items/get", params: { threadId: thread.id, turnId, workItemIds: ids } }),
    );
    return { events: count, itemsMs, workPageMs, workItemsMs };
  } finally {
    await gateway.close();
    await client.close();
  }
}

export async function runStoreBench(options: StoreBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const appends = options.appends ?? 10_000;
  const rounds = options.rounds ?? 5;
  const events = options.events ?? 10_001;
  log(
    `== event store: ${appends} appends per round, SQLite (WAL, file) vs memory, ${rounds} alternating rounds; turn/items and turn/work/page on a ${events}-event turn`,
  );
  const sqlite = new SqliteEventStore(tempDb());
  const memory = new MemoryEventStore();
  const rows: ResultRow[] = [];
  try {
    for (const store of [sqlite, memory])
      store.createThread({ id: THREAD, workspace_id: "ws_default", cwd: tmpdir(), mode: "Agent", created_at: new Date().toISOString() });
    appendRound(sqlite, "trn_warm_sqlite", 2000);
    appendRound(memory, "trn_warm_memory", 2000);
    const s: number[] = [];
    const m: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const pair = [
        () => s.push(appendRound(sqlite, `trn_append_${round}`, appends)),
        () => m.push(appendRound(memory, `trn_append_${round}`, appends)),
      ];
      if (round % 2) pair.reverse();
      for (const run of pair) run();
    }
    const sRate = (appends * 1000) / median(s);
    const mRate = (appends * 1000) / median(m);
    log(`  append: SQLite ${fmtOps(sRate)}, memory ${fmtOps(mRate)}; SQLite / memory ${(sRate / mRate).toFixed(3)}`);
    rows.push({
      name: "store append: SQLite (WAL) / memory",
      value: `${fmtOps(sRate)} / ${fmtOps(mRate)} = ${(sRate / mRate).toFixed(3)}×`,
      target: "(info)",
      status: "info",
    });
  } finally {
    sqlite.close();
  }
  for (const [name, store] of [
    ["SQLite", new SqliteEventStore(tempDb())],
    ["memory", new MemoryEventStore()],
  ] as const) {
    try {
      const costs = await readCosts(store, events, 7);
      log(
        `  ${name}: a ${costs.events}-event turn: turn/items ${costs.itemsMs.toFixed(1)} ms, turn/work/page (newest 50) ${costs.workPageMs.toFixed(2)} ms, turn/work/items/get (5 ids) ${costs.workItemsMs.toFixed(2)} ms (median of 7, dispatcher to serialized reply)`,
      );
      rows.push({
        name: `${costs.events}-event turn on ${name}: turn/items`,
        value: `${costs.itemsMs.toFixed(1)} ms`,
        target: "(info)",
        status: "info",
      });
      const met = costs.workPageMs <= 5 && costs.workItemsMs <= 2;
      rows.push({
        name: `  turn/work/page newest 50 / turn/work/items/get 5 ids`,
        value: `${costs.workPageMs.toFixed(2)} ms / ${costs.workItemsMs.toFixed(2)} ms`,
        target: "≤ 5 ms / ≤ 2 ms",
        status: name === "SQLite" ? (met ? "PASS" : "MISS") : "info",
      });
    } finally {
      store.close();
    }
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const appends = numberOption("appends");
  const events = numberOption("events");
  const rows = await runStoreBench({ ...(appends ? { appends } : {}), ...(events ? { events } : {}) });
  console.log(`\n${resultTable(rows)}`);
}
