/**
 * The WebSocket transport for a browser (or any runtime with the standard `WebSocket`):
 * one JSON-RPC message per WebSocket text message, as the gateway's server speaks it.
 *
 * A browser cannot set headers on a WebSocket handshake, so the bearer token travels as the
 * `token` query parameter, which the gateway's server accepts in place of
 * `Authorization: Bearer …`. The URL (and so the token) is never part of an error message.
 * Browsers negotiate compression themselves; the gateway's server refuses it, so frames
 * stay uncompressed.
 */
import type { Transport } from "@turnspec/rpc";

export interface BrowserWebSocketOptions {
  /** The gateway's bearer token, sent as `?token=`; undefined sends none. */
  readonly token?: string | undefined;
  /** The WebSocket constructor to use. Default: the global one. */
  readonly WebSocket?: typeof WebSocket | undefined;
  /** Subprotocols offered in the handshake (Sec-WebSocket-Protocol), for a server that asks for one. */
  readonly protocols?: readonly string[] | undefined;
}

/** The URL with the token added as a query parameter. */
export function withToken(url: string, token: string | undefined): string {
  if (token === undefined) return url;
  const parsed = new URL(url);
  parsed.searchParams.set("token", token);
  return parsed.toString();
}

/** The URL without its query, safe to show. */
function shown(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

class BrowserWebSocketTransport implements Transport {
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private started = false;
  private queue: string[] = [];
  private readonly closed: Promise<void>;

  constructor(
    private readonly socket: WebSocket,
    private readonly label: string,
  ) {
    // Listened to from the start: messages sent right after the handshake are kept for start().
    socket.addEventListener("message", (event: MessageEvent) => {
      if (typeof event.data !== "string") {
        this.onerror?.(new Error(`${label} sent a binary message; the gateway speaks text frames`));
        return;
      }
      if (this.started) this.deliver(event.data);
      else this.queue.push(event.data);
    });
    this.closed = new Promise<void>((resolve) => {
      socket.addEventListener(
        "close",
        () => {
          this.queue = [];
          resolve();
          this.onclose?.();
        },
        { once: true },
      );
    });
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    for (const frame of this.queue.splice(0)) this.deliver(frame);
  }

  async send(frame: string): Promise<void> {
    if (this.socket.readyState !== this.socket.OPEN) throw new Error(`the WebSocket connection to ${this.label} is closed`);
    this.socket.send(frame);
  }

  close(): Promise<void> {
    if (this.socket.readyState !== this.socket.CLOSED && this.socket.readyState !== this.socket.CLOSING) this.socket.close(1000);
    return this.closed;
  }

  private deliver(frame: string): void {
    try {
      this.onmessage?.(frame);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

/**
 * What usually keeps a browser's connection from opening, most likely first; the gateway
 * logs which one it was.
 */
function likelyCauses(withToken: boolean): string {
  const origin = pageOrigin();
  const page = origin === undefined ? "this page's origin" : `this page's origin ${origin}`;
  const allow = `--allow-origin ${origin ?? "ORIGIN"}`;
  return [
    `The likely causes: ${page} is not allowed by the gateway (start it with ${allow});`,
    withToken ? "the token is wrong;" : "no token was given (pass options.token);",
    "the URL is wrong or no gateway listens there. The gateway's log names the refusal.",
  ].join(" ");
}

/** The page's origin, as its WebSocket upgrade sends it; undefined outside a page. */
function pageOrigin(): string | undefined {
  const origin = (globalThis as { location?: { origin?: unknown } }).location?.origin;
  return typeof origin === "string" && origin !== "" ? origin : undefined;
}

/** Opens a WebSocket to the gateway; resolves with the transport once it is open. */
export function connectBrowserWebSocket(url: string, options: BrowserWebSocketOptions = {}): Promise<Transport> {
  const Socket = options.WebSocket ?? globalThis.WebSocket;
  if (typeof Socket !== "function") {
    return Promise.reject(new Error("connectBrowserWebSocket: this runtime has no WebSocket; pass one as options.WebSocket"));
  }
  const label = shown(url);
  return new Promise((resolve, reject) => {
    const socket =
      options.protocols === undefined
        ? new Socket(withToken(url, options.token))
        : new Socket(withToken(url, options.token), [...options.protocols]);
    const transport = new BrowserWebSocketTransport(socket, label);
    const onOpen = () => {
      socket.removeEventListener("close", onFailure);
      resolve(transport);
    };
    // A browser reports a refused handshake (403 for a page's origin, 401 for a token) only as
    // a close before open, with no status: the error names every likely cause, the gateway's log the actual one.
    const onFailure = (event: CloseEvent) =>
      reject(
        new Error(
          `cannot connect to ${label}: the connection closed before it opened (code ${event.code}), and a browser is not told why. ${likelyCauses(options.token !== undefined)}`,
        ),
      );
    socket.addEventListener("open", onOpen, { once: true });
    socket.addEventListener("close", onFailure, { once: true });
  });
}
