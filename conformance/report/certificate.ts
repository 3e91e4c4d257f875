/**
 * The certificate of a run (`conformance/schemas/certificate.schema.json`): the suite and
 * schemas the gateway was judged by, how it was reached, when, the level it achieved and
 * the outcome of every requirement, without the transcripts.
 */
import { jsonText } from "./json.js";
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
  certified: boolean;
  results: { id: string; level: Level; capability: Capability; outcome: Outcome; expectedFailure?: boolean }[];
}

export function buildCertificate(report: RunReport): Certificate {
  return {
    suite: report.suite,
    schemaHash: report.schemaHash,
    gateway: report.gateway,
    date: report.finishedAt,
    capabilities: report.capabilities,
    requestedLevel: report.requestedLevel,
    level: report.achievedLevel,
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
