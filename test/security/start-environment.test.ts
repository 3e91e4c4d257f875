/**
 * /proc/<gateway>/environ: Linux keeps the environment and command line a process was
 * started with for its whole life, so the gateway's token and provider keys given that way
 * stay readable by any unconfined command of the same user, whatever the gateway removes
 * from process.env. The gateway cannot hide them on Node 20; every turn's security
 * snapshot says so (gateway_secret_isolation), and says nothing when they are not there.
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { TurnExecutionSecuritySnapshot } from "../../generated/types.js";
import { resolveConfig } from "../../packages/gateway/src/config.js";
import { materializeProfile } from "../../packages/gateway/src/permissions/policy.js";
import { securitySnapshot } from "../../packages/gateway/src/permissions/security.js";
import { exposedSecrets, exposedSecretsWarning, gatewaySecretVariables } from "../../packages/gateway/src/serve-secrets.js";
import { spawnStdioTransport } from "@turnspec/rpc/transport";
import { startStrictClient, type StrictClient } from "../../bench/strict-client.js";

const block = (env: Record<string, string>, args: string[] = ["node", "turnspec", "serve"]) => ({
  environ: Object.entries(env)
    .map(([k, v]) => `${k}=${v}\0`)
    .join(""),
  cmdline: args.map((a) => `${a}\0`).join(""),
});

describe("the secrets a start-up block exposes", () => {
  const config = resolveConfig({
    providers: { openai: { base_url: "http://127.0.0.1:1/v1", model: "m", api_key_env: "MY_PROVIDER_KEY" } },
  });
  it("are the gateway's token and the configured provider keys that are set, and --token on the command line", () => {
    const names = gatewaySecretVariables(config);
    expect(names).toEqual(expect.arrayContaining(["TURNSPEC_TOKEN", "OPENAI_API_KEY", "MY_PROVIDER_KEY"]));
    expect(exposedSecrets(block({ PATH: "/bin", MY_PROVIDER_KEY: "sk-1", TURNSPEC_TOKEN: "", GITHUB_TOKEN: "x" }), names)).toEqual([
      "MY_PROVIDER_KEY",
    ]);
    expect(exposedSecrets(block({ PATH: "/bin" }, ["node", "cli", "serve", "--token=abc"]), names)).toEqual(["--token"]);
    expect(exposedSecrets(block({ PATH: "/bin" }, ["node", "cli", "serve", "--token-file", "f"]), names)).toEqual([]);
    expect(exposedSecrets(undefined, names)).toEqual([]);
  });
});

describe("the start-up warning about them", () => {
  it.each([
    [
      ["--token"],
      "warning: --token stays readable in /proc/42/cmdline while the gateway runs, so a shell command that a turn runs unconfined can read it; --token-file keeps the token out of its reach",
    ],
    [
      ["TURNSPEC_TOKEN"],
      "warning: TURNSPEC_TOKEN stays readable in /proc/42/environ while the gateway runs, so a shell command that a turn runs unconfined can read it; --token-file keeps the token out of its reach",
    ],
    [
      ["OPENAI_API_KEY", "MY_PROVIDER_KEY"],
      "warning: OPENAI_API_KEY and MY_PROVIDER_KEY stay readable in /proc/42/environ while the gateway runs, so a shell command that a turn runs unconfined can read them",
    ],
    [
      ["TURNSPEC_TOKEN", "OPENAI_API_KEY", "--token"],
      "warning: TURNSPEC_TOKEN, OPENAI_API_KEY and --token stay readable in /proc/42/environ and cmdline while the gateway runs, so a shell command that a turn runs unconfined can read them; --token-file keeps the token out of its reach",
    ],
  ])("for %j reads as a sentence and does not tell the operator to drop $TURNSPEC_TOKEN", (exposed, text) => {
    const warning = exposedSecretsWarning(exposed, 42);
    expect(warning).toBe(text);
    expect(warning).not.toContain("without them in the environment");
  });
});

describe("the snapshot of a gateway whose secrets are readable", () => {
  const base = { cwd: "/tmp", roots: ["/tmp"], shellTimeoutCapMs: 1000 };
  const degradation = (s: TurnExecutionSecuritySnapshot) =>
    s.enforcement.degradations.find((d) => d.capability === "gateway_secret_isolation");
  it("is partially_active in every mode, naming the secrets and who can read them", () => {
    const full = securitySnapshot({
      ...base,
      profile: materializeProfile({ mode: "full_access" }),
      exposedSecrets: ["OPENAI_API_KEY", "--token"],
    });
    expect(full.enforcement.status).toBe("partially_active");
    expect(degradation(full)).toMatchObject({ reason: "gateway_start_environment_readable" });
    expect(degradation(full)!.detail).toContain("OPENAI_API_KEY, the --token argument");
    expect(degradation(full)!.detail).toContain("any shell command of this turn");
    const sandboxed = securitySnapshot({
      ...base,
      profile: materializeProfile({ mode: "supervised" }),
      sandbox: { backend: "bubblewrap", tempDir: "/tmp/t" },
      exposedSecrets: ["TURNSPEC_TOKEN"],
    });
    expect(sandboxed.enforcement.degradations.map((d) => d.capability)).toEqual(["gateway_secret_isolation"]);
    expect(degradation(sandboxed)!.detail).toContain("escape_sandbox");
  });
  it("is active with nothing exposed", () => {
    expect(securitySnapshot({ ...base, profile: materializeProfile({ mode: "full_access" }), exposedSecrets: [] }).enforcement).toEqual({
      status: "active",
      degradations: [],
    });
  });
});

// /proc is Linux's: elsewhere there is no such entry to read.
describe.runIf(process.platform === "linux")("turnspec serve started with a provider key in its environment", () => {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-start-env-")));
  afterAll(() => rmSync(cwd, { recursive: true, force: true }));
  let s: StrictClient | undefined;
  afterEach(async () => {
    await s?.client.close();
    s = undefined;
  });

  /** A full_access turn whose shell reads the gateway's /proc entry; returns its snapshot and what the shell printed. */
  async function probe(env: Record<string, string>) {
    const transport = spawnStdioTransport("node", ["bin/turnspec.js", "serve", "--stdio", "--memory"], {
      stderr: "collect",
      env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/", ...env },
    });
    s = await startStrictClient(transport);
    const { thread } = await s.client.threadStart({ cwd });
    const terminal = s.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed");
    // $PPID of the shell is the gateway: what an unconfined command can read of it.
    const command = "tr '\\0' '\\n' < /proc/$PPID/environ | grep '^OPENAI_API_KEY=' || echo none";
    await s.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_environ",
      permission_profile: { mode: "full_access" },
      input: [
        { type: "text", text: JSON.stringify({ script: [{ tool: "shell", args: { command } }, { say: "done" }] }), textElements: [] },
      ],
    });
    const end = await terminal;
    const security = (end.params as { turn: { security: TurnExecutionSecuritySnapshot } }).turn.security;
    const item = s.received.find((n) => n.method === "item/completed" && n.params.item.type === "commandExecution")!.params as {
      item: { stdout: string };
    };
    return { security, stdout: item.item.stdout };
  }

  it("says in the snapshot that the key is readable, and it is", async () => {
    const { security, stdout } = await probe({ OPENAI_API_KEY: "sk-start-environment" });
    expect(stdout).toBe("OPENAI_API_KEY=sk-start-environment\n");
    expect(security.enforcement.status).toBe("partially_active");
    expect(security.enforcement.degradations.find((d) => d.capability === "gateway_secret_isolation")?.detail).toContain("OPENAI_API_KEY");
  }, 60_000);

  it("says nothing when the gateway was started without it", async () => {
    const { security, stdout } = await probe({});
    expect(stdout).toBe("none\n");
    expect(security.enforcement).toEqual({ status: "active", degradations: [] });
  }, 60_000);
});
