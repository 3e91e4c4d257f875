/**
 * Slow: the client driver of examples/clients/python, on the client the generated Python
 * package gives (and the small reconnecting client written on it), certified by
 * `turnspec certify --client-cmd` at Full for the client capability; the copy of the generated
 * package it imports is what `generate --check` expects; it passes pyright --strict.
 */
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { loadSuite } from "../../packages/conformance/src/catalogue.js";
import type { RunReport } from "../../packages/conformance/src/results.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const python = join(root, ".venv/bin/python");
const folder = "examples/clients/python";
const DRIVER = `.venv/bin/python ${folder}/driver.py`;
const suite = loadSuite();

describe.skipIf(!existsSync(python))("the Python client driver on the generated package", () => {
  it("certifies at Full for the client capability", () => {
    const out = mkdtempSync(join(tmpdir(), "turnspec-pyclient-"));
    const run = spawnSync("node", ["bin/turnspec.js", "certify", "--client-cmd", DRIVER, "--json", join(out, "report.json")], { cwd: root, encoding: "utf8", timeout: 240_000 });
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RunReport;
    expect(report.results.filter((r) => r.outcome !== "pass").map((r) => `${r.id} ${r.outcome}: ${r.message ?? ""}`)).toEqual([]);
    expect(report.results.map((r) => r.id)).toEqual(suite.requirements.filter((r) => r.capability === "client").map((r) => r.id));
    expect(report).toMatchObject({ client: { command: DRIVER }, capabilities: ["client"], achievedLevel: "full", status: "certified" });
    expect(run.stdout).toContain("Certified Full (Full requested) for client");
    expect(run.status, run.stderr).toBe(0);
  }, 300_000);

  it("imports a copy of the generated package that generate --check finds up to date, and passes pyright --strict", async () => {
    const check = spawnSync("node", ["bin/turnspec.js", "generate", "--lang", "python", "--schemas", "schemas", "--out", `${folder}/agent_gateway`, "--check"], { cwd: root, encoding: "utf8" });
    expect(check.stdout).toContain(`${folder}/agent_gateway/ is up to date`);
    expect(check.status, check.stderr).toBe(0);
    const { stdout } = await promisify(execFile)(join(root, "node_modules/.bin/pyright"), ["-p", `${folder}/pyrightconfig.json`], { cwd: root, maxBuffer: 16 * 1024 * 1024 }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    expect(stdout).toContain("0 errors, 0 warnings, 0 informations");
  }, 300_000);
});
