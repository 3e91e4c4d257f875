/**
 * A model provider over any OpenAI-compatible Chat Completions endpoint (OpenAI itself,
 * vLLM, llama.cpp, Ollama, …), through the official `openai` client. The client's own
 * retries are off: the turn engine decides about retrying, from ProviderError.retryable.
 */
import type OpenAI from "openai";
import { requireOptional } from "../optional.js";
import type { ChatMessage, ModelProvider, ProviderEvent, ProviderRequest, ToolCall, ToolSpec } from "./provider.js";
import { ProviderError } from "./provider.js";

type MessageParam = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type FunctionTool = OpenAI.Chat.Completions.ChatCompletionFunctionTool;
type ChunkDelta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta;

export interface OpenAIProviderOptions {
  /** Endpoint root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  readonly baseURL?: string;
  readonly apiKey: string;
  /** The model used when a request names none. */
  readonly model?: string;
  /** Extra headers sent with every request. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The `openai` client package, loaded when the first such provider is made. */
function openai(): typeof import("openai") {
  return requireOptional<typeof import("openai")>("openai", "an OpenAI-compatible model provider");
}

export class OpenAIProvider implements ModelProvider {
  readonly name = "openai";
  readonly #client: OpenAI;
  readonly #model: string | undefined;
  readonly #where: string;

  constructor(options: OpenAIProviderOptions) {
    const { OpenAI } = openai();
    this.#client = new OpenAI({
      apiKey: options.apiKey,
      maxRetries: 0,
      ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
      ...(options.headers === undefined ? {} : { defaultHeaders: { ...options.headers } }),
    });
    this.#model = options.model;
    this.#where = this.#client.baseURL;
  }

  async *stream(request: ProviderRequest): AsyncIterable<ProviderEvent> {
    const model = request.model || this.#model;
    if (!model) throw new ProviderError("the openai provider needs a model: none in the request and no default configured", false);
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    let usage: ProviderEvent | undefined;
    let finished = false;
    // The client listens on the signal it is given and never stops: given the turn's, a turn
    // of many rounds would pile listeners up on it. It gets one of its own per call, which
    // the turn's aborts, and which is let go when the call ends.
    const ownSignal = new AbortController();
    const abort = () => ownSignal.abort(request.signal.reason);
    if (request.signal.aborted) abort();
    else request.signal.addEventListener("abort", abort, { once: true });
    try {
      const stream = await this.#client.chat.completions.create(
        {
          model,
          messages: request.messages.map(toMessageParam),
          // Some compatible servers reject an empty tools array, so Chat mode sends none.
          ...(request.tools.length ? { tools: request.tools.map(toTool) } : {}),
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal: ownSignal.signal },
      );
      for await (const chunk of stream) {
        if (chunk.usage) usage = { type: "usage", input_tokens: chunk.usage.prompt_tokens, output_tokens: chunk.usage.completion_tokens };
        const choice = chunk.choices[0];
        if (!choice) continue;
        if (choice.finish_reason) finished = true;
        const delta = choice.delta as ChunkDelta & { reasoning_content?: unknown; reasoning?: unknown };
        // Not in the OpenAI schema: DeepSeek and vLLM stream reasoning as
        // `reasoning_content`, OpenRouter and Ollama as `reasoning`.
        const reasoning = delta.reasoning_content ?? delta.reasoning;
        if (typeof reasoning === "string" && reasoning !== "") yield { type: "reasoning", text: reasoning };
        if (delta.content) yield { type: "text_delta", text: delta.content };
        for (const part of delta.tool_calls ?? []) {
          // Fragments of one call share its index; only the first carries the id and name.
          const call = calls.get(part.index) ?? { id: "", name: "", arguments: "" };
          if (part.id) call.id = part.id;
          if (part.function?.name) call.name = part.function.name;
          if (part.function?.arguments) call.arguments += part.function.arguments;
          calls.set(part.index, call);
        }
      }
    } catch (error) {
      throw toProviderError(error, request.signal, this.#where);
    } finally {
      request.signal.removeEventListener("abort", abort);
    }
    // The client ends an aborted stream quietly instead of throwing: without this check a
    // cancelled answer would look like a complete one.
    request.signal.throwIfAborted();
    if (!finished) throw new ProviderError(`the stream from the model API at ${this.#where} ended before the answer finished`, true);
    if (calls.size) {
      const ordered = [...calls.entries()].sort(([a], [b]) => a - b);
      // Some servers send no call ids; the conversation needs one to pair a call with its result.
      yield {
        type: "tool_calls",
        calls: ordered.map(([index, c]): ToolCall => ({ id: c.id || `call_${index}`, name: c.name, arguments: c.arguments })),
      };
    }
    if (usage) yield usage;
  }
}

function toMessageParam(message: ChatMessage): MessageParam {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "assistant":
      if (!message.tool_calls?.length) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        // An answer that only calls tools has no text; null is what the API itself returns for it.
        content: message.content === "" ? null : message.content,
        tool_calls: message.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })),
      };
    case "tool":
      return { role: "tool", tool_call_id: message.tool_call_id, content: message.content };
  }
}

function toTool(tool: ToolSpec): FunctionTool {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/** Sorts a failure into retryable or not, with a message that says where and what. */
function toProviderError(error: unknown, signal: AbortSignal, where: string): unknown {
  if (signal.aborted) return signal.reason;
  if (error instanceof ProviderError) return error;
  const { APIConnectionError, APIError, APIUserAbortError } = openai();
  if (error instanceof APIUserAbortError) return error;
  if (error instanceof APIConnectionError) return new ProviderError(`could not reach the model API at ${where}: ${rootCause(error)}`, true);
  if (error instanceof APIError) {
    const detail = error.message.replace(/^\d{3}\s+/, "");
    // No status: an error event inside a stream that had started, which servers send when
    // they fail mid-answer (overload and the like), so trying again may help.
    if (error.status === undefined) return new ProviderError(`the model API at ${where} failed mid-stream: ${detail}`, true);
    const retryable = error.status === 408 || error.status === 429 || error.status >= 500;
    return new ProviderError(`the model API at ${where} answered HTTP ${error.status}: ${detail}`, retryable);
  }
  // Anything else while reading the body is the connection dropping mid-stream.
  return new ProviderError(`the stream from the model API at ${where} failed: ${rootCause(error)}`, true);
}

/** The innermost cause's message: `fetch failed` says less than `connect ECONNREFUSED 127.0.0.1:9`. */
function rootCause(error: unknown): string {
  let current = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}
