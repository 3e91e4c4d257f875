/**
 * Writes the report files a run asked for (`--json`, `--junit`, `--html`, the certificate
 * and the badge). The builders are pure; this is the one place that touches the disk.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { RunReport } from "../results.js";
import { renderBadge } from "./badge.js";
import { renderCertificate } from "./certificate.js";
import { renderHtml } from "./html.js";
import { renderJsonReport } from "./json.js";
import { renderJunit } from "./junit.js";

const renderers = {
  json: { name: "JSON report", render: renderJsonReport },
  junit: { name: "JUnit report", render: renderJunit },
  html: { name: "HTML report", render: renderHtml },
  certificate: { name: "certificate", render: renderCertificate },
  badge: { name: "badge", render: renderBadge },
} as const satisfies Record<string, { name: string; render: (report: RunReport) => string }>;

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
export function writeReports(report: RunReport, paths: ReportPaths): WrittenFile[] {
  const written: WrittenFile[] = [];
  for (const kind of Object.keys(renderers) as ReportKind[]) {
    const path = paths[kind];
    if (path === undefined) continue;
    const text = renderers[kind].render(report);
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
