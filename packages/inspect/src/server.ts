/**
 * The server of `turnspec inspect`: a local HTTP server that serves the inspector page and
 * bridges the page to a gateway over a WebSocket of its own (`/gateway`).
 *
 * The page never talks to the gateway directly, whichever way the gateway is reached:
 *   - `gatewayCmd`: the server starts the stdio gateway once (transport/child-process) and
 *     passes frames between its stdin/stdout and the page's socket; a page that reconnects
 *     is attached to the same process, so the gateway's state survives the drop;
 *   - `gatewayUrl`: each page socket gets a WebSocket of its own to the gateway, opened by
 *     this server with the bearer token in the Authorization header. The token stays in
 *     this process (the page never sees it) and the gateway needs no `--allow-origin` for
 *     the inspector's page, since a connection from Node carries no Origin;
 *   - neither: the page asks for a URL and token (POST /api/target), and it is then as with
 *     `gatewayUrl`.
 * The bridge passes frames through unchanged (but for the request ids of a shared stdio
 * gateway, see commandTarget): the page sees, validates and records what the gateway sent.
 *
 * Every request that reaches the gateway or its settings must carry the one-time token of
 * the printed URL, in a place only the inspector's own page can fill: the token is in the
 * URL's fragment (`#token=…`, which a browser never sends to any server), the page keeps it
 * in its sessionStorage (separate for each origin, port included) and sends it as
 * `Authorization: Bearer …` on /api/ requests and as a `turnspec-token.<token>` WebSocket
 * subprotocol on /gateway (a browser cannot set headers on an upgrade). Never in a cookie:
 * browsers send a cookie of 127.0.0.1 to every port of 127.0.0.1, so any other local web
 * server the browser visits would receive it. A request with a cookie alone is refused.
 * The page and its assets, which hold nothing secret, are served without the token. The
 * Host header must name this server (no DNS rebinding), and a WebSocket upgrade and a
 * change of gateway must come from this server's own origin.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { fileURLToPath } from "node:url";
import { WebSocketServer } from "ws";
import type { Transport } from "@turnspec/rpc";
import {
  CLIENT_MAX_FRAME_BYTES,
  connectWebSocket,
  digest,
  hostAllowed as hostNamesServer,
  isLoopbackHost,
  secretMatches,
  serverAuthorities,
  spawnStdioTransport,
  WebSocketTransport,
  type ChildProcessTransport,
} from "@turnspec/rpc/transport";
import { INSPECTOR_ASSETS, pageHtml } from "./page-html.js";
import { INSPECTOR_PROTOCOL, TOKEN_PROTOCOL_PREFIX } from "./page-token.js";

export interface InspectorOptions {
  /** Start this stdio gateway (run by `sh -c`) and bridge it to the page. */
  readonly gatewayCmd?: string;
  /** Connect to the gateway at this WebSocket URL, one connection per page socket. */
  readonly gatewayUrl?: string;
  /** Bearer token for `gatewayUrl`. */
  readonly gatewayToken?: string;
  /** Address to listen on. Default 127.0.0.1. */
  readonly host?: string;
  /** Port to listen on; 0 (the default) picks a free one. */
  readonly port?: number;
  /** The folder holding the page bundle (inspector.js, inspector.css). Default: the package's build, else one bundled now. */
  readonly assetsDir?: string;
  /** Working folder of the gateway command. Default: this process's. */
  readonly cwd?: string;
  /** The server's log (the gateway's exit, connection problems). Default: stderr. */
  readonly log?: (message: string) => void;
}

export interface RunningInspector {
  /** The page's address with the one-time token: the one to open. */
  readonly url: string;
  readonly port: number;
  /** Stops the server, the bridged connections and the gateway process it started. */
  close(): Promise<void>;
}

/** What /api/info tells the page. */
export interface InspectorInfo {
  /** How the gateway is reached, or null until the user names one. */
  readonly gateway: { readonly kind: "command" | "url"; readonly label: string } | null;
  /** Whether the page may name the gateway (only when the inspector was started without one). */
  readonly choosable: boolean;
  /** The last problem with the gateway, in words (its exit, a refused connection); null when there is none. */
  readonly problem: string | null;
}

/** Close code the bridge gives a page socket whose gateway went away; the page reads why from /api/info. */
const GATEWAY_GONE = 4001;

/** The gateway the page is bridged to. */
interface GatewayTarget {
  readonly kind: "command" | "url";
  readonly label: string;
  /**
   * Readies the gateway side of one page socket, before the page's upgrade is accepted:
   * rejects, in words, when the gateway cannot be reached now, so that the page's connect
   * fails (and its reconnect tries again) instead of opening onto nothing.
   */
  prepare(): Promise<Bridge>;
  close(): Promise<void>;
}

/** The gateway side of one page socket. */
interface Bridge {
  /** Passes frames between the page socket and the gateway until either side closes. */
  attach(page: WebSocketTransport): void;
  /** The page socket never opened: lets go of the gateway side. */
  cancel(): void;
}

export async function startInspector(options: InspectorOptions = {}): Promise<RunningInspector> {
  if (options.gatewayCmd !== undefined && options.gatewayUrl !== undefined)
    throw new InspectorError("name one gateway: --gateway-cmd or --gateway-url, not both");
  if (options.gatewayToken !== undefined && options.gatewayUrl === undefined)
    throw new InspectorError("--token is the token of --gateway-url: give the URL too");
  if (options.gatewayUrl !== undefined) checkGatewayUrl(options.gatewayUrl);
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const host = options.host ?? "127.0.0.1";
  // The page drives a gateway that runs commands: it is for this machine only.
  if (!isLoopbackHost(host))
    throw new InspectorError(
      `the inspector serves this machine only: --host must be a loopback address (127.0.0.1, ::1, localhost), not ${host}`,
    );
  const assets = await assetsFolder(options.assetsDir);
  const token = randomBytes(24).toString("base64url");
  const expected = digest(token);
  let problem: string | null = null;
  const report = (message: string) => {
    problem = message;
    log(message);
  };

  let target: GatewayTarget | undefined;
  if (options.gatewayCmd !== undefined) target = await commandTarget(options.gatewayCmd, options.cwd, report);
  else if (options.gatewayUrl !== undefined) target = urlTarget(options.gatewayUrl, options.gatewayToken, report);
  const choosable = target === undefined;

  let port = 0;
  let authorities: ReadonlySet<string> = new Set();
  const namesThisServer = (authority: string) => authorities.has(authority.toLowerCase());
  const hostAllowed = (request: IncomingMessage) => hostNamesServer(request, authorities);
  /** The token as the page sends it: never a cookie, which other local ports receive too. */
  const headerToken = (request: IncomingMessage) => /^Bearer\s+(.+?)\s*$/i.exec(request.headers.authorization ?? "")?.[1];
  const socketToken = (request: IncomingMessage) =>
    (request.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((p) => p.trim())
      .find((p) => p.startsWith(TOKEN_PROTOCOL_PREFIX))
      ?.slice(TOKEN_PROTOCOL_PREFIX.length);

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://inspector.invalid");
    if (!hostAllowed(request)) return text(response, 421, `this inspector answers only to its own address (http://${host}:${port}/)`);
    // The page and its assets hold nothing secret: the page reads the token from its own address.
    if (request.method === "GET" && url.pathname === "/") return send(response, 200, "text/html; charset=utf-8", pageHtml());
    if (request.method === "GET" && url.pathname.startsWith("/assets/")) {
      const name = url.pathname.slice("/assets/".length);
      const type = INSPECTOR_ASSETS[name];
      if (type === undefined) return text(response, 404, `no asset ${name}`);
      return send(response, 200, type, readFileSync(join(assets, name)));
    }
    if (!secretMatches(headerToken(request), expected)) {
      const cookieOnly = (request.headers.cookie ?? "") !== "" && request.headers.authorization === undefined;
      return text(
        response,
        401,
        `this inspector needs the token of the URL it printed when it started, sent by its page as Authorization: Bearer <token>${cookieOnly ? " (a cookie is not accepted: browsers send cookies of 127.0.0.1 to every port)" : ""}; open that URL`,
      );
    }
    if (request.method === "GET" && url.pathname === "/api/info") {
      const info: InspectorInfo = { gateway: target ? { kind: target.kind, label: target.label } : null, choosable, problem };
      return send(response, 200, "application/json", JSON.stringify(info));
    }
    if (request.method === "POST" && url.pathname === "/api/target") {
      // Only the inspector's own page may change the gateway (the cookie's SameSite already keeps other sites out).
      const origin = request.headers.origin;
      if (origin !== undefined && !(origin.startsWith("http://") && namesThisServer(origin.slice("http://".length))))
        return text(response, 403, "only the inspector's own page may choose the gateway");
      if (!choosable)
        return text(
          response,
          409,
          `this inspector was started with its gateway (${target!.label}); start it without --gateway-cmd and --gateway-url to choose one on the page`,
        );
      let body: string;
      try {
        body = await readBody(request);
      } catch (error) {
        if (!(error instanceof BodyTooLarge)) throw error;
        response.setHeader("Connection", "close");
        return text(response, 413, error.message);
      }
      let chosen: { url?: unknown; token?: unknown };
      try {
        chosen = JSON.parse(body) as { url?: unknown; token?: unknown };
      } catch {
        return text(response, 400, 'the request body must be JSON: {"url": "ws://…", "token": "…"}');
      }
      if (typeof chosen.url !== "string") return text(response, 400, "url: a ws:// or wss:// URL is required");
      if (chosen.token !== undefined && typeof chosen.token !== "string") return text(response, 400, "token: must be a string when given");
      try {
        checkGatewayUrl(chosen.url);
        // Tried once now, so that a wrong URL or token is reported to the form, in words.
        const probe = await connectWebSocket(chosen.url, chosen.token === undefined || chosen.token === "" ? {} : { token: chosen.token });
        await probe.close();
      } catch (error) {
        return text(response, 400, describe(error));
      }
      await target?.close();
      problem = null;
      target = urlTarget(chosen.url, chosen.token === "" ? undefined : (chosen.token as string | undefined), report);
      return send(response, 200, "application/json", JSON.stringify({ gateway: { kind: target.kind, label: target.label } }));
    }
    return text(response, 404, `nothing at ${request.method} ${url.pathname}`);
  };

  // One person's page: a client has 30 s to send a request (headers within 10), and at most 64 connections are served at once.
  const server = createServer(
    { requestTimeout: 30_000, headersTimeout: 10_000, connectionsCheckingInterval: 1000 },
    (request, response) => {
      handle(request, response).catch((error: unknown) => {
        log(`inspector: ${describe(error)}`);
        if (!response.headersSent) text(response, 500, "the inspector could not answer this request; see its log");
      });
    },
  );
  // The page offers its own protocol name beside the token; the answer names that one, never the token.
  const sockets = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: CLIENT_MAX_FRAME_BYTES,
    handleProtocols: (offered) => (offered.has(INSPECTOR_PROTOCOL) ? INSPECTOR_PROTOCOL : false),
  });
  const pages = new Set<WebSocketTransport>();
  server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const url = new URL(request.url ?? "/", "http://inspector.invalid");
    const origin = request.headers.origin;
    const ownOrigin = origin !== undefined && origin.startsWith("http://") && namesThisServer(origin.slice("http://".length));
    const refusal = !hostAllowed(request)
      ? [421, "Misdirected Request", "this inspector answers only to its own address"]
      : !ownOrigin
        ? [403, "Forbidden", "only the inspector's own page may connect"]
        : !secretMatches(socketToken(request), expected)
          ? [
              401,
              "Unauthorized",
              `the inspector's token is missing or wrong: its page sends it as the WebSocket subprotocol ${TOKEN_PROTOCOL_PREFIX}<token>`,
            ]
          : url.pathname !== "/gateway"
            ? [404, "Not Found", "the bridge is at /gateway"]
            : undefined;
    if (refusal) {
      refuse(socket, refusal[0] as number, refusal[1] as string, refusal[2] as string);
      return;
    }
    if (!target) {
      refuse(socket, 503, "Service Unavailable", "no gateway chosen yet: name one on the page");
      return;
    }
    target.prepare().then(
      (bridge) => {
        if (socket.destroyed) return bridge.cancel();
        sockets.handleUpgrade(request, socket, head, (ws) => {
          const page = new WebSocketTransport(
            ws,
            CLIENT_MAX_FRAME_BYTES,
            (bytes, self) => void self.close(1009, `a frame of ${bytes} bytes is over the limit`),
          );
          pages.add(page);
          ws.once("close", () => pages.delete(page));
          bridge.attach(page);
        });
      },
      (error: unknown) => refuse(socket, 502, "Bad Gateway", describe(error)),
    );
  });

  server.maxConnections = 64;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(new InspectorError(`cannot listen on ${host}:${options.port ?? 0}: ${error.code ?? error.message}`)),
    );
    server.listen(options.port ?? 0, host, () => resolve());
  }).catch(async (error: unknown) => {
    await target?.close();
    throw error;
  });
  port = (server.address() as AddressInfo).port;
  authorities = serverAuthorities(host, port);
  const shownHost = host.includes(":") ? `[${host}]` : host;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}/#token=${token}`,
    port,
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all([...pages].map((page) => page.close(1001, "the inspector is shutting down")));
        await target?.close();
        server.closeAllConnections();
        sockets.close();
        await stopped;
      })();
      return closing;
    },
  };
}

/** A usage mistake in the inspector's options, reported without a stack. */
export class InspectorError extends Error {
  override readonly name = "InspectorError";
}

function checkGatewayUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InspectorError(`the gateway URL ${JSON.stringify(url)} is not a URL; give ws://HOST:PORT/ (or wss://)`);
  }
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:")
    throw new InspectorError(`the gateway URL must start with ws:// or wss://, got ${parsed.protocol}//`);
}

/** A gateway this server connects to, once per page socket; when one side of a pair closes, so does the other. */
function urlTarget(url: string, token: string | undefined, report: (message: string) => void): GatewayTarget {
  const label = safeUrl(url);
  const open = new Set<Transport>();
  let closed = false;
  return {
    kind: "url",
    label,
    async prepare() {
      let gateway: Transport;
      try {
        gateway = await connectWebSocket(url, token === undefined ? {} : { token });
      } catch (error) {
        report(describe(error));
        throw error;
      }
      if (closed) {
        await gateway.close();
        throw new Error("the inspector is shutting down");
      }
      open.add(gateway);
      const forget = () => {
        open.delete(gateway);
        void gateway.close();
      };
      return {
        cancel: forget,
        attach(page) {
          let pageGone = false;
          page.onclose = () => {
            pageGone = true;
            forget();
          };
          page.onmessage = (frame) => void gateway.send(frame).catch(() => undefined);
          gateway.onmessage = (frame) => void page.send(frame).catch(() => undefined);
          gateway.onclose = () => {
            open.delete(gateway);
            if (!pageGone && !closed) report(`the gateway at ${label} closed the connection`);
            void page.close(GATEWAY_GONE, "the gateway closed the connection");
          };
          void gateway.start().then(() => page.start());
        },
      };
    },
    async close() {
      closed = true;
      await Promise.all([...open].map((gateway) => gateway.close()));
    },
  };
}

/**
 * The stdio gateway this server starts, shared by the page sockets one at a time: a page
 * that connects takes the gateway over (an earlier socket is closed). Frames the gateway
 * writes while no page is attached are dropped; the page's reconnect catch-up reads them
 * from turn/items.
 *
 * One gateway connection serves page connections one after the other, and each page's
 * client numbers its requests from 1 again: so the bridge gives each request an id of its
 * own on the way in and puts the page's id back on its answer, and an answer to a page that
 * has gone away is dropped instead of reaching the next page as the answer to its own
 * request of the same id.
 */
async function commandTarget(command: string, cwd: string | undefined, report: (message: string) => void): Promise<GatewayTarget> {
  const child: ChildProcessTransport = spawnStdioTransport("sh", ["-c", `exec ${command}`], {
    ...(cwd === undefined ? {} : { cwd }),
    stderr: "collect",
  });
  let current: WebSocketTransport | undefined;
  let exited = false;
  let closing = false;
  let nextId = 1;
  const asked = new Map<number, { readonly page: WebSocketTransport; readonly id: unknown }>();
  child.onmessage = (frame) => {
    const message = jsonObject(frame);
    const bridged = message && message.method === undefined && typeof message.id === "number" ? asked.get(message.id) : undefined;
    if (!bridged) return void current?.send(frame).catch(() => undefined);
    asked.delete(message!.id as number);
    if (bridged.page === current) void current.send(JSON.stringify({ ...message, id: bridged.id })).catch(() => undefined);
  };
  child.onerror = (error) => report(`the gateway: ${error.message}`);
  let exit: Promise<string> | undefined;
  child.onclose = () => {
    exited = true;
    exit = child.exited.then(({ code, signal }) => {
      const tail = child.stderrText.trim().split("\n").slice(-5).join("\n");
      return `the gateway process \`${command}\` exited ${signal ? `on ${signal}` : `with code ${code}`}${tail ? `; its stderr ends with:\n${tail}` : ""}`;
    });
    void exit.then((why) => {
      if (closing) return;
      report(why);
      void current?.close(GATEWAY_GONE, "the gateway process exited");
    });
  };
  try {
    await child.start();
  } catch (error) {
    throw new InspectorError(describe(error));
  }
  return {
    kind: "command",
    label: command,
    async prepare() {
      if (exited) throw new Error(await exit!);
      return { attach, cancel: () => undefined };
    },
    async close() {
      closing = true;
      await current?.close(1001, "the inspector is shutting down");
      await child.close();
    },
  };

  function attach(socket: WebSocketTransport): void {
    const previous = current;
    current = socket;
    if (previous) void previous.close(4002, "another inspector page took the gateway over");
    socket.onmessage = (frame) => {
      const message = jsonObject(frame);
      let forwarded = frame;
      if (message && typeof message.method === "string" && message.id !== undefined && message.id !== null) {
        const id = nextId++;
        asked.set(id, { page: socket, id: message.id });
        forwarded = JSON.stringify({ ...message, id });
      }
      void child.send(forwarded).catch(() => undefined);
    };
    socket.onclose = () => {
      // Its requests stay listed until answered: their answers are dropped, not passed on.
      if (current === socket) current = undefined;
    };
    void socket.start();
  }
}

/** The folder of the page bundle: the given one, or the package's build (beside this module, or in dist/ when run from the sources). */
async function assetsFolder(given: string | undefined): Promise<string> {
  if (given !== undefined) {
    for (const name of Object.keys(INSPECTOR_ASSETS)) {
      if (!existsSync(join(given, name))) throw new InspectorError(`the inspector's assets folder ${given} has no ${name}`);
    }
    return given;
  }
  for (const candidate of ["./assets/", "../dist/assets/"]) {
    const built = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(join(built, "inspector.js"))) return built;
  }
  throw new InspectorError(
    "the inspector's page is not built: run npm run build in the repository (an installed @turnspec/inspect has it built)",
  );
}

/** The frame as a JSON object, or undefined for anything else (a batch, a line that is not JSON). */
function jsonObject(frame: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(frame);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function safeUrl(url: string): string {
  const parsed = new URL(url);
  parsed.username = "";
  parsed.password = "";
  if (parsed.searchParams.has("token")) parsed.searchParams.set("token", "REDACTED");
  return parsed.toString();
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
};

function send(response: ServerResponse, status: number, type: string, body: string | Buffer): void {
  response.writeHead(status, { "Content-Type": type, ...SECURITY_HEADERS });
  response.end(body);
}

function text(response: ServerResponse, status: number, body: string): void {
  send(response, status, "text/plain; charset=utf-8", `${body}\n`);
}

/** A request body over the limit: answered 413, and no more of it is read. */
class BodyTooLarge extends Error {}

async function readBody(request: IncomingMessage, limit = 64 * 1024): Promise<string> {
  const declared = Number(request.headers["content-length"] ?? 0);
  if (declared > limit) throw new BodyTooLarge(`the request body is over ${limit} bytes (${declared} declared)`);
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request) {
    bytes += (chunk as Buffer).length;
    if (bytes > limit) throw new BodyTooLarge(`the request body is over ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function refuse(socket: Duplex, status: number, statusText: string, body: string): void {
  const message = `${body}\n`;
  socket.once("finish", () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(message)}\r\n\r\n${message}`,
  );
}
