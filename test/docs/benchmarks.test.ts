/** docs/benchmarks.md is written by `npm run bench`: its table replaces the results section, and nothing else. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BENCHMARKS_PAGE, RESULTS_END, RESULTS_START, withResults, writeResultsPage, type RunInfo } from "../../bench/page.js";
import type { ResultRow } from "../../bench/lib.js";

const rows: ResultRow[] = [
  { name: "validate cost / JSON.parse cost", value: "0.130", target: "≤ 0.15", status: "PASS" },
  { name: "throughput | stdio", value: "0.21×", target: "≥ 0.5×", status: "MISS" },
  { name: "store appends", value: "121.0 k/s", target: "", status: "info" },
];
const run: RunInfo = {
  date: new Date("2026-12-01T10:00:00Z"),
  seconds: 71.4,
  node: "20.20.2",
  cpus: 2,
  cpuModel: "AMD EPYC",
  loadBefore: "2.40 2.10 1.90",
  loadAfter: "2.60 2.20 2.00",
};

describe("the benchmarks page", () => {
  it("gets the table of a full run between its markers, the prose around them untouched", () => {
    const dir = mkdtempSync(join(tmpdir(), "turnspec-bench-page-"));
    try {
      const file = join(dir, "benchmarks.md");
      writeFileSync(file, `# Benchmarks\n\nprose before\n\n${RESULTS_START}\nold table\n${RESULTS_END}\n\nprose after\n`);
      writeResultsPage(rows, run, file);
      expect(readFileSync(file, "utf8")).toBe(
        [
          "# Benchmarks",
          "",
          "prose before",
          "",
          RESULTS_START,
          "Measured with `npm run bench` on 2026-12-01 (71 s, one run, every figure side by side) on 2 CPUs (AMD EPYC), load average 2.40 2.10 1.90 before and 2.60 2.20 2.00 after, Node 20.20.2; 1 of 2 targets met:",
          "",
          "| benchmark | measured | target | result |",
          "| --- | --- | --- | --- |",
          "| validate cost / JSON.parse cost | 0.130 | ≤ 0.15 | PASS |",
          "| throughput \\| stdio | 0.21× | ≥ 0.5× | MISS |",
          "| store appends | 121.0 k/s |  |  |",
          RESULTS_END,
          "",
          "prose after",
          "",
        ].join("\n"),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a page without its results section, naming the file and the lines it needs", () => {
    expect(() => withResults("# Benchmarks\n", "table", "docs/benchmarks.md")).toThrow(
      `docs/benchmarks.md has no results section: it needs the lines ${RESULTS_START} and ${RESULTS_END}, in that order`,
    );
  });

  it("is committed with its results section, so that a full run can write it", () => {
    const text = readFileSync(BENCHMARKS_PAGE, "utf8");
    expect(withResults(text, "table")).toContain(`${RESULTS_START}\ntable\n${RESULTS_END}`);
  });
});
