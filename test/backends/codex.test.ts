/**
 * Turns on the Codex CLI (execution_backend cliAgentRuntime, kind codex), end to end
 * through turn/start: the gateway drives the real `codex app-server` of the @openai/codex
 * package, pointed at a scripted local Responses API endpoint. Slow: each test starts the
 * runtime. The Codex CLI is an opt-in install (.ci/run installs it): on a developer's
 * machine without it the file is skipped with one line saying how to install it; with
 * CI=true its absence fails the run.
 */
import { existsSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItem, TurnStartParams } from "../../generated/types.js";
import { startResponsesServer, type ResponsesServer, type ResponsesStep } from "../fixtures/responses-server.js";
import { ofTurn, startHarness, text, type Harness } from "../gateway/harness.js";

const CODEX = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "codex");
/** The version .ci/run installs: the one the backend is written against. */
const CODEX_VERSION = "0.171.0";
const PLATFORM_PACKAGE = join(import.meta.dirname, "..", "..", "node_modules", "@openai", `codex-${process.platform}-${process.arch}`);

let h: Harness | undefined;
let model: ResponsesServer | undefined;
afterEach(async () => {
  if (h) {
    expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
    await h.close();
  }
  await model?.close();
  h = undefined;
  model = undefined;
});

async function start(steps: readonly ResponsesStep[]): Promise<Harness> {
  model = await startResponsesServer(steps);
  const codexHome = mkdtempSync(join(tmpdir(), "turnspec-codex-home-"));
  h = await startHarness({
    config: {
      cli_runtimes: { codex: { kind: "codex", command: CODEX, base_url: model.url, model: "local-model", codex_home: codexHome } },
    },
  });
  return h;
}

const onCodex = (threadId: string, turnId: string, input: string, extra: Partial<TurnStartParams> = {}): TurnStartParams => ({
  thread_id: threadId,
  turn_id: turnId,
  execution_backend: { type: "cliAgentRuntime", runtime_id: "codex", runtime_kind: "codex" },
  input: text(input),
  ...extra,
});

const completed = (ns: readonly AnyNotification[]) => ns.flatMap((n) => (n.method === "item/completed" ? [n.params.item] : []));

/** Why the Codex tests cannot run here, or undefined when they can. */
function codexMissing(): string | undefined {
  if (existsSync(CODEX) && existsSync(PLATFORM_PACKAGE)) return undefined;
  const install = `npm install --no-save @openai/codex@${CODEX_VERSION}`;
  if (process.env.CI === "true")
    throw new Error(`the Codex CLI is not installed, and CI=true does not let its tests be skipped; run ${install}`);
  console.warn(`test/backends/codex.test.ts skipped: the Codex CLI is not installed; to run it, ${install}`);
  return "the Codex CLI is not installed";
}

describe.skipIf(codexMissing() !== undefined)("a turn on the Codex CLI", () => {
  it("streams Codex's answer as an agentMessage and completes, with the configured model or the turn's", async () => {
    const gw = await start([{ say: "Hello from the local endpoint." }, { say: "Second answer." }]);
    const thread = await gw.thread();
    const end = await gw.runTurn(onCodex(thread, "trn_codex", "Say hello"));
    expect(end).toMatchObject({
      method: "turn/completed",
      params: { turn: { execution_backend: { type: "cliAgentRuntime", runtime_id: "codex" } } },
    });
    const events = ofTurn(gw.received, "trn_codex");
    expect(completed(events).map((i) => i.type)).toEqual(["userMessage", "agentMessage"]);
    expect(completed(events)[1]).toMatchObject({ status: "completed", text: "Hello from the local endpoint." });
    expect(
      events
        .filter((n) => n.method === "item/agent_message/delta")
        .map((n) => (n.params as { delta: string }).delta)
        .join(""),
    ).toBe("Hello from the local endpoint.");
    expect(model!.requests[0]).toMatchObject({ model: "local-model" });
    expect(JSON.stringify(model!.requests[0]!.input)).toContain("Say hello");

    await gw.runTurn(onCodex(thread, "trn_codex_2", "Again", { model: "other-model", cli_runtime_options: { summary: "concise" } }));
    expect(model!.requests[1]).toMatchObject({ model: "other-model" });
    // The same Codex thread: the first exchange is in the second request's history.
    expect(JSON.stringify(model!.requests[1]!.input)).toContain("Hello from the local endpoint.");
  }, 90_000);

  it("asks through the permission API before Codex runs a command in a supervised turn, and runs it once allowed", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-codex-work-")));
    const gw = await start([
      { call: "exec_command", args: { cmd: "echo hi-from-codex" } },
      { say: "It printed." },
      { call: "exec_command", args: { cmd: "echo must-not-run" } },
      { say: "Denied." },
    ]);
    const thread = await gw.thread({ cwd: dir });
    await gw.client.turnStart(onCodex(thread, "trn_ask", "Run it", { permission_profile: { mode: "supervised" } }));
    const opened = await gw.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.turn_id === "trn_ask");
    if (opened.method !== "turn/permission/request/opened") throw new Error("unreachable");
    expect(opened.params.request).toMatchObject({
      tool_name: "shell",
      action: "shell_command",
      summary: expect.stringContaining("echo hi-from-codex"),
    });
    await gw.client.turnPermissionRequestRespond({
      request_id: opened.params.request.request_id,
      resolve_token: opened.params.request.resolve_token,
      resolution: "allow_once",
    });
    await gw.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_ask");
    const command = completed(ofTurn(gw.received, "trn_ask")).find(
      (i): i is Extract<TurnItem, { type: "commandExecution" }> => i.type === "commandExecution",
    );
    expect(command).toMatchObject({
      command: "echo hi-from-codex",
      cwd: dir,
      status: "completed",
      outcome: "success",
      exit_code: 0,
      stdout: expect.stringContaining("hi-from-codex"),
    });

    await gw.client.turnStart(onCodex(thread, "trn_deny", "Run another", { permission_profile: { mode: "supervised" } }));
    const second = await gw.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.turn_id === "trn_deny");
    if (second.method !== "turn/permission/request/opened") throw new Error("unreachable");
    await gw.client.turnPermissionRequestRespond({
      request_id: second.params.request.request_id,
      resolve_token: second.params.request.resolve_token,
      resolution: "deny",
    });
    await gw.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_deny");
    const denied = completed(ofTurn(gw.received, "trn_deny")).find((i) => i.type === "commandExecution");
    expect(denied).toMatchObject({ status: "declined" });
    expect(JSON.stringify(denied)).not.toContain("must-not-run\\n");
  }, 90_000);

  it("is blocked when the gateway stops during the turn, and turn/resume fails it: the Codex thread is gone", async () => {
    const gw = await start([{ hang: true }]);
    const thread = await gw.thread();
    await gw.client.turnStart(onCodex(thread, "trn_stop", "Think forever"));
    while (model!.requests.length === 0) await new Promise((r) => setTimeout(r, 20));
    await gw.gateway.close();
    expect(gw.gateway.turnState("trn_stop")?.turn).toMatchObject({
      status: "Blocked",
      blocked: { reason: "runtime_shutdown_continuation" },
    });
    await gw.client.turnResume({ thread_id: thread, turn_id: "trn_stop" });
    const end = await gw.waitFor((n) => n.method === "turn/failed" && n.params.turn_id === "trn_stop");
    expect(end).toMatchObject({ params: { error: { message: expect.stringContaining("cannot be continued") } } });
  }, 90_000);

  it("interrupts the Codex turn on turn/cancel", async () => {
    const gw = await start([{ hang: true }]);
    const thread = await gw.thread();
    await gw.client.turnStart(onCodex(thread, "trn_cancel", "Think forever"));
    await gw.waitFor((n) => n.method === "item/completed" && n.params.turn_id === "trn_cancel");
    while (model!.requests.length === 0) await new Promise((r) => setTimeout(r, 20));
    const { turn } = await gw.client.turnCancel({ thread_id: thread, turn_id: "trn_cancel" });
    expect(turn).toMatchObject({ status: "Interrupted" });
  }, 90_000);
});

describe("cli_runtime_options Codex cannot take", () => {
  it.each([
    [{ sandbox: "jail" }, /not a Codex sandbox/],
    [{ summary: "verbose" }, /not a Codex reasoning summary/],
    [{ steer_if_active: true }, /steer_if_active cannot be served/],
  ])("refuses %j with execution_backend_unavailable", async (options, detail) => {
    const gw = await startHarness({
      config: { cli_runtimes: { codex: { kind: "codex", base_url: "http://127.0.0.1:9/v1", model: "m" } } },
    });
    h = gw;
    const thread = await gw.thread();
    await expect(gw.client.turnStart(onCodex(thread, "trn_opts", "hi", { cli_runtime_options: options }))).rejects.toMatchObject({
      reason: "execution_backend_unavailable",
      data: { detail: expect.stringMatching(detail) },
    });
  });

  it("refuses a runtime_kind other than the configured runtime's", async () => {
    const gw = await startHarness({
      config: { cli_runtimes: { codex: { kind: "codex", base_url: "http://127.0.0.1:9/v1", model: "m" } } },
    });
    h = gw;
    const thread = await gw.thread();
    await expect(
      gw.client.turnStart({
        thread_id: thread,
        turn_id: "trn_kind",
        execution_backend: { type: "cliAgentRuntime", runtime_id: "codex", runtime_kind: "claude" },
        input: text("hi"),
      }),
    ).rejects.toMatchObject({
      reason: "execution_backend_unavailable",
      data: { detail: expect.stringContaining("of kind codex, not claude") },
    });
  });
});
