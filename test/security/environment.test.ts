/**
 * Secrets a tool must never see (hole 14): the gateway's token and provider keys stay out
 * of a shell's environment in every mode, the token can come from a file instead of the
 * command line, and the configuration refuses to pass the gateway's own secrets through.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ConfigError, resolveConfig } from "../../packages/gateway/src/config.js";
import { serveToken } from "../../packages/gateway/src/serve-token.js";
import { script, startHarness, text, type Harness } from "../gateway/harness.js";

const dir = mkdtempSync(join(tmpdir(), "turnspec-env-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a full_access shell's environment", () => {
  let h: Harness;
  afterEach(async () => {
    await h.close();
    delete process.env.TURNSPEC_TOKEN;
    delete process.env.OPENAI_API_KEY;
  });

  it("holds neither the gateway's token nor a provider key (env prints what it has)", async () => {
    process.env.TURNSPEC_TOKEN = "gateway-secret-token";
    process.env.OPENAI_API_KEY = "sk-provider-key";
    h = await startHarness();
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_env",
      permission_profile: { mode: "full_access" },
      input: text(script({ tool: "shell", args: { command: "env" } }, { say: "done" })),
    });
    expect(end.method).toBe("turn/completed");
    const item = h.received.find((n) => n.method === "item/completed" && n.params.item.type === "commandExecution")!.params as {
      item: { stdout: string };
    };
    expect(item.item.stdout).toMatch(/^PATH=/m);
    expect(item.item.stdout).not.toContain("gateway-secret-token");
    expect(item.item.stdout).not.toContain("sk-provider-key");
  });
});

describe("the serve token", () => {
  it("is read from --token-file, one line, its newline dropped", () => {
    const file = join(dir, "token");
    writeFileSync(file, "file-token\n", { mode: 0o600 });
    expect(serveToken({ tokenFile: file, env: {} })).toBe("file-token");
  });

  it("is read from TURNSPEC_TOKEN, which is then removed so no child process inherits it", () => {
    const env: Record<string, string | undefined> = { TURNSPEC_TOKEN: "env-token", PATH: "/bin" };
    expect(serveToken({ env })).toBe("env-token");
    expect(env).toEqual({ PATH: "/bin" });
  });

  it.each([
    ["an empty file", "", /an empty file/],
    ["two lines", "a\nb\n", /several lines/],
  ])("refuses a token file with %s", (_, content, message) => {
    const file = join(dir, "bad");
    writeFileSync(file, content);
    expect(() => serveToken({ tokenFile: file, env: {} })).toThrow(message);
  });

  it("refuses a missing token file by name, and both sources at once", () => {
    expect(() => serveToken({ tokenFile: join(dir, "absent"), env: {} })).toThrow(/--token-file .*absent: ENOENT/);
    expect(() => serveToken({ token: "a", tokenFile: join(dir, "token"), env: {} })).toThrow(ConfigError);
  });
});

describe("tools.env_passthrough", () => {
  it("refuses the gateway's own secrets by name and place", () => {
    expect(() => resolveConfig({ tools: { env_passthrough: ["GITHUB_TOKEN", "TURNSPEC_TOKEN"] } })).toThrow(
      "tools.env_passthrough/1: TURNSPEC_TOKEN holds a secret of the gateway itself",
    );
    expect(() =>
      resolveConfig({
        providers: { openai: { base_url: "http://127.0.0.1:1/v1", model: "m", api_key_env: "MY_KEY" } },
        tools: { env_passthrough: ["MY_KEY"] },
      }),
    ).toThrow(/MY_KEY/);
    expect(resolveConfig({ tools: { env_passthrough: ["GITHUB_TOKEN"] } }).envPassthrough).toEqual(["GITHUB_TOKEN"]);
  });
});
