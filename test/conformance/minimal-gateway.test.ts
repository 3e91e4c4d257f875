/**
 * The minimal gateway of docs/minimal-gateway.md (examples/gateways/minimal/gateway.ts),
 * certified as its guide says: from its own folder, by a relative command, at core.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../packages/conformance/src/results.js";

const repo = resolve(import.meta.dirname, "../..");
const folder = join(repo, "examples/gateways/minimal");

describe("the minimal gateway", () => {
  it("certifies at core, run from its own folder by a relative command", () => {
    const report = join(mkdtempSync(join(tmpdir(), "turnspec-minimal-")), "report.json");
    const run = spawnSync(
      "node",
      [
        join(repo, "bin/turnspec.js"),
        "certify",
        "--gateway-cmd",
        "node --import tsx gateway.ts --provider-url {provider_url}",
        "--capabilities",
        "core",
        "--level",
        "core",
        "--json",
        report,
      ],
      { cwd: folder, encoding: "utf8", timeout: 180_000 },
    );
    const result = JSON.parse(readFileSync(report, "utf8")) as RunReport;
    expect(
      result.results.filter((r) => r.capability === "core" && r.outcome !== "pass").map((r) => `${r.id} ${r.outcome}: ${r.message}`),
    ).toEqual([]);
    expect(result.status).toBe("certified");
    expect(run.stdout).toContain("Certified");
    expect(run.status, run.stderr).toBe(0);
  });
});
