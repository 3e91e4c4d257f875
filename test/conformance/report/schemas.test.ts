/**
 * The JSON outputs of a run (report, certificate, badge) against the schemas that
 * describe them, and the schemas against the results model.
 */
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { buildBadge } from "../../../packages/conformance/src/report/badge.js";
import { buildCertificate, renderCertificate } from "../../../packages/conformance/src/report/certificate.js";
import { renderJsonReport } from "../../../packages/conformance/src/report/json.js";
import { CAPABILITIES, LEVELS, OUTCOMES, type RunReport } from "../../../packages/conformance/src/results.js";
import { certifiedReport, meta, result, smallReport } from "./fixtures.js";

const schema = (name: string) =>
  JSON.parse(readFileSync(`packages/conformance/src/schemas/${name}.schema.json`, "utf8")) as Record<string, unknown> & {
    $defs: Record<string, { enum?: unknown[] }>;
  };
const ajv = new Ajv2020({ allErrors: true, strict: true, validateFormats: false });
for (const name of ["report", "certificate", "badge", "expected-failures"]) ajv.addSchema(schema(name));
const validator = (name: string) => ajv.getSchema(`https://turnspec.dev/schemas/conformance/${name}.schema.json`)!;

function expectValid(name: string, value: unknown): void {
  const validate = validator(name);
  validate(value);
  expect(validate.errors ?? []).toEqual([]);
}

/** A report with every optional field present, so a field the model adds and the schema lacks fails here. */
function everyField(): RunReport {
  return {
    ...smallReport(),
    gateway: { command: "node gateway.js", url: "ws://127.0.0.1:8787" },
    subject: "Example Gateway 2.3.1",
    stopped: {
      summary: "the gateway exited with code 1",
      exitCode: 1,
      signal: "SIGTERM",
      stderr: "Traceback",
      after: { frame: '{"jsonrpc": ', atMs: 12, scenario: "JSON-RPC errors", requirement: "CORE-001" },
      inFlight: [
        { id: 3, method: "thread/start", scenario: "threads" },
        { id: "cert-raw-1", method: "cert/no_such_method" },
      ],
      requirement: "CORE-001",
      notReached: 2,
    },
    results: [
      result("CORE-001", "core", "MUST", "fail", {
        message: "m",
        invalidFrame: { jsonrpc: "2.0" },
        transcript: [{ direction: "received", atMs: 1.5, frame: null }],
        expectedFailure: true,
        expectedFailureReason: "r",
      }),
    ],
  };
}

describe("the JSON report", () => {
  it.each([
    ["a run that is not certified", smallReport],
    ["a certified run", certifiedReport],
    ["a report with every optional field", everyField],
  ])("validates against report.schema.json: %s", (_name, make) => {
    expectValid("report", JSON.parse(renderJsonReport(make())));
  });

  it("is the report itself", () => {
    const report = smallReport();
    expect(JSON.parse(renderJsonReport(report))).toEqual(report);
  });

  it.each([
    ["an unknown field on a result", (r: RunReport) => ({ ...r, results: [{ ...r.results[0]!, note: "x" }] }), "/results/0"],
    ["an unknown outcome", (r: RunReport) => ({ ...r, results: [{ ...r.results[0]!, outcome: "flaky" }] }), "/results/0/outcome"],
    ["a stop without its summary", (r: RunReport) => ({ ...r, stopped: { inFlight: [], notReached: 0 } }), "/stopped"],
    ["a schema hash that is not sha256 hex", (r: RunReport) => ({ ...r, schemaHash: "ABC" }), "/schemaHash"],
    ["a gateway that names neither command nor URL", (r: RunReport) => ({ ...r, gateway: {} }), "/gateway"],
  ])("is rejected with %s", (_name, spoil, pointer) => {
    const validate = validator("report");
    expect(validate(spoil(smallReport()))).toBe(false);
    expect(validate.errors?.map((e) => e.instancePath)).toContain(pointer);
  });

  it("lists the same capabilities, levels and outcomes as the results model", () => {
    const { $defs } = schema("report");
    expect($defs.capability!.enum).toEqual(CAPABILITIES);
    expect($defs.level!.enum).toEqual(LEVELS);
    expect($defs.outcome!.enum).toEqual(OUTCOMES);
  });
});

describe("the certificate", () => {
  it.each([
    ["not certified", smallReport],
    ["certified", certifiedReport],
  ])("validates against certificate.schema.json: %s", (_name, make) => {
    expectValid("certificate", JSON.parse(renderCertificate(make())));
  });

  it("states suite, schema hash, gateway, date, level and every requirement's outcome", () => {
    const certificate = buildCertificate(smallReport());
    expect(certificate).toMatchObject({
      suite: { name: "turnspec", version: "7.0", package: "0.2.0" },
      schemaHash: meta.schemaHash,
      subject: { kind: "gateway", command: "node gateway.js --stdio" },
      date: "2026-11-30T12:00:07.250Z",
      requestedLevel: "full",
      level: "core",
      certified: false,
    });
    expect(certificate.results).toEqual([
      { id: "CORE-001", level: "MUST", capability: "core", outcome: "pass" },
      { id: "CORE-002", level: "MUST", capability: "core", outcome: "fail", expectedFailure: true },
      { id: "CORE-003", level: "SHOULD", capability: "core", outcome: "pass" },
      { id: "PERM-001", level: "MUST", capability: "permissions", outcome: "pass", expectedFailure: true },
      { id: "ROUTE-001", level: "MUST", capability: "routes", outcome: "fail" },
      { id: "ROUTE-002", level: "MAY", capability: "routes", outcome: "error" },
      { id: "WORK-001", level: "MUST", capability: "work", outcome: "skipped" },
    ]);
  });
});

describe("the badge", () => {
  const certifiedCore = (): RunReport => ({ ...certifiedReport(), requestedLevel: "core", achievedLevel: "core" });
  const undetermined = (): RunReport => {
    const report = certifiedReport();
    return {
      ...report,
      certified: false,
      achievedLevel: "none",
      results: [result("CORE-001", "core", "MUST", "error", { message: "timed out" })],
    };
  };
  const coreOnly = (): RunReport => {
    const report = certifiedReport();
    return { ...report, capabilities: ["core"], results: report.results.filter((r) => r.capability === "core") };
  };
  const partial = (): RunReport => ({ ...certifiedReport(), certified: false, partial: true, status: "partial_pass" });
  it.each([
    ["certified Full", certifiedReport, "Full (core, permissions), suite 7.0", "brightgreen"],
    ["certified Core", certifiedCore, "Core, suite 7.0", "yellow"],
    ["a core-only gateway certified", coreOnly, "Core, suite 7.0", "yellow"],
    ["a partial run", partial, "partial run", "lightgrey"],
    ["not certified", smallReport, "not certified", "red"],
    ["undetermined", undetermined, "undetermined", "lightgrey"],
  ])("%s: shields endpoint JSON", (_name, make, message, color) => {
    const badge = buildBadge(make());
    expect(badge).toEqual({ schemaVersion: 1, label: "turnspec", message, color });
    expectValid("badge", badge);
  });
});
