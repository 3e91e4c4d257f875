/**
 * Synthetic results and run reports for the reporter tests: every outcome, level and
 * capability, an expected failure, a stale entry, an invalid frame and a transcript.
 */
import {
  CAPABILITIES,
  LEVELS,
  OUTCOMES,
  type Capability,
  type Level,
  type Outcome,
  type RequirementResult,
  type RunReport,
} from "../../../packages/conformance/src/results.js";
import { computeVerdict, toRunReport, type ExpectedFailure, type RunMeta } from "../../../packages/conformance/src/verdict.js";

/** A result with plausible defaults; `id` is also the statement's subject. */
export function result(
  id: string,
  capability: Capability,
  level: Level,
  outcome: Outcome,
  extra: Partial<RequirementResult> = {},
): RequirementResult {
  return {
    id,
    level,
    capability,
    statement: `The gateway honours ${id}.`,
    reference: { file: "turns-api.md", section: "Turns" },
    outcome,
    durationMs: 12,
    ...(outcome === "skipped" ? { message: "capability not claimed" } : {}),
    ...extra,
  };
}

export const meta: RunMeta = {
  suite: { name: "turnspec", version: "7.0", package: "0.2.0" },
  schemaHash: "a".repeat(64),
  gateway: { command: "node gateway.js --stdio" },
  startedAt: "2026-11-30T12:00:00.000Z",
  capabilities: ["core", "permissions", "routes"],
  requestedLevel: "full",
};

const startRequest = { jsonrpc: "2.0", id: 1, method: "turn/start", params: { thread_id: "th_1", input: [{ type: "text", text: "hi" }] } };
const badResponse = { jsonrpc: "2.0", id: 1, result: { turn: { id: "tu_1", status: "Running" } } };

/** A small run: a failing core MUST that is listed, a failing routes MUST with an invalid frame, an error, a stale entry. */
export function smallResults(): RequirementResult[] {
  return [
    result("CORE-001", "core", "MUST", "pass", { durationMs: 8 }),
    result("CORE-002", "core", "MUST", "fail", {
      durationMs: 40,
      message: 'turn/get answered status "Running"; expected "Completed" after turn/completed',
      transcript: [
        { direction: "sent", atMs: 3, frame: startRequest },
        { direction: "received", atMs: 9, frame: { jsonrpc: "2.0", id: 1, result: { turn: { id: "tu_1", status: "InProgress" } } } },
      ],
    }),
    result("CORE-003", "core", "SHOULD", "pass", { durationMs: 1500 }),
    result("PERM-001", "permissions", "MUST", "pass", { durationMs: 21 }),
    result("ROUTE-001", "routes", "MUST", "fail", {
      durationMs: 33,
      message:
        'response to turn/start is invalid: result/turn/status: must be one of InProgress, Completed, Interrupted, Failed; got "Running"',
      invalidFrame: badResponse,
      transcript: [
        { direction: "sent", atMs: 50, frame: startRequest },
        { direction: "received", atMs: 61, frame: badResponse },
      ],
    }),
    result("ROUTE-002", "routes", "MAY", "error", {
      durationMs: 5000,
      message: "timed out after 5000 ms waiting for agent/route/create",
      transcript: [],
    }),
    result("WORK-001", "work", "MUST", "skipped"),
  ];
}

export const smallExpected: ExpectedFailure[] = [
  { id: "CORE-002", reason: "status fold lands in 0.2" },
  { id: "PERM-001", reason: "fixed since" },
];

/** The small run, finished: not certified (ROUTE-001 fails, PERM-001 is stale), Core achieved. */
export function smallReport(): RunReport {
  const verdict = computeVerdict(smallResults(), {
    capabilities: meta.capabilities,
    requestedLevel: meta.requestedLevel,
    expectedFailures: smallExpected,
  });
  return toRunReport(meta, "2026-11-30T12:00:07.250Z", verdict);
}

/** A run where every claimed MUST passes: certified Full. */
export function certifiedReport(): RunReport {
  const results = [
    result("CORE-001", "core", "MUST", "pass"),
    result("CORE-003", "core", "SHOULD", "fail", { message: "no delta before the first item" }),
    result("PERM-001", "permissions", "MUST", "pass"),
    result("ROUTE-001", "routes", "MUST", "skipped"),
  ];
  const verdict = computeVerdict(results, { capabilities: ["core", "permissions"], requestedLevel: "full", expectedFailures: [] });
  return toRunReport({ ...meta, capabilities: ["core", "permissions"] }, "2026-11-30T12:00:01.000Z", verdict);
}

/** Every capability × level × outcome once; every failure listed as expected but those of routes and PERMISSIONS-MUST-FAIL; one stale entry. */
export function everyCombinationReport(): RunReport {
  const results: RequirementResult[] = [];
  for (const capability of CAPABILITIES) {
    for (const level of LEVELS) {
      for (const outcome of OUTCOMES) {
        const id = `${capability.toUpperCase()}-${level}-${outcome.toUpperCase()}`;
        const failing = outcome === "fail" || outcome === "error";
        results.push(
          result(id, capability, level, outcome, {
            durationMs: results.length * 7,
            ...(failing
              ? { message: `${id} went wrong`, transcript: [{ direction: "sent", atMs: results.length, frame: startRequest }] }
              : {}),
          }),
        );
      }
    }
  }
  const expectedFailures = results
    .filter((r) => r.outcome === "fail" && r.capability !== "routes" && r.id !== "PERMISSIONS-MUST-FAIL")
    .map((r) => ({ id: r.id, reason: `known: ${r.id}` }));
  expectedFailures.push({ id: "CORE-SHOULD-PASS", reason: "fixed since" });
  const verdict = computeVerdict(results, { capabilities: ["core", "permissions", "windows"], requestedLevel: "core", expectedFailures });
  return toRunReport(
    { ...meta, capabilities: ["core", "permissions", "windows"], requestedLevel: "core" },
    "2026-11-30T12:01:00.000Z",
    verdict,
  );
}
