/**
 * Notification throughput: a scripted turn streaming many agent-message deltas from
 * `turnspec serve` (SQLite store, as served by default), over stdio and over WebSocket,
 * against a bare JSON-RPC server on the same transport code (bench/echo-server.ts)
 * sending the same number of equally sized notifications. Rounds alternate between the
 * two, each on its own running process; the ratio of medians is the figure (target ≥ 0.5).
 *
 * Both are read by the same raw client (bench/raw-link.ts), which only counts frames, so
 * the client's cost is the same on both sides.
 *
 * Run alone: npx tsx bench/throughput.ts [--deltas N] [--rounds N]
 */
import { startBaseline, startStdioGateway, startWebSocketGateway, tempDb, type ServeProcess } from "./gateway-process.js";
import { fmtOps, isMain, median, now, numberOption, resultTable, type ResultRow } from "./lib.js";
import { stdioLink, webSocketLink, type RawLink } from "./raw-link.js";
import { planMessage } from "./turn-driver.js";

export interface ThroughputBenchOptions {
  readonly deltas?: number;
  readonly rounds?: number;
  readonly log?: (line: string) => void;
}

const DELTA = "item/agent_message/delta";

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
      if (text.includes(`"method":"${DELTA}"`)) {
        if (count++ === 0) sample = JSON.parse(text) as Round["sample"];
      } else if (text.includes('"method":"turn/completed"') || text.includes('"method":"turn/failed"')) resolve(text);
    };
  });
  const t0 = now();
  await session.request("turn/start", { thread_id: thread.id, turn_id: `trn_throughput_${turnNo}`, input: [{ type: "text", text: planMessage({ deltas }), textElements: [] }] });
  const terminal = await done;
  const ms = now() - t0;
  if (!terminal.includes("turn/completed")) throw new Error(`the throughput turn did not complete: ${terminal.slice(0, 300)}`);
  if (count !== deltas) throw new Error(`the gateway streamed ${count} deltas, not ${deltas}`);
  return { ms, ...(sample ? { sample } : {}) };
}

/** The baseline sends `deltas` notifications shaped like the gateway's. */
async function baselineRound(session: RawSession, deltas: number, template: { method: string; params: Record<string, unknown> }): Promise<Round> {
  let count = 0;
  session.onNotification = () => void count++;
  const t0 = now();
  await session.request("stream", { count: deltas, method: template.method, params: template.params });
  const ms = now() - t0;
  if (count !== deltas) throw new Error(`the baseline sent ${count} notifications, not ${deltas}`);
  return { ms };
}

interface Pair {
  readonly gateway: { process: ServeProcess; link: RawLink };
  readonly baseline: { process: ServeProcess; link: RawLink };
}

async function start(transport: "stdio" | "websocket"): Promise<Pair> {
  const db = tempDb();
  if (transport === "stdio") {
    const gateway = startStdioGateway({ db });
    const baseline = startBaseline("stdio");
    return {
      gateway: { process: gateway, link: stdioLink(gateway.child.stdin, gateway.child.stdout) },
      baseline: { process: baseline, link: stdioLink(baseline.child.stdin, baseline.child.stdout) },
    };
  }
  const [gateway, baseline] = await Promise.all([startWebSocketGateway({ db }), startBaseline("websocket")]);
  return { gateway: { process: gateway, link: await webSocketLink(gateway.url) }, baseline: { process: baseline, link: await webSocketLink(baseline.url) } };
}

export async function runThroughputBench(options: ThroughputBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const deltas = options.deltas ?? 5_000;
  const rounds = options.rounds ?? 3;
  log(`== notification throughput: a scripted turn of ${deltas} deltas (turnspec serve, SQLite store) vs a bare JSON-RPC server on the same transport sending ${deltas} equally sized notifications; ${rounds} alternating rounds`);
  const rows: ResultRow[] = [];
  for (const transport of ["stdio", "websocket"] as const) {
    const pair = await start(transport);
    try {
      const gateway = new RawSession(pair.gateway.link);
      const baseline = new RawSession(pair.baseline.link);
      // A warm-up turn, which also gives the shape of a delta notification.
      const warm = await gatewayRound(gateway, Math.min(deltas, 2000), 0);
      const template = { method: warm.sample!.method, params: warm.sample!.params };
      await baselineRound(baseline, Math.min(deltas, 2000), template);
      const g: number[] = [];
      const b: number[] = [];
      for (let round = 1; round <= rounds; round++) {
        // Alternating which goes first, so drift in machine load hits both alike.
        if (round % 2) {
          g.push((await gatewayRound(gateway, deltas, round)).ms);
          b.push((await baselineRound(baseline, deltas, template)).ms);
        } else {
          b.push((await baselineRound(baseline, deltas, template)).ms);
          g.push((await gatewayRound(gateway, deltas, round)).ms);
        }
      }
      const gRate = (deltas * 1000) / median(g);
      const bRate = (deltas * 1000) / median(b);
      const ratio = gRate / bRate;
      const frameBytes = Buffer.byteLength(JSON.stringify({ jsonrpc: "2.0", ...template }));
      log(`  ${transport}: gateway ${fmtOps(gRate)} (median of ${g.map((ms) => ms.toFixed(0)).join(", ")} ms), baseline ${fmtOps(bRate)} (${b.map((ms) => ms.toFixed(0)).join(", ")} ms); ~${frameBytes} bytes per notification; ratio ${ratio.toFixed(2)}`);
      rows.push({ name: `throughput ${transport}: gateway deltas`, value: `${fmtOps(gRate)} (baseline ${fmtOps(bRate)})`, target: "", status: "info" });
      rows.push({ name: `throughput ${transport}: gateway / bare baseline`, value: `${ratio.toFixed(2)}×`, target: "≥ 0.5×", status: ratio >= 0.5 ? "PASS" : "MISS" });
    } finally {
      await Promise.all([pair.gateway.link.close(), pair.baseline.link.close()]);
      await Promise.all([pair.gateway.process.stop(), pair.baseline.process.stop()]);
    }
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const deltas = numberOption("deltas");
  const rounds = numberOption("rounds");
  const rows = await runThroughputBench({ ...(deltas ? { deltas } : {}), ...(rounds ? { rounds } : {}) });
  console.log(`\n${resultTable(rows)}`);
}
