/** Small text formats shared by the console and HTML reports. */
import { CAPABILITIES, type Capability, type Outcome, type RunReport } from "../results.js";
import type { OutcomeCounts, Verdict } from "../verdict.js";

/** How reports name the levels. */
export const levelNames: Record<RunReport["achievedLevel"], string> = { full: "Full", core: "Core", none: "none" };

/** The mark of each outcome in the console and HTML reports. */
export const outcomeMarks: Record<Outcome, string> = { pass: "✓", fail: "✗", skipped: "-", error: "!" };

/** "8 ms", "1.5 s", "2 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1).replace(/\.0$/, "")} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** The time between two RFC 3339 instants, formatted; "unknown" when either does not parse. */
export function formatElapsed(startedAt: string, finishedAt: string): string {
  const elapsed = Date.parse(finishedAt) - Date.parse(startedAt);
  return Number.isFinite(elapsed) ? formatDuration(elapsed) : "unknown";
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "3 passed, 1 failed (1 expected), 1 error"; zeros left out. */
export function formatCounts(counts: OutcomeCounts): string {
  const parts: string[] = [];
  if (counts.pass) parts.push(`${counts.pass} passed`);
  if (counts.fail) parts.push(`${counts.fail} failed${counts.expected ? ` (${counts.expected} expected)` : ""}`);
  if (counts.skipped) parts.push(`${counts.skipped} skipped`);
  if (counts.error) parts.push(plural(counts.error, "error"));
  return parts.length ? parts.join(", ") : "none";
}

/** The MUST results of each capability to show: every claimed one, and any other that has MUSTs. */
export function mustsByCapability(verdict: Verdict): { capability: Capability; claimed: boolean; counts: OutcomeCounts }[] {
  return CAPABILITIES.map((capability) => ({ capability, claimed: verdict.claimed.includes(capability), counts: verdict.counts.byCapability[capability].MUST })).filter(
    (row) => row.claimed || row.counts.total > 0,
  );
}
