/**
 * History compression: when the conversation rebuilt from the log is estimated above the
 * configured budget, earlier messages are folded into one summary message before the
 * provider call. Only what the model sees is reduced; the log keeps every event. The
 * summary is built from the messages alone, so the same history always compresses the
 * same way.
 */
import type { ChatMessage } from "../providers/provider.js";

/** The estimate used against the budget: about four characters a token. */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  let characters = 0;
  for (const message of messages) {
    characters += message.content.length;
    if (message.role === "assistant") for (const call of message.tool_calls ?? []) characters += call.name.length + call.arguments.length;
  }
  return Math.ceil(characters / 4);
}

/** How much of each folded message the summary keeps. */
const SUMMARY_LINE_CHARS = 160;

export interface Compression {
  /** The history the model is sent: the summary, then the messages kept whole. */
  readonly messages: ChatMessage[];
  readonly messagesBefore: number;
  readonly estimatedTokens: number;
  /** How many messages were folded into the summary. */
  readonly summarized: number;
  readonly summary: string;
}

/**
 * Compresses `messages` when they are estimated above `maxTokens`, or returns undefined
 * when they fit or nothing can be folded. The last `keepRecent` messages and the latest
 * user message (with everything after it: the current turn's work) stay whole, and a
 * tool result is never separated from the assistant message that called the tool.
 */
export function compressHistory(messages: readonly ChatMessage[], maxTokens: number, keepRecent: number): Compression | undefined {
  const estimatedTokens = estimateTokens(messages);
  if (estimatedTokens <= maxTokens) return undefined;
  let cut = Math.min(messages.length - keepRecent, messages.map((m) => m.role).lastIndexOf("user"));
  while (cut > 0 && messages[cut]?.role === "tool") cut--;
  // Folding a single message into a summary of it gains nothing.
  if (cut < 2) return undefined;
  return { ...foldFirst(messages, cut), messagesBefore: messages.length, estimatedTokens };
}

/**
 * The history with its first `count` messages folded into one summary message: how a
 * compaction decided once, at the start of a turn, is applied again in the turn's later
 * rounds (the same earlier messages, the same summary).
 */
export function foldFirst(messages: readonly ChatMessage[], count: number): Pick<Compression, "messages" | "summarized" | "summary"> {
  const folded = messages.slice(0, count);
  const lines = folded.map((m) => `- ${m.role}: ${oneLine(m)}`);
  const summary = `Summary of the ${folded.length} earlier messages of this conversation (the gateway keeps the full transcript):\n${lines.join("\n")}`;
  return { messages: [{ role: "system", content: summary }, ...messages.slice(count)], summarized: folded.length, summary };
}

function oneLine(message: ChatMessage): string {
  const calls =
    message.role === "assistant" && message.tool_calls?.length ? ` [called ${message.tool_calls.map((c) => c.name).join(", ")}]` : "";
  const text = `${message.content.replace(/\s+/g, " ").trim()}${calls}`;
  return text.length <= SUMMARY_LINE_CHARS ? text : `${text.slice(0, SUMMARY_LINE_CHARS - 1)}…`;
}
