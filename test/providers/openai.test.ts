/**
 * The OpenAI provider against a local server speaking the Chat Completions streaming
 * format: what it sends, how it maps the chunks, and how it sorts failures.
 */
import { getEventListeners } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OpenAIProvider } from "../../packages/gateway/src/providers/openai.js";
import type { ChatMessage, ProviderEvent, ToolSpec } from "../../packages/gateway/src/providers/provider.js";
import { ProviderError } from "../../packages/gateway/src/providers/provider.js";

type Handler = (req: IncomingMessage, res: ServerResponse, body: unknown) => void;

let handler: Handler;
const received: { headers: IncomingMessage["headers"]; url: string | undefined; body: Record<string, unknown> }[] = [];
const server = createServer((req, res) => {
  let text = "";
  req.setEncoding("utf8");
  req.on("data", (chunk: string) => (text += chunk));
  req.on("end", () => {
    const body = JSON.parse(text) as Record<string, unknown>;
    received.push({ headers: req.headers, url: req.url, body });
    handler(req, res, body);
  });
});
let baseURL: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  received.length = 0;
});

/** One streamed chunk in the documented shape. */
function chunk(delta: Record<string, unknown>, finish_reason: string | null = null): Record<string, unknown> {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "test-model",
    choices: [{ index: 0, delta, finish_reason }],
  };
}
const usageChunk = {
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "test-model",
  choices: [],
  usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
};

function sse(chunks: readonly unknown[], done = true): Handler {
  return (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
    res.end(done ? "data: [DONE]\n\n" : undefined);
  };
}

function status(code: number, message: string): Handler {
  return (_req, res) => {
    res.writeHead(code, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message, type: "test_error", code: null } }));
  };
}

const tools: ToolSpec[] = [
  {
    name: "shell",
    description: "run a command",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
];

async function collect(
  provider: OpenAIProvider,
  messages: readonly ChatMessage[],
  options: { tools?: readonly ToolSpec[]; signal?: AbortSignal; model?: string } = {},
): Promise<ProviderEvent[]> {
  const events: ProviderEvent[] = [];
  const stream = provider.stream({
    model: options.model ?? "test-model",
    messages,
    tools: options.tools ?? [],
    signal: options.signal ?? new AbortController().signal,
  });
  for await (const event of stream) events.push(event);
  return events;
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

const hello: ChatMessage[] = [{ role: "user", content: "hi" }];

describe("OpenAIProvider", () => {
  it("streams content deltas as text and reports usage", async () => {
    handler = sse([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hel" }),
      chunk({ content: "lo!" }),
      chunk({}, "stop"),
      usageChunk,
    ]);
    const provider = new OpenAIProvider({ baseURL, apiKey: "sk-test" });
    expect(provider.name).toBe("openai");
    expect(await collect(provider, hello)).toEqual([
      { type: "text_delta", text: "Hel" },
      { type: "text_delta", text: "lo!" },
      { type: "usage", input_tokens: 12, output_tokens: 5 },
    ]);
  });

  it("sends the messages, the tools as function tools and the stream flags", async () => {
    handler = sse([chunk({ content: "ok" }, "stop")]);
    const provider = new OpenAIProvider({ baseURL, apiKey: "sk-test", headers: { "x-gateway": "turnspec" } });
    const messages: ChatMessage[] = [
      { role: "system", content: "be brief" },
      { role: "user", content: "list files" },
      { role: "assistant", content: "", tool_calls: [{ id: "call_1", name: "shell", arguments: '{"command":"ls"}' }] },
      { role: "tool", tool_call_id: "call_1", content: "a.txt" },
      { role: "assistant", content: "There is a.txt." },
      { role: "user", content: "thanks" },
    ];
    await collect(provider, messages, { tools });
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request!.url).toBe("/v1/chat/completions");
    expect(request!.headers.authorization).toBe("Bearer sk-test");
    expect(request!.headers["x-gateway"]).toBe("turnspec");
    expect(request!.body).toEqual({
      model: "test-model",
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "list files" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "shell", arguments: '{"command":"ls"}' } }],
        },
        { role: "tool", tool_call_id: "call_1", content: "a.txt" },
        { role: "assistant", content: "There is a.txt." },
        { role: "user", content: "thanks" },
      ],
      tools: [{ type: "function", function: { name: "shell", description: "run a command", parameters: tools[0]!.parameters } }],
    });
  });

  it("sends no tools field in Chat mode, and the default model when the request names none", async () => {
    handler = sse([chunk({ content: "ok" }, "stop")]);
    await collect(new OpenAIProvider({ baseURL, apiKey: "k", model: "default-model" }), hello, { model: "" });
    expect(received[0]!.body).not.toHaveProperty("tools");
    expect(received[0]!.body.model).toBe("default-model");
  });

  it("assembles tool calls from fragments into one event at the end", async () => {
    handler = sse([
      chunk({
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "shell", arguments: "" } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"comm' } }] }),
      chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "read_file", arguments: '{"path":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'and":"ls -l"}' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '"x.txt"}' } }] }),
      chunk({}, "tool_calls"),
      usageChunk,
    ]);
    const events = await collect(new OpenAIProvider({ baseURL, apiKey: "k" }), hello, { tools });
    expect(events).toEqual([
      {
        type: "tool_calls",
        calls: [
          { id: "call_a", name: "shell", arguments: '{"command":"ls -l"}' },
          { id: "call_b", name: "read_file", arguments: '{"path":"x.txt"}' },
        ],
      },
      { type: "usage", input_tokens: 12, output_tokens: 5 },
    ]);
  });

  it("gives an id to a tool call the server sent without one", async () => {
    handler = sse([chunk({ tool_calls: [{ index: 0, function: { name: "shell", arguments: "{}" } }] }, "tool_calls")]);
    const events = await collect(new OpenAIProvider({ baseURL, apiKey: "k" }), hello, { tools });
    expect(events).toEqual([{ type: "tool_calls", calls: [{ id: "call_0", name: "shell", arguments: "{}" }] }]);
  });

  it("streams reasoning_content and reasoning as reasoning", async () => {
    handler = sse([chunk({ reasoning_content: "Let me " }), chunk({ reasoning: "think." }), chunk({ content: "42" }, "stop")]);
    expect(await collect(new OpenAIProvider({ baseURL, apiKey: "k" }), hello)).toEqual([
      { type: "reasoning", text: "Let me " },
      { type: "reasoning", text: "think." },
      { type: "text_delta", text: "42" },
    ]);
  });

  it.each([
    [500, true],
    [503, true],
    [429, true],
    [400, false],
    [401, false],
    [404, false],
  ])("sorts HTTP %i as retryable=%s, naming the status", async (code, retryable) => {
    handler = status(code, `problem ${code}`);
    const error = await failure(collect(new OpenAIProvider({ baseURL, apiKey: "k" }), hello));
    expect(error.retryable).toBe(retryable);
    expect(error.message).toBe(`the model API at ${baseURL} answered HTTP ${code}: problem ${code}`);
    // The client's own retries are off: the engine decides.
    expect(received).toHaveLength(1);
  });

  it("sorts an unreachable server as retryable", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await failure(collect(new OpenAIProvider({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "k" }), hello));
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(`could not reach the model API at http://127.0.0.1:${port}/v1: connect ECONNREFUSED 127.0.0.1:${port}`);
  });

  it("sorts an error event inside the stream as retryable", async () => {
    handler = sse([chunk({ content: "par" }), { error: { message: "overloaded", type: "server_error" } }]);
    const error = await failure(collect(new OpenAIProvider({ baseURL, apiKey: "k" }), hello));
    expect(error).toMatchObject({ retryable: true, message: `the model API at ${baseURL} failed mid-stream: overloaded` });
  });

  it("fails a stream that ends before the answer finished", async () => {
    handler = sse([chunk({ content: "half an ans" })], false);
    const error = await failure(collect(new OpenAIProvider({ baseURL, apiKey: "k" }), hello));
    expect(error).toMatchObject({
      retryable: true,
      message: `the stream from the model API at ${baseURL} ended before the answer finished`,
    });
  });

  it("stops mid-stream when the signal aborts, with the signal's reason", { timeout: 10_000 }, async () => {
    // The server sends one delta and then holds the stream open.
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify(chunk({ content: "first" }))}\n\n`);
    };
    const controller = new AbortController();
    const reason = new Error("turn cancelled");
    const events: ProviderEvent[] = [];
    const run = (async () => {
      for await (const event of new OpenAIProvider({ baseURL, apiKey: "k" }).stream({
        model: "m",
        messages: hello,
        tools: [],
        signal: controller.signal,
      })) {
        events.push(event);
        controller.abort(reason);
      }
    })();
    await expect(run).rejects.toBe(reason);
    expect(events).toEqual([{ type: "text_delta", text: "first" }]);
  });

  it("leaves nothing listening on the signal it is given once a call ends, however many calls share it", async () => {
    // A turn's signal spans all its rounds; the HTTP client listens on whatever signal it is handed.
    handler = sse([chunk({ content: "ok" }, "stop")]);
    const provider = new OpenAIProvider({ baseURL, apiKey: "k" });
    const turn = new AbortController();
    for (let round = 0; round < 12; round++) await collect(provider, hello, { signal: turn.signal });
    handler = status(500, "down");
    await failure(collect(provider, hello, { signal: turn.signal }));
    expect(getEventListeners(turn.signal, "abort")).toEqual([]);
  });

  it("fails without a model to ask", async () => {
    const error = await failure(collect(new OpenAIProvider({ baseURL, apiKey: "k" }), hello, { model: "" }));
    expect(error).toMatchObject({
      retryable: false,
      message: "the openai provider needs a model: none in the request and no default configured",
    });
  });
});
