/**
 * The results model of a certification run, shared by the harness (which produces it)
 * and the reporters (which render it).
 */
export type Outcome = "pass" | "fail" | "skipped" | "error";
export type Level = "MUST" | "SHOULD" | "MAY";
export type Capability = "core" | "permissions" | "routes" | "work" | "windows" | "recovery";
export interface TranscriptEntry { direction: "sent" | "received"; atMs: number; frame: unknown } // atMs: ms since the run started
export interface RequirementResult {
  id: string; level: Level; capability: Capability; statement: string;
  reference: { file: string; section: string };
  outcome: Outcome;
  durationMs: number;
  message?: string;                 // why it failed / errored / was skipped
  invalidFrame?: unknown;           // the frame that failed strict validation, if that is the failure
  transcript?: TranscriptEntry[];   // the JSON-RPC transcript of the scenario (kept for fail and error)
  expectedFailure?: boolean;        // listed in --expected-failures
}
export interface RunReport {
  suite: { name: "turnspec"; version: string };
  schemaHash: string;               // sha256 over the schemas/ files, hex
  gateway: { command?: string; url?: string };
  startedAt: string; finishedAt: string;  // RFC 3339
  capabilities: Capability[];       // claimed
  requestedLevel: "core" | "full";
  achievedLevel: "full" | "core" | "none";
  certified: boolean;               // achievedLevel satisfies requestedLevel (after expected failures)
  staleExpectedFailures: string[];  // listed ids that now pass (these fail the run)
  results: RequirementResult[];
}
