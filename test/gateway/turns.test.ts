import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItem } from "../../generated/types.js";
import {
  ProviderError,
  type ModelProvider,
  type ProviderEvent,
  type ProviderRequest,
} from "../../packages/gateway/src/providers/provider.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { RpcError } from "../../packages/rpc/src/index.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
});

const completedItems = (ns: readonly AnyNotification[]) =>
  ns.filter((n): n is Extract<AnyNotification, { method: "item/completed" }> => n.method === "item/completed").map((n) => n.params.item);

/** A provider that answers from a list of functions and records each request. */
class RecordingProvider implements ModelProvider {
  readonly name = "recording";
  readonly requests: ProviderRequest[] = [];
  constructor(private readonly answers: ((request: ProviderRequest) => AsyncIterable<ProviderEvent>)[]) {}
  stream(request: ProviderRequest): AsyncIterable<ProviderEvent> {
    this.requests.push(request);
    const answer = this.answers[this.requests.length - 1];
    if (!answer) throw new ProviderError("no more answers", false);
    return answer(request);
  }
}

async function* say(value: string): AsyncIterable<ProviderEvent> {
  yield { type: "text_delta", text: value };
}

describe("threads", () => {
  it("starts a thread with defaults, reads it back, and names unknown ids", async () => {
    h = await startHarness();
    const { thread } = await h.client.threadStart({});
    expect(thread).toMatchObject({ workspace_id: "ws_default", mode: "Agent", cwd: h.cwd });
    expect((await h.client.threadGet({ thread_id: thread.id })).thread).toEqual(thread);
    const error = await h.client.threadGet({ thread_id: "thr_missing" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({ code: -32001, reason: "thread_not_found" });
  });
});

describe("a scripted turn", () => {
  it("answers InProgress, then streams started, items and deltas in order, and completes", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const order: string[] = [];
    h.client.onAny((n) => order.push(n.method));
    const response = h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_say",
      input: text(script({ say: "Hello there, friend.", chunks: 3, tokens: 5 })),
    });
    const first = h.waitFor(() => true).then(() => order.length);
    const { turn } = await response;
    expect(turn).toMatchObject({
      id: "trn_say",
      status: "InProgress",
      prompt_manifest: null,
      permission_profile: { mode: "full_access", source: "defaulted" },
    });
    expect(await first, "the response arrives before the first notification").toBeGreaterThan(0);
    const terminal = await h.waitFor((n) => n.method === "turn/completed");
    expect(terminal.params).toMatchObject({ turn: { status: "Completed", usage: { output_tokens: 5 } } });
    const methods = ofTurn(h.received, "trn_say").map((n) => n.method);
    expect(methods).toEqual([
      "turn/started",
      "turn/permission/audit",
      "item/started",
      "item/completed",
      "turn/execution_window/started",
      "item/started",
      "item/agent_message/delta",
      "item/agent_message/delta",
      "item/agent_message/delta",
      "item/completed",
      "turn/completed",
    ]);
    const answer = completedItems(h.received).find((i) => i.type === "agentMessage");
    expect(answer).toMatchObject({ type: "agentMessage", status: "completed", text: "Hello there, friend.", round: 1 });
  });

  it("persists every notification before sending it: turn/items equals what the client received", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_log",
      input: text(script({ tool: "shell", args: { command: "printf 'a\\nb\\n'" } }, { say: "done" })),
    });
    const live = ofTurn(h.received, "trn_log");
    const items = await h.client.turnItems({ thread_id: thread, turn_id: "trn_log" });
    expect(items.events.map((e) => ({ method: e.method, params: e.params }))).toEqual(
      live.map((n) => ({ method: n.method, params: n.params })),
    );
    expect(items.events.map((e) => e.sequence)).toEqual(live.map((_, i) => i + 1));
    expect(items.last_sequence).toBe(live.length);
    const page = await h.client.turnItems({ thread_id: thread, turn_id: "trn_log", after_sequence: 3, limit: 2 });
    expect(page.events.map((e) => e.sequence)).toEqual([4, 5]);
    expect(page.last_sequence).toBe(live.length);
    const { turn } = await h.client.turnGet({ thread_id: thread, turn_id: "trn_log" });
    expect(turn.status).toBe("Completed");
  });

  it("runs a shell tool: stdout and stderr stream as output deltas, exit code and duration on the item", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_shell",
      input: text(script({ tool: "shell", args: { command: "echo out; echo err >&2; exit 3" } }, { say: "saw it" })),
    });
    const deltas = ofTurn(h.received, "trn_shell").filter((n) => n.method === "item/command_execution/output_delta");
    expect(deltas.map((n) => [n.params.stream, n.params.delta])).toEqual(
      expect.arrayContaining([
        ["stdout", "out\n"],
        ["stderr", "err\n"],
      ]),
    );
    const command = completedItems(h.received).find((i) => i.type === "commandExecution");
    expect(command).toMatchObject({
      type: "commandExecution",
      status: "failed",
      outcome: "error",
      exit_code: 3,
      stdout: "out\n",
      stderr: "err\n",
      cwd: h.cwd,
      round: 1,
    });
    expect(typeof (command as { duration_ms?: number }).duration_ms).toBe("number");
  });

  it("shows a tool error to the model as a tool result and goes on", async () => {
    const provider = new RecordingProvider([
      async function* () {
        yield { type: "tool_calls", calls: [{ id: "c1", name: "read_file", arguments: JSON.stringify({ path: "missing.txt" }) }] };
      },
      (request) =>
        say(
          `model saw: ${request.messages.at(-1)?.role === "tool" ? (request.messages.at(-1) as { content: string }).content : "nothing"}`,
        ),
    ]);
    h = await startHarness({ providers: new Map([["scripted", provider]]) });
    const thread = await h.thread();
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_err", input: text("read it") });
    expect(end.method).toBe("turn/completed");
    const last = provider.requests[1]!.messages;
    expect(last.at(-2)).toMatchObject({ role: "assistant", tool_calls: [{ id: "c1", name: "read_file" }] });
    expect(last.at(-1)).toMatchObject({ role: "tool", tool_call_id: "c1" });
    expect((last.at(-1) as { content: string }).content).toMatch(/missing\.txt/);
  });

  it("writes a file as a fileChange item with a diff", async () => {
    h = await startHarness();
    const thread = await h.thread();
    writeFileSync(join(h.cwd, "notes.txt"), "one\ntwo\n");
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_write",
      input: text(script({ tool: "write_file", args: { path: "notes.txt", content: "one\nthree\n" } }, { say: "written" })),
    });
    expect(readFileSync(join(h.cwd, "notes.txt"), "utf8")).toBe("one\nthree\n");
    const change = completedItems(h.received).find((i) => i.type === "fileChange");
    expect(change).toMatchObject({ type: "fileChange", status: "completed", change_kind: "modify" });
    expect((change as { diff?: string }).diff).toMatch(/-two[\s\S]*\+three/);
  });

  it("replies to text that is not a script with a deterministic echo", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await h.runTurn({ thread_id: thread, turn_id: "trn_echo", input: text("ping") });
    expect(completedItems(h.received).find((i) => i.type === "agentMessage")).toMatchObject({ text: expect.stringContaining("ping") });
  });

  it("fails the turn when the script runs out before a final answer", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_short",
      input: text(script({ tool: "shell", args: { command: "true" } })),
    });
    expect(end).toMatchObject({ method: "turn/failed", params: { turn: { status: "Failed" }, error: { kind: "provider_error" } } });
    expect((end.params as { error: { message: string } }).error.message).toMatch(/ended before a final answer/);
  });

  it("fails the turn on a provider failure, keeping partial text as an audit item outside the history", async () => {
    const provider = new RecordingProvider([
      async function* () {
        yield { type: "text_delta", text: "Half an ans" };
        throw new ProviderError("upstream reset", false);
      },
    ]);
    h = await startHarness({ providers: new Map([["scripted", provider]]) });
    const thread = await h.thread();
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_fail", input: text("go") });
    expect(end.params).toMatchObject({
      error: { kind: "provider_error", message: "upstream reset", retryable: false },
      turn: { status: "Failed" },
    });
    expect(completedItems(h.received).find((i) => i.type === "agentMessage")).toMatchObject({
      partial: true,
      text: "Half an ans",
      status: "failed",
    });
    const after = ofTurn(h.received, "trn_fail");
    expect(after.at(-1)?.method, "nothing follows the terminal notification").toBe("turn/failed");
  });

  it("runs Chat mode as one provider call without tools", async () => {
    const provider = new RecordingProvider([() => say("chatting")]);
    h = await startHarness({ providers: new Map([["scripted", provider]]) });
    const thread = await h.thread({ mode: "Chat" });
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_chat", input: text("hi") });
    expect(end.method).toBe("turn/completed");
    expect(provider.requests).toHaveLength(1);
    expect(provider.requests[0]!.tools).toEqual([]);
  });

  it("rebuilds the conversation from the log: a later turn sees the earlier one", async () => {
    const provider = new RecordingProvider([() => say("first answer"), () => say("second answer")]);
    h = await startHarness({ providers: new Map([["scripted", provider]]) });
    const thread = await h.thread();
    await h.runTurn({ thread_id: thread, turn_id: "trn_1", input: text("first question") });
    await h.runTurn({ thread_id: thread, turn_id: "trn_2", input: text("second question") });
    expect(provider.requests[1]!.messages).toEqual([
      { role: "user", content: "first question" },
      { role: "assistant", content: "first answer" },
      { role: "user", content: "second question" },
    ]);
  });

  it("stops a turn at the round limit", async () => {
    h = await startHarness({ config: { limits: { max_agent_rounds: 2 } } });
    const thread = await h.thread();
    const loop = Array.from({ length: 5 }, () => ({ tool: "shell", args: { command: "true" } }));
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_loop", input: text(script(...loop, { say: "never" })) });
    expect(end.params).toMatchObject({ error: { kind: "budget_exhausted" }, turn: { status: "Failed" } });
  });

  it("returns a sub-agent's answer to its parent through spawn_agent", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const child = script({ say: "child result" });
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_parent",
      input: text(script({ tool: "spawn_agent", args: { prompt: child } }, { say: "parent done" })),
    });
    expect(end.method).toBe("turn/completed");
    const task = completedItems(ofTurn(h.received, "trn_parent")).find((i) => i.type === "task") as Extract<TurnItem, { type: "task" }>;
    expect(task).toMatchObject({ status: "completed", result: "child result", prompt: child });
    const child_turn = await h.client.turnGet({ thread_id: task.child_thread_id!, turn_id: task.child_turn_id! });
    expect(child_turn.turn.status).toBe("Completed");
    expect(ofTurn(h.received, "trn_parent").some((n) => n.method === "item/updated")).toBe(true);
  });

  it("declines a tool the turn's profile does not allow at all, tells the model, and goes on", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const marker = join(h.cwd, "should-not-exist");
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_supervised",
      permission_profile: { mode: "supervised", allowed_tools: ["read_file"] },
      input: text(script({ tool: "shell", args: { command: `touch ${marker}` } }, { say: "ok" })),
    });
    expect(end.method).toBe("turn/completed");
    expect(existsSync(marker)).toBe(false);
    expect(completedItems(h.received).find((i) => i.type === "commandExecution")).toMatchObject({
      status: "declined",
      outcome: "declined",
    });
  });
});

describe("a burst of deltas", () => {
  it("lets the event loop run while it streams: a timer set at the first delta fires before the last one is sent", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const deltas = 5000;
    const isDelta = (n: AnyNotification) => n.method === "item/agent_message/delta";
    const terminal = h.runTurn({
      thread_id: thread,
      turn_id: "trn_burst",
      input: text(script({ say: "word ".repeat(deltas), chunks: deltas })),
    });
    // The scripted provider yields every delta at once, without waiting on anything.
    const seenWhenTimerFired = h
      .waitFor(isDelta)
      .then(() => new Promise<number>((resolve) => setImmediate(() => resolve(h.received.filter(isDelta).length))));
    expect(await terminal).toMatchObject({ method: "turn/completed" });
    expect(await seenWhenTimerFired).toBeLessThan(deltas);
    expect(h.received.filter(isDelta)).toHaveLength(deltas);
  });
});

describe("turn rules", () => {
  it("refuses an unknown thread, a reused turn id, and a second active turn with what to do", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await expect(h.client.turnStart({ thread_id: "thr_none", turn_id: "t0", input: text("x") })).rejects.toMatchObject({
      code: -32001,
      reason: "thread_not_found",
    });
    await h.client.turnStart({ thread_id: thread, turn_id: "trn_slow", input: text(script({ say: "slow", delay_ms: 60_000 })) });
    const busy = await h.client.turnStart({ thread_id: thread, turn_id: "trn_second", input: text("x") }).catch((e: RpcError) => e);
    expect(busy).toMatchObject({
      code: -32003,
      reason: "turn_in_progress",
      data: { active_turn_id: "trn_slow", active_turn_status: "InProgress" },
    });
    expect((busy as RpcError).message).toMatch(/wait for it to finish or cancel it/);
    const other = await h.thread();
    await expect(h.client.turnStart({ thread_id: other, turn_id: "trn_slow", input: text("x") })).rejects.toMatchObject({
      code: -32004,
      reason: "duplicate_turn_id",
    });
    await h.client.turnCancel({ thread_id: thread, turn_id: "trn_slow" });
  });

  it("cancels a running turn: the tool process is killed, the turn ends Interrupted with turn/failed", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const marker = join(h.cwd, "late");
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_cancel",
      input: text(script({ tool: "shell", args: { command: `sleep 30; touch ${marker}` } }, { say: "never" })),
    });
    await h.waitFor((n) => n.method === "item/started" && n.params.item.type === "commandExecution");
    const { turn } = await h.client.turnCancel({ thread_id: thread, turn_id: "trn_cancel", reason: "stop please" });
    expect(turn).toMatchObject({ status: "Interrupted", error: { kind: "cancelled", message: "stop please" } });
    const events = ofTurn(h.received, "trn_cancel");
    expect(events.filter((n) => n.method === "turn/failed" || n.method === "turn/completed")).toHaveLength(1);
    expect(completedItems(events).find((i) => i.type === "commandExecution")).toMatchObject({ status: "cancelled" });
    expect(existsSync(marker)).toBe(false);
    const again = await h.client.turnCancel({ thread_id: thread, turn_id: "trn_cancel" }).catch((e: RpcError) => e);
    expect(again).toMatchObject({ code: -32006, reason: "turn_not_active", data: { status: "Interrupted" } });
    expect((again as RpcError).message).toMatch(/Interrupted/);
  });

  it("answers unknown turns", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await expect(h.client.turnGet({ thread_id: thread, turn_id: "trn_nope" })).rejects.toMatchObject({
      code: -32002,
      reason: "turn_not_found",
    });
    await expect(h.client.turnWorkPage({ threadId: thread, turnId: "trn_nope", anchor: { kind: "newest" } })).rejects.toMatchObject({
      code: -32002,
      reason: "turn_not_found",
    });
  });

  it("lists a thread's turns as timeline blocks, newest page first", async () => {
    h = await startHarness();
    const thread = await h.thread();
    for (const id of ["trn_a", "trn_b", "trn_c"])
      await h.runTurn({ thread_id: thread, turn_id: id, input: text(script({ say: `answer ${id}` })) });
    const first = await h.client.threadTimelinePage({ threadId: thread, limit: 2 });
    expect(first.blocks.map((b) => b.turnId)).toEqual(["trn_b", "trn_c"]);
    expect(first.page.hasMore).toBe(true);
    const second = await h.client.threadTimelinePage({ threadId: thread, limit: 2, cursor: first.page.nextCursor! });
    expect(second.blocks.map((b) => b.turnId)).toEqual(["trn_a"]);
    expect(second.page).toEqual({ nextCursor: null, hasMore: false });
    expect(first.blocks[1]).toMatchObject({ status: "Completed", summary: "answer trn_c" });
  });
});

describe("the scripted provider is the default", () => {
  it("is registered under its name", () => {
    expect(new ScriptedProvider().name).toBe("scripted");
  });
});

describe("a gateway fault while a turn runs", () => {
  it("ends the turn Failed (internal) instead of leaving it InProgress", async () => {
    // The log refuses a write while the model streams: a fault of the gateway, not of the
    // provider, so it must not be reported as a provider failure either.
    h = await startHarness();
    const thread = await h.thread();
    const original = h.store.append.bind(h.store);
    let armed = true;
    h.store.append = ((turnId: string, method: string, build: (sequence: number) => Record<string, unknown>) => {
      if (armed && method === "item/agent_message/delta") {
        armed = false;
        throw new Error("disk full");
      }
      return original(turnId, method, build);
    }) as typeof h.store.append;
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_fault", input: text(script({ say: "boom" })) });
    expect(end.params).toMatchObject({ turn: { status: "Failed" }, error: { kind: "internal" } });
    expect((await h.client.turnGet({ thread_id: thread, turn_id: "trn_fault" })).turn.status).toBe("Failed");
  });
});
