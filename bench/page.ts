/**
 * docs/benchmarks.md is written by `npm run bench` itself: the measured table of a full run replaces what
 * stands between the page's two result markers; the prose around them is written by hand.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ResultRow } from "./lib.js";

export const BENCHMARKS_PAGE = "docs/benchmarks.md";
const PAGE_FILE = fileURLToPath(new URL(`../${BENCHMARKS_PAGE}`, import.meta.url));
export const RESULTS_START = "<!-- bench:results: written by `npm run bench`; do not edit by hand -->";
export const RESULTS_END = "<!-- /bench:results -->";

/** Where and how the run was made: what the page says above the table. */
export interface RunInfo {
  readonly date: Date;
  readonly seconds: number;
  readonly node: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly loadBefore: string;
  readonly loadAfter: string;
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The results as markdown: one line on the run, then a table of every row. */
export function resultsMarkdown(rows: readonly ResultRow[], run: RunInfo): string {
  const met = rows.filter((r) => r.status === "PASS").length;
  const targets = rows.filter((r) => r.status !== "info").length;
  return [
    `Measured with \`npm run bench\` on ${run.date.toISOString().slice(0, 10)} (${run.seconds.toFixed(0)} s, one run, every figure side by side) on ${run.cpus} CPUs (${run.cpuModel}), load average ${run.loadBefore} before and ${run.loadAfter} after, Node ${run.node}; ${met} of ${targets} targets met:`,
    "",
    "| benchmark | measured | target | result |",
    "| --- | --- | --- | --- |",
    ...rows.map((r) => `| ${cell(r.name)} | ${cell(r.value)} | ${cell(r.target)} | ${r.status === "info" ? "" : r.status} |`),
  ].join("\n");
}

/** Replaces the results between the markers of `text`; throws naming `file` when the markers are missing. */
export function withResults(text: string, results: string, file = BENCHMARKS_PAGE): string {
  const start = text.indexOf(RESULTS_START);
  const end = text.indexOf(RESULTS_END);
  if (start < 0 || end < start)
    throw new Error(`${file} has no results section: it needs the lines ${RESULTS_START} and ${RESULTS_END}, in that order`);
  return `${text.slice(0, start + RESULTS_START.length)}\n${results}\n${text.slice(end)}`;
}

/** Writes the results of a full run into the page. */
export function writeResultsPage(rows: readonly ResultRow[], run: RunInfo, file = PAGE_FILE): void {
  writeFileSync(file, withResults(readFileSync(file, "utf8"), resultsMarkdown(rows, run), file));
}
