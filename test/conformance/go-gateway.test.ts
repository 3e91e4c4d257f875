/**
 * The gateway written in Go on the generated Go module (examples/gateways/go), certified as
 * its guide says: from the repository's root, by `go run`, for core and permissions at full
 * level. It is built once first so that go run finds it compiled.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../packages/conformance/src/results.js";
import { go, GO_AVAILABLE, NO_GO } from "../languages/go-toolchain.js";

const repo = resolve(import.meta.dirname, "../..");

if (!GO_AVAILABLE) console.log(NO_GO);

describe.skipIf(!GO_AVAILABLE)("the Go gateway", () => {
  it("certifies for core and permissions, run by go run from the repository", () => {
    go(["build", "-o", join(mkdtempSync(join(tmpdir(), "turnspec-go-gateway-")), "gateway"), "./examples/gateways/go"], repo);
    const report = join(mkdtempSync(join(tmpdir(), "turnspec-go-gateway-")), "report.json");
    const run = spawnSync(
      "node",
      [
        join(repo, "bin/turnspec.js"),
        "certify",
        "--gateway-cmd",
        "go run ./examples/gateways/go --provider-url {provider_url}",
        "--capabilities",
        "core,permissions",
        "--json",
        report,
      ],
      { cwd: repo, encoding: "utf8", timeout: 300_000 },
    );
    const result = JSON.parse(readFileSync(report, "utf8")) as RunReport;
    const claimed = result.results.filter((r) => (r.capability === "core" || r.capability === "permissions") && r.level === "MUST");
    expect(claimed.filter((r) => r.outcome !== "pass").map((r) => `${r.id} ${r.outcome}: ${r.message}`)).toEqual([]);
    expect(claimed.map((r) => r.capability)).toContain("permissions");
    expect(result.status).toBe("certified");
    expect(run.stdout).toContain("Certified Full");
    expect(run.status, run.stderr).toBe(0);
  }, 360_000);
});
