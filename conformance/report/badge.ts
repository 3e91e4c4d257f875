/**
 * The certification badge in the shields.io endpoint format
 * (`conformance/schemas/badge.schema.json`): "Full 0.1.0" green or "Core 0.1.0" yellow
 * for a certified run, "not certified" red, or "undetermined" grey when harness errors
 * left the verdict open.
 */
import type { RunReport } from "../results.js";
import { verdictOf } from "../verdict.js";
import { jsonText } from "./json.js";

export interface Badge {
  schemaVersion: 1;
  label: string;
  message: string;
  color: "brightgreen" | "yellow" | "red" | "lightgrey";
}

export function buildBadge(report: RunReport): Badge {
  const label = report.suite.name;
  const version = report.suite.version;
  if (report.certified && report.achievedLevel === "full") return { schemaVersion: 1, label, message: `Full ${version}`, color: "brightgreen" };
  if (report.certified && report.achievedLevel === "core") return { schemaVersion: 1, label, message: `Core ${version}`, color: "yellow" };
  if (verdictOf(report).status === "undetermined") return { schemaVersion: 1, label, message: "undetermined", color: "lightgrey" };
  return { schemaVersion: 1, label, message: "not certified", color: "red" };
}

export function renderBadge(report: RunReport): string {
  return jsonText(buildBadge(report));
}
