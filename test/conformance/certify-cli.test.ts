/** The certify command line: listing, explaining, usage errors and exit codes. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { parseToolMap, runCertify, UsageError, type CertifyArgs } from "../../conformance/certify-command.js";

const certify = (...args: string[]) => spawnSync("node", ["bin/turnspec.js", "certify", ...args], { encoding: "utf8", timeout: 120_000 });

describe("turnspec certify (command line)", () => {
  it("--list prints the catalogue grouped by capability", () => {
    const run = certify("--list");
    expect(run.status).toBe(0);
    const headings = run.stdout.split("\n").filter((l) => /^[a-z]+ \(\d+\)$/.test(l));
    expect(headings.map((h) => h.split(" ")[0])).toEqual(["core", "permissions", "routes", "work", "windows", "recovery"]);
    expect(run.stdout).toMatch(/^ {2}PERM-DENY +MUST +deny keeps the tool from running/m);
  });

  it("--explain shows statement, level, reference, the check and what it covers", () => {
    const run = certify("--explain", "ROUTE-REVOKE-STALE");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("ROUTE-REVOKE-STALE (MUST, capability routes)");
    expect(run.stdout).toContain('reference: agent-delegation-routes.md, section "Validation"');
    expect(run.stdout).toContain("covers: agent/route/revoke");
    expect(run.stdout).toMatch(/check \(scenario "route create, list and revoke"\): revokes another route with a stale generation/);
  });

  it("exits 2 on a usage error, naming it, before starting anything", () => {
    const run = certify("--gateway-cmd", "x", "--only", "NOPE-*", "--skip", "ALSO-*");
    expect(run.stderr).toContain("no requirement matches --only NOPE-*, --skip ALSO-*");
    expect(run.status).toBe(2);
  });

  const base: CertifyArgs = { gatewayCmd: "never-started", level: "full", only: [], skip: [], list: false, reports: {} };
  const xf = join(mkdtempSync(join(tmpdir(), "turnspec-xf-")), "expected.json");
  writeFileSync(xf, JSON.stringify({ expected_failures: [{ id: "PERM-DENY", reason: "known" }, { id: "PERM-NOPE", reason: "typo" }] }));
  it.each([
    [{ explain: "NOPE-1" }, "--explain: unknown requirement id NOPE-1"],
    [{ capabilities: "core,teleport" }, "--capabilities: unknown capability teleport"],
    [{ gatewayCmd: undefined }, "name the gateway: --gateway-cmd"],
    [{ toolMap: '{"shel": "bash"}' }, "--tool-map#/shel: not a reference tool"],
    [{ expectedFailures: xf }, `the expected-failures file ${xf} lists unknown requirement ids: PERM-NOPE`],
  ] as const)("answers %j with exit 2 and the message", async (args, message) => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      const { gatewayCmd: _cmd, ...rest } = base;
      expect(await runCertify({ ...("gatewayCmd" in args ? rest : base), ...args } as CertifyArgs)).toBe(2);
      expect(stderr.mock.calls.map((c) => String(c[0])).join("")).toContain(message);
    } finally {
      stderr.mockRestore();
    }
  });

  it("exits 1 when the gateway fails a requirement, and names it", () => {
    const run = certify("--gateway-cmd", "node --import tsx test/conformance/broken-gateway-stdio.ts stale-revoke-accepted --provider-url {provider_url}", "--capabilities", "core,routes", "--only", "ROUTE-*");
    expect(run.stdout).toMatch(/✗ ROUTE-REVOKE-STALE/);
    expect(run.status).toBe(1);
  });

  it("reads a tool map from JSON or from a file, and names the place of a mistake", () => {
    expect(parseToolMap('{"shell": "bash"}')).toEqual({ shell: "bash" });
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-map-")), "map.json");
    writeFileSync(file, JSON.stringify({ read_file: 7 }));
    expect(() => parseToolMap(file)).toThrow(UsageError);
    expect(() => parseToolMap(file)).toThrow(`${file}#/read_file: must be the gateway's tool name`);
  });
});
