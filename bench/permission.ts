/**
 * Permission round trip on `turnspec serve` over WebSocket: for each approval request,
 * the time from the client receiving turn/permission/request/opened (it answers at once)
 * to receiving …/resolved, and to the first event of the tool's item after it (the tool
 * started). p50 and p99 over many requests: supervised turns whose every step is a batch
 * of file writes, each of which asks.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/permission.ts [--requests N]
 */
import type { AnyNotification } from "../generated/registry.js";
import { scriptMessage } from "../packages/gateway/src/providers/scripted.js";
import { connectWebSocket } from "../packages/rpc/src/transport/websocket.js";
import { startStrictClient } from "./strict-client.js";
import { startWebSocketGateway, tempDb, useCompiledPackage } from "./gateway-process.js";
import { isMain, now, numberOption, quantile, resultTable, type ResultRow } from "./lib.js";

export interface PermissionBenchOptions {
  readonly requests?: number;
  readonly log?: (line: string) => void;
}

const CALLS_PER_STEP = 10;
const STEPS_PER_TURN = 10;

export async function runPermissionBench(options: PermissionBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const requests = options.requests ?? 300;
  const turns = Math.ceil(requests / (CALLS_PER_STEP * STEPS_PER_TURN));
  log(
    `== permission round trip: ${turns * CALLS_PER_STEP * STEPS_PER_TURN} approval requests over WebSocket (turnspec serve, SQLite store), answered allow_once as soon as they open`,
  );
  const gateway = await startWebSocketGateway({ db: tempDb(), config: { limits: { max_agent_rounds: STEPS_PER_TURN + 5 } } });
  const s = await startStrictClient(await connectWebSocket(gateway.url));
  const toResolved: number[] = [];
  const toStarted: number[] = [];
  try {
    // Per open request: when it opened, its item, and when it resolved.
    const open = new Map<string, { openedAt: number; itemId: string | undefined; resolvedAt?: number }>();
    const awaitingStart = new Map<string, { openedAt: number }>();
    s.client.onAny((n: AnyNotification) => {
      const at = now();
      if (n.method === "turn/permission/request/opened") {
        const { request } = n.params;
        open.set(request.request_id, { openedAt: at, itemId: request.item_id });
        void s.client.turnPermissionRequestRespond({
          request_id: request.request_id,
          resolve_token: request.resolve_token,
          resolution: "allow_once",
        });
      } else if (n.method === "turn/permission/request/resolved") {
        const entry = open.get(n.params.request_id);
        if (!entry) return;
        open.delete(n.params.request_id);
        toResolved.push(at - entry.openedAt);
        if (entry.itemId) awaitingStart.set(entry.itemId, { openedAt: entry.openedAt });
      } else if ("item_id" in n.params && typeof n.params.item_id === "string") {
        const waiting = awaitingStart.get(n.params.item_id);
        if (!waiting) return;
        awaitingStart.delete(n.params.item_id);
        toStarted.push(at - waiting.openedAt);
      }
    });
    const { thread } = await s.client.threadStart({});
    for (let t = 0; t < turns; t++) {
      const steps = Array.from({ length: STEPS_PER_TURN }, (_, step) => ({
        tools: Array.from({ length: CALLS_PER_STEP }, (_, call) => ({
          tool: "write_file",
          args: { path: `approved-${t}-${step}-${call}.txt`, content: "approved\n" },
        })),
      }));
      const turnId = `trn_permission_${t}`;
      const terminal = s.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);
      await s.client.turnStart({
        thread_id: thread.id,
        turn_id: turnId,
        permission_profile: { mode: "supervised" },
        input: [{ type: "text", text: scriptMessage([...steps, { say: "all written" }]), textElements: [] }],
      });
      const end = await terminal;
      if (end.method !== "turn/completed")
        throw new Error(`the permission turn ended ${end.method}: ${JSON.stringify(end.params).slice(0, 300)}`);
    }
    if (s.protocolErrors.length > 0) throw new Error(`the gateway sent invalid frames: ${s.protocolErrors.slice(0, 3).join("; ")}`);
  } finally {
    await s.client.close();
    await gateway.stop();
  }
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  const p = (xs: number[], q: number) => quantile(xs, q);
  log(`  opened → resolved:      p50 ${ms(p(toResolved, 0.5))}, p99 ${ms(p(toResolved, 0.99))} (${toResolved.length} requests)`);
  log(`  opened → tool started:  p50 ${ms(p(toStarted, 0.5))}, p99 ${ms(p(toStarted, 0.99))} (${toStarted.length} requests)`);
  return [
    {
      name: "permission: opened → resolved (p50 / p99)",
      value: `${ms(p(toResolved, 0.5))} / ${ms(p(toResolved, 0.99))}`,
      target: "(info)",
      status: "info",
    },
    {
      name: "permission: opened → tool started (p50 / p99)",
      value: `${ms(p(toStarted, 0.5))} / ${ms(p(toStarted, 0.99))}`,
      target: "(info)",
      status: "info",
    },
  ];
}

if (isMain(import.meta.url)) {
  await useCompiledPackage();
  const requests = numberOption("requests");
  const rows = await runPermissionBench(requests ? { requests } : {});
  console.log(`\n${resultTable(rows)}`);
}
