/**
 * Writes the report files a run asked for (`--json`, `--junit`, `--html`, the certificate
 * and the badge). The builders are pure; this is the one place that touches the disk.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import type { KeyObject } from "node:crypto";
import { dirname } from "node:path";
import type { RunReport } from "../results.js";
import { renderBadge } from "./badge.js";
import { renderCertificate } from "./certificate.js";
import { renderHtml } from "./html.js";
import { renderJsonReport } from "./json.js";
import { renderJunit } from "./junit.js";

/** What rendering needs besides the report: the key that signs the certificate, if any. */
export interface RenderOptions {
  readonly signKey?: KeyObject;
}

const renderers = {
  json: { name: "JSON report", render: (report) => renderJsonReport(report) },
  junit: { name: "JUnit report", render: (report) => renderJunit(report) },
  html: { name: "HTML report", render: (report) => renderHtml(report) },
  certificate: { name: "certificate", render: (report, options) => renderCertificate(report, options.signKey) },
  badge: { name: "badge", render: (report) => renderBadge(report) },
} as const satisfies Record<string, { name: string; render: (report: RunReport, options: RenderOptions) => string }>;

export type ReportKind = keyof typeof renderers;

/** Where to write each kind of file; kinds left out are not written. */
export type ReportPaths = Partial<Record<ReportKind, string>>;

/** A file the run wrote. */
export interface WrittenFile {
  readonly kind: ReportKind;
  readonly path: string;
}

/** A report file that could not be written. */
export class ReportWriteError extends Error {
  readonly kind: ReportKind;
  readonly path: string;

  constructor(kind: ReportKind, path: string, cause: Error) {
    super(`cannot write the ${renderers[kind].name} to ${path}: ${cause.message}`, { cause });
    this.name = "ReportWriteError";
    this.kind = kind;
    this.path = path;
  }
}

/** Renders and writes each requested file (creating missing folders), in a fixed order; throws `ReportWriteError`. */
export function writeReports(report: RunReport, paths: ReportPaths, options: RenderOptions = {}): WrittenFile[] {
  const written: WrittenFile[] = [];
  for (const kind of Object.keys(renderers) as ReportKind[]) {
    const path = paths[kind];
    if (path === undefined) continue;
    const text = renderers[kind].render(report, options);
    try {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
    } catch (error) {
      throw new ReportWriteError(kind, path, error as Error);
    }
    written.push({ kind, path });
  }
  return written;
}
