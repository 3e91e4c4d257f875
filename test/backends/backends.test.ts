/**
 * What turn/start names is served or refused, never ignored: execution backends the
 * gateway does not have refuse the turn with execution_backend_unavailable (nothing runs);
 * each capability is reported accepted or rejected on the turn, which still runs; named
 * providers are chosen per turn; selected skills reach the prompt and the skill tool.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnCapability, TurnItem, TurnStartParams } from "../../generated/types.js";
import { ConfigError, resolveConfig } from "../../packages/gateway/src/config.js";
import type { ModelProvider, ProviderEvent, ProviderRequest } from "../../packages/gateway/src/providers/provider.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { RpcError } from "../../packages/rpc/src/index.js";
import { ofTurn, script, startHarness, text, type Harness, type HarnessOptions } from "../gateway/harness.js";

let h: Harness | undefined;
afterEach(async () => {
  if (!h) return;
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
  h = undefined;
});

async function start(options: HarnessOptions = {}): Promise<Harness> {
  h = await startHarness(options);
  return h;
}

const items = (ns: readonly AnyNotification[], type: TurnItem["type"]) =>
  ns.flatMap((n) => (n.method === "item/completed" && n.params.item.type === type ? [n.params.item] : []));

const skill = (id: string, slug: string, sourceKind = "workspace"): TurnCapability => ({ id, kind: { type: "skill", slug, sourceKind } });
const mcpServer = (id: string, name: string): TurnCapability => ({ id, kind: { type: "mcpServer", name, scopeKind: "workspace" } });

describe("an execution backend the gateway does not serve", () => {
  const refused: [string, Partial<TurnStartParams>, RegExp][] = [
    [
      "a CLI agent runtime",
      { execution_backend: { type: "cliAgentRuntime", runtime_id: "codex", runtime_kind: "codex" } },
      /no CLI agent runtime/,
    ],
    ["an ACP agent runtime", { execution_backend: { type: "acpAgentRuntime", runtime_id: "claude" } }, /no ACP agent runtime/],
    [
      "an API provider it has not configured",
      { execution_backend: { type: "apiProvider", provider: "anthropic" } },
      /anthropic is not configured.*scripted/,
    ],
    ["a model_provider it has not configured", { model_provider: "anthropic" }, /model_provider anthropic is not a provider/],
    [
      "a model_provider contradicting the backend",
      { model_provider: "other", execution_backend: { type: "apiProvider", provider: "scripted" } },
      /contradicts/,
    ],
    ["cli_runtime_options without a CLI runtime", { cli_runtime_options: { effort: "high" } }, /cli_runtime_options applies only/],
  ];
  it.each(refused)("refuses %s with the registered reason, and nothing runs", async (_name, extra, detail) => {
    const gw = await start();
    const thread = await gw.thread();
    const params: TurnStartParams = { thread_id: thread, turn_id: "trn_refused", input: text(script({ say: "must not run" })), ...extra };
    const error = await gw.client.turnStart(params).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({
      code: -32008,
      reason: "execution_backend_unavailable",
      data: { detail: expect.stringMatching(detail), available: { apiProvider: ["scripted"] } },
    });
    if (extra.execution_backend) expect((error as RpcError).data).toMatchObject({ execution_backend: extra.execution_backend });
    await expect(gw.client.turnGet({ thread_id: thread, turn_id: "trn_refused" })).rejects.toMatchObject({ reason: "turn_not_found" });
    // The thread is free: the refused turn never started, and the same id can be used.
    await gw.runTurn({ thread_id: thread, turn_id: "trn_refused", input: text(script({ say: "ran" })) });
    expect(ofTurn(gw.received, "trn_refused").filter((n) => n.method === "turn/started")).toHaveLength(1);
  });

  it("serves apiProvider for a configured provider", async () => {
    const gw = await start();
    const thread = await gw.thread();
    const end = await gw.runTurn({
      thread_id: thread,
      turn_id: "trn_api",
      execution_backend: { type: "apiProvider", provider: "scripted" },
      input: text(script({ say: "ok" })),
    });
    expect(end).toMatchObject({ method: "turn/completed", params: { turn: { model_provider: "scripted" } } });
  });
});

/** A provider that records the model of each request and says "ok". */
class ModelRecorder implements ModelProvider {
  readonly models: string[] = [];
  constructor(readonly name: string) {}
  async *stream(request: ProviderRequest): AsyncIterable<ProviderEvent> {
    this.models.push(request.model);
    yield { type: "text_delta", text: `${this.name} ok` };
  }
}

describe("named providers", () => {
  it("are chosen per turn, each running its own model unless the turn names one", async () => {
    const local = new ModelRecorder("local");
    const remote = new ModelRecorder("remote");
    const endpoint = (model: string) => ({ base_url: "http://127.0.0.1:9/v1", model });
    const gw = await start({
      config: { providers: { openai_compatible: { local: endpoint("local-7b"), remote: endpoint("remote-large") } } },
      providers: new Map<string, ModelProvider>([
        ["scripted", new ScriptedProvider()],
        ["local", local],
        ["remote", remote],
      ]),
    });
    const thread = await gw.thread();
    await gw.runTurn({
      thread_id: thread,
      turn_id: "trn_local",
      execution_backend: { type: "apiProvider", provider: "local" },
      input: text("hi"),
    });
    await gw.runTurn({ thread_id: thread, turn_id: "trn_remote", model_provider: "remote", input: text("hi") });
    const end = await gw.runTurn({
      thread_id: thread,
      turn_id: "trn_override",
      execution_backend: { type: "apiProvider", provider: "local" },
      model: "local-13b",
      input: text("hi"),
    });
    expect(local.models).toEqual(["local-7b", "local-13b"]);
    expect(remote.models).toEqual(["remote-large"]);
    expect(end).toMatchObject({ params: { turn: { model_provider: "local", model: "local-13b" } } });
  });

  it("refuses a configuration that reuses a built-in provider's name", () => {
    expect(() => resolveConfig({ providers: { openai_compatible: { scripted: { base_url: "http://x/v1", model: "m" } } } })).toThrow(
      ConfigError,
    );
  });

  it("takes a named provider as the default, with its model", () => {
    const config = resolveConfig({
      default_provider: "local",
      providers: { openai_compatible: { local: { base_url: "http://127.0.0.1:9/v1", model: "local-7b" } } },
    });
    expect(config).toMatchObject({ defaultProvider: "local", defaultModel: "local-7b" });
    expect(() => resolveConfig({ default_provider: "elsewhere" })).toThrow(
      /default_provider "elsewhere" is not a provider of this gateway \(scripted\)/,
    );
  });
});

describe("the MCP server configuration", () => {
  const cases: [string, NonNullable<Parameters<typeof resolveConfig>[0]>["mcp_servers"], RegExp][] = [
    ["neither command nor url", { s: {} }, /mcp_servers\.s: give exactly one of command .* or url/],
    ["both command and url", { s: { command: "x", url: "http://127.0.0.1/mcp" } }, /mcp_servers\.s: give exactly one/],
    [
      "headers on a command server",
      { s: { command: "x", headers: { a: "b" } } },
      /mcp_servers\.s\.headers: headers are for a url server only/,
    ],
    [
      "args on a url server",
      { s: { url: "http://127.0.0.1/mcp", args: ["a"] } },
      /mcp_servers\.s\.args: args is for a command server only/,
    ],
    ["a url that does not parse", { s: { url: "not a url" } }, /mcp_servers\.s\.url: "not a url" is not a URL/],
  ];
  it.each(cases)("names the place of %s", (_name, servers, message) => {
    expect(() => resolveConfig({ mcp_servers: servers })).toThrow(message);
  });

  it("fills in the defaults", () => {
    expect(resolveConfig({ mcp_servers: { s: { command: "srv" } } }).mcpServers.get("s")).toEqual({
      name: "s",
      scope: "workspace",
      startupTimeoutMs: 20_000,
      toolTimeoutMs: 60_000,
      trusted: false,
      transport: "stdio",
      command: "srv",
      args: [],
      env: {},
    });
  });
});

describe("turn capabilities", () => {
  it("reports what the gateway does not have as not_found, normalizes the rest, and still runs the turn", async () => {
    const gw = await start();
    const thread = await gw.thread();
    const capabilities: TurnCapability[] = [
      skill("cap_docs", "workspace/documents"),
      mcpServer("cap_resend", "resend"),
      { id: "cap_tool", kind: { type: "mcpTool", serverName: "resend", rawToolName: "send_email", scopeKind: "workspace" } },
      mcpServer("cap_resend", "other"), // a repeated id: the first entry counts
      mcpServer("cap_again", "resend"), // the same server under another id
      { id: "cap_empty", kind: { type: "skill", slug: " ", sourceKind: "workspace" } },
    ];
    const response = await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_caps",
      capabilities,
      input: text(script({ say: "still ran" })),
    });
    const expected = [
      { capabilityId: "cap_docs", status: "rejected", reason: "not_found", message: expect.stringContaining("no skill folders") },
      {
        capabilityId: "cap_resend",
        status: "rejected",
        reason: "not_found",
        message: expect.stringContaining("no MCP server named resend"),
      },
      { capabilityId: "cap_tool", status: "rejected", reason: "not_found", message: expect.any(String) },
      { capabilityId: "cap_again", status: "rejected", reason: "validation_rejected", message: expect.stringContaining("cap_resend") },
      { capabilityId: "cap_empty", status: "rejected", reason: "validation_rejected", message: expect.stringContaining("slug") },
    ];
    expect(response.turn.capabilities).toEqual(expected);
    const end = await gw.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_caps");
    expect(end).toMatchObject({ params: { turn: { capabilities: expected } } });
    expect(items(ofTurn(gw.received, "trn_caps"), "agentMessage")).toMatchObject([{ text: "still ran" }]);
    expect((await gw.client.turnGet({ thread_id: thread, turn_id: "trn_caps" })).turn.capabilities).toEqual(expected);
  });

  it("leaves capabilities off a turn that requested none", async () => {
    const gw = await start();
    const thread = await gw.thread();
    const { turn } = await gw.client.turnStart({ thread_id: thread, turn_id: "trn_none", input: text(script({ say: "ok" })) });
    expect(turn).not.toHaveProperty("capabilities");
  });
});

describe("skills", () => {
  function skillsFolder(): string {
    const root = mkdtempSync(join(tmpdir(), "turnspec-skills-"));
    const folder = join(root, "skills");
    mkdirSync(join(folder, "weather", "scripts"), { recursive: true });
    writeFileSync(
      join(folder, "weather", "SKILL.md"),
      "---\nname: weather\ndescription: Look up a forecast for a city.\n---\n# Weather\n\nRun scripts/forecast.sh CITY.\n",
    );
    writeFileSync(join(folder, "weather", "scripts", "forecast.sh"), "echo sunny\n");
    mkdirSync(join(folder, "broken"));
    writeFileSync(join(folder, "broken", "SKILL.md"), "no front matter here\n");
    writeFileSync(join(root, "secret.txt"), "not for skills\n");
    return folder;
  }

  it("adds a fingerprinted prompt entry and a skill tool that reads the body and files, asking first in supervised turns", async () => {
    const prompts: string[][] = [];
    const scripted = new ScriptedProvider();
    const recording: ModelProvider = {
      name: "scripted",
      stream: (request) => {
        prompts.push(request.messages.filter((m) => m.role === "system").map((m) => m.content));
        return scripted.stream(request);
      },
    };
    const folder = skillsFolder();
    const gw = await start({ config: { skills: { folders: [{ path: folder }] } }, providers: new Map([["scripted", recording]]) });
    const thread = await gw.thread();
    const steps = script(
      { tool: "read_skill", args: { skill: "workspace/weather" } },
      { tool: "read_skill", args: { skill: "workspace/weather", path: "scripts/forecast.sh" } },
      { tool: "read_skill", args: { skill: "workspace/weather", path: "../../secret.txt" } },
      { say: "sunny" },
    );
    const { turn } = await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_skill",
      permission_profile: { mode: "supervised" },
      capabilities: [skill("cap_weather", "workspace/weather")],
      input: text(steps),
    });
    expect(turn.capabilities).toEqual([{ capabilityId: "cap_weather", status: "accepted", reason: "explicit_composer_capability" }]);
    const answered = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const opened = await gw.waitFor((n) => n.method === "turn/permission/request/opened" && !answered.has(n.params.request.request_id));
      if (opened.method !== "turn/permission/request/opened") throw new Error("unreachable");
      answered.add(opened.params.request.request_id);
      expect(opened.params.request).toMatchObject({ tool_name: "read_skill", action: "dynamic_skill_tool" });
      await gw.client.turnPermissionRequestRespond({
        request_id: opened.params.request.request_id,
        resolve_token: opened.params.request.resolve_token,
        resolution: "allow_once",
      });
    }
    const end = await gw.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_skill");
    const calls = items(ofTurn(gw.received, "trn_skill"), "dynamicToolCall");
    expect(calls).toMatchObject([
      { tool_name: "read_skill", status: "completed", output: expect.stringContaining("Run scripts/forecast.sh CITY.") },
      { tool_name: "read_skill", status: "completed", output: "echo sunny\n" },
      { tool_name: "read_skill", status: "failed", tool_result: expect.stringContaining("leads outside the skill") },
    ]);
    expect(prompts[0]).toEqual([expect.stringContaining("- workspace/weather: Look up a forecast for a city.")]);
    if (end.method !== "turn/completed") throw new Error("unreachable");
    expect(end.params.turn.prompt_manifest?.section_ids).toContain("skills_runtime_prompt");
  });

  it("rejects a malformed skill as validation_rejected and an unreadable folder as catalog_missing", async () => {
    const folder = skillsFolder();
    const gw = await start({ config: { skills: { folders: [{ path: folder }, { path: join(folder, "missing"), source_kind: "team" }] } } });
    const thread = await gw.thread();
    const { turn } = await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_bad_skills",
      capabilities: [
        skill("cap_broken", "workspace/broken"),
        skill("cap_team", "team/anything", "team"),
        skill("cap_absent", "workspace/absent"),
      ],
      input: text(script({ say: "ok" })),
    });
    expect(turn.capabilities).toEqual([
      {
        capabilityId: "cap_broken",
        status: "rejected",
        reason: "validation_rejected",
        message: expect.stringContaining("no front matter"),
      },
      { capabilityId: "cap_team", status: "rejected", reason: "catalog_missing", message: expect.stringContaining("cannot be read") },
      { capabilityId: "cap_absent", status: "rejected", reason: "not_found", message: expect.any(String) },
    ]);
  });
});
