/**
 * `npm run bench`: every benchmark in one run, then one table of results. Benchmarks are
 * not tests: the exit code is 0 whatever they measure; PASS/MISS compares a measured ratio
 * or time with its target, side by side in this run, on whatever machine this is.
 *
 * Options: --quick (fewer rounds), --only validation|generate|certify, --no-breakdown, --no-what-if.
 */
import { cpus, loadavg } from "node:os";
import { runCertifyBench } from "./certify.js";
import { runGenerateBench } from "./generate.js";
import { resultTable, type ResultRow } from "./lib.js";
import { runValidationBench } from "./validation.js";

const args = process.argv.slice(2);
const only = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined;
const quick = args.includes("--quick");

const started = performance.now();
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");
console.log(`turnspec bench: node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), load average ${load()}${quick ? ", quick mode" : ""}\n`);

const rows: ResultRow[] = [];
if (!only || only === "validation") {
  rows.push(...(await runValidationBench({ quick, breakdown: !args.includes("--no-breakdown"), whatIf: !args.includes("--no-what-if") })));
  console.log("");
}
if (!only || only === "generate") {
  rows.push(...(await runGenerateBench({ phases: !args.includes("--no-phases") })));
  console.log("");
}
if (!only || only === "certify") {
  rows.push(...runCertifyBench(quick ? { runs: 1 } : {}));
  console.log("");
}

const targets = rows.filter((r) => r.status !== "info");
const passed = targets.filter((r) => r.status === "PASS").length;
console.log(`== results (${((performance.now() - started) / 1000).toFixed(0)} s; load average now ${load()}; ${passed} of ${targets.length} targets met)`);
console.log(resultTable(rows));
