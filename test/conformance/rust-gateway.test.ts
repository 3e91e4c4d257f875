/**
 * The gateway written in Rust on the generated crate (examples/gateways/rust), certified for
 * core and permissions at full level. It is built with the repository's Cargo workspace (the
 * one build the tests of generated Rust share) and run from the workspace's target/. Without
 * cargo it is skipped with one line; under CI=true a missing cargo fails it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../packages/conformance/src/results.js";
import { buildWorkspace, CARGO_AVAILABLE, NO_CARGO, root } from "../languages/rust-toolchain.js";

const inCi = process.env.CI === "true";
if (!CARGO_AVAILABLE && !inCi) console.log(NO_CARGO);

describe.skipIf(!CARGO_AVAILABLE && !inCi)("the Rust gateway", () => {
  it("certifies for core and permissions", () => {
    expect(CARGO_AVAILABLE, NO_CARGO).toBe(true);
    const gateway = join(buildWorkspace(), "gateway");
    const report = join(mkdtempSync(join(tmpdir(), "turnspec-rust-gateway-")), "report.json");
    const run = spawnSync(
      "node",
      [
        join(root, "bin/turnspec.js"),
        "certify",
        "--gateway-cmd",
        `${gateway} --provider-url {provider_url}`,
        "--capabilities",
        "core,permissions",
        "--json",
        report,
      ],
      { cwd: root, encoding: "utf8", timeout: 300_000 },
    );
    const result = JSON.parse(readFileSync(report, "utf8")) as RunReport;
    const claimed = result.results.filter((r) => (r.capability === "core" || r.capability === "permissions") && r.level === "MUST");
    expect(claimed.filter((r) => r.outcome !== "pass").map((r) => `${r.id} ${r.outcome}: ${r.message}`)).toEqual([]);
    expect(claimed.map((r) => r.capability)).toContain("permissions");
    expect(result.status).toBe("certified");
    expect(run.stdout).toContain("Certified Full");
    expect(run.status, run.stderr).toBe(0);
  }, 600_000);
});
