import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { renderBadge } from "../../../packages/conformance/src/report/badge.js";
import { renderCertificate } from "../../../packages/conformance/src/report/certificate.js";
import { renderHtml } from "../../../packages/conformance/src/report/html.js";
import { renderJsonReport } from "../../../packages/conformance/src/report/json.js";
import { renderJunit } from "../../../packages/conformance/src/report/junit.js";
import { ReportWriteError, writeReports } from "../../../packages/conformance/src/report/write.js";
import { smallReport } from "./fixtures.js";

describe("writeReports", () => {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-write-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("writes each requested file, creating folders, and lists them", () => {
    const report = smallReport();
    const paths = {
      badge: join(dir, "out/badge.json"),
      html: join(dir, "out/html/report.html"),
      json: join(dir, "out/report.json"),
      junit: join(dir, "junit.xml"),
      certificate: join(dir, "out/certificate.json"),
    };
    expect(writeReports(report, paths)).toEqual([
      { kind: "json", path: paths.json },
      { kind: "junit", path: paths.junit },
      { kind: "html", path: paths.html },
      { kind: "certificate", path: paths.certificate },
      { kind: "badge", path: paths.badge },
    ]);
    expect(readFileSync(paths.json, "utf8")).toBe(renderJsonReport(report));
    expect(readFileSync(paths.junit, "utf8")).toBe(renderJunit(report));
    expect(readFileSync(paths.html, "utf8")).toBe(renderHtml(report));
    expect(readFileSync(paths.certificate, "utf8")).toBe(renderCertificate(report));
    expect(readFileSync(paths.badge, "utf8")).toBe(renderBadge(report));
  });

  it("writes only what is asked for", () => {
    expect(writeReports(smallReport(), { junit: join(dir, "only.xml") })).toEqual([{ kind: "junit", path: join(dir, "only.xml") }]);
  });

  it("names the file and the kind it could not write", () => {
    writeFileSync(join(dir, "a-file"), "");
    const path = join(dir, "a-file/report.html");
    expect(() => writeReports(smallReport(), { html: path })).toThrow(ReportWriteError);
    expect(() => writeReports(smallReport(), { html: path })).toThrow(`cannot write the HTML report to ${path}: `);
  });
});
