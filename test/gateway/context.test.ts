/**
 * Context compression and the prompt manifest, end to end with the scripted provider over
 * the in-memory pair: a history over its budget reaches the model as a summary plus the
 * recent messages, announced with context/compressing and context/compressed, while the
 * log keeps everything; each turn records the manifest of its last compiled prompt.
 */
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelProvider, ProviderStream, ProviderRequest } from "../../packages/gateway/src/providers/provider.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { promptManifest } from "../../packages/gateway/src/prompt/compiler.js";
import { flatEvents } from "./events.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
});

/** The scripted provider, recording what each call was sent. */
class RecordingScripted implements ModelProvider {
  readonly name = "scripted";
  readonly requests: ProviderRequest[] = [];
  private readonly inner = new ScriptedProvider();
  stream(request: ProviderRequest): ProviderStream {
    this.requests.push(request);
    return this.inner.stream(request);
  }
}

const CONTEXT = new Set(["context/compressing", "context/compressed"]);
const long = (label: string) => `${label}: ${"lorem ipsum ".repeat(20)}`;

describe("context compression", () => {
  it("summarizes earlier messages before the provider call when the history is over budget; the log keeps everything", async () => {
    const provider = new RecordingScripted();
    h = await startHarness({
      providers: new Map([["scripted", provider]]),
      config: { context: { max_history_tokens: 60, keep_recent_messages: 2 } },
    });
    const thread = await h.thread();
    await h.runTurn({ thread_id: thread, turn_id: "trn_one", input: text(script({ say: long("first answer") })) });
    const firstItems = await h.client.turnItems({ thread_id: thread, turn_id: "trn_one" });
    await h.runTurn({ thread_id: thread, turn_id: "trn_two", input: text(script({ say: long("second answer") })) });
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_three", input: text(script({ say: "third" })) });
    expect(end.method).toBe("turn/completed");

    expect(flatEvents(ofTurn(h.received, "trn_one"), CONTEXT)).toEqual([]);
    const events = flatEvents(ofTurn(h.received, "trn_three"), CONTEXT);
    expect(events).toEqual([
      expect.objectContaining({ method: "context/compressing", reason: "summarized", messages_before: 5 }),
      expect.objectContaining({ method: "context/compressed", reason: "summarized", summarized_messages: 3, messages_after: 3 }),
    ]);
    expect(events[0]!.estimated_tokens as number).toBeGreaterThan(60);
    expect(events[1]!.summary_preview as string).toMatch(/^Summary of the 3 earlier messages/);

    // The model saw the summary, then the second answer and the third turn's message whole.
    const sent = provider.requests.at(-1)!.messages;
    expect(sent.map((m) => m.role)).toEqual(["system", "assistant", "user"]);
    expect(sent[0]!.content).toContain("first answer");
    expect(sent[1]!.content).toBe(long("second answer"));
    // Nothing was taken from the log.
    expect(await h.client.turnItems({ thread_id: thread, turn_id: "trn_one" })).toEqual(firstItems);
    const { turn } = await h.client.turnGet({ thread_id: thread, turn_id: "trn_three" });
    expect(turn.prompt_manifest).toMatchObject({
      section_ids: ["agent_mode", "tool_catalog", "history_summary", "conversation_history", "current_turn"],
      diagnostics: [{ severity: "info", section_id: "history_summary" }],
    });
  });
});

describe("the prompt manifest", () => {
  it("is recorded on the turn when it ends: sections and fingerprints, never the prompt text", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const first = await h.runTurn({ thread_id: thread, turn_id: "trn_a", input: text(script({ say: "private words one" })) });
    const second = await h.runTurn({ thread_id: thread, turn_id: "trn_b", input: text(script({ say: "private words two" })) });
    const manifestOf = (n: typeof first) =>
      (n.params as { turn: { prompt_manifest: Record<string, unknown> | null } }).turn.prompt_manifest!;
    const a = manifestOf(first);
    const b = manifestOf(second);
    expect(a).toMatchObject({
      compiler_version: "1.0.0",
      profile: "agent_tools",
      section_ids: ["agent_mode", "tool_catalog", "conversation_history", "current_turn"],
      diagnostics: [],
    });
    expect(a.fingerprint_full).toMatch(/^[0-9a-f]{64}$/);
    // Same tools and mode: the stable prefix is the same; the conversation differs.
    expect(b.fingerprint_stable).toBe(a.fingerprint_stable);
    expect(b.fingerprint_dynamic).not.toBe(a.fingerprint_dynamic);
    expect(JSON.stringify([a, b])).not.toContain("private words");
    expect((await h.client.turnGet({ thread_id: thread, turn_id: "trn_b" })).turn.prompt_manifest).toEqual(b);
  });

  it("fingerprints the JSON text of the [section id, content] pairs: stable ones, dynamic ones, all", () => {
    const tools = [{ name: "read_file", description: "reads", parameters: { type: "object" } }];
    const messages = [
      { role: "system" as const, content: "summary" },
      { role: "user" as const, content: "earlier" },
      { role: "assistant" as const, content: "answer" },
      { role: "user" as const, content: "now" },
    ];
    const manifest = promptManifest({ mode: "Agent", tools, messages });
    const sha = (pairs: unknown[]) => createHash("sha256").update(JSON.stringify(pairs)).digest("hex");
    const stable = [
      ["agent_mode", "Agent"],
      ["tool_catalog", tools],
    ];
    const dynamic = [
      ["history_summary", messages[0]],
      ["conversation_history", messages.slice(1, 3)],
      ["current_turn", messages.slice(3)],
    ];
    expect(manifest.section_ids).toEqual(["agent_mode", "tool_catalog", "history_summary", "conversation_history", "current_turn"]);
    expect(manifest.fingerprint_stable).toBe(sha(stable));
    expect(manifest.fingerprint_dynamic).toBe(sha(dynamic));
    expect(manifest.fingerprint_full).toBe(sha([...stable, ...dynamic]));
  });

  it("uses the chat profile, without a tool catalog, in Chat mode", async () => {
    h = await startHarness();
    const thread = await h.thread({ mode: "Chat" });
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_chat", input: text("hello") });
    expect(end.params).toMatchObject({
      turn: { prompt_manifest: { profile: "chat", section_ids: ["chat_mode", "conversation_history", "current_turn"] } },
    });
  });
});
