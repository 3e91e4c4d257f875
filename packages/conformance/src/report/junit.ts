/**
 * The JUnit XML report (`--junit FILE`) for CI: a testsuite per capability, a testcase
 * per requirement. A failure is <failure> (the transcript in <system-out>), a harness
 * error <error>, an unclaimed capability or a requirement not reached <skipped>; a listed expected failure is
 * <skipped> with its reason, and a listed requirement that passes is a <failure>, since
 * the stale entry fails the run.
 */
import { suiteName, targetOf } from "./format.js";
import { CAPABILITIES, type GatewayStop, type RequirementResult, type RunReport } from "../results.js";
import { verdictOf } from "../verdict.js";
import { prettyJson, transcriptText } from "./transcript.js";

/**
 * Characters XML 1.0 cannot hold at all, not even as references: C0 controls other than
 * tab, line feed and carriage return, U+FFFE, U+FFFF and unpaired surrogates. They are
 * written as `\uXXXX` text so that the report stays well-formed and the reader sees them.
 */
const NOT_XML =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
// In an attribute, line breaks and tabs would be read back as spaces unless written as references.
const ATTRIBUTE_WHITESPACE: Record<string, string> = { "\n": "&#10;", "\r": "&#13;", "\t": "&#9;" };

function visible(text: string): string {
  return text.replace(NOT_XML, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
}

/** Text content: markup escaped, characters XML cannot hold made visible; quotes stay as they are, for reading. */
export function xmlText(text: string): string {
  return visible(text).replace(/[&<>]/g, (c) => ENTITIES[c]!);
}

/** A (double-quoted) attribute value: quotes escaped too, line breaks and tabs kept as references. */
export function xmlAttribute(text: string): string {
  return visible(text).replace(/[&<>"'\n\r\t]/g, (c) => ENTITIES[c] ?? ATTRIBUTE_WHITESPACE[c]!);
}

function attributes(values: Record<string, string | number>): string {
  return Object.entries(values)
    .map(([name, value]) => ` ${name}="${xmlAttribute(String(value))}"`)
    .join("");
}

function seconds(ms: number): string {
  return (Math.max(0, ms) / 1000).toFixed(3);
}

function failureBody(result: RequirementResult, stop: GatewayStop | undefined): string {
  const parts = [result.message ?? ""];
  // The stop's account goes with the one failure it is reported under; JUnit has no headline.
  if (stop?.requirement === result.id && stop.stderr !== undefined) parts.push(`the gateway's stderr ends with:\n${stop.stderr}`);
  if (result.invalidFrame !== undefined) parts.push(`invalid frame:\n${prettyJson(result.invalidFrame)}`);
  return parts.filter(Boolean).join("\n\n");
}

function testcase(result: RequirementResult, stop: GatewayStop | undefined): string {
  const head = `    <testcase${attributes({ classname: `turnspec.${result.capability}`, name: `${result.id} [${result.level}] ${result.statement}`, time: seconds(result.durationMs) })}`;
  const inner: string[] = [];
  const message = result.message ?? "";
  if (result.outcome === "pass" && result.expectedFailure) {
    inner.push(`<failure${attributes({ type: "stale", message: "listed as an expected failure but passes: remove the entry" })}/>`);
  } else if (result.outcome === "fail" && result.expectedFailure) {
    inner.push(
      `<skipped${attributes({ type: "expected", message: `expected failure: ${result.expectedFailureReason ?? ""}` })}>${xmlText(failureBody(result, stop))}</skipped>`,
    );
  } else if (result.outcome === "fail") {
    inner.push(`<failure${attributes({ type: result.level, message })}>${xmlText(failureBody(result, stop))}</failure>`);
  } else if (result.outcome === "error") {
    inner.push(`<error${attributes({ type: "harness", message })}>${xmlText(failureBody(result, stop))}</error>`);
  } else if (result.outcome === "not_reached") {
    inner.push(`<skipped${attributes({ type: "not_reached", message: `not reached: ${message}` })}/>`);
  } else if (result.outcome === "skipped") {
    inner.push(`<skipped${attributes({ message })}/>`);
  }
  if (result.transcript?.length && (result.outcome === "fail" || result.outcome === "error")) {
    inner.push(`<system-out>${xmlText(transcriptText(result.transcript, result.invalidFrame))}</system-out>`);
  }
  return inner.length ? `${head}>\n${inner.map((e) => `      ${e}`).join("\n")}\n    </testcase>` : `${head}/>`;
}

/** How JUnit counts a result: listed failures are skipped, stale entries fail. */
function junitOutcome(result: RequirementResult): "pass" | "failure" | "error" | "skipped" {
  if (result.outcome === "pass") return result.expectedFailure ? "failure" : "pass";
  if (result.outcome === "fail") return result.expectedFailure ? "skipped" : "failure";
  return result.outcome === "not_reached" ? "skipped" : result.outcome;
}

function totals(results: readonly RequirementResult[]): Record<"tests" | "failures" | "errors" | "skipped", number> {
  const outcomes = results.map(junitOutcome);
  const n = (o: string) => outcomes.filter((x) => x === o).length;
  return { tests: results.length, failures: n("failure"), errors: n("error"), skipped: n("skipped") };
}

export function renderJunit(report: RunReport): string {
  const verdict = verdictOf(report);
  const claimed = new Set<string>(verdict.claimed);
  const properties = (capability: string) =>
    [
      [targetOf(report).kind, targetOf(report).text],
      ...(report.subject === undefined ? [] : [["subject", report.subject]]),
      ["schemaHash", report.schemaHash],
      ["claimed", String(claimed.has(capability))],
      ["requestedLevel", report.requestedLevel],
      ["achievedLevel", report.achievedLevel],
      ["verdict", verdict.status],
    ]
      .map(([name, value]) => `      <property${attributes({ name: name!, value: value! })}/>`)
      .join("\n");
  const suites = CAPABILITIES.map((capability) => ({ capability, results: report.results.filter((r) => r.capability === capability) }))
    .filter((s) => s.results.length > 0)
    .map(({ capability, results }) => {
      const time = seconds(results.reduce((sum, r) => sum + r.durationMs, 0));
      return [
        `  <testsuite${attributes({ name: capability, ...totals(results), time, timestamp: report.startedAt })}>`,
        "    <properties>",
        properties(capability),
        "    </properties>",
        ...results.map((result) => testcase(result, report.stopped)),
        "  </testsuite>",
      ].join("\n");
    });
  const elapsed = Date.parse(report.finishedAt) - Date.parse(report.startedAt);
  const root = attributes({
    name: suiteName(report),
    ...totals(report.results),
    time: seconds(Number.isFinite(elapsed) ? elapsed : 0),
    timestamp: report.startedAt,
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites${root}>\n${suites.join("\n")}\n</testsuites>\n`;
}
