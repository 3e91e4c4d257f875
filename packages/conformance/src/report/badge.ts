/**
 * The certification badge in the shields.io endpoint format
 * (`conformance/schemas/badge.schema.json`), naming the level, what it covers and the suite
 * version: "Full (core, permissions), suite 7.0" green when every claimed capability is
 * certified (and "Full (client), suite 7.0" for a client), "Core, suite 7.0" yellow when
 * only core is (also for a gateway that claims core alone), "not certified" red,
 * "undetermined" grey when harness errors left the verdict open, and "partial run" grey for
 * --only/--skip, which certifies nothing.
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
  const version = `suite ${report.suite.version}`;
  const verdict = verdictOf(report);
  if (verdict.partial) return { schemaVersion: 1, label, message: "partial run", color: "lightgrey" };
  const claimed = verdict.claimed;
  const full = report.achievedLevel === "full" && (claimed.length > 1 || claimed[0] === "client");
  if (report.certified && full)
    return { schemaVersion: 1, label, message: `Full (${claimed.join(", ")}), ${version}`, color: "brightgreen" };
  if (report.certified && report.achievedLevel !== "none") return { schemaVersion: 1, label, message: `Core, ${version}`, color: "yellow" };
  if (verdict.status === "undetermined") return { schemaVersion: 1, label, message: "undetermined", color: "lightgrey" };
  return { schemaVersion: 1, label, message: "not certified", color: "red" };
}

export function renderBadge(report: RunReport): string {
  return jsonText(buildBadge(report));
}
