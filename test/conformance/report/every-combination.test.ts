/**
 * Every reporter over a run with every capability, level and outcome, listed failures and
 * a stale entry: each output is valid and accounts for every requirement.
 */
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { buildBadge } from "../../../packages/conformance/src/report/badge.js";
import { buildCertificateFile } from "../../../packages/conformance/src/report/certificate.js";
import { createConsoleReporter } from "../../../packages/conformance/src/report/console.js";
import { renderHtml } from "../../../packages/conformance/src/report/html.js";
import { renderJunit } from "../../../packages/conformance/src/report/junit.js";
import { CAPABILITIES } from "../../../packages/conformance/src/results.js";
import { verdictOf } from "../../../packages/conformance/src/verdict.js";
import { everyCombinationReport } from "./fixtures.js";

const ajv = new Ajv2020({ allErrors: true, strict: true, validateFormats: false });
for (const name of ["report", "certificate", "badge"])
  ajv.addSchema(JSON.parse(readFileSync(`packages/conformance/src/schemas/${name}.schema.json`, "utf8")) as object);

describe("every capability, level and outcome", () => {
  const report = everyCombinationReport();

  it("gets the verdict the rules give", () => {
    const verdict = verdictOf(report);
    // Core: its failure is listed, its error and its unreached and unrun MUSTs leave it undetermined; Full also
    // fails on PERMISSIONS-MUST-FAIL. Core is requested, and the stale entry decides: exit 1.
    expect([verdict.core, verdict.full]).toEqual(["undetermined", "fail"]);
    expect(verdict.undetermined).toEqual(["CORE-MUST-NOT_REACHED", "CORE-MUST-SKIPPED", "CORE-MUST-ERROR"]);
    expect(verdict.staleExpectedFailures).toEqual(["CORE-SHOULD-PASS"]);
    expect([report.achievedLevel, report.certified, report.status, verdict.exitCode]).toEqual(["none", false, "not_certified", 1]);
    // One requirement per capability, level and outcome: 3 levels × 5 outcomes per capability.
    const each = CAPABILITIES.length * 3;
    expect(verdict.counts.all).toMatchObject({ total: each * 5, pass: each, fail: each, not_reached: each, skipped: each, error: each });
    // Every failure is listed as expected but the three of routes and PERMISSIONS-MUST-FAIL.
    expect(verdict.counts.all.expected).toBe(CAPABILITIES.length * 3 - 4);
  });

  it.each([
    ["report", () => report],
    ["certificate", () => buildCertificateFile(report)],
    ["badge", () => buildBadge(report)],
  ])("the %s validates against its schema", (name, make) => {
    const validate = ajv.getSchema(`https://turnspec.dev/schemas/conformance/${name}.schema.json`)!;
    validate(make());
    expect(validate.errors ?? []).toEqual([]);
  });

  it("JUnit has a testsuite per capability and a testcase per requirement", () => {
    const xml = renderJunit(report);
    expect([...xml.matchAll(/<testsuite name="([a-z]+)"/g)].map((m) => m[1])).toEqual(CAPABILITIES);
    expect([...xml.matchAll(/<testcase /g)]).toHaveLength(CAPABILITIES.length * 15);
    expect(xml).toContain(`<testsuites name="turnspec suite 7.0" tests="${CAPABILITIES.length * 15}"`);
  });

  it("HTML and console name every requirement", () => {
    const html = renderHtml(report);
    let text = "";
    const reporter = createConsoleReporter({ write: (t: string) => (text += t) }, { env: {} });
    reporter.onStart({ ...report, requirementIds: report.results.map((r) => r.id) });
    for (const result of report.results) reporter.onResult(result);
    reporter.onEnd(report);
    for (const { id } of report.results) {
      expect(html).toContain(`id="req-${id}"`);
      expect(text).toMatch(new RegExp(`^[✓✗!○-] ${id} `, "m"));
    }
  });
});
