/**
 * The HTML report (`--html FILE`): one self-contained file (inline CSS, no script, nothing
 * loaded from elsewhere) for people to read. A summary with the verdict, the requirements
 * in sections by outcome (the links at the top show one section at a time, through
 * `:target`, without JavaScript), and for each failure and harness error its message, the
 * invalid frame if any, and the whole JSON-RPC transcript with sent and received marked.
 * Every value from the run is HTML-escaped by the template engine.
 */
import Handlebars from "handlebars";
import type { RequirementResult, RunReport } from "../results.js";
import { verdictOf, type Verdict } from "../verdict.js";
import {
  formatCounts,
  formatDuration,
  formatElapsed,
  levelNames,
  mustsByCapability,
  outcomeMarks,
  stopLines,
  suiteName,
  targetOf,
} from "./format.js";
import { prettyJson, transcriptBlocks, type TranscriptBlock } from "./transcript.js";

interface ResultView {
  id: string;
  anchor: string;
  level: string;
  capability: string;
  statement: string;
  reference: string;
  mark: string;
  outcomeClass: string;
  outcomeLabel: string;
  duration: string;
  message: string | null;
  expectedReason: string | null;
  invalidFrame: string | null;
  transcript: TranscriptBlock[];
}

interface SectionView {
  anchor: string;
  title: string;
  note: string;
  count: number;
  detailed: boolean;
  results: ResultView[];
}

function outcomeOf(result: RequirementResult): { cls: string; label: string; mark: string; section: string } {
  const mark = outcomeMarks[result.outcome];
  if (result.outcome === "pass" && result.expectedFailure) return { cls: "stale", label: "stale entry", mark, section: "stale" };
  if (result.outcome === "fail" && result.expectedFailure) return { cls: "expected", label: "expected failure", mark, section: "expected" };
  return {
    pass: { cls: "pass", label: "pass", mark, section: "passed" },
    fail: { cls: "fail", label: "fail", mark, section: "failed" },
    error: { cls: "error", label: "harness error", mark, section: "errors" },
    not_reached: { cls: "skipped", label: "not reached", mark, section: "not-reached" },
    skipped: { cls: "skipped", label: "skipped", mark, section: "skipped" },
  }[result.outcome];
}

function resultView(result: RequirementResult): ResultView {
  const outcome = outcomeOf(result);
  return {
    id: result.id,
    anchor: `req-${result.id}`,
    level: result.level,
    capability: result.capability,
    statement: result.statement,
    reference: `${result.reference.file} § ${result.reference.section}`,
    mark: outcome.mark,
    outcomeClass: outcome.cls,
    outcomeLabel: outcome.label,
    duration: formatDuration(result.durationMs),
    message: result.message ?? null,
    expectedReason: result.expectedFailure ? (result.expectedFailureReason ?? "") : null,
    invalidFrame: result.invalidFrame === undefined ? null : prettyJson(result.invalidFrame),
    transcript: transcriptBlocks(result.transcript ?? [], result.invalidFrame),
  };
}

const sectionDefs = [
  { anchor: "failed", title: "Failed", note: "The gateway does not meet these requirements.", detailed: true },
  {
    anchor: "errors",
    title: "Harness errors",
    note: "The suite could not judge these (a fault of the harness or a timeout); they are not the gateway's failures, but a MUST the requested level needs that errored leaves the verdict undetermined.",
    detailed: true,
  },
  {
    anchor: "stale",
    title: "Stale expected failures",
    note: "Listed as expected failures, these pass now: remove them from the list. Each one fails the run.",
    detailed: false,
  },
  {
    anchor: "expected",
    title: "Expected failures",
    note: "Listed in the expected-failures file: they fail, and do not count against the level.",
    detailed: true,
  },
  {
    anchor: "not-reached",
    title: "Not reached",
    note: "These were to run, but an earlier failure of their scenario, or the gateway going away, kept them from it; each names the cause. They leave the level undetermined, not failed.",
    detailed: false,
  },
  { anchor: "passed", title: "Passed", note: "", detailed: false },
  { anchor: "skipped", title: "Skipped", note: "Not run: their capability is not claimed, or as the note says.", detailed: false },
] as const;

function verdictView(report: RunReport, verdict: Verdict): { cls: string; headline: string; detail: string } {
  const requested = levelNames[report.requestedLevel];
  const achieved = levelNames[report.achievedLevel];
  const claims = `claims ${verdict.claimed.join(", ")}`;
  if (verdict.status === "partial_pass")
    return {
      cls: "undetermined",
      headline: "Partial run: every selected MUST passed",
      detail: `${claims}; --only/--skip left requirements out, so this run certifies nothing.`,
    };
  if (verdict.status === "partial_undetermined")
    return {
      cls: "undetermined",
      headline: "Partial run: not determined",
      detail: `${claims}; selected MUSTs that errored or were not reached: ${verdict.undetermined.join(", ")}.`,
    };
  if (verdict.status === "partial_fail") {
    return {
      cls: "not-certified",
      headline: "Partial run: failed",
      detail: `${claims}; ${[...(verdict.failing.length ? [`failing MUSTs: ${verdict.failing.join(", ")}`] : []), ...(verdict.staleExpectedFailures.length ? [`stale expected failures: ${verdict.staleExpectedFailures.join(", ")}`] : [])].join("; ")}.`,
    };
  }
  if (verdict.status === "certified")
    return { cls: "certified", headline: `Certified ${achieved}`, detail: `${claims}; ${requested} requested.` };
  if (verdict.status === "undetermined") {
    return {
      cls: "undetermined",
      headline: "Could not be determined",
      detail: `${requested} requested; MUSTs it needs errored or were not run: ${verdict.undetermined.join(", ")}. Level ${achieved} holds so far.`,
    };
  }
  const reasons = [
    ...(verdict.failing.length ? [`failing MUSTs: ${verdict.failing.join(", ")}`] : []),
    ...(verdict.staleExpectedFailures.length ? [`stale expected failures: ${verdict.staleExpectedFailures.join(", ")}`] : []),
  ];
  return {
    cls: "not-certified",
    headline: "Not certified",
    detail: `${requested} requested, ${achieved} achieved; ${reasons.join("; ")}.`,
  };
}

function view(report: RunReport) {
  const verdict = verdictOf(report);
  const target = targetOf(report);
  const results = report.results.map((r) => ({ result: r, view: resultView(r), section: outcomeOf(r).section }));
  const sections: SectionView[] = sectionDefs.map((def) => {
    const inSection = results.filter((r) => r.section === def.anchor).map((r) => r.view);
    return { ...def, count: inSection.length, results: inSection };
  });
  return {
    title: `${suiteName(report)} certification: ${target.subject ?? target.text}`,
    suite: suiteName(report),
    gateway: target.text,
    gatewayKind: `${target.kind === "client" ? "client " : ""}${target.how}`,
    subject: target.subject ?? null,
    schemaHash: report.schemaHash,
    startedAt: report.startedAt,
    finishedAt: report.finishedAt,
    duration: formatElapsed(report.startedAt, report.finishedAt),
    claimed: verdict.claimed.join(", "),
    verdict: verdictView(report, verdict),
    stop: report.stopped === undefined ? null : stopLines(report.stopped),
    capabilities: mustsByCapability(verdict).map((row) => ({
      name: row.capability,
      claimed: row.claimed,
      counts: formatCounts(row.counts),
    })),
    should: formatCounts(verdict.counts.byLevel.SHOULD),
    may: formatCounts(verdict.counts.byLevel.MAY),
    total: report.results.length,
    sections: sections.filter((s) => s.count > 0),
  };
}

const css = `
:root { color-scheme: light dark; --fg: #1d2125; --muted: #626b75; --bg: #fff; --panel: #f5f6f8; --line: #d9dde2;
  --pass: #1a7f37; --fail: #cf222e; --error: #9a6700; --skipped: #6e7781; --expected: #8250df; --sent: #0969da; --received: #1a7f37; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --panel: #161b22; --line: #30363d;
  --pass: #3fb950; --fail: #f85149; --error: #d29922; --skipped: #8b949e; --expected: #a371f7; --sent: #58a6ff; --received: #3fb950; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 72rem; padding: 1.5rem; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; } h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; } h3 { font-size: 1rem; margin: 0; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
.muted { color: var(--muted); }
.verdict { border-left: 6px solid; padding: .75rem 1rem; background: var(--panel); margin: 1rem 0; border-radius: 4px; }
.verdict strong { font-size: 1.25rem; display: block; }
.verdict.stop pre { background: none; padding: .2rem 0; white-space: pre-wrap; }
.verdict.certified { border-color: var(--pass); } .verdict.not-certified { border-color: var(--fail); } .verdict.undetermined { border-color: var(--error); }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: 0; } dl.meta dt { color: var(--muted); } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); }
nav.filters { display: flex; flex-wrap: wrap; gap: .5rem; margin: 1rem 0; } nav.filters a { padding: .2rem .7rem; border: 1px solid var(--line); border-radius: 999px; text-decoration: none; color: inherit; }
.pass { color: var(--pass); } .fail, .stale { color: var(--fail); } .error { color: var(--error); } .skipped { color: var(--skipped); } .expected { color: var(--expected); }
.mark { font-weight: 700; width: 1.5rem; }
nav.filters a.failed, nav.filters a.stale { border-color: var(--fail); } nav.filters a.errors { border-color: var(--error); } nav.filters a.expected { border-color: var(--expected); }
article.result h3.mono { font-size: 15px; }
article.result { border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; margin: .75rem 0; }
article.result header { display: flex; gap: .75rem; align-items: baseline; flex-wrap: wrap; }
.message { white-space: pre-wrap; background: var(--panel); padding: .5rem .75rem; border-radius: 4px; margin: .5rem 0; }
pre { margin: 0; padding: .5rem .75rem; overflow-x: auto; background: var(--panel); border-radius: 4px; }
.frame { margin: .4rem 0; border-left: 4px solid; } .frame.sent { border-color: var(--sent); } .frame.received { border-color: var(--received); }
.frame .label { font-size: 12px; padding: .1rem .75rem; } .frame.sent .label { color: var(--sent); } .frame.received .label { color: var(--received); }
.frame.invalid { border-color: var(--fail); } .frame.invalid .label::after { content: "  failed strict validation"; color: var(--fail); font-weight: 600; }
/* A link to one section shows that section alone; "All" (#) shows them all again. */
main:has(section:target) section:not(:target) { display: none; }
`;

const template = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{{title}}</title>
<style>{{{css}}}</style>
</head>
<body>
<header>
<h1>{{suite}} certification</h1>
{{#if subject}}<div><strong>{{subject}}</strong></div>
{{/if}}<div class="muted">{{gatewayKind}} <code>{{gateway}}</code></div>
</header>
<div class="verdict {{verdict.cls}}"><strong>{{verdict.headline}}</strong>{{verdict.detail}}</div>
{{#if stop}}<div class="verdict not-certified stop"><strong>{{stop.headline}}</strong>
{{#each stop.details}}<pre>{{this}}</pre>
{{/each}}</div>
{{/if}}
<dl class="meta">
<dt>Claimed</dt><dd>{{claimed}}</dd>
<dt>Started</dt><dd>{{startedAt}}</dd>
<dt>Finished</dt><dd>{{finishedAt}} ({{duration}}, {{total}} requirements)</dd>
<dt>Schema hash</dt><dd class="mono">{{schemaHash}}</dd>
</dl>
<h2>MUST results by capability</h2>
<table>
<thead><tr><th>capability</th><th>claimed</th><th>MUST results</th></tr></thead>
<tbody>
{{#each capabilities}}<tr><td>{{name}}</td><td>{{#if claimed}}yes{{else}}<span class="muted">no</span>{{/if}}</td><td>{{counts}}</td></tr>
{{/each}}</tbody>
</table>
<p>SHOULD: {{should}} · MAY: {{may}} <span class="muted">(these never decide the level)</span></p>
<nav class="filters">
<a href="#">All</a>
{{#each sections}}<a href="#{{anchor}}" class="{{anchor}}">{{title}} ({{count}})</a>
{{/each}}</nav>
<main>
{{#each sections}}<section id="{{anchor}}">
<h2>{{title}} ({{count}})</h2>
{{#if note}}<p class="muted">{{note}}</p>{{/if}}
{{#if detailed}}{{#each results}}<article class="result" id="{{anchor}}">
<header><span class="mark {{outcomeClass}}">{{mark}}</span><h3 class="mono">{{id}}</h3><span>{{level}}</span><span>{{capability}}</span><span class="{{outcomeClass}}">{{outcomeLabel}}</span><span class="muted">{{duration}}</span></header>
<p>{{statement}} <span class="muted">{{reference}}</span></p>
{{#if expectedReason}}<p class="expected">Expected failure: {{expectedReason}}</p>{{/if}}
{{#if message}}<div class="message mono">{{message}}</div>{{/if}}
{{#if invalidFrame}}<h3>Invalid frame</h3>
<pre>{{invalidFrame}}</pre>
{{/if}}
{{#if transcript.length}}<details open>
<summary>JSON-RPC transcript ({{transcript.length}} frames)</summary>
{{#each transcript}}<div class="frame {{direction}}{{#if invalid}} invalid{{/if}}"><div class="label mono">{{label}} {{at}}</div><pre>{{json}}</pre></div>
{{/each}}</details>
{{else}}<p class="muted">No frames were exchanged.</p>
{{/if}}
</article>
{{/each}}{{else}}<table>
<thead><tr><th></th><th>requirement</th><th>level</th><th>capability</th><th>statement</th><th>time</th></tr></thead>
<tbody>
{{#each results}}<tr id="{{anchor}}"><td class="mark {{outcomeClass}}">{{mark}}</td><td class="mono">{{id}}</td><td>{{level}}</td><td>{{capability}}</td><td>{{statement}}{{#if message}} <span class="muted">({{message}})</span>{{/if}}</td><td>{{duration}}</td></tr>
{{/each}}</tbody>
</table>
{{/if}}</section>
{{/each}}</main>
</body>
</html>
`;

const render = Handlebars.create().compile<ReturnType<typeof view> & { css: string }>(template, { strict: true });

/** The report as one self-contained HTML document. */
export function renderHtml(report: RunReport): string {
  return render({ ...view(report), css });
}
