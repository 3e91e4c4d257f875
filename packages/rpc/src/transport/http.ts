/**
 * JSON-RPC over HTTP, as OpenRPC services such as Ethereum nodes speak it: each call is one
 * POST whose body is one message or a batch, and whose response body is the reply (a
 * response or an array of them), or empty (204) when nothing is owed (only notifications).
 * Requests flow one way only: the client posts, the server answers.
 *
 * - `HttpClientTransport` is a `Transport` for `RpcClient` and generated clients: `send`
 *   posts the frame and hands the reply, when there is one, to `onmessage`, where the
 *   client matches it to its requests like any other frame.
 * - `startHttpServer` serves a frame handler (a dispatcher's `handleFrame`) at one path:
 *   POST with a JSON body only, a body over `maxFrameBytes` refused with 413, anything else
 *   with 405 or 415, so that a browser form or a stray GET never reaches the handler.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Transport } from "../index.js";
import { checkMaxFrameBytes } from "./frame-limit.js";

export interface HttpClientOptions {
  /** Headers sent with every POST (an Authorization header, say). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Milliseconds a POST may take before it fails; default none. */
  readonly timeoutMs?: number;
  /** The fetch to use; default the global one. */
  readonly fetch?: typeof fetch;
}

/** A reply the server sent that is not JSON-RPC: its HTTP status and the start of its body. */
export class HttpTransportError extends Error {
  override readonly name = "HttpTransportError";
  constructor(
    message: string,
    readonly status: number | undefined,
  ) {
    super(message);
  }
}

/** The client end: one POST per frame to `url`. */
export class HttpClientTransport implements Transport {
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private closed = false;
  private readonly inFlight = new Set<AbortController>();

  constructor(
    readonly url: string,
    private readonly options: HttpClientOptions = {},
  ) {}

  async start(): Promise<void> {
    // Nothing to open: each frame is its own POST.
  }

  async send(frame: string): Promise<void> {
    if (this.closed) throw new Error("the HTTP transport is closed");
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = this.options.timeoutMs === undefined ? undefined : setTimeout(() => controller.abort(), this.options.timeoutMs);
    let response: Response;
    try {
      response = await (this.options.fetch ?? fetch)(this.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json", ...this.options.headers },
        body: frame,
        signal: controller.signal,
      });
    } catch (error) {
      throw new HttpTransportError(`POST ${this.url} failed: ${(error as Error).message}`, undefined);
    } finally {
      if (timer) clearTimeout(timer);
      this.inFlight.delete(controller);
    }
    const body = await response.text();
    if (body.trim() === "") {
      if (!response.ok)
        this.report(
          new HttpTransportError(`POST ${this.url} answered ${response.status} ${response.statusText} with no body`, response.status),
        );
      return;
    }
    // A JSON-RPC reply is handed over whatever the status (some servers answer an error with 400 or 500).
    try {
      JSON.parse(body);
    } catch {
      this.report(
        new HttpTransportError(
          `POST ${this.url} answered ${response.status} with a body that is not JSON: ${body.slice(0, 120)}`,
          response.status,
        ),
      );
      return;
    }
    if (!this.closed) this.onmessage?.(body);
  }

  private report(error: Error): void {
    if (this.onerror) this.onerror(error);
    else throw error;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const controller of this.inFlight) controller.abort();
    this.onclose?.();
  }
}

export interface HttpServerOptions {
  /** Address to listen on. Default 127.0.0.1. */
  readonly host?: string;
  /** Port; 0 (the default) picks a free one, reported in the result. */
  readonly port?: number;
  /** The path served; other paths get 404. Default "/". */
  readonly path?: string;
  /** Largest body accepted, in bytes; a larger one gets 413. */
  readonly maxFrameBytes: number;
  /** Headers every answer carries (CORS for a browser page, say). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Errors the server cannot answer (a handler that throws); default ignored. */
  readonly onError?: (error: Error) => void;
}

export interface RunningHttpServer {
  /** `http://host:port/path`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** One POST's body, keeping nothing past `limit` bytes (the rest is read and dropped, so that the answer reaches the client). */
function readBody(request: IncomingMessage, limit: number): Promise<string | "too large"> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      if (size > limit) return;
      size += chunk.length;
      if (size > limit) resolve("too large");
      else chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

/**
 * Serves `handleFrame` (one frame in, the reply or undefined out; a dispatcher's
 * `handleFrame` bound to its context) over HTTP POST.
 */
export async function startHttpServer(
  handleFrame: (frame: string) => Promise<string | undefined>,
  options: HttpServerOptions,
): Promise<RunningHttpServer> {
  checkMaxFrameBytes(options.maxFrameBytes, "startHttpServer");
  const path = options.path ?? "/";
  const answer = (response: ServerResponse, status: number, body?: string, extra: Record<string, string> = {}) => {
    response.writeHead(status, { ...options.headers, ...extra, ...(body === undefined ? {} : { "content-type": "application/json" }) });
    response.end(body);
  };
  const server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? "/", "http://localhost");
      if (url.pathname !== path) return answer(response, 404);
      if (request.method !== "POST") return answer(response, 405, undefined, { allow: "POST" });
      const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (type !== "application/json") return answer(response, 415);
      const body = await readBody(request, options.maxFrameBytes);
      if (body === "too large") {
        // The connection is closed once the answer is sent: what else the client sends is not read.
        response.on("finish", () => request.socket.destroy());
        return answer(response, 413, undefined, { connection: "close" });
      }
      const reply = await handleFrame(body);
      if (reply === undefined) answer(response, 204);
      else answer(response, 200, reply);
    })().catch((error: unknown) => {
      options.onError?.(error instanceof Error ? error : new Error(String(error)));
      if (!response.headersSent) answer(response, 500);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(":") ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}${path}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
