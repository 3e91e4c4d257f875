/**
 * The security snapshot of each mode: valid against the strict validator, mapped as the
 * spec's table says, and honest about what a gateway without an OS sandbox enforces.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { TurnExecutionSecuritySnapshot, TurnPermissionMode } from "../../generated/types.js";
import { validate } from "../../generated/validators.js";
import { materializeProfile, policyForMode } from "../../packages/gateway/src/permissions/policy.js";
import {
  FULL_ACCESS_ENV_ALLOWLIST,
  processEnvironment,
  RESTRICTED_ENV_ALLOWLIST,
  securitySnapshot,
  type SecuritySnapshotInput,
} from "../../packages/gateway/src/permissions/security.js";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-security-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ws = join(dir, "ws");
const project = join(dir, "project");
const shared = join(dir, "shared");
for (const d of [ws, project, shared]) mkdirSync(d);
symlinkSync(project, join(dir, "project-link"));

const input = (mode: TurnPermissionMode, extra: Partial<SecuritySnapshotInput> = {}): SecuritySnapshotInput => ({
  profile: materializeProfile({ mode, allowed_paths: [shared] }),
  cwd: ws,
  roots: [ws, join(dir, "project-link")],
  shellTimeoutCapMs: 600_000,
  ...extra,
});

function strictlyValid(snapshot: TurnExecutionSecuritySnapshot): void {
  const result = validate("TurnExecutionSecuritySnapshot", snapshot);
  expect(result.ok ? [] : result.errors).toEqual([]);
}

describe("securitySnapshot", () => {
  it.each(["full_access", "auto_accept_edits", "supervised"] as const)("%s validates strictly", (mode) => {
    strictlyValid(securitySnapshot(input(mode)));
    strictlyValid(securitySnapshot(input(mode, { shellTimeoutCapMs: null, roots: [ws] })));
  });

  it("full_access: unrestricted, network on, the wide environment allow-list, nothing to escape, active with nothing degraded", () => {
    const s = securitySnapshot(input("full_access"));
    expect(s.permission_profile.mode).toBe("full_access");
    expect(s.sandbox).toMatchObject({
      mode: "unrestricted",
      cwd: ws,
      network_enabled: true,
      sandbox_escape: "review",
      backend_requirement: "none",
      backend_preference: null,
    });
    expect(s.sandbox.filesystem).toMatchObject({ unrestricted: true, outside_roots: "allow" });
    expect(s.network).toEqual({ mode: "enabled", allow_domains: [], deny_domains: [] });
    expect(s.process).toEqual({
      shell: "allow",
      environment: { mode: "allow_list", allowed_variables: [...FULL_ACCESS_ENV_ALLOWLIST] },
      timeout_cap_ms: 600_000,
      command_risk_rules: [],
    });
    expect(s.approval.scopes).toEqual(["allow_once", "allow_for_turn"]);
    expect(s.backend).toMatchObject({ kind: "native", sandbox_backend: null });
    expect(s.enforcement).toEqual({ status: "active", degradations: [] });
    expect(s.parent_cap).toBeUndefined();
  });

  it("auto_accept_edits: workspace_write with writable roots, network off, allow-listed environment, escapes reviewed", () => {
    const s = securitySnapshot(input("auto_accept_edits"));
    expect(s.sandbox).toMatchObject({
      mode: "workspace_write",
      network_enabled: false,
      sandbox_escape: "review",
      backend_requirement: "best_effort",
    });
    expect(s.sandbox.filesystem).toEqual({
      unrestricted: false,
      outside_roots: "ask",
      entries: [
        { path: ws, access: "read_write", kind: "workspace" },
        // Listed by its real path: the path checks compare real paths.
        { path: project, access: "read_write", kind: "project" },
        { path: shared, access: "read_write", kind: "allowed_path" },
      ],
    });
    expect(s.network).toEqual({ mode: "disabled", allow_domains: [], deny_domains: [] });
    expect(s.process).toMatchObject({
      shell: "ask",
      environment: { mode: "allow_list", allowed_variables: [...RESTRICTED_ENV_ALLOWLIST] },
    });
    expect(s.approval.scopes).toEqual(["allow_once", "allow_for_turn"]);
  });

  it("supervised: read_only with read-only roots, network off, allow-listed environment, escapes reviewed", () => {
    const s = securitySnapshot(input("supervised"));
    expect(s.sandbox).toMatchObject({ mode: "read_only", network_enabled: false, sandbox_escape: "review" });
    expect(s.sandbox.filesystem.outside_roots).toBe("ask");
    expect(s.sandbox.filesystem.entries.map((e) => [e.kind, e.access])).toEqual([
      ["workspace", "read_only"],
      ["project", "read_only"],
      ["allowed_path", "read_only"],
    ]);
    expect(s.network.mode).toBe("disabled");
    expect(s.process).toMatchObject({ shell: "ask", environment: { mode: "allow_list" } });
    expect(s.approval.scopes).toEqual(["allow_once", "allow_for_turn"]);
  });

  it.each(["auto_accept_edits", "supervised"] as const)(
    "%s is partially_active, never active, and names what shell commands escape",
    (mode) => {
      const { enforcement } = securitySnapshot(input(mode));
      expect(enforcement.status).toBe("partially_active");
      const byCapability = Object.fromEntries(enforcement.degradations.map((d) => [d.capability, d]));
      expect(byCapability.filesystem_confinement?.detail).toMatch(
        /read_file, write_file.*shell's working directory.*a shell command itself/,
      );
      expect(byCapability.network_blocking?.detail).toMatch(/web_fetch only.*shell command/);
      expect(Object.keys(byCapability)).toEqual(expect.arrayContaining(["network_blocking", "process_confinement"]));
      for (const d of enforcement.degradations) expect(d.reason).toMatch(/^[a-z_]+$/);
    },
  );

  it("takes the shell behavior from the policy, so denied_tools reaches it", () => {
    const profile = materializeProfile({ mode: "full_access", denied_tools: ["shell"] });
    expect(securitySnapshot(input("full_access", { profile })).process.shell).toBe("deny");
  });

  it("lists allowed paths from the profile unless given, and each root once", () => {
    const profile = materializeProfile({ mode: "supervised" });
    expect(securitySnapshot(input("supervised", { profile })).sandbox.filesystem.entries.map((e) => e.kind)).toEqual([
      "workspace",
      "project",
    ]);
    const twice = securitySnapshot(input("supervised", { roots: [ws, ws, project], allowedPaths: [join(dir, "project-link"), shared] }));
    expect(twice.sandbox.filesystem.entries).toEqual([
      { path: ws, access: "read_only", kind: "workspace" },
      { path: project, access: "read_only", kind: "project" },
      { path: shared, access: "read_only", kind: "allowed_path" },
    ]);
  });

  it("records a parent cap as given", () => {
    const parentCap = {
      parent_thread_id: "thr_p",
      parent_turn_id: "trn_p",
      parent_mode: "supervised" as const,
      capped_policy: policyForMode("supervised"),
      source: "task_permission_cap" as const,
    };
    const s = securitySnapshot(input("supervised", { parentCap }));
    expect(s.parent_cap).toEqual(parentCap);
    strictlyValid(s);
  });

  it.each([
    ["a relative cwd", { cwd: "ws" }, /cwd must be absolute, got "ws"/],
    ["no roots", { roots: [] }, /at least one root/],
    ["a relative root", { roots: [ws, "project"] }, /the project root "project" is not absolute/],
    ["a relative allowed path", { allowedPaths: ["shared"] }, /the allowed path "shared" is not absolute/],
    ["a zero timeout cap", { shellTimeoutCapMs: 0 }, /positive integer or null, got 0/],
    ["a fractional timeout cap", { shellTimeoutCapMs: 1.5 }, /positive integer or null, got 1.5/],
  ])("refuses %s", (_name, extra, message) => {
    expect(() => securitySnapshot(input("supervised", extra))).toThrow(message);
  });
});

describe("processEnvironment", () => {
  const env = {
    PATH: "/usr/bin",
    HOME: "/home/u",
    LANG: "C.UTF-8",
    OPENAI_API_KEY: "sk-secret",
    AWS_SECRET_ACCESS_KEY: "aws",
    SSH_AUTH_SOCK: "/tmp/agent",
    TZ: undefined,
  };

  it.each(["auto_accept_edits", "supervised"] as const)("%s passes only the allow-listed variables that are set", (mode) => {
    expect(processEnvironment(securitySnapshot(input(mode)), env)).toEqual({ PATH: "/usr/bin", HOME: "/home/u", LANG: "C.UTF-8" });
  });

  it("full_access passes its wider allow-list, never credentials or the gateway's token (hole 14)", () => {
    const withToolchain = { ...env, EDITOR: "vi", HTTPS_PROXY: "http://proxy:3128", TURNSPEC_TOKEN: "gateway-token" };
    expect(processEnvironment(securitySnapshot(input("full_access")), withToolchain)).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/u",
      LANG: "C.UTF-8",
      EDITOR: "vi",
      HTTPS_PROXY: "http://proxy:3128",
    });
  });

  it("adds the operator's passthrough names in every mode, and never the gateway's token", () => {
    const extra = { ...env, GITHUB_TOKEN: "ghp", TURNSPEC_TOKEN: "gateway-token" };
    for (const mode of ["full_access", "supervised"] as const) {
      const snapshot = securitySnapshot(input(mode, { envPassthrough: ["GITHUB_TOKEN", "TURNSPEC_TOKEN"] }));
      expect(processEnvironment(snapshot, extra)).toMatchObject({ GITHUB_TOKEN: "ghp" });
      expect(processEnvironment(snapshot, extra).TURNSPEC_TOKEN).toBeUndefined();
      expect(snapshot.process.environment.allowed_variables).not.toContain("TURNSPEC_TOKEN");
    }
  });

  it("follows the snapshot's own list", () => {
    expect(
      processEnvironment(
        {
          process: {
            shell: "ask",
            environment: { mode: "allow_list", allowed_variables: ["LANG"] },
            timeout_cap_ms: null,
            command_risk_rules: [],
          },
        },
        env,
      ),
    ).toEqual({ LANG: "C.UTF-8" });
    expect(
      processEnvironment(
        { process: { shell: "ask", environment: { mode: "allow_list" }, timeout_cap_ms: null, command_risk_rules: [] } },
        env,
      ),
    ).toEqual({});
  });

  it("allows the documented variables and nothing that carries credentials", () => {
    expect([...RESTRICTED_ENV_ALLOWLIST].sort()).toEqual([
      "HOME",
      "LANG",
      "LC_ALL",
      "LC_CTYPE",
      "LOGNAME",
      "PATH",
      "SHELL",
      "TERM",
      "TMPDIR",
      "TZ",
      "USER",
    ]);
  });
});
