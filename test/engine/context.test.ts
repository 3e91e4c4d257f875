/** History compression: what is folded, what stays whole, and that it is deterministic. */
import { describe, expect, it } from "vitest";
import { compressHistory, estimateTokens } from "../../packages/gateway/src/prompt/compression.js";
import type { ChatMessage } from "../../packages/gateway/src/providers/provider.js";

const long = (label: string) => `${label} ${"x".repeat(200)}`;
const user = (content: string): ChatMessage => ({ role: "user", content });
const assistant = (content: string): ChatMessage => ({ role: "assistant", content });

describe("estimateTokens", () => {
  it("counts about four characters a token, tool calls included", () => {
    expect(estimateTokens([user("abcd"), assistant("abcdefgh")])).toBe(3);
    expect(
      estimateTokens([{ role: "assistant", content: "", tool_calls: [{ id: "c", name: "shell", arguments: '{"command":"ls"}' }] }]),
    ).toBe(Math.ceil((5 + 16) / 4));
  });
});

describe("compressHistory", () => {
  const history: ChatMessage[] = [
    user(long("first question")),
    assistant(long("first answer")),
    user(long("second question")),
    assistant(long("second answer")),
    user("now this"),
  ];

  it("leaves a history within the budget alone", () => {
    expect(compressHistory(history, 10_000, 2)).toBeUndefined();
  });

  it("folds the earlier messages into one summary, keeping the recent ones and the latest user message whole", () => {
    const result = compressHistory(history, 50, 2)!;
    expect(result).toMatchObject({ messagesBefore: 5, summarized: 3, estimatedTokens: estimateTokens(history) });
    expect(result.messages).toHaveLength(3);
    expect(result.messages[0]).toMatchObject({ role: "system" });
    expect(result.messages[0]!.content).toMatch(/^Summary of the 3 earlier messages/);
    expect(result.messages[0]!.content).toContain("- user: first question");
    expect(result.messages.slice(1)).toEqual(history.slice(3));
    expect(compressHistory(history, 50, 2), "the same history compresses the same way").toEqual(result);
  });

  it("never folds the latest user message or what follows it, whatever keep_recent says", () => {
    const current: ChatMessage[] = [...history, assistant(long("working")), { role: "tool", tool_call_id: "c1", content: long("output") }];
    const result = compressHistory(current, 50, 1)!;
    expect(result.messages.slice(1)).toEqual(current.slice(4));
  });

  it("does not separate a tool result from the assistant message that called the tool", () => {
    const call: ChatMessage = { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "shell", arguments: "{}" }] };
    const withTools: ChatMessage[] = [
      user(long("q0")),
      assistant(long("a0")),
      user(long("q1")),
      call,
      { role: "tool", tool_call_id: "c1", content: long("out") },
      assistant(long("a1")),
      user("next"),
    ];
    // keep_recent 3 would start at the tool result: the cut moves back to the call.
    const result = compressHistory(withTools, 10, 3)!;
    expect(result.summarized).toBe(3);
    expect(result.messages.slice(1)).toEqual(withTools.slice(3));
  });

  it("gives up when only one message could be folded", () => {
    expect(compressHistory([user(long("q")), assistant(long("a")), user("next")], 10, 2)).toBeUndefined();
  });
});
