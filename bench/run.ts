/**
 * `npm run bench`: every benchmark in one run, then one table of results. Benchmarks are
 * not tests: the exit code is 0 whatever they measure; PASS/MISS compares a measured ratio
 * or time with its target, side by side in this run, on whatever machine this is.
 *
 * A full run writes its table into docs/benchmarks.md (bench/page.ts); a partial one (--quick, --only)
 * prints it only.
 *
 * Options: --quick (fewer rounds), --only validation|languages|go-validation|rust-validation|generate|package|throughput|permission|concurrency|store|cluster|instances|certify,
 * --no-phases. The validation benchmark runs here without its per-kind breakdown and
 * what-ifs, so the whole run stays within a few minutes; --full-validation adds them, as
 * `node --import ./scripts/from-source.mjs bench/validation.ts` does.
 */
import { cpus, loadavg } from "node:os";
import { runCertifyBench } from "./certify.js";
import { runClusterBench } from "./cluster.js";
import { runInstancesBench } from "./instances.js";
import { runConcurrencyBench } from "./concurrency.js";
import { runGenerateBench } from "./generate.js";
import { runGoValidationBench } from "./go-validation.js";
import { runRustValidationBench } from "./rust-validation.js";
import { runPackageBench } from "./package.js";
import { exitOnSignals, resultTable, type ResultRow } from "./lib.js";
import { BENCHMARKS_PAGE, writeResultsPage } from "./page.js";
import { runPermissionBench } from "./permission.js";
import { runStoreBench } from "./store.js";
import { runThroughputBench } from "./throughput.js";
import { useCompiledPackage } from "./gateway-process.js";
import { runValidationBench } from "./validation.js";
import { runLanguagesBench } from "./languages.js";

exitOnSignals();
const args = process.argv.slice(2);
const only = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined;
const quick = args.includes("--quick");

const started = performance.now();
const startedAt = new Date();
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const loadBefore = load();
console.log(
  `turnspec bench: node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), load average ${load()}${quick ? ", quick mode" : ""}\n`,
);

const benches: [string, () => Promise<ResultRow[]>][] = [
  [
    "validation",
    () =>
      args.includes("--full-validation") ? runValidationBench({ quick }) : runValidationBench({ quick, breakdown: false, whatIf: false }),
  ],
  ["languages", () => runLanguagesBench({ quick })],
  ["go-validation", () => runGoValidationBench({ quick })],
  ["rust-validation", () => runRustValidationBench({ quick })],
  ["generate", () => runGenerateBench({ phases: !args.includes("--no-phases") })],
  ["package", () => runPackageBench()],
  ["throughput", () => runThroughputBench(quick ? { deltas: 2000, rounds: 3, longDeltas: 20_000 } : {})],
  ["permission", () => runPermissionBench(quick ? { requests: 100 } : {})],
  ["concurrency", () => runConcurrencyBench(quick ? { threads: 200 } : {})],
  ["store", () => runStoreBench(quick ? { appends: 5000, rounds: 3 } : {})],
  ["cluster", () => runClusterBench(quick ? { deltas: 1000, rounds: 2, connections: 20 } : {})],
  ["instances", () => runInstancesBench(quick ? { deltas: 200, connections: 30 } : {})],
  ["certify", async () => runCertifyBench(quick ? { runs: 1 } : {})],
];
if (only && !benches.some(([name]) => name === only)) {
  console.error(`--only: no benchmark "${only}"; choose one of ${benches.map(([name]) => name).join(", ")}`);
  process.exit(2);
}

// The gateways and baselines below run as a user runs them: from the compiled package.
await useCompiledPackage();

const rows: ResultRow[] = [];
for (const [name, run] of benches) {
  if (only && only !== name) continue;
  rows.push(...(await run()));
  console.log("");
}

const targets = rows.filter((r) => r.status !== "info");
const passed = targets.filter((r) => r.status === "PASS").length;
console.log(
  `== results (${((performance.now() - started) / 1000).toFixed(0)} s; load average now ${load()}; ${passed} of ${targets.length} targets met)`,
);
console.log(resultTable(rows));

if (only || quick) {
  console.log(`\n(a partial run: ${BENCHMARKS_PAGE} keeps the table of the last full run)`);
} else {
  writeResultsPage(rows, {
    date: startedAt,
    seconds: (performance.now() - started) / 1000,
    node: process.version.slice(1),
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? "?",
    loadBefore,
    loadAfter: load(),
  });
  console.log(`\nwrote ${BENCHMARKS_PAGE}`);
}
