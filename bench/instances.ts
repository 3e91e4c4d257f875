/**
 * Instances on one PostgreSQL database with the clients spread over them, beside one
 * instance serving them all: what each added instance costs.
 *
 * For 1 and for 3 instances (each on a fresh database): `connections` raw WebSocket
 * connections spread evenly over the instances, `threads` threads each followed by as
 * many connections on every instance, and a turn of `deltas` deltas in every thread, all
 * started at once, each on the instance of its thread's first connection (so with three
 * instances the turns run on all of them). Measured:
 *
 * - aggregate throughput: every turn's deltas over the time from the first turn/start to
 *   the last turn's end as seen by the connection that started it;
 * Each is measured twice: with the turns streaming a delta every 10 ms each (a model's pace,
 * below what the instances can send: the delivery latency) and with every delta at once (a
 * burst: the throughput; its latency is mostly the backlog). Every thread runs an
 * unmeasured warm-up turn first.
 *
 * - delivery latency: for each notification and connection following its thread (the one
 *   that started the turn aside), the time from when the instance running the turn
 *   recorded the event (its recorded_at, on the wall clock every process here shares, to
 *   the millisecond) to its arrival at that connection, p50 and p99, as bench/cluster.ts
 *   measures it. With one instance it is the cost of committing and fanning out on one
 *   instance; with three, two of every three connections are on another instance than
 *   the turn.
 *
 * It needs a PostgreSQL server it can start (bench/postgres-server.ts); without one it
 * says why and measures nothing.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/instances.ts [--deltas N] [--connections N] [--threads N]
 */
import { input, Session } from "./cluster.js";
import { startWebSocketGateway, type WebSocketProcess, useCompiledPackage } from "./gateway-process.js";
import { exitOnSignals, fmtOps, isMain, now, numberOption, quantile, resultTable, type ResultRow } from "./lib.js";
import { startPostgres, type PostgresServer } from "./postgres-server.js";
import { webSocketLink, type RawLink } from "./raw-link.js";

export interface InstancesBenchOptions {
  /** Deltas per turn. Default 500. */
  readonly deltas?: number;
  /** Connections in all, spread over the instances. Default 150. */
  readonly connections?: number;
  /** Threads, one turn each, run at once. Default 15 (a multiple of 3, so every instance runs as many). */
  readonly threads?: number;
  readonly log?: (line: string) => void;
}

/** Milliseconds between a turn's deltas when the turns stream at a model's pace. */
const PACE_MS = 10;

interface Measured {
  readonly instances: number;
  readonly rate: number;
  readonly p50: number;
  readonly p99: number;
  readonly notifications: number;
  readonly missing: number;
}

async function measure(
  server: PostgresServer,
  instances: number,
  connections: number,
  threads: number,
  deltas: number,
  everyMs?: number,
): Promise<Measured> {
  const store = await server.createDatabase();
  const processes: WebSocketProcess[] = [];
  const links: RawLink[] = [];
  try {
    processes.push(...(await Promise.all(Array.from({ length: instances }, () => startWebSocketGateway({ store })))));
    // Connection i is on instance i mod instances and follows thread i mod threads.
    const sessions = await Promise.all(
      Array.from({ length: connections }, async (_, i) => {
        const session = new Session(await webSocketLink(processes[i % instances]!.url));
        links.push(session.link);
        return session;
      }),
    );
    const threadIds: string[] = [];
    for (let t = 0; t < threads; t++)
      threadIds.push((await sessions[t]!.request<{ thread: { id: string } }>("thread/start", {})).thread.id);
    await Promise.all(sessions.map((s, i) => s.request("thread/get", { thread_id: threadIds[i % threads] })));
    // A warm-up turn in every thread first, unmeasured, so no instance runs its first turns cold.
    await Promise.all(
      threadIds.map(async (threadId, t) => {
        const warmed = new Promise<void>((resolve) => {
          sessions[t]!.onNotification = (text) => {
            if (text.includes('"method":"turn/completed"')) resolve();
          };
        });
        await sessions[t]!.request("turn/start", { thread_id: threadId, turn_id: `trn_warm_${t}`, input: input(50, everyMs) });
        await warmed;
      }),
    );
    const measured = `trn_${instances}_`;
    const key = (text: string) => {
      const turn = /"turn_id":"([^"]+)"/.exec(text)?.[1];
      const sequence = /"sequence":(\d+)/.exec(text)?.[1];
      return turn?.startsWith(measured) && sequence ? `${turn}#${sequence}` : undefined;
    };
    // Arrival times on the wall clock, the clock the gateways' recorded_at comes from.
    const wall = (at: number) => performance.timeOrigin + at;
    const arrivals: { key: string; at: number }[] = [];
    let ended = 0;
    let lastEnd = 0;
    const failures: string[] = [];
    const allEnded = new Promise<void>((resolve) => {
      sessions.forEach((s, i) => {
        s.onNotification = (text, at) => {
          const k = key(text);
          if (k === undefined) return;
          if (i < threads) {
            if (text.includes('"method":"turn/completed"') || text.includes('"method":"turn/failed"')) {
              if (!text.includes("turn/completed")) failures.push(text.slice(0, 300));
              lastEnd = at;
              if (++ended === threads) resolve();
            }
          } else arrivals.push({ key: k, at: wall(at) });
        };
      });
    });
    const t0 = now();
    await Promise.all(
      threadIds.map((threadId, t) =>
        sessions[t]!.request("turn/start", { thread_id: threadId, turn_id: `trn_${instances}_${t}`, input: input(deltas, everyMs) }),
      ),
    );
    await allEnded;
    if (failures.length > 0) throw new Error(`${failures.length} turns did not complete, the first: ${failures[0]}`);
    // When the running instance recorded each event, as turn/items gives it.
    const recordedAt = new Map<string, number>();
    for (const [t, threadId] of threadIds.entries()) {
      const turnId = `trn_${instances}_${t}`;
      const items = await sessions[t]!.request<{ events: { sequence: number; recorded_at: string }[] }>("turn/items", {
        thread_id: threadId,
        turn_id: turnId,
      });
      for (const event of items.events) recordedAt.set(`${turnId}#${event.sequence}`, Date.parse(event.recorded_at));
    }
    const expected = recordedAt.size * ((connections - threads) / threads);
    const deadline = now() + 10_000;
    while (arrivals.length < expected && now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const latencies = arrivals.flatMap(({ key: k, at }) => {
      const recorded = recordedAt.get(k);
      return recorded === undefined ? [] : [at - recorded];
    });
    return {
      instances,
      rate: (threads * deltas * 1000) / (lastEnd - t0),
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      notifications: latencies.length,
      missing: expected - arrivals.length,
    };
  } finally {
    await Promise.all(links.map((l) => l.close().catch(() => undefined)));
    await Promise.all(processes.map((p) => p.stop()));
  }
}

export async function runInstancesBench(options: InstancesBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const deltas = options.deltas ?? 500;
  const connections = options.connections ?? 150;
  const threads = options.threads ?? 15;
  if (connections % threads !== 0 || connections / threads < 2)
    throw new Error(`--connections (${connections}) must be a multiple of --threads (${threads}), at least twice it`);
  log(
    `== instances on one PostgreSQL database: ${threads} turns of ${deltas} deltas run at once, ${connections} connections spread over 1, then 3 instances; ` +
      `the turns stream a delta every ${PACE_MS} ms each (delivery latency), then every delta at once (throughput)`,
  );
  const started = await startPostgres();
  if ("skip" in started) {
    log(`  skipped: ${started.skip}`);
    return [{ name: "instances on one database", value: "skipped (no server)", target: "", status: "info" }];
  }
  try {
    const results = new Map<string, Measured>();
    for (const everyMs of [PACE_MS, undefined])
      for (const instances of [1, 3]) {
        const m = await measure(started.server, instances, connections, threads, deltas, everyMs);
        results.set(`${instances}${everyMs ? " paced" : ""}`, m);
        log(
          `  ${instances} instance${instances === 1 ? " " : "s"}, ${everyMs ? `a delta every ${everyMs} ms` : "all deltas at once"}: ` +
            `${fmtOps(m.rate).replace(" ops/s", " deltas/s").padStart(18)} in all, ` +
            `delivery p50 ${m.p50.toFixed(1)} ms, p99 ${m.p99.toFixed(1)} ms over ${m.notifications} notifications${m.missing > 0 ? `, ${m.missing} NOT RECEIVED` : ""}`,
        );
      }
    const latency = (one: Measured, three: Measured) =>
      `${one.p50.toFixed(1)} / ${one.p99.toFixed(1)} ms, ${three.p50.toFixed(1)} / ${three.p99.toFixed(1)} ms` +
      `${one.missing + three.missing > 0 ? `, ${one.missing + three.missing} missing` : ""}`;
    const [one, three, onePaced, threePaced] = ["1", "3", "1 paced", "3 paced"].map((k) => results.get(k)!) as [
      Measured,
      Measured,
      Measured,
      Measured,
    ];
    return [
      {
        name: `${connections} connections on 1 / 3 instances: deltas/s in all`,
        value: `${fmtOps(one.rate)} / ${fmtOps(three.rate)} (${(three.rate / one.rate).toFixed(2)}×)`.replaceAll(" ops/s", ""),
        target: "",
        status: "info",
      },
      {
        name: `  delivery from the recording at a model's pace (a delta every ${PACE_MS} ms), p50 / p99, on 1 instance, on 3`,
        value: latency(onePaced, threePaced),
        target: "",
        status: "info",
      },
      { name: `  the same with all deltas at once`, value: latency(one, three), target: "", status: "info" },
    ];
  } finally {
    started.server.stop();
  }
}

if (isMain(import.meta.url)) {
  exitOnSignals();
  await useCompiledPackage();
  const deltas = numberOption("deltas");
  const connections = numberOption("connections");
  const threads = numberOption("threads");
  const rows = await runInstancesBench({
    ...(deltas ? { deltas } : {}),
    ...(connections ? { connections } : {}),
    ...(threads ? { threads } : {}),
  });
  console.log(`\n${resultTable(rows)}`);
}
