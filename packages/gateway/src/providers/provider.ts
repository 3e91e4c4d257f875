/**
 * A model provider: given the conversation so far (re-derived from the event log on
 * every call), streams the model's answer. The agent loop knows nothing else about it.
 */

/** One message of the conversation, in Chat Completions terms. */
export type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string; readonly tool_calls?: readonly ToolCall[] }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string };

/** A tool call the model asked for. `arguments` is the JSON text the model produced. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** A tool the model may call, described by a JSON Schema of its arguments. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
}

export interface ProviderRequest {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  /** Empty in Chat mode. */
  readonly tools: readonly ToolSpec[];
  readonly signal: AbortSignal;
  /**
   * Which attempt of this provider call this is: 1 for the first, counted on across the
   * gateway's retries and across turn/resume (a resumed call goes on from where the
   * exhausted attempts stopped). Default 1.
   */
  readonly attempt?: number;
}

/** What a provider streams: text and reasoning pieces, then at most one set of tool calls, and usage. */
export type ProviderEvent =
  | { readonly type: "text_delta"; readonly text: string }
  | { readonly type: "reasoning"; readonly text: string }
  | { readonly type: "tool_calls"; readonly calls: readonly ToolCall[] }
  | { readonly type: "usage"; readonly input_tokens: number; readonly output_tokens: number };

/**
 * A provider's answer as it streams. A provider that has several events at once (the
 * steps of a scripted answer, many deltas in one read from the network) may yield them as
 * one array: the gateway takes them in order, exactly as if they had come one by one, and
 * saves an asynchronous hop per event.
 */
export type ProviderStream = AsyncIterable<ProviderEvent | readonly ProviderEvent[]>;

/** A failed provider call. `retryable` says whether trying again may help. */
export class ProviderError extends Error {
  readonly retryable: boolean;

  constructor(message: string, retryable: boolean) {
    super(message);
    this.name = "ProviderError";
    this.retryable = retryable;
  }
}

export interface ModelProvider {
  /** The provider's name as turns and threads refer to it (`scripted`, `openai`, …). */
  readonly name: string;
  /** Streams one answer. Throws (or the iterator throws) a ProviderError on failure. */
  stream(request: ProviderRequest): ProviderStream;
}
