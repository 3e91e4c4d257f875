/**
 * An HTTP server with the AG-UI bridge at every path: POST a RunAgentInput, read the SSE
 * stream. A run can start a shell command, so every request is checked before its body is
 * read, in this order, each refusal with its status and the reason in a JSON body:
 *   - 421 when `Host` does not name this server (a page reaching the port through a name
 *     of its own: DNS rebinding);
 *   - 403 when a browser page of an origin not allowed sends it (allowedOrigins, none by
 *     default); a page of an allowed origin gets its CORS preflight answered;
 *   - 401 without `Authorization: Bearer <token>`;
 *   - 415 when the body is not declared `application/json` (a cross-site "simple" POST can
 *     only send text/plain, form or multipart bodies, without a preflight).
 * Clients outside a browser send no Origin; AG-UI's HttpAgent sends the token with
 * `headers: { Authorization: "Bearer …" }`.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { bearerTokenCheck, hostAllowed, isLoopbackHost, originAllowed, serverAuthorities } from "@turnspec/rpc/transport";
import type { GatewayConnection } from "../connection.js";
import { AgUiBridge, AgUiRequestError, refuse, type AgUiBridgeOptions } from "./bridge.js";

export interface AgUiServeOptions extends AgUiBridgeOptions {
  /** Address to listen on (default 127.0.0.1). A loopback address unless a token is required. */
  readonly host?: string;
  /**
   * The bearer token every request must carry. Undefined: one is generated (AgUiServer.token).
   * null: no token is asked for, which is allowed on a loopback address only.
   */
  readonly token?: string | null;
  /** Browser origins whose pages may call the endpoint (`https://app.example.com`); default none. */
  readonly allowedOrigins?: readonly string[];
  /** Milliseconds a client has to send a request's headers and body (slow senders are cut off). Default 30000. */
  readonly requestTimeoutMs?: number;
  /** Connections served at once; more are refused by the server until some close. Default 256. */
  readonly maxConnections?: number;
}

export interface AgUiServer {
  readonly server: Server;
  /** The URL an AG-UI client posts to. */
  readonly url: string;
  /** The bearer token requests must carry, or null when none is asked for. */
  readonly token: string | null;
  close(): Promise<void>;
}

/** Listens on `port` (0 picks a free one) at `host` (default 127.0.0.1). */
export async function serveAgUi(connection: GatewayConnection, port: number, options: AgUiServeOptions = {}): Promise<AgUiServer> {
  const host = options.host ?? "127.0.0.1";
  if (options.token === null && !isLoopbackHost(host))
    throw new Error(`an AG-UI endpoint without a token may listen on a loopback address only (127.0.0.1, ::1, localhost), not on ${host}`);
  if (options.token === "") throw new Error("the AG-UI endpoint's token is empty; give a non-empty token, or null for none");
  const token = options.token === undefined ? randomBytes(24).toString("base64url") : options.token;
  const bridge = new AgUiBridge(connection, options);
  const authorized = token === null ? () => true : bearerTokenCheck(token, "header");
  const fromAllowedOrigin = originAllowed(options.allowedOrigins ?? []);
  let authorities: ReadonlySet<string> = new Set();

  const guard = (req: IncomingMessage, res: ServerResponse): void => {
    const origin = req.headers.origin;
    try {
      if (!hostAllowed(req, authorities))
        throw new AgUiRequestError(
          421,
          `this endpoint answers only to its own address (${[...authorities].join(", ")}), not to Host ${JSON.stringify(req.headers.host ?? "")}`,
        );
      if (!fromAllowedOrigin(origin))
        throw new AgUiRequestError(
          403,
          `pages from origin ${origin} may not call this endpoint: it allows ${options.allowedOrigins?.length ? options.allowedOrigins.join(", ") : "no browser origin"} (--allow-origin)`,
        );
      if (origin !== undefined) {
        // An allowed page: its browser may read the answer, and asks first for the headers it sends.
        res.setHeader("Access-Control-Allow-Origin", origin);
        res.setHeader("Vary", "Origin");
        if (req.method === "OPTIONS") {
          res.writeHead(204, {
            "Access-Control-Allow-Methods": "POST",
            "Access-Control-Allow-Headers": "authorization, content-type",
            "Access-Control-Max-Age": "600",
          });
          res.end();
          return;
        }
      }
      if (!authorized(req)) {
        res.setHeader("WWW-Authenticate", 'Bearer realm="turnspec"');
        throw new AgUiRequestError(
          401,
          "a valid bearer token is required: send Authorization: Bearer <token> (the token turnspec serve printed or read from --token-file)",
        );
      }
      if (req.method === "POST") {
        const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
        if (type !== "application/json")
          throw new AgUiRequestError(
            415,
            `the body must be declared Content-Type: application/json, got ${req.headers["content-type"] === undefined ? "none" : JSON.stringify(req.headers["content-type"])}`,
          );
      }
    } catch (error) {
      // Nothing of the body is read: the connection is not kept for another request.
      res.setHeader("Connection", "close");
      return refuse(res, error);
    }
    bridge.handler(req, res);
  };

  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  // Node checks the timeouts every connectionsCheckingInterval (30 s by default): often enough here for them to mean what they say.
  const server = createServer(
    {
      requestTimeout,
      headersTimeout: Math.min(requestTimeout, 10_000),
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(requestTimeout / 4))),
    },
    guard,
  );
  server.maxConnections = options.maxConnections ?? 256;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  authorities = serverAuthorities(host, address.port);
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    server,
    url: `http://${shown}:${address.port}/`,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
