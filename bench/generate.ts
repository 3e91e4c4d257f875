/**
 * `turnspec generate` and `turnspec --help` as a user of the package runs them: the compiled
 * command (packages/turnspec/bin/turnspec.js → dist/cli.js) in a fresh process each time.
 * The packages are built first when their builds are older than their sources.
 *
 * - cold: `generate --out <empty temp dir>` with an empty cache folder (TURNSPEC_CACHE_DIR):
 *   process start, loading the generator, the schemas, every emitter, writing every file;
 *   target ≤ 1.0 s.
 * - unchanged schemas: the same again into the same folder, the cache holding the first
 *   run's entry; target ≤ 0.3 s. And `--check` of it (info).
 * - start-up: `turnspec --help` against `node -e 0`, alternating; target ≤ 1.3×.
 * - phases: one fresh process (plain node, the compiled modules) timing what generate does
 *   in order: importing the generator, loading and checking the schemas, importing the
 *   emitters, each output (types through json-schema-to-typescript, validators compiled
 *   with ajv, ...), writing; then what a run answered from the cache does (the key, the
 *   entry); then each further language emitted from the same model (Python, Go, Rust), target
 *   ≤ +0.3 s each.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/generate.ts [--runs N] [--no-phases]
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ensureBuilt, isMain, median, now, resultTable, table, type ResultRow } from "./lib.js";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const BIN = join(ROOT, "packages", "turnspec", "bin", "turnspec.js");
const GENERATOR_DIST = join(ROOT, "packages", "generator", "dist");

export interface GenerateBenchOptions {
  readonly runs?: number;
  readonly phases?: boolean;
  readonly log?: (line: string) => void;
}

interface Run {
  readonly wallMs: number;
  readonly reportedMs: number | undefined;
  readonly files: number;
}

function turnspec(args: readonly string[], cacheDir: string): { wallMs: number; stdout: string } {
  const t0 = now();
  const child = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, TURNSPEC_CACHE_DIR: cacheDir },
  });
  const wallMs = now() - t0;
  if (child.status !== 0) throw new Error(`turnspec ${args.join(" ")} exited with ${child.status}: ${child.stderr || child.stdout}`);
  return { wallMs, stdout: child.stdout };
}

/** A cold run into an empty folder with an empty cache, then the same run again (a cache hit) and --check of it. */
function generateRounds(): { cold: Run; warm: Run; check: number } {
  const out = mkdtempSync(join(tmpdir(), "turnspec-gen-bench-"));
  const cacheDir = mkdtempSync(join(tmpdir(), "turnspec-gen-cache-"));
  const args = ["generate", "--schemas", join(ROOT, "schemas"), "--out", out];
  const run = (): Run => {
    const { wallMs, stdout } = turnspec(args, cacheDir);
    const reported = /(?:in |, )(\d+) ms/.exec(stdout);
    return { wallMs, reportedMs: reported ? Number(reported[1]) : undefined, files: readdirSync(out).length };
  };
  try {
    const cold = run();
    if (!existsSync(join(out, "validators.strict.ts"))) throw new Error("turnspec generate wrote no validators.strict.ts");
    if (readdirSync(cacheDir).length !== 1)
      throw new Error(`turnspec generate left ${readdirSync(cacheDir).length} entries in its cache folder, not 1`);
    const warm = run();
    const check = turnspec([...args, "--check"], cacheDir).wallMs;
    return { cold, warm, check };
  } finally {
    rmSync(out, { recursive: true, force: true });
    rmSync(cacheDir, { recursive: true, force: true });
  }
}

function wallOf(command: readonly string[]): number {
  const t0 = now();
  const child = spawnSync(process.execPath, command, { cwd: ROOT, encoding: "utf8" });
  if (child.status !== 0) throw new Error(`node ${command.join(" ")} exited with ${child.status}`);
  return now() - t0;
}

/** The script of the phase timing: plain node, the compiled generator, one fresh process. */
function phaseScript(): string {
  const dist = (path: string) => JSON.stringify(pathToFileURL(join(GENERATOR_DIST, path)).href);
  return `
const phases = [];
const time = async (name, run) => { const t0 = performance.now(); const result = await run(); phases.push([name, performance.now() - t0]); return result; };
const schemasDir = ${JSON.stringify(join(ROOT, "schemas"))};
const { mkdtempSync, rmSync } = await import("node:fs");
const { join } = await import("node:path");
const { tmpdir } = await import("node:os");
const generate = await time("import the generator (generate.js)", () => import(${dist("generate.js")}));
const files = await generate.generateFiles({ schemasDir }, (name, ms) => phases.push([name, ms]));
const out = mkdtempSync(join(tmpdir(), "turnspec-gen-bench-"));
const cacheDir = mkdtempSync(join(tmpdir(), "turnspec-gen-cache-"));
try {
  await time("write the files", () => generate.writeToDisk(files, out));
  const cache = await time("import the cache (cache.js)", () => import(${dist("cache.js")}));
  const key = await time("cache: the key (hash the schemas and the generator)", () => cache.cacheKey({ schemasDir }));
  await time("cache: write the entry", () => cache.writeCache(cacheDir, key, files));
  await time("cache: read the entry back", () => cache.readCache(cacheDir, key));
  await time("cache: compare with the folder (--check)", () => generate.compareWithDisk(files, out));
} finally {
  rmSync(out, { recursive: true, force: true });
  rmSync(cacheDir, { recursive: true, force: true });
}
const { loadSchemas } = await import(${dist("load.js")});
const model = loadSchemas(schemasDir);
await time("further language: python (emit, same process)", () => generate.emitAll(model, { lang: "python" }));
await time("further language: go (emit, same process)", () => generate.emitAll(model, { lang: "go" }));
await time("further language: rust (emit, same process)", () => generate.emitAll(model, { lang: "rust" }));
console.log(JSON.stringify(phases));
`;
}

function phases(): [string, number][] {
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", phaseScript()], { cwd: ROOT, encoding: "utf8" });
  if (child.status !== 0) throw new Error(child.stderr.trim().split("\n").slice(-3).join(" "));
  return JSON.parse(child.stdout.trim().split("\n").pop()!) as [string, number][];
}

export async function runGenerateBench(options: GenerateBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const runs = options.runs ?? 3;
  ensureBuilt(log);
  log(
    `== generate: \`node packages/turnspec/bin/turnspec.js generate --out <fresh temp dir>\` with an empty cache, then again unchanged; median of ${runs} rounds`,
  );
  const rounds: { cold: Run; warm: Run; check: number }[] = [];
  for (let i = 0; i < runs; i++) {
    const round = generateRounds();
    rounds.push(round);
    log(
      `  round ${i + 1}: cold ${(round.cold.wallMs / 1000).toFixed(2)} s (the command reports ${round.cold.reportedMs ?? "?"} ms, ${round.cold.files} files), unchanged ${(round.warm.wallMs / 1000).toFixed(3)} s (reports ${round.warm.reportedMs ?? "?"} ms), --check ${(round.check / 1000).toFixed(3)} s`,
    );
  }
  const cold = median(rounds.map((r) => r.cold.wallMs));
  const coldReported = median(rounds.flatMap((r) => (r.cold.reportedMs === undefined ? [] : [r.cold.reportedMs])));
  const warm = median(rounds.map((r) => r.warm.wallMs));
  const check = median(rounds.map((r) => r.check));

  // Start-up: --help and node -e 0 alternating, so that both see the same machine.
  const help: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < 9; i++) {
    bare.push(wallOf(["-e", "0"]));
    help.push(wallOf([BIN, "--help"]));
  }
  const startup = median(help);
  const node = median(bare);
  log(
    `  start-up: \`turnspec --help\` ${(startup / 1000).toFixed(3)} s, \`node -e 0\` ${(node / 1000).toFixed(3)} s (medians of 9, alternating)`,
  );

  const rows: ResultRow[] = [
    {
      name: "turnspec generate, cold (wall, fresh process, empty cache)",
      value: `${(cold / 1000).toFixed(2)} s`,
      target: "≤ 1.0 s",
      status: cold <= 1000 ? "PASS" : "MISS",
    },
    { name: "  of which the command reports", value: `${(coldReported / 1000).toFixed(2)} s`, target: "(info)", status: "info" },
    {
      name: "turnspec generate, unchanged schemas (cache hit)",
      value: `${(warm / 1000).toFixed(3)} s`,
      target: "≤ 0.3 s",
      status: warm <= 300 ? "PASS" : "MISS",
    },
    { name: "  turnspec generate --check, unchanged", value: `${(check / 1000).toFixed(3)} s`, target: "(info)", status: "info" },
    {
      name: "turnspec --help / node -e 0",
      value: `${(startup / node).toFixed(2)}× (${(startup / 1000).toFixed(3)} / ${(node / 1000).toFixed(3)} s)`,
      target: "≤ 1.3×",
      status: startup / node <= 1.3 ? "PASS" : "MISS",
    },
  ];

  if (options.phases ?? true) {
    let list: [string, number][] | undefined;
    try {
      list = phases();
    } catch (error) {
      log(`  (phase timing failed: ${(error as Error).message})`);
    }
    if (list) {
      log("  generate's phases, timed once each in a fresh process (plain node, the compiled generator):");
      log(
        table(
          ["phase", "ms"],
          list.map(([name, ms]) => [name, ms.toFixed(0)]),
          [1],
        )
          .split("\n")
          .map((l) => `    ${l}`)
          .join("\n"),
      );
      for (const [name, ms] of list.filter(([phase]) => phase.startsWith("further language"))) {
        rows.push({
          name: `generate: ${name.replace(" (emit, same process)", "")}, added`,
          value: `+${(ms / 1000).toFixed(2)} s`,
          target: "≤ +0.3 s",
          status: ms <= 300 ? "PASS" : "MISS",
        });
      }
    }
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const runsAt = args.indexOf("--runs");
  const rows = await runGenerateBench({ runs: runsAt >= 0 ? Number(args[runsAt + 1]) : 3, phases: !args.includes("--no-phases") });
  console.log(`\n${resultTable(rows)}`);
}
