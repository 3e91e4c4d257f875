/** The prompt manifest: sections in order, fingerprints that say what changed, and no prompt text. */
import { describe, expect, it } from "vitest";
import { PROMPT_COMPILER_VERSION, promptManifest } from "../../packages/gateway/src/prompt/compiler.js";
import type { ChatMessage, ToolSpec } from "../../packages/gateway/src/providers/provider.js";

const tools: ToolSpec[] = [{ name: "shell", description: "Run a command", parameters: { type: "object" } }];
const first: ChatMessage[] = [{ role: "user", content: "secret plan one" }];
const second: ChatMessage[] = [...first, { role: "assistant", content: "answer one" }, { role: "user", content: "secret plan two" }];
const hex = /^[0-9a-f]{64}$/;

describe("promptManifest", () => {
  it("names the compiler, the profile and the sections in prompt order, with sha256 fingerprints", () => {
    const manifest = promptManifest({ mode: "Agent", tools, messages: first });
    expect(manifest).toMatchObject({
      compiler_version: PROMPT_COMPILER_VERSION,
      profile: "agent_tools",
      section_ids: ["agent_mode", "tool_catalog", "conversation_history", "current_turn"],
      diagnostics: [],
    });
    for (const key of ["fingerprint_stable", "fingerprint_dynamic", "fingerprint_full"] as const) expect(manifest[key]).toMatch(hex);
    expect(JSON.stringify(manifest)).not.toContain("secret plan");
  });

  it("keeps the stable fingerprint while only the conversation changes, and changes it with the tools or the mode", () => {
    const a = promptManifest({ mode: "Agent", tools, messages: first });
    const b = promptManifest({ mode: "Agent", tools, messages: second });
    expect(b.fingerprint_stable).toBe(a.fingerprint_stable);
    expect(b.fingerprint_dynamic).not.toBe(a.fingerprint_dynamic);
    expect(b.fingerprint_full).not.toBe(a.fingerprint_full);
    expect(promptManifest({ mode: "Agent", tools: [], messages: first }).fingerprint_stable).not.toBe(a.fingerprint_stable);
    const chat = promptManifest({ mode: "Chat", tools: [], messages: first });
    expect(chat).toMatchObject({ profile: "chat", section_ids: ["chat_mode", "conversation_history", "current_turn"] });
    expect(promptManifest({ mode: "Agent", tools, messages: first })).toEqual(a);
  });

  it("lists a history summary as its own section and carries the diagnostics given", () => {
    const summarized: ChatMessage[] = [{ role: "system", content: "Summary of the 2 earlier messages" }, ...second.slice(2)];
    const note = { severity: "info" as const, message: "folded", section_id: "history_summary" };
    expect(promptManifest({ mode: "Agent", tools, messages: summarized, diagnostics: [note] })).toMatchObject({
      section_ids: ["agent_mode", "tool_catalog", "history_summary", "conversation_history", "current_turn"],
      diagnostics: [note],
    });
  });
});
