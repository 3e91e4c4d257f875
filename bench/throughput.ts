/**
 * Notification throughput: a scripted turn streaming many agent-message deltas from
 * `turnspec serve` (SQLite store, as served by default), over stdio and over WebSocket,
 * against a bare JSON-RPC server on the same transport code (bench/echo-server.ts)
 * sending the same number of equally sized notifications. Rounds alternate between them,
 * each on its own running process, after untimed warm-up rounds of each (WARM_UP_ROUNDS),
 * and each once the three servers are quiet (what one left running after its round, a
 * checkpoint or a collection, is not charged to the next); the ratio of medians is the
 * figure (target ≥ 0.5).
 * The same gateway on the memory store runs alongside (target ≥ 0.7). Then one long turn
 * (100,000 deltas) on SQLite over stdio, on a gateway warmed up by a turn first: the time
 * its last 1,000 deltas take against its first 1,000, which is flat when nothing per delta
 * grows with the turn (target within 10%). Each end is timed over its tenth (10,000
 * deltas) and given per 1,000, as the gateway appended them (see longTurn): a single
 * 1,000-delta window of a busy machine measures how it scheduled the processes more than
 * what the gateway did.
 *
 * Both are read by the same raw client (bench/raw-link.ts), which tells a delta by how its
 * frame begins and counts it, the same work per frame on both sides, and both run compiled,
 * as a user runs the package (useCompiledPackage in bench/gateway-process.ts).
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/throughput.ts [--deltas N] [--rounds N]
 */
import { createRequire } from "node:module";
import {
  startBaseline,
  startStdioGateway,
  startWebSocketGateway,
  tempDb,
  untilQuiet,
  type ServeProcess,
  type StdioProcess,
  type WebSocketProcess,
  useCompiledPackage,
} from "./gateway-process.js";
import { fmtOps, isMain, median, now, numberOption, resultTable, type ResultRow } from "./lib.js";
import { stdioLink, webSocketLink, type RawLink } from "./raw-link.js";
import { planMessage } from "./turn-driver.js";

export interface ThroughputBenchOptions {
  readonly deltas?: number;
  readonly rounds?: number;
  /** Deltas of the long turn. Default 100,000. */
  readonly longDeltas?: number;
  readonly log?: (line: string) => void;
}

const DELTA = "item/agent_message/delta";
/**
 * How a delta's frame begins, from either server (both write jsonrpc, then method): the
 * client tells a delta by this prefix, with no search of the frame and nothing allocated,
 * so that reading a delta costs the client the same whoever sent it.
 */
const DELTA_FRAME = `{"jsonrpc":"2.0","method":"${DELTA}",`;

/** Untimed rounds of each variant before the timed ones. */
const WARM_UP_ROUNDS = 3;

// better-sqlite3 ships no types: the little the long turn reads is declared here.
const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3") as new (
  file: string,
  options: { readonly: boolean },
) => {
  prepare(sql: string): { all(...params: unknown[]): unknown[] };
  close(): void;
};

/** Requests and notifications over a raw link: responses resolve their request, notifications go to `onNotification`. */
class RawSession {
  private nextId = 1;
  private readonly waiting = new Map<number, (message: { result?: unknown; error?: unknown }) => void>();
  onNotification?: (text: string) => void;

  constructor(private readonly link: RawLink) {
    link.onFrame = (text) => {
      // Both servers write the id right after jsonrpc in a response, and never in a notification.
      if (text.startsWith('{"jsonrpc":"2.0","id":')) {
        const message = JSON.parse(text) as { id: number; result?: unknown; error?: unknown };
        this.waiting.get(message.id)?.(message);
        this.waiting.delete(message.id);
      } else this.onNotification?.(text);
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

interface Round {
  readonly ms: number;
  /** One delta notification as received, the baseline's template. */
  readonly sample?: { method: string; params: Record<string, unknown> };
}

/** One scripted turn of `deltas` deltas; timed from turn/start sent to its terminal notification. */
async function gatewayRound(session: RawSession, deltas: number, turnNo: number): Promise<Round> {
  const { thread } = await session.request<{ thread: { id: string } }>("thread/start", {});
  let count = 0;
  let sample: Round["sample"];
  const done = new Promise<string>((resolve) => {
    session.onNotification = (text) => {
      if (text.startsWith(DELTA_FRAME)) {
        if (count++ === 0) sample = JSON.parse(text) as Round["sample"];
      } else if (text.includes('"method":"turn/completed"') || text.includes('"method":"turn/failed"')) resolve(text);
    };
  });
  const t0 = now();
  await session.request("turn/start", {
    thread_id: thread.id,
    turn_id: `trn_throughput_${turnNo}`,
    input: [{ type: "text", text: planMessage({ deltas }), textElements: [] }],
  });
  const terminal = await done;
  const ms = now() - t0;
  if (!terminal.includes("turn/completed")) throw new Error(`the throughput turn did not complete: ${terminal.slice(0, 300)}`);
  if (count !== deltas) throw new Error(`the gateway streamed ${count} deltas, not ${deltas}`);
  return { ms, ...(sample ? { sample } : {}) };
}

/** The baseline sends `deltas` notifications shaped like the gateway's. */
async function baselineRound(
  session: RawSession,
  deltas: number,
  template: { method: string; params: Record<string, unknown> },
): Promise<Round> {
  let count = 0;
  session.onNotification = (text) => {
    if (text.startsWith(DELTA_FRAME)) count++;
  };
  const t0 = now();
  await session.request("stream", { count: deltas, method: template.method, params: template.params });
  const ms = now() - t0;
  if (count !== deltas) throw new Error(`the baseline sent ${count} notifications, not ${deltas}`);
  return { ms };
}

interface Server {
  readonly process: ServeProcess;
  readonly link: RawLink;
}

/** The three servers of one transport: the gateway on SQLite (the figure), on the memory store (where the time goes), and the bare baseline. */
interface Servers {
  readonly sqlite: Server;
  readonly memory: Server;
  readonly baseline: Server;
}

async function start(transport: "stdio" | "websocket"): Promise<Servers> {
  if (transport === "stdio") {
    const link = (p: StdioProcess): Server => ({ process: p, link: stdioLink(p.child.stdin, p.child.stdout) });
    return { sqlite: link(startStdioGateway({ db: tempDb() })), memory: link(startStdioGateway()), baseline: link(startBaseline("stdio")) };
  }
  const link = async (p: WebSocketProcess): Promise<Server> => ({ process: p, link: await webSocketLink(p.url) });
  const [sqlite, memory, baseline] = await Promise.all([
    startWebSocketGateway({ db: tempDb() }),
    startWebSocketGateway(),
    startBaseline("websocket"),
  ]);
  return { sqlite: await link(sqlite), memory: await link(memory), baseline: await link(baseline) };
}

export async function runThroughputBench(options: ThroughputBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const deltas = options.deltas ?? 10_000;
  const rounds = options.rounds ?? 9;
  log(
    `== notification throughput: a scripted turn of ${deltas} deltas (turnspec serve on SQLite, and on the memory store) vs a bare JSON-RPC server on the same transport sending ${deltas} equally sized notifications; ${rounds} rounds, order rotated`,
  );
  const rows: ResultRow[] = [];
  for (const transport of ["stdio", "websocket"] as const) {
    const servers = await start(transport);
    try {
      const sqlite = new RawSession(servers.sqlite.link);
      const memory = new RawSession(servers.memory.link);
      const baseline = new RawSession(servers.baseline.link);
      // The first turn gives the shape of a delta notification, for the baseline to copy.
      const first = await gatewayRound(sqlite, Math.min(deltas, 2000), 0);
      const template = { method: first.sample!.method, params: first.sample!.params };
      const variants: [string, number[], (round: number) => Promise<Round>][] = [
        ["gateway (SQLite)", [], (round) => gatewayRound(sqlite, deltas, round)],
        ["gateway (memory store)", [], (round) => gatewayRound(memory, deltas, round)],
        ["bare server", [], () => baselineRound(baseline, deltas, template)],
      ];
      // Warm-up rounds of the full size, untimed, in the same rotation: a fresh process
      // runs its first tens of thousands of events slower while the JIT compiles its hot
      // path and the heap grows to its working size; the figure is the steady state.
      const pids = [servers.sqlite, servers.memory, servers.baseline].map((s) => s.process.pid);
      for (let round = 1; round <= WARM_UP_ROUNDS; round++) {
        for (let k = 0; k < variants.length; k++) await variants[(round + k) % variants.length]![2](1000 + round);
      }
      for (let round = 1; round <= rounds; round++) {
        // The order rotates from round to round, so drift in machine load hits all alike.
        for (let k = 0; k < variants.length; k++) {
          const [, samples, run] = variants[(round + k) % variants.length]!;
          await untilQuiet(pids);
          samples.push((await run(round)).ms);
        }
      }
      const rate = (samples: number[]) => (deltas * 1000) / median(samples);
      const [sRate, mRate, bRate] = variants.map(([, samples]) => rate(samples)) as [number, number, number];
      const frameBytes = Buffer.byteLength(JSON.stringify({ jsonrpc: "2.0", ...template }));
      log(`  ${transport} (~${frameBytes} bytes per notification):`);
      for (const [name, samples] of variants)
        log(`    ${name.padEnd(22)} ${fmtOps(rate(samples)).padStart(14)} (rounds: ${samples.map((ms) => ms.toFixed(0)).join(", ")} ms)`);
      log(`    gateway / bare server: ${(sRate / bRate).toFixed(2)} on SQLite, ${(mRate / bRate).toFixed(2)} on the memory store`);
      rows.push({
        name: `throughput ${transport}: deltas/s, SQLite / memory / bare`,
        value: `${fmtOps(sRate)} / ${fmtOps(mRate)} / ${fmtOps(bRate)}`.replaceAll(" ops/s", ""),
        target: "",
        status: "info",
      });
      rows.push({
        name: `throughput ${transport}: gateway / bare server`,
        value: `${(sRate / bRate).toFixed(2)}×`,
        target: "≥ 0.5×",
        status: sRate / bRate >= 0.5 ? "PASS" : "MISS",
      });
      rows.push({
        name: `  the same on the memory store`,
        value: `${(mRate / bRate).toFixed(2)}×`,
        target: "≥ 0.7×",
        status: mRate / bRate >= 0.7 ? "PASS" : "MISS",
      });
    } finally {
      const all = [servers.sqlite, servers.memory, servers.baseline];
      await Promise.all(all.map((s) => s.link.close()));
      await Promise.all(all.map((s) => s.process.stop()));
    }
  }
  rows.push(await longTurn(options.longDeltas ?? 100_000, log));
  return rows;
}

/** Deltas timed at each end of the long turn: its first and last tenth, at most 10,000. */
const longTurnEnd = (deltas: number) => Math.min(10_000, Math.floor(deltas / 10));

/**
 * The long turn, timed where the gateway does its work: the `recorded_at` the store gave
 * each delta as it was appended (read from the SQLite file once the turn is over), per
 * 1,000 deltas over the first and over the last tenth (at most 10,000). The gateway appends,
 * folds and sends one delta before it appends the next, so the spacing of appends is its
 * whole cost per delta. When each delta reached the client is shown too, but not judged:
 * the client reads what has piled up whenever it gets the processor, so on a busy machine
 * its arrival times say more about scheduling than about the gateway.
 */
async function longTurn(deltas: number, log: (line: string) => void): Promise<ResultRow> {
  const window = 1000;
  const end = longTurnEnd(deltas);
  if (end < window) throw new Error(`the long turn needs at least ${10 * window} deltas, got ${deltas}`);
  const db = tempDb();
  const process = startStdioGateway({ db });
  const link = stdioLink(process.child.stdin, process.child.stdout);
  try {
    const session = new RawSession(link);
    // A cold gateway compiles its hot path during the first deltas it streams: warmed up
    // first, the long turn compares its ends, not compiled code with code being compiled.
    await gatewayRound(session, 10_000, 0);
    const { thread } = await session.request<{ thread: { id: string } }>("thread/start", {});
    const arrived: number[] = [];
    const done = new Promise<void>((resolve) => {
      session.onNotification = (text) => {
        if (text.startsWith(DELTA_FRAME)) arrived.push(now());
        else if (text.includes('"method":"turn/completed"') || text.includes('"method":"turn/failed"')) resolve();
      };
    });
    await session.request("turn/start", {
      thread_id: thread.id,
      turn_id: "trn_long",
      input: [{ type: "text", text: planMessage({ deltas }), textElements: [] }],
    });
    await done;
    if (arrived.length !== deltas) throw new Error(`the long turn streamed ${arrived.length} deltas, not ${deltas}`);
    const appended = appendTimes(db, "trn_long");
    if (appended.length !== deltas) throw new Error(`the store holds ${appended.length} deltas of the long turn, not ${deltas}`);
    // Milliseconds per 1,000 deltas from delta `start` to delta `stop` (exclusive).
    const per1000 = (at: readonly number[], start: number, stop: number) => ((at[stop - 1]! - at[start]!) * window) / (stop - 1 - start);
    const ends = (at: readonly number[]) => ({ first: per1000(at, 0, end), last: per1000(at, deltas - end, deltas) });
    const tenths = (at: readonly number[]) =>
      Array.from({ length: 10 }, (_, k) => per1000(at, (k * deltas) / 10, ((k + 1) * deltas) / 10).toFixed(2)).join(", ");
    const { first, last } = ends(appended);
    const ratio = last / first;
    const seen = ends(arrived);
    log(
      `  one turn of ${deltas} deltas on SQLite, stdio: appended at ${first.toFixed(2)} ms per ${window} deltas over the first ${end}, ${last.toFixed(2)} ms over the last ${end}; last / first ${ratio.toFixed(2)} (each tenth: ${tenths(appended)})`,
    );
    log(
      `    as the client received them: ${seen.first.toFixed(2)} and ${seen.last.toFixed(2)} ms per ${window} (each tenth: ${tenths(arrived)})`,
    );
    return {
      name: `long turn: ms per ${window} deltas appended, last / first ${end} of ${deltas}`,
      value: `${ratio.toFixed(2)}× (${last.toFixed(2)} / ${first.toFixed(2)} ms)`,
      target: "≤ 1.10×",
      status: ratio <= 1.1 ? "PASS" : "MISS",
    };
  } finally {
    await link.close();
    await process.stop();
  }
}

/** When each delta of a turn was appended (ms since the epoch), in sequence order, read from the gateway's SQLite file. */
function appendTimes(file: string, turnId: string): number[] {
  const sqlite = new BetterSqlite3(file, { readonly: true });
  try {
    // The file holds a turn's events in runs, with each run's methods and times as [value, count] pairs (runtime/store/sqlite-writer.ts).
    const runs = sqlite.prepare("SELECT methods, recorded_at FROM event_runs WHERE turn_id = ? ORDER BY last_sequence").all(turnId) as {
      methods: string;
      recorded_at: string;
    }[];
    const expand = (pairs: string) =>
      (JSON.parse(pairs) as [string, number][]).flatMap(([value, count]) => Array<string>(count).fill(value));
    return runs.flatMap((run) => {
      const times = expand(run.recorded_at);
      return expand(run.methods).flatMap((method, i) => (method === DELTA ? [Date.parse(times[i]!)] : []));
    });
  } finally {
    sqlite.close();
  }
}

if (isMain(import.meta.url)) {
  await useCompiledPackage();
  const deltas = numberOption("deltas");
  const rounds = numberOption("rounds");
  const rows = await runThroughputBench({ ...(deltas ? { deltas } : {}), ...(rounds ? { rounds } : {}) });
  console.log(`\n${resultTable(rows)}`);
}
