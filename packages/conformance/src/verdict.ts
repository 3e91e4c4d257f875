/**
 * The verdict of a certification run, from the results of its requirements:
 *
 * - Core: every MUST of the core capability passes. Full: every MUST of every claimed
 *   capability (core always among them) passes. SHOULD and MAY never decide the level. A
 *   client run claims the client capability alone, and its Core and Full are one level.
 * - A failure listed in the expected-failures file does not count against the level; a
 *   listed requirement that passes is stale and makes the run not certified.
 * - `error` (a harness fault) is never the gateway's failure, but a MUST the requested
 *   level needs that errored (or was not reached, or not run) leaves the level
 *   undetermined: exit 2, not 1, unless something else already fails the run (the
 *   failure that kept it from being reached, usually).
 *
 * Also here: reading the expected-failures file and hashing the protocol's schemas.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { preview, toIssues, type ValidationIssue } from "@turnspec/rpc";
import {
  baseCapability,
  CAPABILITIES,
  LEVELS,
  type Capability,
  type GatewayStop,
  type Level,
  type RequirementResult,
  type RunReport,
} from "./results.js";

/** One entry of the expected-failures file. */
export interface ExpectedFailure {
  readonly id: string;
  readonly reason: string;
}

export interface VerdictOptions {
  /** The capabilities the gateway claims; core counts as claimed whether listed or not. */
  readonly capabilities: readonly Capability[];
  readonly requestedLevel: RunReport["requestedLevel"];
  readonly expectedFailures: readonly ExpectedFailure[];
  /** --only/--skip left requirements out: the verdict is about the selected ones only. */
  readonly partial?: boolean;
}

/** How many results had each outcome; `expected` is how many of the failures were listed. */
export interface OutcomeCounts {
  total: number;
  pass: number;
  fail: number;
  not_reached: number;
  skipped: number;
  error: number;
  expected: number;
}

export interface VerdictCounts {
  all: OutcomeCounts;
  byLevel: Record<Level, OutcomeCounts>;
  byCapability: Record<Capability, Record<Level, OutcomeCounts>>;
}

/** Whether the MUSTs a level needs hold: all pass, one fails, or some could not be determined. */
export type LevelStatus = "pass" | "fail" | "undetermined";

export interface Verdict {
  /** The claimed capabilities, core first, in the order reports list them. */
  claimed: Capability[];
  achievedLevel: RunReport["achievedLevel"];
  certified: boolean;
  status: NonNullable<RunReport["status"]>;
  core: LevelStatus;
  full: LevelStatus;
  /** Listed ids that passed. */
  staleExpectedFailures: string[];
  /** --only/--skip left requirements out: nothing is certified, status is partial_*. */
  partial: boolean;
  /** Listed ids that no result has (the caller knows the catalogue and says which are unknown). */
  unmatchedExpectedFailures: string[];
  /** MUSTs the requested level needs that failed and are not listed. */
  failing: string[];
  /** MUSTs the requested level needs that errored, were not reached or were not run. */
  undetermined: string[];
  counts: VerdictCounts;
  /** 0 certified at the requested level, 1 not, 2 could not be determined (harness errors). */
  exitCode: 0 | 1 | 2;
  /** The results with `expectedFailure` and `expectedFailureReason` set from the list. */
  results: RequirementResult[];
}

function emptyCounts(): OutcomeCounts {
  return { total: 0, pass: 0, fail: 0, not_reached: 0, skipped: 0, error: 0, expected: 0 };
}

function count(into: OutcomeCounts, result: RequirementResult): void {
  into.total++;
  into[result.outcome]++;
  if (result.outcome === "fail" && result.expectedFailure) into.expected++;
}

function perLevel(): Record<Level, OutcomeCounts> {
  return Object.fromEntries(LEVELS.map((level) => [level, emptyCounts()])) as Record<Level, OutcomeCounts>;
}

function tally(results: readonly RequirementResult[]): VerdictCounts {
  const counts: VerdictCounts = {
    all: emptyCounts(),
    byLevel: perLevel(),
    byCapability: Object.fromEntries(CAPABILITIES.map((capability) => [capability, perLevel()])) as VerdictCounts["byCapability"],
  };
  for (const result of results) {
    count(counts.all, result);
    count(counts.byLevel[result.level], result);
    count(counts.byCapability[result.capability][result.level], result);
  }
  return counts;
}

/** The status of a set of MUST results, and the ids that make it so. */
function judge(musts: readonly RequirementResult[]): { status: LevelStatus; failing: string[]; undetermined: string[] } {
  const failing = musts.filter((r) => r.outcome === "fail" && !r.expectedFailure).map((r) => r.id);
  const undetermined = musts
    .filter((r) => r.outcome === "error" || r.outcome === "not_reached" || r.outcome === "skipped")
    .map((r) => r.id);
  const status: LevelStatus = failing.length > 0 ? "fail" : undetermined.length > 0 ? "undetermined" : "pass";
  return { status, failing, undetermined };
}

/** The capabilities a run claims, in the order of `CAPABILITIES`: core always for a gateway, client alone for a client. */
export function claimedCapabilities(capabilities: readonly Capability[]): Capability[] {
  const base = baseCapability(capabilities);
  return CAPABILITIES.filter((c) => c === base || (base === "core" && c !== "client" && capabilities.includes(c)));
}

export function computeVerdict(results: readonly RequirementResult[], options: VerdictOptions): Verdict {
  const listed = new Map(options.expectedFailures.map((e) => [e.id, e.reason]));
  const marked = results.map((result): RequirementResult => {
    const { expectedFailure: _flag, expectedFailureReason: _reason, ...rest } = result;
    const reason = listed.get(result.id);
    return reason === undefined ? rest : { ...rest, expectedFailure: true, expectedFailureReason: reason };
  });
  const claimed = claimedCapabilities(options.capabilities);
  const musts = marked.filter((r) => r.level === "MUST");
  // For a client, "core" is its one capability: Core and Full are the same level.
  const base = baseCapability(claimed);
  const core = judge(musts.filter((r) => r.capability === base));
  const full = judge(musts.filter((r) => claimed.includes(r.capability)));
  const requested = options.requestedLevel === "core" ? core : full;

  const staleExpectedFailures = marked.filter((r) => r.expectedFailure && r.outcome === "pass").map((r) => r.id);
  const seen = new Set(results.map((r) => r.id));
  const unmatchedExpectedFailures = [...listed.keys()].filter((id) => !seen.has(id));

  const partial = options.partial === true;
  let certified = requested.status === "pass" && staleExpectedFailures.length === 0;
  let status: Verdict["status"] = certified
    ? "certified"
    : requested.status === "undetermined" && staleExpectedFailures.length === 0
      ? "undetermined"
      : "not_certified";
  let judged = requested;
  if (partial) {
    // Only what was selected counts; the rest was left out on purpose.
    judged = judge(
      (options.requestedLevel === "core"
        ? musts.filter((r) => r.capability === base)
        : musts.filter((r) => claimed.includes(r.capability))
      ).filter((r) => r.skipReason !== "not_selected"),
    );
    certified = false;
    status =
      staleExpectedFailures.length > 0 || judged.status === "fail"
        ? "partial_fail"
        : judged.status === "undetermined"
          ? "partial_undetermined"
          : "partial_pass";
  }
  return {
    claimed,
    achievedLevel: full.status === "pass" ? "full" : core.status === "pass" ? "core" : "none",
    certified,
    status,
    core: core.status,
    full: full.status,
    staleExpectedFailures,
    unmatchedExpectedFailures,
    partial,
    failing: judged.failing,
    undetermined: judged.undetermined,
    counts: tally(marked),
    exitCode:
      status === "certified" || status === "partial_pass" ? 0 : status === "undetermined" || status === "partial_undetermined" ? 2 : 1,
    results: marked,
  };
}

/** The verdict of a finished report, from the expected-failure marks its results carry. */
export function verdictOf(report: RunReport): Verdict {
  const expectedFailures = report.results
    .filter((r) => r.expectedFailure)
    .map((r) => ({ id: r.id, reason: r.expectedFailureReason ?? "" }));
  return computeVerdict(report.results, {
    capabilities: report.capabilities,
    requestedLevel: report.requestedLevel,
    expectedFailures,
    partial: report.partial === true,
  });
}

/** What a run knows before its verdict: everything of the report but the verdict and the results. */
export type RunMeta = Omit<
  RunReport,
  "achievedLevel" | "certified" | "staleExpectedFailures" | "status" | "partial" | "stopped" | "results" | "finishedAt"
>;

/** The report of a finished run; `stopped` when the gateway went away before it ended. */
export function toRunReport(meta: RunMeta, finishedAt: string, verdict: Verdict, stopped?: GatewayStop): RunReport {
  return {
    ...meta,
    finishedAt,
    achievedLevel: verdict.achievedLevel,
    certified: verdict.certified,
    staleExpectedFailures: verdict.staleExpectedFailures,
    status: verdict.status,
    ...(verdict.partial ? { partial: true } : {}),
    ...(stopped === undefined ? {} : { stopped }),
    results: verdict.results,
  };
}

/** An expected-failures file that cannot be used: unreadable, not JSON, or not in the format. */
export class ExpectedFailuresError extends Error {
  readonly path: string;
  readonly issues: readonly ValidationIssue[];

  constructor(path: string, message: string, issues: readonly ValidationIssue[] = []) {
    super(message);
    this.name = "ExpectedFailuresError";
    this.path = path;
    this.issues = issues;
  }
}

const expectedFailuresSchema = JSON.parse(
  readFileSync(new URL("./schemas/expected-failures.schema.json", import.meta.url), "utf8"),
) as object;
// Formats are annotations here, as everywhere in the project.
const validateExpectedFailures = new Ajv2020({ allErrors: true, strict: true, validateFormats: false }).compile<{
  expected_failures: ExpectedFailure[];
}>(expectedFailuresSchema);

/**
 * Reads and checks an expected-failures file (`conformance/schemas/expected-failures.schema.json`).
 * Throws `ExpectedFailuresError` naming the file and the JSON pointer of each problem.
 * Ids the catalogue does not know are returned like any other: the caller reports them.
 */
export function loadExpectedFailures(path: string): ExpectedFailure[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ExpectedFailuresError(
      path,
      `cannot read the expected-failures file ${path}: ${code === "ENOENT" ? "no such file" : (error as Error).message}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ExpectedFailuresError(path, `the expected-failures file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  const issues: ValidationIssue[] = validateExpectedFailures(value) ? [] : toIssues(validateExpectedFailures.errors ?? [], value);
  if (issues.length === 0) {
    const entries = (value as { expected_failures: ExpectedFailure[] }).expected_failures;
    const first = new Map<string, number>();
    entries.forEach((entry, i) => {
      const earlier = first.get(entry.id);
      if (earlier === undefined) first.set(entry.id, i);
      else
        issues.push({
          pointer: `/expected_failures/${i}/id`,
          message: `lists ${JSON.stringify(entry.id)} again (first at /expected_failures/${earlier}/id)`,
        });
    });
    if (issues.length === 0) return entries.map(({ id, reason }) => ({ id, reason }));
  }
  const lines = issues.map(
    (issue) => `  ${path}#${issue.pointer}: ${issue.message}${issue.received === undefined ? "" : `; got ${preview(issue.received)}`}`,
  );
  throw new ExpectedFailuresError(path, `the expected-failures file ${path} is not valid:\n${lines.join("\n")}`, issues);
}

/**
 * sha256 (hex) over the protocol's schema files: for each `*.json` file below `schemasDir`,
 * in order of its `/`-separated path relative to that folder, the path, a NUL, the byte
 * length in decimal, a NUL, and the bytes. Two folders hash alike only when they hold the
 * same files with the same contents.
 */
export function schemaHash(schemasDir: string): string {
  const files = readdirSync(schemasDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".json"))
    .map((entry) => relative(schemasDir, join(entry.parentPath, entry.name)).split(sep).join("/"))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const hash = createHash("sha256");
  for (const name of files) {
    const bytes = readFileSync(join(schemasDir, name));
    hash.update(`${name}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest("hex");
}
