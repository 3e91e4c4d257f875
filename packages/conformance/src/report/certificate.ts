/**
 * The certificate of a run (`conformance/schemas/certificate.schema.json`): the suite and
 * schemas the gateway was judged by, how it was reached, when, the level it achieved and
 * the outcome of every requirement, without the transcripts.
 */
import { jsonText } from "./json.js";
import { verdictOf } from "../verdict.js";
import type { Capability, Level, Outcome, RunReport } from "../results.js";

export interface Certificate {
  suite: RunReport["suite"];
  schemaHash: string;
  gateway: RunReport["gateway"];
  /** When the run finished (RFC 3339). */
  date: string;
  capabilities: Capability[];
  requestedLevel: RunReport["requestedLevel"];
  level: RunReport["achievedLevel"];
  /** The claimed capabilities every MUST of which passed (core first). */
  certifiedCapabilities: Capability[];
  /** --only/--skip left requirements out: the run certifies nothing. */
  partial: boolean;
  certified: boolean;
  results: { id: string; level: Level; capability: Capability; outcome: Outcome; expectedFailure?: boolean }[];
}

export function buildCertificate(report: RunReport): Certificate {
  const verdict = verdictOf(report);
  return {
    suite: report.suite,
    schemaHash: report.schemaHash,
    gateway: report.gateway,
    date: report.finishedAt,
    capabilities: report.capabilities,
    requestedLevel: report.requestedLevel,
    level: report.achievedLevel,
    certifiedCapabilities: verdict.partial ? [] : verdict.claimed.filter((c) => verdict.results.every((r) => r.capability !== c || r.level !== "MUST" || r.outcome === "pass" || (r.outcome === "fail" && r.expectedFailure === true))),
    partial: verdict.partial,
    certified: report.certified,
    results: report.results.map(({ id, level, capability, outcome, expectedFailure }) => ({
      id,
      level,
      capability,
      outcome,
      ...(expectedFailure ? { expectedFailure } : {}),
    })),
  };
}

export function renderCertificate(report: RunReport): string {
  return jsonText(buildCertificate(report));
}
