/**
 * Small helpers shared by the benchmarks: timing, medians, alternating rounds and the
 * result table. Benchmarks are not tests: they print measurements and ratios taken side
 * by side in one process, because absolute numbers on a shared machine mean little.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, statSync, type Dirent } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

export type Status = "PASS" | "MISS" | "info";

/** One line of the final table. */
export interface ResultRow {
  readonly name: string;
  readonly value: string;
  readonly target: string;
  readonly status: Status;
}

export const now = (): number => performance.now();

/**
 * CPU time of this process (user + system), in milliseconds: for timing single-threaded,
 * CPU-bound work on a shared machine, where the time other processes hold the cores would
 * otherwise count against whichever variant was running. Microsecond resolution.
 */
export function cpuNow(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The value at quantile q (0…1) with linear interpolation. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export interface Variant {
  readonly name: string;
  /** One full pass over the workload; returns a value that is checked, so no pass can be optimized away. */
  readonly pass: () => number;
}

export interface RoundsOptions {
  /** Warm-up: whole rounds (every variant once) until this much time has passed… */
  readonly warmupMs: number;
  /** …and at least this many rounds, so that V8 has optimized even the rarely called validators… */
  readonly minWarmupRounds: number;
  /**
   * …and until every variant has settled: the median of its last 10 warm-up passes is no more
   * than 3% faster than that of the 10 before (on a loaded machine the optimizing compiler runs
   * late), or until this much time has passed.
   */
  readonly maxWarmupMs: number;
  readonly rounds: number;
  /** After warm-up, each sample repeats the pass until it runs at least this long (the count is fixed per variant). */
  readonly minSampleMs: number;
  /**
   * What samples are timed with, in milliseconds: the wall clock (default), or e.g.
   * cpuNow for CPU-bound passes on a shared machine. Warm-up limits stay on the wall clock.
   */
  readonly clock?: () => number;
}

export interface RoundsResult {
  /** Milliseconds per pass of each variant (on the rounds' clock), one sample per round, in round order. */
  readonly samples: Map<string, number[]>;
  readonly passesPerSample: Map<string, number>;
  readonly warmupRounds: number;
  /** False when warm-up stopped at maxWarmupMs before every variant had settled. */
  readonly settled: boolean;
}

let collect: (() => void) | undefined | null = null;

/** A full garbage collection, when the runtime lets us ask for one (V8 flag set at run time), else nothing. */
export function fullGc(): void {
  if (collect === null) {
    try {
      setFlagsFromString("--expose-gc");
      collect = runInNewContext("gc") as () => void;
    } catch {
      collect = undefined;
    }
  }
  collect?.();
}

/**
 * Runs the variants in alternating rounds: every round runs each variant once, in an
 * order rotated from round to round, so drift in machine load hits all variants alike.
 * Each sample starts after a full GC, so one variant's garbage is not collected on
 * another's clock (the garbage a variant makes during its own sample stays on its clock).
 *
 * While the rounds run, V8 sweeps on the main thread, inside the collection: by default it
 * sweeps the freed pages on helper threads after the collection returns, which would put
 * that work on the clock of the sample that follows (the process CPU clock counts every
 * thread), a cost that falls hardest on a variant that allocates nothing.
 */
export function runRounds(variants: readonly Variant[], options: RoundsOptions): RoundsResult {
  setFlagsFromString("--no-concurrent-sweeping");
  try {
    return rounds(variants, options);
  } finally {
    setFlagsFromString("--concurrent-sweeping");
  }
}

function rounds(variants: readonly Variant[], options: RoundsOptions): RoundsResult {
  const order = (round: number) => variants.map((_, k) => variants[(round + k) % variants.length]!);
  const clock = options.clock ?? now;
  // Warm-up.
  const started = now();
  let warmupRounds = 0;
  const history = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  const hasSettled = () => [...history.values()].every((h) => h.length >= 20 && median(h.slice(-10)) >= 0.97 * median(h.slice(-20, -10)));
  let settled = false;
  for (;;) {
    for (const v of order(warmupRounds)) {
      const t0 = clock();
      v.pass();
      history.get(v.name)!.push(clock() - t0);
    }
    warmupRounds++;
    if (warmupRounds < options.minWarmupRounds || now() - started < options.warmupMs) continue;
    settled = hasSettled();
    if (settled || now() - started >= options.maxWarmupMs) break;
  }
  // Calibration on warm code.
  const passesPerSample = new Map<string, number>();
  for (const v of variants) {
    const t0 = clock();
    let n = 0;
    do {
      v.pass();
      n++;
    } while (clock() - t0 < 10);
    const one = (clock() - t0) / n;
    passesPerSample.set(v.name, Math.max(1, Math.ceil(options.minSampleMs / one)));
  }
  const samples = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  const sample = (v: Variant): void => {
    const n = passesPerSample.get(v.name)!;
    fullGc();
    const t0 = clock();
    for (let i = 0; i < n; i++) v.pass();
    samples.get(v.name)!.push((clock() - t0) / n);
  };
  for (let round = 0; round < options.rounds; round++) {
    for (const v of order(round)) sample(v);
  }
  return { samples, passesPerSample, warmupRounds, settled };
}

export function fmtOps(opsPerSecond: number): string {
  if (opsPerSecond >= 1e6) return `${(opsPerSecond / 1e6).toFixed(2)} M ops/s`;
  if (opsPerSecond >= 1e3) return `${(opsPerSecond / 1e3).toFixed(1)} k ops/s`;
  return `${opsPerSecond.toFixed(0)} ops/s`;
}

export function fmtNs(ns: number): string {
  return ns >= 1000 ? `${(ns / 1000).toFixed(2)} µs` : `${ns.toFixed(0)} ns`;
}

/** A plain-text table with left-aligned columns. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], rightAligned: readonly number[] = []): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (rightAligned.includes(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export function resultTable(rows: readonly ResultRow[]): string {
  return table(
    ["benchmark", "measured", "target", "result"],
    rows.map((r) => [r.name, r.value, r.target, r.status]),
  );
}

/** True when the module is the script node was started with (so each bench also runs alone). */
export function isMain(importMetaUrl: string): boolean {
  const argv1 = process.argv[1];
  if (!argv1) return false;
  return resolve(argv1) === fileURLToPath(importMetaUrl);
}

/** The number after `--name` on the command line, when given. */
export function numberOption(name: string, args: readonly string[] = process.argv.slice(2)): number | undefined {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? Number(args[at + 1]) : undefined;
}

const REPO = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** The newest modification time of a file under `dir` (recursively), in ms; 0 for none. */
function newestIn(dir: string, skip: (name: string) => boolean = () => false): number {
  let newest = 0;
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    if (entry.name === "node_modules" || skip(entry.name)) continue;
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestIn(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds the packages (build.mjs) when a package's dist/ is missing or older than its
 * sources, so that what a benchmark runs from the compiled packages is the code as it is now.
 */
export function ensureBuilt(log: (line: string) => void = (line) => console.log(line)): void {
  const folders = ["generated", ...readdirSync(join(REPO, "packages")).map((name) => join("packages", name))];
  const stale = folders.filter((folder) => {
    const sources =
      folder === "generated"
        ? newestIn(join(REPO, folder), (name) => name === "dist" || name === "LICENSE" || name.endsWith(".tsbuildinfo"))
        : newestIn(join(REPO, folder, "src"));
    return newestIn(join(REPO, folder, "dist")) < sources;
  });
  if (stale.length === 0) return;
  log(`(building: ${stale.join(", ")} older than their sources)`);
  const built = spawnSync(process.execPath, [join(REPO, "build.mjs")], { cwd: REPO, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`the build failed: ${built.stderr || built.stdout}`);
}

/**
 * Makes SIGINT and SIGTERM (Ctrl-C, `timeout`) end a benchmark through process.exit, so that
 * what it started (servers, PostgreSQL) is stopped by their exit hooks rather than left running.
 */
export function exitOnSignals(): void {
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));
}
