/**
 * Wall time of a full certification of the reference gateway, as `npm start` runs it:
 * `node bin/turnspec.js certify --gateway-cmd "node bin/turnspec.js serve --stdio --memory
 * --provider-url {provider_url} --question-timeout-ms {question_timeout_ms}"` in a fresh
 * process (start-up, the model server, the gateway's own start-up, every scenario of every
 * capability). Median of 3 runs; target
 * < 60 s. Informational: the time the run itself reports, and how many requirements passed.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/certify.ts [--runs N]
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { RunReport } from "../packages/conformance/src/results.js";
import { isMain, median, now, resultTable, type ResultRow } from "./lib.js";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const BIN = join(ROOT, "bin", "turnspec.js");
const GATEWAY = `node ${BIN} serve --stdio --memory --provider-url {provider_url} --question-timeout-ms {question_timeout_ms}`;

export interface CertifyBenchOptions {
  readonly runs?: number;
  readonly log?: (line: string) => void;
}

interface Run {
  readonly wallMs: number;
  readonly reportedMs: number;
  readonly passed: number;
  readonly total: number;
}

function certifyOnce(): Run {
  const out = mkdtempSync(join(tmpdir(), "turnspec-certify-bench-"));
  try {
    const t0 = now();
    const child = spawnSync(process.execPath, [BIN, "certify", "--gateway-cmd", GATEWAY, "--json", join(out, "report.json")], {
      cwd: ROOT,
      encoding: "utf8",
    });
    const wallMs = now() - t0;
    if (child.status !== 0)
      throw new Error(`turnspec certify exited with ${child.status}: ${child.stderr || child.stdout.split("\n").slice(-15).join("\n")}`);
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RunReport;
    return {
      wallMs,
      reportedMs: Date.parse(report.finishedAt) - Date.parse(report.startedAt),
      passed: report.results.filter((r) => r.outcome === "pass").length,
      total: report.results.length,
    };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

export function runCertifyBench(options: CertifyBenchOptions = {}): ResultRow[] {
  const log = options.log ?? ((line: string) => console.log(line));
  const runs = options.runs ?? 3;
  log(`== certify: wall time of \`turnspec certify\` against the reference gateway over stdio, median of ${runs} runs`);
  const results: Run[] = [];
  for (let i = 0; i < runs; i++) {
    const run = certifyOnce();
    results.push(run);
    log(
      `  run ${i + 1}: ${(run.wallMs / 1000).toFixed(1)} s wall (the run reports ${(run.reportedMs / 1000).toFixed(1)} s), ${run.passed} of ${run.total} requirements passed`,
    );
  }
  const wall = median(results.map((r) => r.wallMs));
  const reported = median(results.map((r) => r.reportedMs));
  return [
    {
      name: "turnspec certify, full suite (wall, fresh process)",
      value: `${(wall / 1000).toFixed(1)} s`,
      target: "< 60 s",
      status: wall < 60_000 ? "PASS" : "MISS",
    },
    { name: "  of which the run reports", value: `${(reported / 1000).toFixed(1)} s`, target: "(info)", status: "info" },
  ];
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const runs = args.includes("--runs") ? Number(args[args.indexOf("--runs") + 1]) : undefined;
  console.log(resultTable(runCertifyBench(runs === undefined ? {} : { runs })));
}
