/**
 * The PostgreSQL store beside SQLite, and two instances on one database.
 *
 * 1. Throughput: a scripted turn of `deltas` deltas from `turnspec serve --port` on a
 *    SQLite file and on PostgreSQL, rounds alternating; deltas per second (median), and
 *    the CPU time each turn cost the gateway (and the PostgreSQL server).
 * 2. turn/items: the whole log of a finished turn of `deltas` events, read repeatedly;
 *    milliseconds per call (median), on each store.
 * 3. Cross-instance delivery: two instances on one database, `connections` raw WebSocket
 *    connections on each. Each thread is followed by as many connections on A as on B;
 *    its turn runs on A. The latency of a notification is the time from when A recorded
 *    the event (its recorded_at, on the wall clock both processes share) to its arrival at
 *    each connection of B, as p50 and p99 over every notification and connection; the
 *    same for A's own connections is printed beside it. The turns stream at a model's pace
 *    (a delta every 10 ms each), after a warm-up turn in every thread; then the same turns
 *    again with every delta at once, a burst whose figures show how fast the instances fan
 *    out rather than how long one delivery takes.
 *
 * It needs a PostgreSQL server it can start (bench/postgres-server.ts); without one it
 * says why and measures nothing.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/cluster.ts [--deltas N] [--rounds N] [--connections N]
 */
import { cpuTimeNs, startWebSocketGateway, tempDb, type WebSocketProcess, useCompiledPackage } from "./gateway-process.js";
import { exitOnSignals, fmtOps, isMain, median, now, numberOption, quantile, resultTable, type ResultRow } from "./lib.js";
import { startPostgres } from "./postgres-server.js";
import { webSocketLink, type RawLink } from "./raw-link.js";
import { planMessage } from "./turn-driver.js";

export interface ClusterBenchOptions {
  readonly deltas?: number;
  readonly rounds?: number;
  /** Connections on each of the two instances. Default 100. */
  readonly connections?: number;
  /** Threads (turns run at once on A) the connections are spread over. Default 10. */
  readonly threads?: number;
  readonly log?: (line: string) => void;
}

/** Requests over a raw link; every other frame goes to `onNotification` with its arrival time. */
export class Session {
  private nextId = 1;
  private readonly waiting = new Map<number, (message: { result?: unknown; error?: unknown }) => void>();
  onNotification?: (text: string, at: number) => void;

  constructor(readonly link: RawLink) {
    link.onFrame = (text) => {
      const at = now();
      if (text.startsWith('{"jsonrpc":"2.0","id":')) {
        const message = JSON.parse(text) as { id: number; result?: unknown; error?: unknown };
        this.waiting.get(message.id)?.(message);
        this.waiting.delete(message.id);
      } else this.onNotification?.(text, at);
    };
  }

  async request<T>(method: string, params: unknown): Promise<T> {
    const id = this.nextId++;
    const answered = new Promise<{ result?: unknown; error?: unknown }>((resolve) => this.waiting.set(id, resolve));
    await this.link.send([JSON.stringify({ jsonrpc: "2.0", id, method, params })]);
    const message = await answered;
    if (message.error) throw new Error(`${method} failed: ${JSON.stringify(message.error)}`);
    return message.result as T;
  }
}

export const input = (deltas: number, everyMs?: number) => [
  { type: "text", text: planMessage({ deltas, ...(everyMs ? { everyMs } : {}) }), textElements: [] },
];

/** Runs one turn and resolves with its duration from turn/start to its terminal notification. */
async function turn(session: Session, threadId: string, turnId: string, deltas: number): Promise<number> {
  const done = new Promise<string>((resolve) => {
    session.onNotification = (text) => {
      if (text.includes('"method":"turn/completed"') || text.includes('"method":"turn/failed"')) resolve(text);
    };
  });
  const t0 = now();
  await session.request("turn/start", { thread_id: threadId, turn_id: turnId, input: input(deltas) });
  const terminal = await done;
  if (!terminal.includes("turn/completed")) throw new Error(`turn ${turnId} did not complete: ${terminal.slice(0, 300)}`);
  return now() - t0;
}

export async function runClusterBench(options: ClusterBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const deltas = options.deltas ?? 5000;
  // Nine: a round takes a tenth of a second, and with three the median moved by a third from run to run.
  const rounds = options.rounds ?? 9;
  const connections = options.connections ?? 100;
  const threads = options.threads ?? 10;
  log(
    `== PostgreSQL store: throughput and turn/items beside SQLite (${deltas} deltas, ${rounds} rounds), then two instances with ${connections} connections each`,
  );
  const started = await startPostgres();
  if ("skip" in started) {
    log(`  skipped: ${started.skip}`);
    return [{ name: "PostgreSQL store", value: "skipped (no server)", target: "", status: "info" }];
  }
  const server = started.server;
  const rows: ResultRow[] = [];
  const processes: WebSocketProcess[] = [];
  const links: RawLink[] = [];
  try {
    const [sqliteGateway, pgGateway] = await Promise.all([
      startWebSocketGateway({ db: tempDb() }),
      startWebSocketGateway({ store: await server.createDatabase() }),
    ]);
    processes.push(sqliteGateway, pgGateway);
    const sessions = await Promise.all([sqliteGateway, pgGateway].map(async (p) => new Session(await webSocketLink(p.url))));
    links.push(...sessions.map((s) => s.link));
    const names = ["SQLite", "PostgreSQL"] as const;
    const threadIds = await Promise.all(
      sessions.map(async (s) => (await s.request<{ thread: { id: string } }>("thread/start", {})).thread.id),
    );
    const samples: number[][] = [[], []];
    // CPU time of each side's gateway over the rounds, and of the PostgreSQL server over the PostgreSQL rounds.
    const cpuMs = [0, 0];
    let serverMs = 0;
    const cpuOf = (k: number) => (cpuTimeNs([sqliteGateway, pgGateway][k]!.pid) ?? NaN) / 1e6;
    // A warm-up turn of the measured size on each (a smaller one leaves the PostgreSQL
    // store's later groups, which only a long burst reaches, to warm up in the first
    // measured rounds), then alternating rounds.
    for (let k = 0; k < 2; k++) await turn(sessions[k]!, threadIds[k]!, "trn_warm", deltas);
    for (let round = 1; round <= rounds; round++) {
      for (const k of round % 2 ? [0, 1] : [1, 0]) {
        const [gateway, db] = [cpuOf(k), (server.cpuTimeNs() ?? NaN) / 1e6];
        samples[k]!.push(await turn(sessions[k]!, threadIds[k]!, `trn_round_${round}`, deltas));
        cpuMs[k]! += cpuOf(k) - gateway;
        if (k === 1) serverMs += (server.cpuTimeNs() ?? NaN) / 1e6 - db;
      }
    }
    const rates = samples.map((s) => (deltas * 1000) / median(s));
    for (let k = 0; k < 2; k++)
      log(
        `  throughput on ${names[k]!.padEnd(10)} ${fmtOps(rates[k]!).padStart(14)} (rounds: ${samples[k]!.map((ms) => ms.toFixed(0)).join(", ")} ms)`,
      );
    rows.push({
      name: "throughput websocket: deltas/s, SQLite / PostgreSQL",
      value: `${fmtOps(rates[0]!)} / ${fmtOps(rates[1]!)}`.replaceAll(" ops/s", ""),
      target: "",
      status: "info",
    });
    log(
      `  CPU per turn: SQLite gateway ${(cpuMs[0]! / rounds).toFixed(1)} ms; PostgreSQL gateway ${(cpuMs[1]! / rounds).toFixed(1)} ms + server ${(serverMs / rounds).toFixed(1)} ms`,
    );
    const rateRatio = rates[1]! / rates[0]!;
    rows.push({
      name: "  PostgreSQL / SQLite",
      value: `${rateRatio.toFixed(2)}×`,
      target: "≥ 0.7×",
      status: rateRatio >= 0.7 ? "PASS" : "MISS",
    });

    const itemsMs: number[] = [];
    for (let k = 0; k < 2; k++) {
      const times: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t0 = now();
        const items = await sessions[k]!.request<{ events: unknown[] }>("turn/items", { thread_id: threadIds[k], turn_id: "trn_round_1" });
        times.push(now() - t0);
        if (items.events.length < deltas) throw new Error(`turn/items gave ${items.events.length} events, fewer than the ${deltas} deltas`);
      }
      itemsMs.push(median(times));
      log(`  turn/items of a ${deltas}-delta turn on ${names[k]!.padEnd(10)} ${median(times).toFixed(1)} ms (median of 20)`);
    }
    const itemsRatio = itemsMs[1]! / itemsMs[0]!;
    rows.push({
      name: `turn/items, ${deltas}-delta turn: PostgreSQL / SQLite`,
      value: `${itemsRatio.toFixed(2)}× (${itemsMs[1]!.toFixed(1)} / ${itemsMs[0]!.toFixed(1)} ms)`,
      target: "≤ 1.2×",
      status: itemsRatio <= 1.2 ? "PASS" : "MISS",
    });

    // Latency is measured at a model's pace (each turn streaming a delta every 10 ms), below
    // what the instances can send; the same turns with every delta at once show the backlog
    // of a burst, which measures how fast the instances fan out rather than how long a
    // delivery takes.
    const cross = { connections, threads, deltas: Math.min(deltas, 500), processes, links, log };
    rows.push(await crossInstance(await server.createDatabase(), { ...cross, everyMs: 10 }));
    rows.push(await crossInstance(await server.createDatabase(), cross));
    return rows;
  } finally {
    await Promise.all(links.map((l) => l.close().catch(() => undefined)));
    await Promise.all(processes.map((p) => p.stop()));
    server.stop();
  }
}

interface CrossInstanceRun {
  readonly connections: number;
  readonly threads: number;
  readonly deltas: number;
  /** Milliseconds between a turn's deltas; without it, each turn's deltas come at once. */
  readonly everyMs?: number;
  readonly processes: WebSocketProcess[];
  readonly links: RawLink[];
  readonly log: (line: string) => void;
}

async function crossInstance(store: string, run: CrossInstanceRun): Promise<ResultRow> {
  const { connections, threads, deltas, everyMs, processes, links, log } = run;
  const [a, b] = await Promise.all([startWebSocketGateway({ store }), startWebSocketGateway({ store })]);
  processes.push(a, b);
  const open = async (url: string) => {
    const session = new Session(await webSocketLink(url));
    links.push(session.link);
    return session;
  };
  const onA = await Promise.all(Array.from({ length: connections }, () => open(a.url)));
  const onB = await Promise.all(Array.from({ length: connections }, () => open(b.url)));
  const threadIds: string[] = [];
  for (let t = 0; t < threads; t++) threadIds.push((await onA[0]!.request<{ thread: { id: string } }>("thread/start", {})).thread.id);
  // Connection i follows thread i mod threads, on both instances.
  await Promise.all([...onA, ...onB].map((s, i) => s.request("thread/get", { thread_id: threadIds[(i % connections) % threads] })));
  // Arrival times on the wall clock, the clock the gateways' recorded_at comes from.
  const wall = (at: number) => performance.timeOrigin + at;
  const arrivalsOn: Record<"A" | "B", { key: string; at: number }[]> = { A: [], B: [] };
  const key = (text: string) => {
    const turn = /"turn_id":"([^"]+)"/.exec(text)?.[1];
    const sequence = /"sequence":(\d+)/.exec(text)?.[1];
    return turn?.startsWith("trn_cross_") && sequence ? `${turn}#${sequence}` : undefined;
  };
  // A warm-up turn in every thread first, unmeasured, so neither instance runs its first turns cold.
  await Promise.all(
    threadIds.map(async (threadId, t) => {
      const warmed = new Promise<void>((resolve) => {
        onA[t]!.onNotification = (text) => {
          if (text.includes('"method":"turn/completed"')) resolve();
        };
      });
      await onA[t]!.request("turn/start", { thread_id: threadId, turn_id: `trn_warm_${t}`, input: input(50, everyMs) });
      await warmed;
    }),
  );
  let ended = 0;
  const allEnded = new Promise<void>((resolve) => {
    onA.forEach((s, i) => {
      s.onNotification = (text, at) => {
        const k = key(text);
        if (k) arrivalsOn.A.push({ key: k, at: wall(at) });
        if (i < threads && text.includes('"method":"turn/completed"') && ++ended === threads) resolve();
      };
    });
  });
  for (const s of onB) {
    s.onNotification = (text, at) => {
      const k = key(text);
      if (k) arrivalsOn.B.push({ key: k, at: wall(at) });
    };
  }
  const turnIds = threadIds.map((_, t) => `trn_cross_${t}`);
  await Promise.all(
    threadIds.map((threadId, t) =>
      onA[t]!.request("turn/start", { thread_id: threadId, turn_id: turnIds[t], input: input(deltas, everyMs) }),
    ),
  );
  await allEnded;
  // When A recorded each event (its recorded_at, taken as it appended the event, before the
  // commit), as turn/items gives it: the latency of a delivery runs from there to its arrival.
  const recordedAt = new Map<string, number>();
  for (const [t, turnId] of turnIds.entries()) {
    const items = await onA[0]!.request<{ events: { sequence: number; recorded_at: string }[] }>("turn/items", {
      thread_id: threadIds[t],
      turn_id: turnId,
    });
    for (const event of items.events) recordedAt.set(`${turnId}#${event.sequence}`, Date.parse(event.recorded_at));
  }
  const perConnection = connections / threads;
  const expected = recordedAt.size * perConnection;
  // The last notifications on B may still be on their way.
  const deadline = now() + 10_000;
  while (arrivalsOn.B.length < expected && now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const latencies = (side: "A" | "B") =>
    arrivalsOn[side].flatMap(({ key: k, at }) => {
      const recorded = recordedAt.get(k);
      return recorded === undefined ? [] : [at - recorded];
    });
  const [onOwn, onOther] = [latencies("A"), latencies("B")];
  if (process.env.DUMP_LAT) {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(
      process.env.DUMP_LAT + (everyMs ? ".paced" : ".burst"),
      JSON.stringify({
        A: arrivalsOn.A.map(({ key: k, at }) => [k, at, recordedAt.get(k)]),
        B: arrivalsOn.B.map(({ key: k, at }) => [k, at, recordedAt.get(k)]),
      }),
    );
  }
  const missing = expected - onOther.length;
  const p50 = quantile(onOther, 0.5);
  const p99 = quantile(onOther, 0.99);
  const pace = everyMs ? `one delta every ${everyMs} ms` : "all deltas at once";
  log(
    `  cross-instance delivery, ${threads} turns of ${deltas} deltas on A (${pace}), ${connections} connections on each instance, ` +
      `from each event's recorded time (1 ms resolution): to B p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms over ${onOther.length} notifications` +
      `${missing > 0 ? `, ${missing} NOT RECEIVED` : ""}; to A itself p50 ${quantile(onOwn, 0.5).toFixed(1)} ms, p99 ${quantile(onOwn, 0.99).toFixed(1)} ms`,
  );
  const value =
    `${p50.toFixed(1)} / ${p99.toFixed(1)} ms (${quantile(onOwn, 0.5).toFixed(1)} / ${quantile(onOwn, 0.99).toFixed(1)} ms)` +
    `${missing > 0 ? `, ${missing} missing` : ""}`;
  if (!everyMs)
    return {
      name: `  the same turns with all deltas at once (a burst of ${expected} notifications per instance)`,
      value,
      target: "",
      status: missing > 0 ? "MISS" : "info",
    };
  return {
    name: `cross-instance delivery (${connections}+${connections} connections, ${pace}), from the event's recording: p50 / p99 (on A itself)`,
    value,
    target: "≤ 5 / ≤ 25 ms",
    status: p50 <= 5 && p99 <= 25 && missing === 0 ? "PASS" : "MISS",
  };
}

if (isMain(import.meta.url)) {
  exitOnSignals();
  await useCompiledPackage();
  const deltas = numberOption("deltas");
  const rounds = numberOption("rounds");
  const connections = numberOption("connections");
  const rows = await runClusterBench({
    ...(deltas ? { deltas } : {}),
    ...(rounds ? { rounds } : {}),
    ...(connections ? { connections } : {}),
  });
  console.log(`\n${resultTable(rows)}`);
}
