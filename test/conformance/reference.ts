/** What the certification tests share: the reference gateway command and what it claims. */
import type { Capability, RunReport } from "../../packages/conformance/src/results.js";

export const CLAIMED: Capability[] = ["core", "permissions", "routes", "work", "windows", "recovery", "surface"];
export const REFERENCE =
  "node bin/turnspec.js serve --stdio --memory --provider-url {provider_url} --question-timeout-ms {question_timeout_ms}";

/** The results that are not passes, as "ID outcome: message" lines. */
export const notPassing = (report: RunReport) =>
  report.results.filter((r) => r.outcome !== "pass").map((r) => `${r.id} ${r.outcome}: ${r.message ?? ""}`);
