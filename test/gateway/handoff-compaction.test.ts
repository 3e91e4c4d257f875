/**
 * The handoff notice of spawn_agent (once per delegation, naming the child) and the
 * compaction order: a turn's context is compacted before its first model call, so
 * context/compressed comes once, before any delta of the turn, and a later round folds
 * the same earlier messages without announcing it again.
 */
import { afterEach, describe, expect, it } from "vitest";
import { orderingRules } from "../../generated/ordering.js";
import type { AnyNotification } from "../../generated/registry.js";
import { createOrderingEngine } from "../../packages/rpc/src/index.js";
import type { ModelProvider, ProviderStream, ProviderRequest } from "../../packages/gateway/src/providers/provider.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
});

class RecordingScripted implements ModelProvider {
  readonly name = "scripted";
  readonly requests: ProviderRequest[] = [];
  private readonly inner = new ScriptedProvider();
  stream(request: ProviderRequest): ProviderStream {
    this.requests.push(request);
    return this.inner.stream(request);
  }
}

function violations(ns: readonly AnyNotification[]) {
  const engine = createOrderingEngine(orderingRules);
  for (const n of ns) engine.accept({ jsonrpc: "2.0", method: n.method, params: n.params }, "server_to_client");
  engine.end();
  return engine.violations.map((v) => v.message);
}

describe("the handoff notice", () => {
  it("is sent once per spawn_agent delegation, naming the child agent, its turn and the reason", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_p",
      input: text(script({ tool: "spawn_agent", args: { prompt: "Count the files\nin the repo" } }, { say: "done" })),
    });
    expect(end.method).toBe("turn/completed");
    const notices = ofTurn(h.received, "trn_p").filter((n) => n.method === "turn/handoff/started");
    expect(notices).toHaveLength(1);
    const task = ofTurn(h.received, "trn_p").find(
      (n) => n.method === "item/completed" && (n.params as { item: { type: string } }).item.type === "task",
    )!.params as { item_id: string; item: { child_turn_id: string; child_thread_id: string } };
    expect(notices[0]!.params).toMatchObject({
      item_id: task.item_id,
      child_turn_id: task.item.child_turn_id,
      child_thread_id: task.item.child_thread_id,
      child_agent_id: "agent_reference",
      reason: "Count the files",
    });
    // The notice comes before the child's answer returns to the parent.
    const methods = ofTurn(h.received, "trn_p").map((n) => n.method);
    expect(methods.indexOf("turn/handoff/started")).toBeLessThan(methods.lastIndexOf("item/completed"));
    expect(violations(h.received)).toEqual([]);
  });
});

describe("compaction first", () => {
  const long = (label: string) => `${label}: ${"lorem ipsum ".repeat(20)}`;

  it("compacts before the first model call only, announces it once before any delta, and folds the same messages in later rounds", async () => {
    const provider = new RecordingScripted();
    h = await startHarness({
      providers: new Map([["scripted", provider]]),
      config: { context: { max_history_tokens: 60, keep_recent_messages: 2 } },
    });
    const thread = await h.thread();
    await h.runTurn({ thread_id: thread, turn_id: "trn_1", input: text(script({ say: long("first") })) });
    await h.runTurn({ thread_id: thread, turn_id: "trn_2", input: text(script({ say: long("second") })) });
    const before = provider.requests.length;
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_3",
      input: text(script({ tool: "read_file", args: { path: "missing.txt" } }, { say: "third" })),
    });
    expect(end.method).toBe("turn/completed");
    const methods = ofTurn(h.received, "trn_3").map((n) => n.method);
    expect(methods.filter((m) => m === "context/compressed")).toHaveLength(1);
    expect(methods.indexOf("context/compressed")).toBeLessThan(methods.indexOf("item/agent_message/delta"));
    // Both model calls of the turn saw the same summary in place of the same earlier messages.
    const [round1, round2] = provider.requests.slice(before);
    expect(round1!.messages[0]).toEqual(round2!.messages[0]);
    expect(round1!.messages[0]!.role).toBe("system");
    expect(round2!.messages.length).toBe(round1!.messages.length + 2);
    expect(violations(h.received)).toEqual([]);
  });

  it("does not compact midway through a turn that started within its budget", async () => {
    const provider = new RecordingScripted();
    h = await startHarness({
      providers: new Map([["scripted", provider]]),
      config: { context: { max_history_tokens: 120, keep_recent_messages: 1 } },
    });
    const thread = await h.thread();
    await h.runTurn({ thread_id: thread, turn_id: "trn_a", input: text(script({ say: "short" })) });
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_b",
      input: text(script({ tool: "spawn_agent", args: { prompt: script({ say: long("child") }) } }, { say: "fin" })),
    });
    expect(end.method).toBe("turn/completed");
    expect(ofTurn(h.received, "trn_b").some((n) => n.method === "context/compressed")).toBe(false);
  });
});

describe("the compaction-first rule of the generated checker", () => {
  const note = (method: string, params: Record<string, unknown>) => ({
    jsonrpc: "2.0",
    method,
    params: { thread_id: "th", turn_id: "tu", ...params },
  });
  it("reports context/compressed after a text delta of the turn, and a second one", () => {
    const engine = createOrderingEngine(orderingRules.filter((r) => r.id === "TURN-ORDER-COMPACTED-FIRST"));
    engine.accept(note("item/agent_message/delta", { sequence: 3, item_id: "i", stream: "agent_message", delta: "x" }), "server_to_client");
    const compressed = { sequence: 4, reason: "summarized", summarized_messages: 2, messages_after: 2 };
    engine.accept(note("context/compressed", compressed), "server_to_client");
    engine.accept(note("context/compressed", compressed), "server_to_client");
    expect(engine.violations.map((v) => v.requirement)).toEqual(["TURN-ORDER-COMPACTED-FIRST", "TURN-ORDER-COMPACTED-FIRST"]);
  });
});
