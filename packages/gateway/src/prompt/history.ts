/**
 * The conversation a model sees, re-derived from the event log before every provider
 * call (as tool-loop.md prescribes): the stateless provider sees tool results because
 * they were persisted, not because they were threaded through memory.
 */
import type { TurnItem, UserInput } from "@turnspec/protocol/types";
import type { ChatMessage, ToolCall } from "../providers/provider.js";

/** Text of a user message's inputs as the model receives it. */
export function userText(content: readonly UserInput[]): string {
  return content
    .map((input) => {
      switch (input.type) {
        case "text":
          return input.text;
        case "localFile":
        case "localImage":
          return `[attached ${input.type === "localFile" ? "file" : "image"}: ${input.path}]`;
        case "image":
          return `[image: ${input.url}]`;
        case "artifact":
          return `[artifact: ${input.artifactId}]`;
        case "mention":
          return `@${input.name} (${input.path})`;
        default:
          return `[${input.type} attachment]`;
      }
    })
    .join("\n");
}

const toolCallId = (item: TurnItem): string | undefined => (item as { tool_call_id?: string }).tool_call_id;

/** The text the model received for a finished tool item: kept on the item as `tool_result` (a task's is its `result`). */
function resultText(item: TurnItem): string {
  const fields = item as { tool_result?: string; result?: string; error?: { message: string } };
  return fields.tool_result ?? fields.result ?? fields.error?.message ?? "";
}

/**
 * Builds the messages of one or more turns, oldest first. Items of one round (one model
 * call) become one assistant message: its text, and its tool calls followed by their
 * results. Partial text kept after a provider failure is audit evidence, not history.
 */
export function historyOf(turns: readonly (readonly TurnItem[])[], toolNameOf: (item: TurnItem) => string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (const items of turns) {
    let round: number | undefined;
    let text = "";
    let calls: ToolCall[] = [];
    let results: ChatMessage[] = [];
    const flush = () => {
      if (round === undefined) return;
      if (text !== "" || calls.length > 0) {
        messages.push(calls.length ? { role: "assistant", content: text, tool_calls: calls } : { role: "assistant", content: text });
        messages.push(...results);
      }
      round = undefined;
      text = "";
      calls = [];
      results = [];
    };
    for (const item of items) {
      if (item.type === "userMessage") {
        flush();
        messages.push({ role: "user", content: userText(item.content) });
        continue;
      }
      const itemRound = (item as { round?: number }).round;
      if (itemRound === undefined) continue;
      if (itemRound !== round) {
        flush();
        round = itemRound;
      }
      if (item.type === "agentMessage") {
        if (!item.partial) text += item.text;
      } else {
        const id = toolCallId(item);
        if (id === undefined || item.status === "in_progress") continue;
        // A task item keeps its prompt rather than raw arguments: spawn_agent's only argument.
        const args = item.type === "task" ? { prompt: item.prompt } : ((item as { arguments?: Record<string, unknown> }).arguments ?? {});
        calls.push({ id, name: toolNameOf(item), arguments: JSON.stringify(args) });
        results.push({ role: "tool", tool_call_id: id, content: resultText(item) });
      }
    }
    flush();
  }
  return messages;
}
