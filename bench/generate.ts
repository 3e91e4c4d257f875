/**
 * Wall time of a full `turnspec generate`, as a user of the package runs it: a fresh
 * `turnspec generate --out <empty temp dir>` of the compiled packages (process start, loading the
 * compiled generator, the schemas, every emitter, formatting, writing every file). Median
 * of 3 runs; target < 2 s. And the start-up cost of the compiled command alone
 * (`turnspec --help`), median of 5; target < 0.15 s. The packages are built first when
 * their builds are older than their sources.
 *
 * Informational: the time the command itself reports (from loading the schemas to the
 * last file written), and the phases of the generator timed in a fresh process.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/generate.ts [--runs N] [--no-phases]
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureBuilt, isMain, median, now, resultTable, table, type ResultRow } from "./lib.js";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const BIN = join(ROOT, "packages", "turnspec", "bin", "turnspec.js");


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

function generateOnce(): Run {
  const out = mkdtempSync(join(tmpdir(), "turnspec-gen-bench-"));
  try {
    const t0 = now();
    const child = spawnSync(process.execPath, [BIN, "generate", "--schemas", join(ROOT, "schemas"), "--out", out], { cwd: ROOT, encoding: "utf8" });
    const wallMs = now() - t0;
    if (child.status !== 0) throw new Error(`turnspec generate exited with ${child.status}: ${child.stderr || child.stdout}`);
    if (!existsSync(join(out, "validators.strict.ts"))) throw new Error("turnspec generate wrote no validators.strict.ts");
    const reported = /in (\d+) ms/.exec(child.stdout);
    return { wallMs, reportedMs: reported ? Number(reported[1]) : undefined, files: readdirSync(out).length };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

function startupOnce(): number {
  const t0 = now();
  const child = spawnSync(process.execPath, [BIN, "--help"], { cwd: ROOT, encoding: "utf8" });
  if (child.status !== 0) throw new Error(`turnspec --help exited with ${child.status}`);
  return now() - t0;
}

/** The generator's phases, timed once each in this (fresh) process, in the order generate runs them. */
async function phases(): Promise<[string, number][]> {
  const out: [string, number][] = [];
  let t0 = now();
  const { loadSchemas } = await import("../packages/generator/src/load.js");
  const { emitTypes } = await import("../packages/generator/src/emit/types.js");
  const { emitStandalone } = await import("../packages/generator/src/emit/validators.js");
  const { emitOpenRpc } = await import("../packages/generator/src/emit/openrpc.js");
  const { emitDocs } = await import("../packages/generator/src/emit/docs.js");
  const { formatDeclarations } = await import("../packages/generator/src/format.js");
  const { emitAll, writeToDisk } = await import("../packages/generator/src/generate.js");
  out.push(["import the generator modules", now() - t0]);
  t0 = now();
  const model = loadSchemas(join(ROOT, "schemas"));
  out.push(["loadSchemas (read + check)", now() - t0]);
  t0 = now();
  const types = await emitTypes(model);
  out.push(["emitTypes (json-schema-to-typescript)", now() - t0]);
  t0 = now();
  formatDeclarations(types);
  out.push(["formatDeclarations(types.ts)", now() - t0]);
  t0 = now();
  emitStandalone(model, "strict", "@turnspec/rpc", "");
  out.push(["emitStandalone strict (ajv compile + standalone)", now() - t0]);
  t0 = now();
  emitStandalone(model, "tolerant", "@turnspec/rpc", "");
  out.push(["emitStandalone tolerant", now() - t0]);
  t0 = now();
  emitOpenRpc(model, "note");
  out.push(["emitOpenRpc", now() - t0]);
  t0 = now();
  emitDocs(model, "<!-- note -->");
  out.push(["emitDocs", now() - t0]);
  t0 = now();
  const files = await emitAll(model, {});
  out.push(["emitAll, all of it again (warmer)", now() - t0]);
  const dir = mkdtempSync(join(tmpdir(), "turnspec-gen-bench-"));
  try {
    t0 = now();
    writeToDisk(files, dir);
    out.push(["writeToDisk", now() - t0]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

export async function runGenerateBench(options: GenerateBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const runs = options.runs ?? 3;
  ensureBuilt(log);
  log(`== generate: wall time of \`node dist/bin/cli.js generate --out <fresh temp dir>\`, median of ${runs} runs`);
  const results: Run[] = [];
  for (let i = 0; i < runs; i++) {
    const run = generateOnce();
    results.push(run);
    log(`  run ${i + 1}: ${(run.wallMs / 1000).toFixed(2)} s wall (the command reports ${run.reportedMs ?? "?"} ms), ${run.files} files`);
  }
  const wall = median(results.map((r) => r.wallMs));
  const reported = median(results.flatMap((r) => (r.reportedMs === undefined ? [] : [r.reportedMs])));
  const startups = [startupOnce(), startupOnce(), startupOnce(), startupOnce(), startupOnce()];
  const startup = median(startups);
  log(`  start-up alone (\`turnspec --help\`): ${(startup / 1000).toFixed(3)} s median of 5`);

  const rows: ResultRow[] = [
    { name: "turnspec generate (wall, fresh process)", value: `${(wall / 1000).toFixed(2)} s`, target: "< 2 s", status: wall < 2000 ? "PASS" : "MISS" },
    { name: "  of which the command reports", value: `${(reported / 1000).toFixed(2)} s`, target: "(info)", status: "info" },
    { name: "turnspec --help start-up", value: `${(startup / 1000).toFixed(3)} s`, target: "< 0.15 s", status: startup < 150 ? "PASS" : "MISS" },
  ];

  if (options.phases ?? true) {
    const child = spawnSync(process.execPath, ["--import", new URL("../scripts/from-source.mjs", import.meta.url).href, fileURLToPath(import.meta.url), "--phases-json"], { cwd: ROOT, encoding: "utf8" });
    if (child.status !== 0) {
      log(`  (phase timing failed: ${child.stderr.trim().split("\n").slice(-3).join(" ")})`);
    } else {
      const list = JSON.parse(child.stdout.trim().split("\n").pop()!) as [string, number][];
      log("  generator phases, timed once each in a fresh process (informational):");
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
    }
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args.includes("--phases-json")) {
    console.log(JSON.stringify(await phases()));
  } else {
    const runsAt = args.indexOf("--runs");
    const rows = await runGenerateBench({ runs: runsAt >= 0 ? Number(args[runsAt + 1]) : 3, phases: !args.includes("--no-phases") });
    console.log(`\n${resultTable(rows)}`);
  }
}
