/**
 * The JSON report (`--json FILE`): the `RunReport` as it is, described for readers
 * outside this project by `conformance/schemas/report.schema.json`.
 */
import type { RunReport } from "../results.js";

/** A value as the JSON files of a run are written: pretty-printed, ending with a newline. */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export function renderJsonReport(report: RunReport): string {
  return jsonText(report);
}
