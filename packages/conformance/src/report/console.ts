/**
 * The live console reporter of `turnspec certify`: a line per requirement as it finishes,
 * then a summary (MUST results per capability, SHOULD and MAY apart, stale expected
 * failures, the level and the verdict, and the files written). Colours only on a TTY
 * with NO_COLOR unset.
 */
import { inspect } from "node:util";
import { type GatewayStop, type Level, type RequirementResult, type RunReport } from "../results.js";
import { claimedCapabilities, verdictOf, type ExpectedFailure, type RunMeta, type Verdict } from "../verdict.js";
import type { WrittenFile } from "./write.js";
import {
  formatCounts,
  formatDuration,
  formatElapsed,
  levelNames,
  mustsByCapability,
  outcomeMarks,
  plural,
  stopLines,
  suiteName,
  targetOf,
} from "./format.js";

export interface ConsoleStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** What the reporter is told when a run starts. */
export interface StartInfo extends RunMeta {
  /** The ids the run will report, to line up the columns and say how many there are. */
  readonly requirementIds?: readonly string[];
  /** The entries of the expected-failures file, to mark them as their results come in. */
  readonly expectedFailures?: readonly ExpectedFailure[];
}

export interface ConsoleReporter {
  onStart(info: StartInfo): void;
  onResult(result: RequirementResult): void;
  /** Something the run says while it goes on: a long wait, a stray line from the gateway. */
  onNotice(text: string): void;
  /** The gateway went away before the run ended: told once, before the results it decides. */
  onStop(stop: GatewayStop): void;
  onEnd(report: RunReport, written?: readonly WrittenFile[]): void;
}

export interface ConsoleReporterOptions {
  /** Overrides the choice made from the stream and the environment. */
  readonly color?: boolean;
  /** The environment NO_COLOR is read from; process.env by default. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

type Colour = "bold" | "red" | "green" | "yellow" | "gray";
type Style = Colour | readonly Colour[];

/**
 * Wraps text in the ANSI codes Node's inspect uses for each style. Not util.styleText:
 * newer Node versions drop its codes unless process.stdout is a TTY, whatever stream the
 * reporter writes to; here the reporter's own stream decides.
 */
function ansi(style: Style, text: string): string {
  const styles: readonly Colour[] = typeof style === "string" ? [style] : style;
  return styles.reduce((inner, name) => {
    // Every Colour is a name inspect.colors has.
    const [open, close] = inspect.colors[name]!;
    return `\u001b[${open}m${inner}\u001b[${close}m`;
  }, text);
}

const markStyle = { pass: "green", fail: "red", not_reached: "gray", skipped: "gray", error: "yellow" } as const satisfies Record<
  RequirementResult["outcome"],
  Style
>;
function indent(text: string, by = "    "): string {
  return text
    .split("\n")
    .map((line) => `${by}${line}`)
    .join("\n");
}

export function createConsoleReporter(stream: ConsoleStream, options: ConsoleReporterOptions = {}): ConsoleReporter {
  const env = options.env ?? process.env;
  const color = options.color ?? (stream.isTTY === true && !env.NO_COLOR);
  const paint = (style: Style, text: string): string => (color ? ansi(style, text) : text);
  const line = (text = ""): void => {
    stream.write(`${text}\n`);
  };
  let idWidth = 0;
  let listed = new Map<string, string>();

  function resultLine(result: RequirementResult): void {
    const mark = paint(markStyle[result.outcome], outcomeMarks[result.outcome]);
    const head = `${mark} ${result.id.padEnd(idWidth)}  ${result.level.padEnd(6)}`;
    const isListed = result.expectedFailure === true || listed.has(result.id);
    if (result.outcome === "skipped" || result.outcome === "not_reached") {
      const label = result.outcome === "skipped" ? "skipped" : "not reached";
      line(paint("gray", `${head}  ${label}${result.message ? `: ${result.message}` : ""}`));
      return;
    }
    let note = "";
    if (isListed && result.outcome === "fail") note = paint("gray", "  expected failure");
    if (isListed && result.outcome === "pass") note = paint("red", "  listed as an expected failure, passes: stale");
    line(`${head}  ${formatDuration(result.durationMs).padStart(6)}  ${paint("gray", result.statement)}${note}`);
    if ((result.outcome === "fail" || result.outcome === "error") && result.message) {
      line(paint(result.outcome === "error" ? "yellow" : isListed ? "gray" : "red", indent(result.message)));
    }
  }

  function capabilityLines(verdict: Verdict): void {
    const rows = mustsByCapability(verdict);
    const width = Math.max(...rows.map((row) => row.capability.length), "SHOULD".length);
    line(paint("bold", "MUST results by capability"));
    for (const { capability, claimed, counts } of rows) {
      const text = claimed ? formatCounts(counts) : paint("gray", `not claimed (${formatCounts(counts)})`);
      line(`  ${capability.padEnd(width)}  ${text}`);
    }
    for (const level of ["SHOULD", "MAY"] satisfies Level[]) {
      line(`${paint("bold", level.padEnd(width + 2))}  ${formatCounts(verdict.counts.byLevel[level])}`);
    }
  }

  function verdictLines(report: RunReport, verdict: Verdict): void {
    const requested = levelNames[report.requestedLevel];
    const achieved = levelNames[report.achievedLevel];
    if (verdict.failing.length) line(`${paint("red", "Failing MUSTs:")} ${verdict.failing.join(", ")}`);
    const outcome = new Map(verdict.results.map((r) => [r.id, r.outcome]));
    const notReached = verdict.undetermined.filter((id) => outcome.get(id) === "not_reached");
    const otherwise = verdict.undetermined.filter((id) => outcome.get(id) !== "not_reached");
    if (notReached.length) {
      const because = report.stopped
        ? ` (because ${report.stopped.summary}${report.stopped.requirement ? `, reported under ${report.stopped.requirement}` : ""})`
        : " (after an earlier step failed)";
      line(`${paint("yellow", `MUSTs not reached${because}:`)} ${notReached.join(", ")}`);
    }
    if (otherwise.length) line(`${paint("yellow", "Not determined (harness error or not run):")} ${otherwise.join(", ")}`);
    if (verdict.staleExpectedFailures.length) {
      line(
        `${paint("red", "Stale expected failures (they pass now; remove them from the list):")} ${verdict.staleExpectedFailures.join(", ")}`,
      );
    }
    const level = `level ${achieved} achieved, ${requested} requested`;
    const stale = verdict.staleExpectedFailures.length
      ? `, ${plural(verdict.staleExpectedFailures.length, "stale entry", "stale entries")}`
      : "";
    if (verdict.partial) {
      const note = "--only/--skip left requirements out: a partial run certifies nothing";
      if (verdict.status === "partial_pass")
        line(`${paint(["bold", "green"], "Partial run passed")}: every selected MUST passed (${note})`);
      else if (verdict.status === "partial_undetermined")
        line(`${paint(["bold", "yellow"], "Partial run not determined")}: selected MUSTs errored or were not reached (${note})`);
      else line(`${paint(["bold", "red"], "Partial run failed")}: a selected MUST fails${stale} (${note})`);
      return;
    }
    if (verdict.status === "certified")
      line(paint(["bold", "green"], `Certified ${achieved}`) + ` (${requested} requested) for ${verdict.claimed.join(", ")}`);
    else if (verdict.status === "undetermined")
      line(`${paint(["bold", "yellow"], "Could not be determined")}: ${level}; MUSTs it needs errored, were not reached or were not run`);
    else
      line(
        `${paint(["bold", "red"], "Not certified")}: ${level}${verdict.staleExpectedFailures.length ? `, ${plural(verdict.staleExpectedFailures.length, "stale entry", "stale entries")}` : ""}`,
      );
  }

  return {
    onStart(info) {
      const ids = info.requirementIds ?? [];
      idWidth = Math.max(0, ...ids.map((id) => id.length));
      listed = new Map((info.expectedFailures ?? []).map((e) => [e.id, e.reason]));
      const target = targetOf(info);
      line(
        `${paint("bold", suiteName(info))} certifying ${target.subject === undefined ? "" : `${target.subject}: `}${target.kind === "client" ? "the client " : ""}${target.text || "(unnamed gateway)"}`,
      );
      const total = ids.length ? ` · ${plural(ids.length, "requirement")}` : "";
      line(
        paint("gray", `claims ${claimedCapabilities(info.capabilities).join(", ")} · ${levelNames[info.requestedLevel]} requested${total}`),
      );
      line();
    },
    onResult(result) {
      resultLine(result);
    },
    onNotice(text) {
      line(paint("yellow", `… ${text}`));
    },
    onStop(stop) {
      const { headline, details } = stopLines(stop);
      line();
      line(paint(["bold", "red"], headline));
      for (const detail of details) line(indent(detail));
      line();
    },
    onEnd(report, written = []) {
      const verdict = verdictOf(report);
      line();
      capabilityLines(verdict);
      line();
      verdictLines(report, verdict);
      line(paint("gray", `${plural(report.results.length, "requirement")} in ${formatElapsed(report.startedAt, report.finishedAt)}`));
      if (written.length) line(paint("bold", "Files written"));
      for (const file of written) line(`  ${file.kind.padEnd(11)}  ${file.path}`);
    },
  };
}
