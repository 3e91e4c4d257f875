/**
 * Turns on an ACP agent (execution_backend acpAgentRuntime), end to end through turn/start:
 * the gateway is the ACP client of an agent built on the SDK's agent side
 * (test/fixtures/acp/agent.mjs), which plays the steps its prompt lists. Slow: each test
 * starts the agent process.
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItem, TurnStartParams } from "../../generated/types.js";
import { ofTurn, startHarness, text, type Harness } from "../gateway/harness.js";

const AGENT = join(import.meta.dirname, "..", "fixtures", "acp", "agent.mjs");

let h: Harness | undefined;
afterEach(async () => {
  if (!h) return;
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
  h = undefined;
});

async function start(command = process.execPath, args = [AGENT]): Promise<Harness> {
  h = await startHarness({ config: { acp_agents: { fixture: { command, args, startup_timeout_ms: 10_000 } } } });
  return h;
}

const onAgent = (threadId: string, turnId: string, steps: unknown, extra: Partial<TurnStartParams> = {}): TurnStartParams => ({
  thread_id: threadId,
  turn_id: turnId,
  execution_backend: { type: "acpAgentRuntime", runtime_id: "fixture" },
  input: text(typeof steps === "string" ? steps : JSON.stringify(steps)),
  ...extra,
});

const completedItems = (ns: readonly AnyNotification[]) => ns.flatMap((n) => (n.method === "item/completed" ? [n.params.item] : []));
const said = (ns: readonly AnyNotification[]) =>
  completedItems(ns)
    .filter((i): i is Extract<TurnItem, { type: "agentMessage" }> => i.type === "agentMessage")
    .map((i) => i.text)
    .join("");

describe("a turn on an ACP agent", () => {
  it("maps the agent's updates and client calls onto items, and keeps one session per thread", async () => {
    const gw = await start();
    const cwd = realpathSync(gw.cwd);
    const thread = await gw.thread({ cwd });
    writeFileSync(join(cwd, "in.txt"), "file contents");
    const steps = [
      { think: "Planning the work." },
      { say: "Starting now. " },
      { tool: { kind: "execute", title: "List files", rawInput: { command: "ls" } } },
      { write: join(cwd, "out.txt"), content: "written by the agent" },
      { read: join(cwd, "in.txt") },
      { run: "echo", args: ["from the terminal"] },
    ];
    const end = await gw.runTurn(onAgent(thread, "trn_acp", steps));
    expect(end).toMatchObject({
      method: "turn/completed",
      params: { turn: { execution_backend: { type: "acpAgentRuntime", runtime_id: "fixture" } } },
    });
    const events = ofTurn(gw.received, "trn_acp");
    const items = completedItems(events);
    expect(items.map((i) => i.type)).toEqual([
      "userMessage",
      "reasoning",
      "agentMessage",
      "commandExecution",
      "fileChange",
      "dynamicToolCall",
      "agentMessage",
      "commandExecution",
      "agentMessage",
    ]);
    expect(items[1]).toMatchObject({ text: "Planning the work." });
    expect(items[3]).toMatchObject({ command: "ls", status: "completed", outcome: "success", stdout: "tool ran" });
    expect(items[4]).toMatchObject({ path: join(cwd, "out.txt"), change_kind: "add", status: "completed" });
    expect(items[5]).toMatchObject({ tool_name: "fs/read_text_file", status: "completed", output: "file contents" });
    expect(items[6]).toMatchObject({ text: "read: file contents" });
    expect(items[7]).toMatchObject({ command: "echo from the terminal", status: "completed", exit_code: 0, stdout: "from the terminal\n" });
    expect(said(events)).toBe("Starting now. read: file contentsran: from the terminal (exit 0)");
    expect(events.filter((n) => n.method === "item/agent_message/delta").length).toBeGreaterThan(2);
    expect(readFileSync(join(cwd, "out.txt"), "utf8")).toBe("written by the agent");

    await gw.runTurn(onAgent(thread, "trn_acp_2", "hello again"));
    const other = await gw.thread({ cwd });
    await gw.runTurn(onAgent(other, "trn_acp_3", "hello from elsewhere"));
    expect(said(ofTurn(gw.received, "trn_acp_2"))).toBe("Session sess_1 heard: hello again");
    expect(said(ofTurn(gw.received, "trn_acp_3"))).toBe("Session sess_2 heard: hello from elsewhere");
  }, 60_000);

  it("lets the turn's profile and the client decide the agent's permission requests and client calls", async () => {
    const gw = await start();
    const cwd = realpathSync(gw.cwd);
    const thread = await gw.thread({ cwd });
    const steps = [
      { tool: { kind: "edit", title: "Edit notes", locations: [{ path: join(cwd, "notes.md") }], rawInput: {} }, ask: true },
      { read: join(cwd, "missing-but-allowed.txt") },
      { write: join(cwd, "denied.txt"), content: "must not be written" },
      { say: "finished" },
    ];
    await gw.client.turnStart(onAgent(thread, "trn_perm", steps, { permission_profile: { mode: "supervised" } }));
    const first = await gw.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.turn_id === "trn_perm");
    if (first.method !== "turn/permission/request/opened") throw new Error("unreachable");
    expect(first.params.request).toMatchObject({ tool_name: "write_file", action: "file_write" });
    await gw.client.turnPermissionRequestRespond({
      request_id: first.params.request.request_id,
      resolve_token: first.params.request.resolve_token,
      resolution: "allow_for_turn",
    });
    const second = await gw.waitFor(
      (n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== first.params.request.request_id,
    );
    if (second.method !== "turn/permission/request/opened") throw new Error("unreachable");
    expect(second.params.request).toMatchObject({
      tool_name: "write_file",
      action: "file_write",
      summary: expect.stringContaining("denied.txt"),
    });
    await gw.client.turnPermissionRequestRespond({
      request_id: second.params.request.request_id,
      resolve_token: second.params.request.resolve_token,
      resolution: "deny",
    });
    const end = await gw.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_perm");
    expect(end.method).toBe("turn/completed");
    const events = ofTurn(gw.received, "trn_perm");
    // Reading needs no approval in supervised mode: only the edit and the write asked.
    expect(events.filter((n) => n.method === "turn/permission/request/opened")).toHaveLength(2);
    // allow_for_turn picks the agent's allow_always option.
    expect(said(events)).toMatch(/^permission: always\. error: Resource not found/);
    expect(said(events)).toContain("did not run: the user denied this call");
    expect(said(events)).toContain("finished");
    expect(completedItems(events).find((i) => i.type === "fileChange" && i.path === join(cwd, "denied.txt"))).toMatchObject({
      status: "declined",
    });
    expect(existsSync(join(cwd, "denied.txt"))).toBe(false);
  }, 60_000);

  it("sends session/cancel on turn/cancel, and the turn ends Interrupted", async () => {
    const gw = await start();
    const thread = await gw.thread();
    await gw.client.turnStart(onAgent(thread, "trn_cancel", [{ say: "working" }, { wait_for_cancel: true }]));
    await gw.waitFor((n) => n.method === "item/agent_message/delta" && n.params.turn_id === "trn_cancel");
    const { turn } = await gw.client.turnCancel({ thread_id: thread, turn_id: "trn_cancel" });
    expect(turn).toMatchObject({ status: "Interrupted", error: { kind: "cancelled" } });
  }, 60_000);

  it("is blocked when the gateway stops during the turn, and turn/resume fails it: the agent's session is gone", async () => {
    const gw = await start();
    const thread = await gw.thread();
    await gw.client.turnStart(onAgent(thread, "trn_stop", [{ say: "working" }, { wait_for_cancel: true }]));
    await gw.waitFor((n) => n.method === "item/agent_message/delta" && n.params.turn_id === "trn_stop");
    await gw.gateway.close();
    expect(gw.gateway.turnState("trn_stop")?.turn).toMatchObject({
      status: "Blocked",
      blocked: { reason: "runtime_shutdown_continuation" },
    });
    await gw.client.turnResume({ thread_id: thread, turn_id: "trn_stop" });
    const end = await gw.waitFor((n) => n.method === "turn/failed" && n.params.turn_id === "trn_stop");
    expect(end).toMatchObject({ params: { error: { message: expect.stringContaining("cannot be continued") } } });
  }, 60_000);

  it("rejects capabilities, which the agent's own tools stand in for, as provider_unsupported", async () => {
    const gw = await start();
    const thread = await gw.thread();
    const { turn } = await gw.client.turnStart(
      onAgent(thread, "trn_caps", "hi", {
        capabilities: [{ id: "cap_fs", kind: { type: "mcpServer", name: "fs", scopeKind: "workspace" } }],
      }),
    );
    expect(turn.capabilities).toEqual([
      { capabilityId: "cap_fs", status: "rejected", reason: "provider_unsupported", message: expect.stringContaining("fixture") },
    ]);
  }, 60_000);

  it("refuses what it cannot keep to on an agent: Chat mode and a model of the client's choosing", async () => {
    const gw = await start();
    const thread = await gw.thread();
    await expect(gw.client.turnStart(onAgent(thread, "trn_chat", "hi", { mode: "Chat" }))).rejects.toMatchObject({
      reason: "execution_backend_unavailable",
      data: { detail: expect.stringContaining("Chat-mode") },
    });
    await expect(gw.client.turnStart(onAgent(thread, "trn_model", "hi", { model: "gpt-x" }))).rejects.toMatchObject({
      reason: "execution_backend_unavailable",
      data: { detail: expect.stringContaining("chooses its own model") },
    });
  }, 60_000);

  it("fails the turn, naming the agent, when the agent cannot start", async () => {
    const gw = await start(process.execPath, ["-e", "console.error('agent is misconfigured'); process.exit(2)"]);
    const thread = await gw.thread();
    const end = await gw.runTurn(onAgent(thread, "trn_broken", "hi"));
    expect(end).toMatchObject({ method: "turn/failed", params: { error: { message: expect.stringContaining("fixture") } } });
  }, 60_000);
});
