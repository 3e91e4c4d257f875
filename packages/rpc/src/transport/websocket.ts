/**
 * The WebSocket transport: one JSON-RPC message (or batch) per WebSocket message.
 *
 * The server authenticates during the HTTP upgrade (a bearer token, or the caller's own
 * `authenticate` hook), so a client it refuses gets HTTP 401 and no WebSocket at all: not
 * one of its messages is read.
 * Compression is off in both directions: a compressed frame's size says nothing about
 * what it costs to inflate, which would make the size limit meaningless.
 *
 * The size limit has two tiers, because `ws` must read a message whole before it can read
 * the next one (it cannot skip a frame's payload):
 *   - a message over `maxFrameBytes` but within `readLimitBytes` is read, dropped and
 *     answered with the server's `oversizedReply` (for the reference gateway,
 *     payload_too_large with id null); the connection stays usable. A server that gives no
 *     reply closes the connection with 1009 instead;
 *   - a message over `readLimitBytes` (default: twice the limit, and at least 1 MiB more)
 *     is refused by `ws` as soon as its header announces the size, and the connection is
 *     closed with 1009 (message too big), as RFC 6455 prescribes.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { Transport } from "../index.js";
import { CLIENT_MAX_FRAME_BYTES, checkMaxFrameBytes, type OversizedReply } from "./frame-limit.js";
import { bearerTokenCheck, originAllowed, presentedToken } from "./http-guard.js";

/** Milliseconds a closing handshake may take before the socket is dropped. */
const CLOSE_TIMEOUT_MS = 2000;

/** What the server knows of a connection when it hands it over. The token is never part of it. */
export interface ConnectionInfo {
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  /** The request path, without the query (which may carry the token). */
  readonly path: string;
}

export interface WebSocketServerOptions {
  /** Address to listen on. Default 127.0.0.1: a gateway runs tools, so it is local unless asked otherwise. */
  readonly host?: string;
  /** Port to listen on; 0 (the default) picks a free one, reported in the result. */
  readonly port?: number;
  /** The bearer token every client must present; undefined serves without authentication. */
  readonly token?: string | undefined;
  /**
   * Decides on each upgrade request instead of `token` (give one or the other): resolves
   * true to accept the connection, false to refuse it with HTTP 401. A hook that throws
   * or rejects refuses too, and its error goes to `onError`.
   */
  readonly authenticate?: (request: IncomingMessage) => boolean | Promise<boolean>;
  /**
   * Origins (`https://app.example.com`, or `null` for a page with an opaque origin) whose
   * pages may connect. Browsers send Origin with every WebSocket upgrade, and a token alone
   * does not stop a page on another site from using one it learned; clients outside a
   * browser send none and are not affected. Default: no browser origin.
   */
  readonly allowedOrigins?: readonly string[];
  /** Largest message accepted, in bytes; a larger one is answered with `oversizedReply`. */
  readonly maxFrameBytes: number;
  /**
   * The frame sent back for a message over `maxFrameBytes`, which is dropped unread.
   * Without it, such a message closes the connection with 1009 (message too big).
   */
  readonly oversizedReply?: OversizedReply;
  /** Largest message read at all; a larger one closes the connection with 1009. See the file comment. */
  readonly readLimitBytes?: number;
  /** Called with each accepted connection; set its callbacks and start it. */
  readonly onConnection: (transport: WebSocketTransport, info: ConnectionInfo) => void;
  /** Called after a message over the limit was answered (or its connection closed), for the server's log. */
  readonly onOversized?: (bytes: number, info: ConnectionInfo) => void;
  /**
   * Sends the payload_too_large answer on its connection. Default: at once. A server that
   * holds every frame behind a barrier (the gateway's commit) sends this one the same way.
   */
  readonly sendOversizedAnswer?: (frame: string, transport: WebSocketTransport) => void;
  /** Errors that belong to no connection (a throwing onConnection, a failing server socket). */
  readonly onError?: (error: Error) => void;
  /**
   * Called with each upgrade request the server refused, for its log: a browser is not told
   * why its connection failed, so the server's log is the only place that says.
   */
  readonly onRefused?: (refusal: UpgradeRefusal) => void;
  /** Bytes a connection may hold unsent before it is closed (1008) as not reading. Default DEFAULT_MAX_BUFFERED_BYTES. */
  readonly maxBufferedBytes?: number;
}

/**
 * An upgrade request the server refused, and why. The token presented is never part of it.
 *   - `origin`: a browser page whose Origin is not allowed (HTTP 403);
 *   - `no_token`, `wrong_token`: the bearer token is missing, or does not match (HTTP 401);
 *   - `authenticate`: the caller's `authenticate` hook said no, or failed (HTTP 401).
 */
export interface UpgradeRefusal {
  readonly cause: "origin" | "no_token" | "wrong_token" | "authenticate";
  readonly status: 401 | 403;
  /** The request's Origin header, when it had one. */
  readonly origin?: string;
  readonly remoteAddress: string | undefined;
}

export interface RunningWebSocketServer {
  /** ws://host:port/ */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, closes every connection (1001, going away) and resolves once all are closed. */
  close(): Promise<void>;
}

/** A message's payload as `ws` delivers it. */
type RawData = Buffer | ArrayBuffer | Buffer[];

/**
 * What the transport uses of a `ws` WebSocket, declared here so that these declarations need
 * no @types/ws in a project that uses them.
 */
export interface WsSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  readonly extensions: string;
  send(data: string, options: { binary: boolean }, callback: (error?: Error) => void): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  on(event: "message", listener: (data: RawData) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  once(event: "close", listener: (code: number) => void): unknown;
}

/** The `ws` package, an optional peer dependency: loaded when a WebSocket is first used. */
async function loadWs(): Promise<typeof import("ws")> {
  try {
    return await import("ws");
  } catch (error) {
    if ((error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
    throw new Error("WebSocket in Node needs the ws package, which is not installed: run npm install ws");
  }
}

/** WebSocket ready states (the same in every implementation). */
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

/** Bytes a connection may hold unsent (WebSocketServerOptions.maxBufferedBytes). */
export const DEFAULT_MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

/** One WebSocket connection as a transport, on either side. */
export class WebSocketTransport implements Transport {
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private started = false;
  /** Work that arrived before start(), replayed in order by it. */
  private queue: Array<() => void> = [];
  private closeNotified = false;
  private closeCodeValue: number | undefined;
  private readonly closed: Promise<void>;

  constructor(
    private readonly socket: WsSocket,
    private readonly maxFrameBytes: number,
    private readonly oversized: (bytes: number, transport: WebSocketTransport) => void,
    /** Bytes allowed to wait unsent for a peer that does not read; past them the connection is closed. */
    private readonly maxBufferedBytes = DEFAULT_MAX_BUFFERED_BYTES,
  ) {
    // Listened to from the start: ws emits messages as soon as the connection is open.
    socket.on("message", (data: RawData) => {
      const bytes = byteLength(data);
      const work =
        bytes > this.maxFrameBytes
          ? () => this.oversized(bytes, this)
          : // Binary messages are read as UTF-8 text too: a frame is a frame, whatever the opcode.
            () => this.deliver(toBuffer(data).toString("utf8"));
      if (this.started) work();
      else this.queue.push(work);
    });
    socket.on("error", (error) => this.onerror?.(error));
    this.closed = new Promise<void>((resolve) => {
      socket.once("close", (code: number) => {
        this.closeCodeValue = code;
        this.queue = [];
        resolve();
        this.notifyClose();
      });
    });
  }

  /** The negotiated extensions: always empty, since compression is off on both sides. */
  get extensions(): string {
    return this.socket.extensions;
  }

  /** The close code, once the connection has closed (1009 when a message was over the read limit). */
  get closeCode(): number | undefined {
    return this.closeCodeValue;
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const pending = this.queue;
    this.queue = [];
    for (const work of pending) work();
  }

  /** Sends one frame as a text message; resolves once it is written to the socket. */
  send(frame: string): Promise<void> {
    if (this.socket.readyState !== OPEN) {
      return Promise.reject(new Error("the WebSocket connection is closed"));
    }
    // A peer that stops reading must not make this side buffer without limit: it is
    // dropped (1008), and a client that reconnects catches up from the event log.
    const waiting = this.socket.bufferedAmount + Buffer.byteLength(frame);
    if (waiting > this.maxBufferedBytes) {
      void this.close(1008, "the peer does not read its messages");
      return Promise.reject(
        new Error(
          `the peer does not read: ${waiting} bytes would wait to be sent, more than ${this.maxBufferedBytes}; the connection is closed`,
        ),
      );
    }
    return new Promise<void>((resolve, reject) => {
      this.socket.send(frame, { binary: false }, (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Closes the connection (1000 by default) and resolves once it is closed. */
  close(code = 1000, reason = ""): Promise<void> {
    if (this.socket.readyState === CLOSED) return this.closed;
    if (this.socket.readyState !== CLOSING) this.socket.close(code, reason);
    // A peer that never answers the closing handshake must not hold the close up.
    const timer = setTimeout(() => this.socket.terminate(), CLOSE_TIMEOUT_MS);
    return this.closed.finally(() => clearTimeout(timer));
  }

  private deliver(frame: string): void {
    try {
      this.onmessage?.(frame);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private notifyClose(): void {
    if (this.closeNotified) return;
    this.closeNotified = true;
    this.onclose?.();
  }
}

/** Starts a WebSocket server; resolves once it listens. */
export async function startWebSocketServer(options: WebSocketServerOptions): Promise<RunningWebSocketServer> {
  const host = options.host ?? "127.0.0.1";
  const maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes, "startWebSocketServer");
  const readLimitBytes = options.readLimitBytes ?? maxFrameBytes + Math.max(maxFrameBytes, 1024 * 1024);
  if (!Number.isSafeInteger(readLimitBytes) || readLimitBytes < maxFrameBytes) {
    throw new RangeError(
      `startWebSocketServer: readLimitBytes must be an integer no smaller than maxFrameBytes (${maxFrameBytes}), got ${String(readLimitBytes)}`,
    );
  }
  if (options.token === "") {
    throw new Error("startWebSocketServer: the token is empty; pass a non-empty token, or undefined to serve without authentication");
  }
  if (options.token !== undefined && options.authenticate !== undefined) {
    throw new Error(
      "startWebSocketServer: both token and authenticate are given; pass one (check the token inside authenticate if both are needed)",
    );
  }
  const authenticate =
    options.authenticate ?? (options.token === undefined ? undefined : bearerTokenCheck(options.token, "header-or-query"));
  const origins = options.allowedOrigins ?? [];
  const fromAllowedOrigin = originAllowed(origins);
  const reportError = (error: Error) => options.onError?.(error);

  const { WebSocketServer } = await loadWs();
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: readLimitBytes });
  const connections = new Set<WebSocketTransport>();
  const answerOversized = (info: ConnectionInfo) => (bytes: number, transport: WebSocketTransport) => {
    if (options.oversizedReply) {
      const frame = options.oversizedReply(maxFrameBytes, bytes);
      if (options.sendOversizedAnswer) options.sendOversizedAnswer(frame, transport);
      else transport.send(frame).catch(() => undefined);
    } else void transport.close(1009, `message of ${bytes} bytes over the limit of ${maxFrameBytes} bytes`.slice(0, 120));
    options.onOversized?.(bytes, info);
  };

  const server = createServer((_request, response) => {
    // Plain HTTP has nothing to offer here; a WebSocket upgrade is the only way in.
    response.writeHead(426, { "Content-Type": "text/plain; charset=utf-8", Upgrade: "websocket", Connection: "close" });
    response.end("This is a JSON-RPC server: connect with a WebSocket.\n");
  });
  server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A client that resets the connection must not crash the gateway.
    socket.on("error", () => socket.destroy());
    // Checked before the token: a page from another site never gets as far as using one.
    const origin = request.headers.origin;
    const refused = (cause: UpgradeRefusal["cause"], status: UpgradeRefusal["status"]) =>
      options.onRefused?.({ cause, status, ...(origin === undefined ? {} : { origin }), remoteAddress: request.socket.remoteAddress });
    if (!fromAllowedOrigin(origin)) {
      refused("origin", 403);
      refuse(
        socket,
        403,
        "Forbidden",
        `pages from origin ${origin} may not connect: the server allows ${origins.length ? origins.join(", ") : "no browser origin"}`,
      );
      return;
    }
    if (!authenticate) {
      accept(request, socket, head);
      return;
    }
    let verdict: boolean | Promise<boolean>;
    try {
      verdict = authenticate(request);
    } catch (error) {
      verdict = Promise.reject(error);
    }
    const decide = (accepted: boolean) => {
      if (accepted === true) {
        accept(request, socket, head);
        return;
      }
      refused(
        options.token === undefined
          ? "authenticate"
          : presentedToken(request, "header-or-query") === undefined
            ? "no_token"
            : "wrong_token",
        401,
      );
      refuse(
        socket,
        401,
        "Unauthorized",
        options.token !== undefined
          ? "a valid bearer token is required: send Authorization: Bearer <token> or ?token=<token>"
          : "the server refused this connection",
      );
    };
    if (typeof verdict === "boolean") {
      decide(verdict);
      return;
    }
    verdict.then(decide, (error: unknown) => {
      reportError(new Error(`authenticate failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error }));
      decide(false);
    });
  });
  const accept = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (socket.destroyed) return;
    wss.handleUpgrade(request, socket, head, (ws) => {
      const info: ConnectionInfo = {
        remoteAddress: request.socket.remoteAddress,
        remotePort: request.socket.remotePort,
        path: new URL(request.url ?? "/", "http://localhost").pathname,
      };
      const transport = new WebSocketTransport(ws, maxFrameBytes, answerOversized(info), options.maxBufferedBytes);
      connections.add(transport);
      ws.once("close", () => connections.delete(transport));
      try {
        options.onConnection(transport, info);
      } catch (error) {
        reportError(new Error(`onConnection failed: ${(error as Error).message}`, { cause: error }));
        void transport.close(1011, "internal error");
      }
    });
  };

  await new Promise<void>((resolve, reject) => {
    const onListenError = (error: NodeJS.ErrnoException) => {
      reject(new Error(`cannot listen on ${host}:${options.port ?? 0}: ${error.code ?? error.message}`, { cause: error }));
    };
    server.once("error", onListenError);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", onListenError);
      server.on("error", reportError);
      resolve();
    });
  });

  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `ws://${host.includes(":") ? `[${host}]` : host}:${port}/`,
    port,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all([...connections].map((transport) => transport.close(1001, "server shutting down")));
        server.closeAllConnections();
        wss.close();
        await stopped;
      })();
      return closing;
    },
  };
}

export interface WebSocketClientOptions {
  /** Bearer token, sent in the Authorization header; undefined sends none (`process.env.TURNSPEC_TOKEN` may be passed as it is). */
  readonly token?: string | undefined;
  /** Compression is always off: see the file comment. Accepted so a caller can say so. */
  readonly perMessageDeflate?: false | undefined;
  /** Largest message accepted from the gateway; a larger one closes the connection with 1009. Default `CLIENT_MAX_FRAME_BYTES`. */
  readonly maxFrameBytes?: number | undefined;
  /** Milliseconds the opening handshake may take. Default 10000. */
  readonly handshakeTimeoutMs?: number | undefined;
}

/** The gateway refused the WebSocket upgrade (401 for a missing or wrong token). */
export class WebSocketHandshakeError extends Error {
  readonly status: number;

  constructor(url: string, status: number, statusText: string | undefined) {
    super(`the WebSocket handshake with ${url} was refused: HTTP ${status}${statusText ? ` ${statusText}` : ""}`);
    this.name = "WebSocketHandshakeError";
    this.status = status;
  }
}

/** Connects to a gateway; resolves with the transport once the connection is open. */
export async function connectWebSocket(url: string, options: WebSocketClientOptions = {}): Promise<WebSocketTransport> {
  const maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes ?? CLIENT_MAX_FRAME_BYTES, "connectWebSocket");
  const shown = redactToken(url);
  const { WebSocket } = await loadWs();
  return new Promise<WebSocketTransport>((resolve, reject) => {
    const socket = new WebSocket(url, {
      perMessageDeflate: false,
      // Here the limit is the hard one: a client has no one to answer payload_too_large to.
      maxPayload: maxFrameBytes,
      handshakeTimeout: options.handshakeTimeoutMs ?? 10_000,
      headers: options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` },
    });
    // Created now so that no message sent right after the handshake is missed. With
    // maxPayload at the limit, ws closes the connection (1009) before a message over it is
    // delivered, so the oversized callback only guards against a change of that setting.
    const transport = new WebSocketTransport(socket, maxFrameBytes, (bytes, self) => {
      self.onerror?.(new Error(`discarded a message of ${bytes} bytes from ${shown}: over the limit of ${maxFrameBytes} bytes`));
    });
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      reject(error);
    };
    socket.once("open", () => {
      settled = true;
      resolve(transport);
    });
    socket.once("unexpected-response", (_request, response) => {
      fail(new WebSocketHandshakeError(shown, response.statusCode ?? 0, response.statusMessage));
      // Drops the HTTP exchange; the error ws then emits is already reported above.
      socket.terminate();
    });
    socket.on("error", (error) => fail(new Error(`cannot connect to ${shown}: ${error.message}`, { cause: error })));
  });
}

/** Answers an upgrade request with an HTTP error and drops the socket before anything else is read. */
function refuse(socket: Duplex, status: number, statusText: string, body: string): void {
  const text = `${body}\n`;
  socket.once("finish", () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\n` +
      "Connection: close\r\n" +
      'WWW-Authenticate: Bearer realm="turnspec"\r\n' +
      "Content-Type: text/plain; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(text)}\r\n` +
      "\r\n" +
      text,
  );
}

function redactToken(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.searchParams.has("token")) parsed.searchParams.set("token", "REDACTED");
    return parsed.toString();
  } catch {
    return url;
  }
}

function byteLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

function toBuffer(data: RawData): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? Buffer.from(data) : data;
}
