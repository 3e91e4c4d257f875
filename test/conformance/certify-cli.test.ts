/** The certify command line: listing, explaining, usage errors and exit codes. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { parseToolMap, runCertify, UsageError, type CertifyArgs } from "../../packages/conformance/src/certify-command.js";
import { REFERENCE } from "./reference.js";

const certify = (...args: string[]) => spawnSync("node", ["bin/turnspec.js", "certify", ...args], { encoding: "utf8", timeout: 120_000 });

describe("turnspec certify (command line)", () => {
  it("--list prints the catalogue grouped by capability", () => {
    const run = certify("--list");
    expect(run.status).toBe(0);
    const headings = run.stdout.split("\n").filter((l) => /^[a-z]+ \(\d+\)$/.test(l));
    expect(headings.map((h) => h.split(" ")[0])).toEqual([
      "core",
      "permissions",
      "routes",
      "work",
      "windows",
      "recovery",
      "surface",
      "client",
    ]);
    expect(run.stdout).toMatch(/^ {2}PERM-DENY +MUST +deny keeps the tool from running/m);
  });

  it("--explain shows statement, level, reference, the check and what it covers", () => {
    const run = certify("--explain", "ROUTE-REVOKE-STALE");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("ROUTE-REVOKE-STALE (MUST, capability routes)");
    expect(run.stdout).toContain('reference: docs/gateway.md, section "Delegation routes"');
    expect(run.stdout).toContain("covers: agent/route/revoke");
    expect(run.stdout).toMatch(/check \(scenario "route create, list and revoke"\): Revokes another route with a stale generation/);
  });

  it("exits 2 on a usage error, naming it, before starting anything", () => {
    const run = certify("--gateway-cmd", "x", "--only", "NOPE-*", "--skip", "ALSO-*");
    expect(run.stderr).toContain("no requirement matches --only NOPE-*, --skip ALSO-*");
    expect(run.status).toBe(2);
  });

  const base: CertifyArgs = { gatewayCmd: "never-started", level: "full", only: [], skip: [], list: false, reports: {} };
  const xf = join(mkdtempSync(join(tmpdir(), "turnspec-xf-")), "expected.json");
  writeFileSync(
    xf,
    JSON.stringify({
      expected_failures: [
        { id: "PERM-DENY", reason: "known" },
        { id: "PERM-NOPE", reason: "typo" },
      ],
    }),
  );
  it.each([
    [{ explain: "NOPE-1" }, "--explain: unknown requirement id NOPE-1"],
    [{ capabilities: "core,teleport" }, "--capabilities: unknown capability teleport"],
    [{ explain: "PERM-DNY" }, "--explain: unknown requirement id PERM-DNY (did you mean PERM-DENY?)"],
    [{ capabilities: "core,permisions" }, "--capabilities: unknown capability permisions (did you mean permissions?)"],
    [{ only: ["THREAD-STRAT"] }, "no requirement matches --only THREAD-STRAT (did you mean THREAD-START?)"],
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
    const run = certify(
      "--gateway-cmd",
      "node --import tsx test/conformance/broken-gateway-stdio.ts stale-revoke-accepted --provider-url {provider_url}",
      "--capabilities",
      "core,routes",
      "--only",
      "ROUTE-*",
    );
    expect(run.stdout).toMatch(/✗ ROUTE-REVOKE-STALE/);
    expect(run.status).toBe(1);
  });

  it("shows a stray line on stdout as text, and fails the requirement it breaks", () => {
    // A gateway that writes a banner to stdout, where only frames belong.
    const run = certify(
      "--gateway-cmd",
      `sh -c 'echo starting up; exec ${REFERENCE}'`,
      "--capabilities",
      "core",
      "--only",
      "RPC-RESPONSE-MATCHES-REQUEST",
      "--only",
      "THREAD-START",
    );
    expect(run.stdout).toMatch(/✗ RPC-RESPONSE-MATCHES-REQUEST/);
    expect(run.stdout).toContain('the gateway sent a frame no scenario can own: the peer sent a frame that is not JSON: "starting up"');
    expect(run.stdout).toContain("Partial run failed");
    expect(run.status).toBe(1);
  });

  it("gives a partial run its own verdict and exit 0 when every selected requirement passed, and shows a stray stdout line on the console", () => {
    const withBanner = `sh -c 'echo starting up; exec ${REFERENCE}'`;
    const run = certify("--gateway-cmd", withBanner, "--capabilities", "core", "--only", "THREAD-*");
    expect(run.stdout).toContain('the gateway wrote a line that is not JSON: "starting up"');
    expect(run.stdout).toContain("Partial run passed: every selected MUST passed");
    expect(run.status).toBe(0);
  });

  it("reads a tool map from JSON or from a file, and names the place of a mistake", () => {
    expect(parseToolMap('{"shell": "bash"}')).toEqual({ shell: "bash" });
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-map-")), "map.json");
    writeFileSync(file, JSON.stringify({ read_file: 7 }));
    expect(() => parseToolMap(file)).toThrow(UsageError);
    expect(() => parseToolMap(file)).toThrow(`${file}#/read_file: must be the gateway's tool name`);
  });

  it("maps argument names too, and names the place of a wrong argument", () => {
    const map = { write_file: { name: "create_file", args: { path: "file_path" } }, read_file: { args: { path: "file_path" } } };
    expect(parseToolMap(JSON.stringify(map))).toEqual(map);
    expect(() => parseToolMap('{"read_file": {"args": {"file": "f"}}}')).toThrow(
      "--tool-map#/read_file/args/file: not an argument of read_file; its arguments are path",
    );
    expect(() => parseToolMap('{"shell": {"args": {"command": ""}}}')).toThrow(
      "--tool-map#/shell/args/command: must be the gateway's argument name, a non-empty string",
    );
    expect(() => parseToolMap('{"shell": {"rename": "x"}}')).toThrow(
      '--tool-map#/shell/rename: unknown field; a tool\'s mapping has "name" and "args"',
    );
  });

  it("explains the tool contract, with the gateway's names from --tool-map", () => {
    const run = certify("--explain", "tools", "--tool-map", '{"write_file": {"name": "create_file", "args": {"path": "file_path"}}}');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("write_file (the gateway's create_file): writes a file, creating it");
    expect(run.stdout).toContain("  path → file_path (string): a file name relative to the thread's working folder");
    expect(run.stdout).toMatch(/shell: runs a shell command[\s\S]*expects: a commandExecution item/);
  });
});
