/**
 * The results model of a certification run: what the harness records for each
 * requirement and what every reporter (console, JSON, JUnit, HTML, certificate, badge)
 * reads. The JSON report is a `RunReport` as it is; `conformance/schemas/report.schema.json`
 * describes it for readers outside this project.
 */

/**
 * pass; fail; not_reached: it was to run, but an earlier failure of its scenario, or the
 * gateway going away, kept it from running (the message names the cause); skipped: not
 * run by choice (capability not claimed, left out by --only/--skip); error: a fault of the
 * harness itself, never the gateway's failure.
 */
export type Outcome = "pass" | "fail" | "not_reached" | "skipped" | "error";
export type Level = "MUST" | "SHOULD" | "MAY";
/** What a gateway claims (core always), or `client`: the requirements of a client, run by `--client-cmd`. */
export type Capability = "core" | "permissions" | "routes" | "work" | "windows" | "recovery" | "surface" | "client";

/** One JSON-RPC frame of a scenario, as the harness saw it. */
export interface TranscriptEntry {
  /** sent: from the suite; received: from the gateway. */
  direction: "sent" | "received";
  /**
   * "model": an HTTP exchange with the scripted model server (received: the gateway's
   * request; sent: the model's answer). "client": a line of the command protocol with a
   * client under test (sent: a command; received: its answer). Absent: a JSON-RPC frame.
   */
  peer?: "model" | "client";
  /** Milliseconds since the run started. */
  atMs: number;
  frame: unknown;
}

export interface RequirementResult {
  id: string;
  level: Level;
  capability: Capability;
  statement: string;
  reference: { file: string; section: string };
  outcome: Outcome;
  durationMs: number;
  /** Why it failed, errored, was not reached or was skipped. */
  message?: string;
  /** Why it was skipped: its capability is not claimed, or --only/--skip left it out. */
  skipReason?: "not_claimed" | "not_selected";
  /** The frame that failed strict validation, if that is the failure. */
  invalidFrame?: unknown;
  /** The JSON-RPC transcript of the scenario (kept for fail and error). */
  transcript?: TranscriptEntry[];
  /** Listed in --expected-failures. */
  expectedFailure?: boolean;
  /** The reason the expected-failures file gives for listing it. */
  expectedFailureReason?: string;
}

/**
 * The gateway went away before the run ended (its process exited, or it closed the
 * connection): the one cause of the failure it is reported under and of everything it
 * left not reached, told once.
 */
export interface GatewayStop {
  /** How it went, in one line: "the gateway exited with code 1", "the gateway closed the connection". */
  summary: string;
  /** The exit code, when the suite started the gateway as a process and it exited. */
  exitCode?: number;
  /** The signal that ended that process, when one did. */
  signal?: string;
  /** The last lines the process wrote on stderr (a traceback, say), when it wrote any. */
  stderr?: string;
  /** The last frame the suite sent before the gateway went away, and which scenario and step sent it. */
  after?: { frame: unknown; atMs: number; scenario?: string; requirement?: string };
  /** Requests the suite had sent that were never answered. */
  inFlight: { id: string | number; method: string; scenario?: string }[];
  /** The requirement the stop is reported under as a failure: the step it interrupted. */
  requirement?: string;
  /** How many requirements it left not reached. */
  notReached: number;
}

export interface RunReport {
  /**
   * The suite: `version` is the suite version the run certified against (the catalogue's
   * current one, or the earlier one --suite named); `package` the version of
   * @turnspec/conformance that ran it.
   */
  suite: { name: "turnspec"; version: string; package?: string };
  /** sha256 over the schemas/ files, hex (see `schemaHash`). */
  schemaHash: string;
  /** The gateway under test: the command the suite started, or the URL it connected to. Absent for a client run. */
  gateway?: { command?: string; url?: string };
  /** The client under test (a client run): the command the suite started. */
  client?: { command: string };
  /** What the vendor calls the gateway or client certified (`--subject`), as given. */
  subject?: string;
  /** RFC 3339. */
  startedAt: string;
  /** RFC 3339. */
  finishedAt: string;
  /** The capabilities the gateway claims. */
  capabilities: Capability[];
  requestedLevel: "core" | "full";
  achievedLevel: "full" | "core" | "none";
  /** achievedLevel satisfies requestedLevel (after expected failures) and no entry is stale. */
  certified: boolean;
  /** Listed ids that now pass (these fail the run). */
  staleExpectedFailures: string[];
  /**
   * certified; not_certified (the gateway fails a MUST the requested level needs, or an
   * entry is stale); undetermined (only harness errors or MUSTs not run stand in the way).
   */
  status?: "certified" | "not_certified" | "undetermined" | "partial_pass" | "partial_fail" | "partial_undetermined";
  /**
   * --only/--skip left out requirements of claimed capabilities: the run certifies nothing
   * and its status is partial_pass (every selected MUST passed), partial_fail or
   * partial_undetermined.
   */
  partial?: boolean;
  /** Set when the gateway went away before the run ended: the cause reports lead with. */
  stopped?: GatewayStop;
  results: RequirementResult[];
}

/** Every member of a string union, in a fixed order; a missing or extra member does not compile. */
function members<T extends string>(all: { [K in T]: true }): T[] {
  return Object.keys(all) as T[];
}

/** The outcomes, in the order reports list them. */
export const OUTCOMES: readonly Outcome[] = members<Outcome>({ pass: true, fail: true, not_reached: true, skipped: true, error: true });
/** The levels, strongest first. */
export const LEVELS: readonly Level[] = members<Level>({ MUST: true, SHOULD: true, MAY: true });
/** The capabilities, core first, in the order reports list them. */
export const CAPABILITIES: readonly Capability[] = members<Capability>({
  core: true,
  permissions: true,
  routes: true,
  work: true,
  windows: true,
  recovery: true,
  surface: true,
  client: true,
});

/** The capabilities a gateway may claim: all but `client`. */
export const GATEWAY_CAPABILITIES: readonly Capability[] = CAPABILITIES.filter((c) => c !== "client");

/** The capability a run is judged from: `client` for a client run, else `core`, which a gateway always claims. */
export function baseCapability(capabilities: readonly Capability[]): Capability {
  return capabilities.includes("client") ? "client" : "core";
}
