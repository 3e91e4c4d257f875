/**
 * The scripted model a gateway under test is pointed at: an OpenAI-compatible Chat
 * Completions endpoint (`POST /v1/chat/completions`, streaming SSE or one JSON answer) on
 * 127.0.0.1. Each scenario registers a script under a token it puts in its user input;
 * a request is matched to a script by the first registered token in its messages, so
 * scenarios running side by side never take each other's answers. Every call is
 * recorded and checked; a call no script expects gets an HTTP 400 naming it, which the
 * gateway reports as a failed turn, and the call is kept for the scenario to fail with.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { normalizeToolMap, type ToolMap, type ToolMapInput } from "./tool-contract.js";

/** The part of a Chat Completions request the scenarios look at. */
export interface ChatRequest {
  readonly model: string;
  readonly stream?: boolean;
  readonly messages: readonly ChatMessageIn[];
  readonly tools?: readonly { type: string; function: { name: string } }[];
  readonly stream_options?: { include_usage?: boolean };
}

export interface ChatMessageIn {
  readonly role: string;
  readonly content?: string | null | readonly { type: string; text?: string }[];
  readonly tool_call_id?: string;
  readonly tool_calls?: readonly { id: string; function: { name: string; arguments: string } }[];
}

/** A tool call the model makes, named by its reference tool name and argument names (both mapped through the tool map). */
export interface ScriptedToolCall {
  readonly tool: string;
  readonly args: unknown;
}

/** What the model answers to one call. */
export interface ModelReply {
  readonly text?: string;
  /** How many pieces the text streams in (default 1). */
  readonly chunks?: number;
  readonly reasoning?: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  readonly usage?: { readonly prompt_tokens: number; readonly completion_tokens: number };
  /** Answer with this HTTP error instead (400 and other 4xx are not worth retrying). */
  readonly error?: { readonly status: number; readonly message: string };
  /** Holds the answer until this settles (a scenario keeps a turn running this way). */
  readonly hold?: Promise<unknown>;
  /**
   * With `hold`, a streamed answer sends its first chunks at once (the role, the reasoning
   * and this many pieces of the text) and holds the rest: the turn has an item open while
   * it waits. A call that is not streamed is held whole.
   */
  readonly holdAfterPieces?: number;
}

/** One expected call: the answer, and an optional check of the request (returns a problem or undefined). */
export interface ScriptedCall {
  readonly reply: ModelReply;
  readonly expect?: (request: ChatRequest) => string | undefined;
}

/** A registered script: what arrived, and what was wrong with it. */
export interface ScriptHandle {
  readonly token: string;
  /** Every request matched to this script, in order. */
  readonly calls: ChatRequest[];
  /** Problems found: failed expectations and calls past the end of the script. */
  readonly problems: string[];
  /** Resolves when the n-th call (1-based) has arrived. */
  waitForCall(n: number): Promise<ChatRequest>;
  /** Called with each problem as it is found. */
  onProblem?: (problem: string) => void;
  /** Called with each HTTP exchange of this script: the gateway's request, then the model's answer. */
  onExchange?: (kind: "request" | "response", frame: unknown) => void;
  /** Connections of this script's calls the gateway closed before the answer ended, each described. */
  readonly dropped: string[];
}

export interface ModelServerOptions {
  /** Reference tool and argument names → the gateway's own (see tool-contract.ts). */
  readonly toolMap?: ToolMapInput;
}

interface Script extends ScriptHandle {
  readonly queue: ScriptedCall[];
  readonly waiters: { n: number; resolve: (r: ChatRequest) => void }[];
}

export class ModelServer {
  /** Calls that matched no script: each described for the report. */
  readonly unscripted: string[] = [];
  /**
   * Requests the gateway abandoned before the server could read them whole (it closed the
   * connection before the body ended), each described. A gateway may do that (a cancelled
   * turn, a crash of its own); the server notes it and serves on.
   */
  readonly abandoned: string[] = [];
  /** Called with each connection the gateway closed before its exchange ended, described. */
  onDrop?: (text: string) => void;
  private readonly scripts = new Map<string, Script>();
  private readonly flakyPages = new Map<string, { failures: number; body: string; requests: number }>();
  private readonly toolMap: ToolMap;
  private server: Server | undefined;
  private baseUrl = "";

  constructor(options: ModelServerOptions = {}) {
    this.toolMap = normalizeToolMap(options.toolMap);
  }

  /** The base URL a client is configured with, ending in `/v1`. */
  get url(): string {
    if (!this.server) throw new Error("the model server is not started");
    return this.baseUrl;
  }

  /** Listens on 127.0.0.1 (`port` 0 picks a free one) and resolves with the base URL. */
  async start(port = 0): Promise<string> {
    // Nothing a gateway does to a connection may end the server: a request it abandons, a
    // response it stops reading. Every failure of one exchange stays in that exchange.
    const server = createServer((req, res) => {
      res.on("error", () => undefined);
      this.handle(req, res).catch((error: unknown) => {
        const text = `${req.method} ${req.url}: ${(error as Error).message}`;
        this.abandoned.push(text);
        this.onDrop?.(text);
        if (!res.headersSent && !res.destroyed)
          sendError(res, 500, `the scripted model server could not answer: ${(error as Error).message}`);
        else res.destroy();
      });
    });
    server.on("clientError", (_error, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error) => reject(new Error(`the scripted model server cannot listen on 127.0.0.1:${port}: ${error.message}`)));
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    return this.baseUrl;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** A fresh token to put in a scenario's user input. */
  static newToken(): string {
    return `cert-${randomBytes(6).toString("hex")}`;
  }

  /** The gateway's name for a reference tool. */
  toolName(reference: string): string {
    return this.toolMap[reference]?.name ?? reference;
  }

  /** A reference tool's arguments under the gateway's argument names. */
  toolArgs(reference: string, args: unknown): unknown {
    const names = this.toolMap[reference]?.args;
    if (!names || typeof args !== "object" || args === null || Array.isArray(args)) return args;
    return Object.fromEntries(Object.entries(args).map(([k, v]) => [names[k] ?? k, v]));
  }

  /** Registers the calls the model expects for `token`, in order. */
  script(token: string, calls: readonly ScriptedCall[]): ScriptHandle {
    const script: Script = {
      token,
      calls: [],
      problems: [],
      queue: [...calls],
      waiters: [],
      dropped: [],
      waitForCall: (n) => {
        const arrived = script.calls[n - 1];
        return arrived ? Promise.resolve(arrived) : new Promise((resolve) => script.waiters.push({ n, resolve }));
      },
    };
    this.scripts.set(token, script);
    return script;
  }

  /**
   * A page for a fetch tool: it answers HTTP 503 `failures` times, then 200 with `body`.
   * Returns its URL and a count of the requests it got.
   */
  flakyPage(failures: number, body: string): { url: string; requests: () => number } {
    const id = randomBytes(6).toString("hex");
    const page = { failures, body, requests: 0 };
    this.flakyPages.set(id, page);
    return { url: `${this.url.replace(/\/v1$/, "")}/pages/${id}`, requests: () => page.requests };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    if (body === undefined) {
      // The gateway closed the connection before its request ended: there is nobody to answer.
      const text = `${req.method} ${req.url}: the gateway closed the connection before the request body ended`;
      this.abandoned.push(text);
      this.onDrop?.(text);
      return;
    }
    const page = req.method === "GET" ? this.flakyPages.get(/^\/pages\/([0-9a-f]+)$/.exec(req.url ?? "")?.[1] ?? "") : undefined;
    if (page) {
      page.requests++;
      if (page.requests <= page.failures) return sendError(res, 503, "the page is failing on purpose");
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(page.body);
      return;
    }
    if (req.method !== "POST" || !/\/chat\/completions$/.test(req.url ?? "")) {
      return sendError(res, 404, `no such endpoint: ${req.method} ${req.url}`);
    }
    let request: ChatRequest;
    try {
      request = JSON.parse(body) as ChatRequest;
      if (!Array.isArray(request.messages)) throw new Error("messages is not an array");
    } catch (error) {
      return sendError(res, 400, `the request body is not a chat completion request: ${(error as Error).message}`);
    }
    const script = this.scriptFor(request);
    if (!script) {
      const described = `an unscripted model call (no scenario token in its ${request.messages.length} messages; last message: ${preview(messageText(request.messages.at(-1)))})`;
      this.unscripted.push(described);
      return sendError(res, 400, described);
    }
    script.calls.push(request);
    script.onExchange?.("request", { http: `${req.method} ${req.url}`, body: request });
    const n = script.calls.length;
    for (const w of script.waiters.filter((w) => w.n <= n)) {
      script.waiters.splice(script.waiters.indexOf(w), 1);
      w.resolve(script.calls[w.n - 1]!);
    }
    const step = script.queue.shift();
    if (!step) {
      // A call whose connection the gateway closed still used its step: a retry of it is one call too many.
      const earlier = script.dropped.length ? `; the gateway closed the connection of ${script.dropped.join(", ")}` : "";
      const described = `an unscripted model call: call ${n} for ${script.token}, whose script has ${n - 1} (last message: ${preview(messageText(request.messages.at(-1)))})${earlier}`;
      script.problems.push(described);
      script.onProblem?.(described);
      script.onExchange?.("response", { status: 400, body: errorBody(400, described) });
      return sendError(res, 400, described);
    }
    const problem = step.expect?.(request);
    if (problem) {
      script.problems.push(`model call ${n}: ${problem}`);
      script.onProblem?.(`model call ${n}: ${problem}`);
    }
    const reply = step.reply;
    const gone = () => res.destroyed || res.socket?.destroyed !== false;
    const partly = request.stream === true && reply.hold !== undefined && reply.holdAfterPieces !== undefined && !reply.error;
    if (reply.hold && !partly) await reply.hold.catch(() => undefined);
    // The gateway gave up on a held call (a cancelled turn): expected, and not told.
    if (gone()) return this.dropped(script, n, "before the answer began", reply.hold !== undefined);
    if (reply.error) {
      script.onExchange?.("response", { status: reply.error.status, body: errorBody(reply.error.status, reply.error.message) });
      return sendError(res, reply.error.status, reply.error.message);
    }
    // Answered first, then recorded: the answer must not depend on anyone listening.
    if (request.stream) {
      const sent = await this.stream(res, request, reply, partly ? { after: reply.holdAfterPieces!, until: reply.hold! } : undefined);
      script.onExchange?.("response", { status: 200, stream: sent.events });
      if (sent.cut) this.dropped(script, n, sent.cut.where, sent.cut.held);
      return;
    }
    const completion = this.answer(res, request, reply);
    script.onExchange?.("response", { status: 200, body: completion });
  }

  /**
   * Notes a call whose connection the gateway closed before the answer ended (`when`: how
   * far it got); one it closed while the answer was held (`held`) is what a cancelled turn
   * does, and is not told.
   */
  private dropped(script: Script, n: number, when: string, held: boolean): void {
    script.dropped.push(`model call ${n} ${when}`);
    if (!held) this.onDrop?.(`the gateway closed its connection to the scripted model (call ${n} for ${script.token}) ${when}`);
    script.onExchange?.("response", { closedByGateway: when });
  }

  private scriptFor(request: ChatRequest): Script | undefined {
    for (const message of request.messages) {
      const text = messageText(message);
      for (const match of text.matchAll(/cert-[0-9a-f]{12}/g)) {
        const script = this.scripts.get(match[0]);
        if (script) return script;
      }
    }
    return undefined;
  }

  private toolCalls(reply: ModelReply) {
    return (reply.toolCalls ?? []).map((call, index) => ({
      index,
      id: `call_${randomBytes(4).toString("hex")}`,
      type: "function" as const,
      function: { name: this.toolName(call.tool), arguments: JSON.stringify(this.toolArgs(call.tool, call.args)) },
    }));
  }

  /**
   * Answers with server-sent events; returns the events' data, in order, for the transcript,
   * and `cut` when the gateway closed the connection before the last of them (where it was).
   * With `pause`, the events after the first `pause.after` pieces of text wait for `pause.until`.
   */
  private async stream(
    res: ServerResponse,
    request: ChatRequest,
    reply: ModelReply,
    pause?: { after: number; until: Promise<unknown> },
  ): Promise<{ events: unknown[]; cut?: { where: string; held: boolean } }> {
    const id = `chatcmpl-${randomBytes(6).toString("hex")}`;
    const events: unknown[] = [];
    const event = (data: unknown) => {
      events.push(data);
      res.write(`data: ${JSON.stringify(data)}\n\n`);
    };
    const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) =>
      event({ id, object: "chat.completion.chunk", created: now(), model: request.model, choices: [{ index: 0, delta, finish_reason }] });
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    chunk({ role: "assistant", content: "" });
    if (reply.reasoning) chunk({ reasoning_content: reply.reasoning });
    const pieces = split(reply.text ?? "", reply.chunks ?? 1);
    for (const [i, piece] of pieces.entries()) {
      if (pause && i === pause.after) {
        await pause.until.catch(() => undefined);
        if (res.destroyed || res.socket?.destroyed !== false)
          return { events, cut: { where: `in the middle of the stream, after ${i} of ${pieces.length} pieces of text`, held: true } };
      }
      chunk({ content: piece });
    }
    if (pause && pause.after >= pieces.length) await pause.until.catch(() => undefined);
    if (res.destroyed || res.socket?.destroyed !== false)
      return { events, cut: { where: "before the last chunk of the stream", held: pause !== undefined } };
    const calls = this.toolCalls(reply);
    if (calls.length) chunk({ tool_calls: calls });
    chunk({}, calls.length ? "tool_calls" : "stop");
    if (request.stream_options?.include_usage && reply.usage) {
      event({ id, object: "chat.completion.chunk", created: now(), model: request.model, choices: [], usage: usageOf(reply.usage) });
    }
    events.push("[DONE]");
    res.end("data: [DONE]\n\n");
    return { events };
  }

  /** Answers with one chat.completion; returns it, for the transcript. */
  private answer(res: ServerResponse, request: ChatRequest, reply: ModelReply): unknown {
    const calls = this.toolCalls(reply).map(({ index: _index, ...call }) => call);
    const message = {
      role: "assistant",
      content: reply.text ?? (calls.length ? null : ""),
      ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
      ...(calls.length ? { tool_calls: calls } : {}),
      refusal: null,
    };
    const completion = {
      id: `chatcmpl-${randomBytes(6).toString("hex")}`,
      object: "chat.completion",
      created: now(),
      model: request.model,
      choices: [{ index: 0, message, finish_reason: calls.length ? "tool_calls" : "stop", logprobs: null }],
      ...(reply.usage ? { usage: usageOf(reply.usage) } : {}),
    };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(completion));
    return completion;
  }
}

/** The text of a message, whether its content is a string or a list of parts. */
export function messageText(message: ChatMessageIn | undefined): string {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => p.text ?? "").join("");
  return "";
}

function usageOf(usage: NonNullable<ModelReply["usage"]>) {
  return { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
}

function split(text: string, pieces: number): string[] {
  if (text === "") return [];
  const size = Math.max(1, Math.ceil(text.length / Math.max(1, pieces)));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function errorBody(status: number, message: string) {
  return { error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", code: null } };
}

function sendError(res: ServerResponse, status: number, message: string): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(errorBody(status, message)));
}

/** The request's body, or undefined when the client closed the connection before it ended. */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of req) chunks.push(chunk as Buffer);
  } catch (error) {
    // "aborted" (ECONNRESET): the client went away in the middle of its request.
    if (req.destroyed || (error as NodeJS.ErrnoException).code === "ECONNRESET" || (error as Error).message === "aborted") return undefined;
    throw error;
  }
  return Buffer.concat(chunks).toString("utf8");
}

const now = () => Math.floor(Date.now() / 1000);
const preview = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
