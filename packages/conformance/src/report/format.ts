/** Small text formats shared by the console and HTML reports. */
import { CAPABILITIES, type Capability, type GatewayStop, type Outcome, type RunReport } from "../results.js";
import type { OutcomeCounts, Verdict } from "../verdict.js";

/** How reports name the levels. */
export const levelNames: Record<RunReport["achievedLevel"], string> = { full: "Full", core: "Core", none: "none" };

/** The mark of each outcome in the console and HTML reports. */
export const outcomeMarks: Record<Outcome, string> = { pass: "✓", fail: "✗", not_reached: "○", skipped: "-", error: "!" };

/** What a run certified: a gateway (its command or URL) or a client (its command), and the vendor's name for it. */
export function targetOf(report: Pick<RunReport, "gateway" | "client" | "subject">): {
  kind: "gateway" | "client";
  how: "command" | "URL";
  text: string;
  subject?: string;
} {
  const subject = report.subject === undefined ? {} : { subject: report.subject };
  if (report.client !== undefined) return { kind: "client", how: "command", text: report.client.command, ...subject };
  if (report.gateway?.command !== undefined) return { kind: "gateway", how: "command", text: report.gateway.command, ...subject };
  return { kind: "gateway", how: "URL", text: report.gateway?.url ?? "", ...subject };
}

/** "turnspec suite 7.0". */
export function suiteName(report: Pick<RunReport, "suite">): string {
  return `${report.suite.name} suite ${report.suite.version}`;
}

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

/** "3 passed, 1 failed (1 expected), 2 not reached, 1 error"; zeros left out. */
export function formatCounts(counts: OutcomeCounts): string {
  const parts: string[] = [];
  if (counts.pass) parts.push(`${counts.pass} passed`);
  if (counts.fail) parts.push(`${counts.fail} failed${counts.expected ? ` (${counts.expected} expected)` : ""}`);
  if (counts.not_reached) parts.push(`${counts.not_reached} not reached`);
  if (counts.skipped) parts.push(`${counts.skipped} skipped`);
  if (counts.error) parts.push(plural(counts.error, "error"));
  return parts.length ? parts.join(", ") : "none";
}

/** The MUST results of each capability to show: every claimed one, and any other that has MUSTs. */
export function mustsByCapability(verdict: Verdict): { capability: Capability; claimed: boolean; counts: OutcomeCounts }[] {
  return CAPABILITIES.map((capability) => ({
    capability,
    claimed: verdict.claimed.includes(capability),
    counts: verdict.counts.byCapability[capability].MUST,
  })).filter((row) => row.claimed || row.counts.total > 0);
}

/**
 * The headline of a run the gateway left early, as lines: how it ended and after which
 * frame, the requests it never answered, the end of its stderr, and what it cost.
 */
export function stopLines(stop: GatewayStop): { headline: string; details: string[] } {
  const where =
    stop.after?.scenario === undefined
      ? ""
      : ` (in "${stop.after.scenario}"${stop.after.requirement === undefined ? "" : `, ${stop.after.requirement}`})`;
  const headline = `${stop.summary.charAt(0).toUpperCase()}${stop.summary.slice(1)}${stop.after === undefined ? "" : ` after the suite sent${where}:`}`;
  const details: string[] = [];
  if (stop.after !== undefined) details.push(stopFrame(stop.after.frame));
  if (stop.inFlight.length)
    details.push(
      `unanswered: ${stop.inFlight.map((r) => `${r.method} (id ${JSON.stringify(r.id)}${r.scenario === undefined ? "" : `, from "${r.scenario}"`})`).join(", ")}`,
    );
  if (stop.stderr !== undefined) details.push(`its stderr ends with:\n${stop.stderr}`);
  const cost = stop.notReached ? `; ${plural(stop.notReached, "requirement was", "requirements were")} not reached because of it` : "";
  details.push(
    stop.requirement === undefined ? `No requirement was running${cost}.` : `Reported as a failure of ${stop.requirement}${cost}.`,
  );
  return { headline, details };
}

/** The frame a stop came after: its JSON text, or the text itself when it was not JSON, cut at 300 characters. */
function stopFrame(frame: unknown): string {
  const text = typeof frame === "string" ? frame : (JSON.stringify(frame) ?? String(frame));
  return text.length <= 300 ? text : `${text.slice(0, 299)}…`;
}
