/**
 * Concurrency on `turnspec serve` over WebSocket: many threads, each on its own
 * connection, each running one supervised turn at the same time (a file write that asks
 * for approval, granted at once, then a streamed answer of many deltas). Every turn must
 * complete and every client's live events must equal `turn/items` (no event lost); the
 * gateway's peak resident memory is reported, sampled while the turns run.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/concurrency.ts [--threads N] [--deltas N]
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectWebSocket } from "../packages/rpc/src/transport/websocket.js";
import { startStrictClient } from "./strict-client.js";
import { startWebSocketGateway, tempDb, watchPeakRss, useCompiledPackage } from "./gateway-process.js";
import { fmtOps, isMain, now, numberOption, resultTable, type ResultRow } from "./lib.js";
import { autoApprove, liveVersusItems, runTurn } from "./turn-driver.js";

export interface ConcurrencyBenchOptions {
  readonly threads?: number;
  readonly deltas?: number;
  readonly log?: (line: string) => void;
}

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;

export async function runConcurrencyBench(options: ConcurrencyBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const threads = options.threads ?? 1000;
  const deltas = options.deltas ?? 50;
  log(
    `== concurrency: ${threads} threads on ${threads} WebSocket connections, one turn each at once (${deltas} deltas, a file write with an approval), turnspec serve on SQLite`,
  );
  const gateway = await startWebSocketGateway({ db: tempDb() });
  const cwd = mkdtempSync(join(tmpdir(), "turnspec-concurrency-"));
  const startRss = gateway.rss();
  try {
    const clients = await Promise.all(Array.from({ length: threads }, async () => startStrictClient(await connectWebSocket(gateway.url))));
    for (const client of clients) autoApprove(client);
    const threadIds = await Promise.all(clients.map(async (c) => (await c.client.threadStart({ cwd })).thread.id));
    const idleRss = gateway.rss();
    const peak = watchPeakRss(gateway.pid);
    const t0 = now();
    const ends = await Promise.all(
      clients.map((c, i) => runTurn(c, threadIds[i]!, `trn_concurrent_${i}`, { deltas, writeFile: `out-${i}.txt`, approval: true })),
    );
    const wallMs = now() - t0;
    const peakRss = peak.stop();
    const failed = ends.filter((e) => e.method !== "turn/completed");
    const problems = (await Promise.all(clients.map((c, i) => liveVersusItems(c, threadIds[i]!, `trn_concurrent_${i}`)))).flat();
    problems.push(...clients.flatMap((c) => c.protocolErrors));
    const events = clients.reduce((n, c) => n + c.received.length, 0);
    await Promise.all(clients.map((c) => c.client.close()));
    log(
      `  ${threads - failed.length} of ${threads} turns completed in ${(wallMs / 1000).toFixed(2)} s; ${events} notifications received, ${problems.length} differences from turn/items`,
    );
    for (const problem of problems.slice(0, 5)) log(`    ${problem}`);
    const perConnection = (idleRss - startRss) / threads;
    log(
      `  gateway RSS: ${mib(startRss)} before any connection, ${mib(idleRss)} with ${threads} idle connections (${(perConnection / 1024).toFixed(1)} KiB each), peak ${mib(peakRss)} while the turns ran`,
    );
    const complete = failed.length === 0 && problems.length === 0;
    return [
      {
        name: `concurrency: ${threads} turns at once, all complete, none lost`,
        value: `${threads - failed.length}/${threads} completed, ${problems.length} differences`,
        target: "all, 0",
        status: complete ? "PASS" : "MISS",
      },
      {
        name: "concurrency: wall time / notifications",
        value: `${(wallMs / 1000).toFixed(2)} s, ${fmtOps((events * 1000) / wallMs).replace("ops", "notifications")}`,
        target: "(info)",
        status: "info",
      },
      {
        name: "concurrency: gateway peak RSS / RSS per idle connection",
        value: `${mib(peakRss)} / ${(perConnection / 1024).toFixed(1)} KiB (idle ${mib(idleRss)})`,
        target: "(info)",
        status: "info",
      },
    ];
  } finally {
    await gateway.stop();
  }
}

if (isMain(import.meta.url)) {
  await useCompiledPackage();
  const threads = numberOption("threads");
  const deltas = numberOption("deltas");
  const rows = await runConcurrencyBench({ ...(threads ? { threads } : {}), ...(deltas ? { deltas } : {}) });
  console.log(`\n${resultTable(rows)}`);
}
