/**
 * `turnspec serve` as a child process, for the benchmarks and for the fuzz, load and
 * durability tests: started over stdio or on a WebSocket port, with its resident memory
 * read from the operating system, and stopped (or killed) by its process id.
 */
import { spawn, spawnSync, type ChildProcess, type ChildProcessWithoutNullStreams } from "node:child_process";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { GatewayConfig } from "../generated/types.js";
import { ensureBuilt } from "./lib.js";

export const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/**
 * What the started servers run. By default the TypeScript sources, through tsx, as the
 * tests run them (bin/turnspec.js, and bench/echo-server.ts). After useCompiledPackage(),
 * what a user runs: the compiled packages (the `turnspec` command as installed), and
 * the baseline compiled the same way against the package's compiled transport, so that
 * neither side of a ratio pays for tsx (esbuild's keepNames, source maps) and the other not.
 */
let programs = {
  bin: join(ROOT, "bin", "turnspec.js"),
  baseline: ["--import", new URL("../scripts/from-source.mjs", import.meta.url).href, join(ROOT, "bench", "echo-server.ts")],
};

/**
 * Has the servers started from now on run from the compiled package: builds dist/ first
 * when it is missing or older than a source it is built from, then compiles the baseline
 * (bench/echo-server.ts, with TypeScript's transpileModule, as the build compiles the
 * packages) into a module that imports the compiled @turnspec/rpc.
 */
export async function useCompiledPackage(log: (line: string) => void = (line) => console.log(line)): Promise<void> {
  ensureBuilt(log);
  const cli = join(ROOT, "packages", "turnspec", "bin", "turnspec.js");
  const { default: ts } = await import("typescript");
  const source = readFileSync(join(ROOT, "bench", "echo-server.ts"), "utf8");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
    fileName: "echo-server.ts",
  });
  if (/from "\.\.?\//.test(outputText))
    throw new Error("bench/echo-server.ts imports a module by path: the compiled baseline can import only packages");
  // Beside the repository's node_modules, so that its imports of @turnspec/rpc resolve to the compiled package.
  const folder = join(ROOT, "node_modules", ".cache", "turnspec-bench");
  mkdirSync(folder, { recursive: true });
  const file = join(folder, "echo-server.mjs");
  writeFileSync(file, outputText);
  programs = { bin: cli, baseline: [file] };
}

export interface ServeProcessOptions {
  /** Store: a SQLite file, or the memory store when omitted. */
  readonly db?: string;
  /** Store: a postgres:// URL (instead of `db`). */
  readonly store?: string;
  /** Gateway configuration, written to a temporary file and passed with --config. */
  readonly config?: GatewayConfig;
  readonly maxFrameBytes?: number;
  /** Working directory of the gateway (and default cwd of threads). Default: a fresh temporary folder. */
  readonly cwd?: string;
}

function serveArgs(options: ServeProcessOptions): string[] {
  const args = [programs.bin, "serve", ...(options.store ? ["--store", options.store] : options.db ? ["--db", options.db] : ["--memory"])];
  if (options.config) {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-config-")), "gateway.json");
    writeFileSync(file, JSON.stringify(options.config));
    args.push("--config", file);
  }
  if (options.maxFrameBytes !== undefined) args.push("--max-frame-bytes", String(options.maxFrameBytes));
  return args;
}

/** A fresh SQLite file path in a new temporary folder. */
export function tempDb(): string {
  return join(mkdtempSync(join(tmpdir(), "turnspec-db-")), "gateway.sqlite");
}

/** Resident set size of a process in bytes (Linux /proc, else `ps`). */
export function rssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    if (kb) return Number(kb) * 1024;
  } catch {
    // Not Linux, or the process is gone: ask ps.
  }
  return Number(execFileSync("ps", ["-o", "rss=", "-p", String(pid)], { encoding: "utf8" }).trim()) * 1024;
}

/** CPU time all threads of a process have run, in ns (Linux /proc); undefined where it cannot be read. */
export function cpuTimeNs(pid: number): number | undefined {
  try {
    let total = 0;
    for (const task of readdirSync(`/proc/${pid}/task`))
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
    return total;
  } catch {
    return undefined;
  }
}

/**
 * Waits until none of the processes is running: until, over 5 ms, all of them together
 * used under half a millisecond of CPU (at most `maxMs`). A benchmark round then starts
 * with the work an earlier one left behind (a checkpoint, a collection) done, instead of
 * charging it to whatever runs next. Returns at once where CPU time cannot be read.
 */
export async function untilQuiet(pids: readonly number[], maxMs = 1000): Promise<void> {
  const total = () =>
    pids.reduce<number | undefined>(
      (sum, pid) => (sum === undefined ? undefined : ((n) => (n === undefined ? undefined : sum + n))(cpuTimeNs(pid))),
      0,
    );
  const deadline = Date.now() + maxMs;
  let before = total();
  while (before !== undefined && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    const after = total();
    if (after === undefined || after - before < 500_000) return;
    before = after;
  }
}

/** Samples a process's RSS until stopped; reports the highest value seen. */
export function watchPeakRss(pid: number, everyMs = 50): { stop(): number } {
  let peak = rssOf(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(pid));
    } catch {
      // The process has exited: the peak so far stands.
    }
  }, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      try {
        peak = Math.max(peak, rssOf(pid));
      } catch {
        // Gone.
      }
      return peak;
    },
  };
}

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** What the gateway has written to stderr so far (its log). */
  stderr(): string;
  /** Resolves with how it ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  rss(): number;
  /** SIGTERM, then SIGKILL after a grace period; resolves once it has exited. */
  stop(): Promise<void>;
  /** SIGKILL at once: the process gets no chance to clean up. Resolves once it has exited. */
  kill(): Promise<void>;
}

/** Servers started and still running: killed when this process exits, however it got there. */
const children = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

function wrap(child: ChildProcess, readStderr: () => string): ServeProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.exitCode !== null || child.signalCode !== null
      ? resolve({ code: child.exitCode, signal: child.signalCode })
      : child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    pid: child.pid!,
    stderr: readStderr,
    exited,
    rss: () => rssOf(child.pid!),
    stop: async () => {
      if (!running()) return;
      // A profiled stdio server is stopped by the end of its input, so that it exits
      // normally and writes its profile; a signal would lose it.
      const byInput = profiling().length > 0 && child.stdin !== null;
      if (byInput) child.stdin!.end();
      else child.kill("SIGTERM");
      const term = byInput ? setTimeout(() => child.kill("SIGTERM"), 2000) : undefined;
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(term);
      clearTimeout(timer);
    },
    kill: async () => {
      if (running()) child.kill("SIGKILL");
      await exited;
    },
  };
}

function collectStderr(child: ChildProcess): () => string {
  let text = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
    // Only the tail explains a failure.
    if (text.length > 256 * 1024) text = text.slice(-128 * 1024);
  });
  return () => text;
}

/** `turnspec serve --stdio`: frames go to `child.stdin`, come from `child.stdout`. */
export function startStdioGateway(options: ServeProcessOptions = {}): StdioProcess {
  return startStdioProcess([...serveArgs(options), "--stdio"], options.cwd);
}

/** `turnspec serve --port 0 --no-auth`: resolves once it listens, with its URL. */
export function startWebSocketGateway(options: ServeProcessOptions = {}): Promise<WebSocketProcess> {
  return startWebSocketProcess([...serveArgs(options), "--port", "0", "--no-auth"], options.cwd);
}

/** The bare JSON-RPC server of bench/echo-server.ts, on either transport. */
export function startBaseline(transport: "stdio"): StdioProcess;
export function startBaseline(transport: "websocket"): Promise<WebSocketProcess>;
export function startBaseline(transport: "stdio" | "websocket"): StdioProcess | Promise<WebSocketProcess> {
  const args = programs.baseline;
  // Started in the project folder, where `--import tsx` resolves.
  return transport === "stdio" ? startStdioProcess([...args, "--stdio"], ROOT) : startWebSocketProcess([...args, "--port", "0"], ROOT);
}

export type StdioProcess = ServeProcess & { readonly child: ChildProcessWithoutNullStreams };
export type WebSocketProcess = ServeProcess & { readonly url: string };

/**
 * Node flags for every started server: with TURNSPEC_BENCH_CPU_PROF=<folder>, each writes a
 * CPU profile there when it exits (NODE_OPTIONS cannot carry --cpu-prof), sampled every
 * TURNSPEC_BENCH_CPU_PROF_INTERVAL microseconds when that is set.
 */
function profiling(): string[] {
  const dir = process.env.TURNSPEC_BENCH_CPU_PROF;
  // TURNSPEC_BENCH_CPU_PROF_INTERVAL: microseconds between samples (V8's default is 1,000).
  const interval = process.env.TURNSPEC_BENCH_CPU_PROF_INTERVAL;
  // A profiled WebSocket server is stopped by SIGTERM: profile-exit.mjs makes that an exit that writes the profile.
  const onSignal = ["--import", pathToFileURL(join(ROOT, "bench", "profile-exit.mjs")).href];
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`, ...(interval ? [`--cpu-prof-interval=${interval}`] : []), ...onSignal] : [];
}

function startStdioProcess(args: readonly string[], cwd = mkdtempSync(join(tmpdir(), "turnspec-gw-"))): StdioProcess {
  const child = spawn(process.execPath, [...profiling(), ...args], { cwd, stdio: ["pipe", "pipe", "pipe"] });
  return wrap(child, collectStderr(child)) as StdioProcess;
}

/** Starts a server that prints "listening on ws://…" on stderr; resolves with that URL. */
async function startWebSocketProcess(
  args: readonly string[],
  cwd = mkdtempSync(join(tmpdir(), "turnspec-gw-")),
): Promise<WebSocketProcess> {
  const child = spawn(process.execPath, [...profiling(), ...args], { cwd, stdio: ["ignore", "ignore", "pipe"] });
  const stderr = collectStderr(child);
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const match = /listening on (ws:\/\/\S+)/.exec(stderr());
      if (match) {
        child.stderr!.off("data", onData);
        child.off("exit", onExit);
        resolve(match[1]!);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`${args.join(" ")} exited with ${code} before listening: ${stderr()}`));
    child.stderr!.on("data", onData);
    child.once("exit", onExit);
  });
  return { ...wrap(child, stderr), url };
}
