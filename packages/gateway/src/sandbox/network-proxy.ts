/**
 * The filtering proxy of a turn whose network is `restricted`: the only way out of the
 * sandbox. A shell command runs in its own network namespace (no route anywhere, only its
 * own loopback); the gateway runs this proxy on the host, listening on a Unix socket in a
 * folder of its own, which the sandbox sees through its read-only view of the file system.
 * Inside, a small bridge (proxy-bridge.ts) forwards a loopback TCP port to that socket,
 * and HTTP_PROXY / HTTPS_PROXY / ALL_PROXY point there.
 *
 * Two kinds of request are served: `CONNECT host:port` (a tunnel, what HTTPS and any other
 * TCP protocol uses) and an HTTP request with an absolute URI (`GET http://host:port/…`).
 * Each is judged by the turn's domain lists (permissions/domains.ts, the matcher web_fetch
 * is judged by too): a host the allow list covers and the deny list does not is
 * connected; anything else is answered 403 and reported to `onRefused`, which records it
 * in the turn's audit.
 *
 * What is judged is where the connection really goes, not how it was spelled: every IP
 * spelling is canonical before the lists see it (domains.ts normalizeHost: 127.1, 0x7f.1,
 * 2130706433 and ::ffff:127.0.0.1 are 127.0.0.1); a name is resolved here, each address it
 * resolves to is judged by the deny list too, an address of this machine or its link
 * (loopback, link-local, unspecified) reached through a name other than `localhost` is
 * refused unless the allow list names that address, and the connection is made to the
 * address that was judged (no second lookup that could answer otherwise). A forwarded
 * request's Host header is the one its URI names, never one the client sent beside it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { lookup } from "node:dns/promises";
import { connect, isIP, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import type { TurnNetworkPolicySnapshot } from "@turnspec/protocol/types";
import { isLocalAddress, judgeDomain, normalizeHost } from "../permissions/domains.js";

/** A connection the proxy refused: where it was going, and why. */
export interface RefusedConnection {
  readonly host: string;
  readonly port: number;
  readonly reason: string;
}

export interface NetworkProxyOptions {
  /** The turn's network policy (its security snapshot's `network`). */
  readonly policy: Pick<TurnNetworkPolicySnapshot, "allow_domains" | "deny_domains">;
  /** Called for every refused connection (the turn's audit). */
  readonly onRefused: (refused: RefusedConnection) => void;
}

/** Headers that belong to the hop between client and proxy, not to the request forwarded. */
const HOP_HEADERS = ["proxy-connection", "proxy-authorization", "connection", "keep-alive", "te", "trailer", "upgrade"];

export class NetworkProxy {
  /** The Unix socket the sandbox's bridge connects to. */
  readonly socketPath: string;
  private readonly dir: string;
  private readonly server: Server;
  private readonly open = new Set<Duplex>();
  private closed = false;

  private constructor(private readonly options: NetworkProxyOptions) {
    // A folder of the gateway's own, outside the turn's (writable) temp folder: a command
    // cannot replace the socket. 0700: other local users cannot connect.
    this.dir = mkdtempSync(join(tmpdir(), "turnspec-net-"));
    this.socketPath = join(this.dir, "proxy.sock");
    this.server = createServer((req, res) => this.forward(req, res));
    this.server.on("connect", (req: IncomingMessage, socket: Duplex, head: Buffer) => this.tunnel(req, socket, head));
    this.server.on("connection", (socket: Socket) => this.track(socket));
    // A client that speaks something other than HTTP gets a 400 and is closed.
    this.server.on("clientError", (_error, socket) => socket.destroy());
  }

  /** Starts a proxy for `options.policy`, listening once this resolves. */
  static async start(options: NetworkProxyOptions): Promise<NetworkProxy> {
    const proxy = new NetworkProxy(options);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once("error", reject);
      proxy.server.listen(proxy.socketPath, () => {
        proxy.server.off("error", reject);
        resolve();
      });
    });
    // The turn's commands keep the process busy while they run; a proxy left open by a
    // turn that was blocked at a stop (it ends only when resumed) must not keep it alive.
    proxy.server.unref();
    return proxy;
  }

  /** Stops listening, ends every tunnel and forwarded request, and removes the socket's folder. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stream of this.open) stream.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private track(stream: Duplex): void {
    this.open.add(stream);
    stream.once("close", () => this.open.delete(stream));
  }

  /** Whether `host:port` may be reached; a refusal is reported and its reason returned. */
  private judge(host: string, port: number): string | undefined {
    const judged = judgeDomain(this.options.policy, host, port);
    if (judged.verdict === "allowed") return undefined;
    const target = `${host.includes(":") ? `[${host}]` : host}:${port}`;
    const reason =
      judged.verdict === "denied"
        ? `${target} is denied by the turn's network policy (deny_domains entry ${JSON.stringify(judged.entry)})`
        : `${target} is not in the turn's allow_domains (${this.options.policy.allow_domains.join(", ")})`;
    this.report(host, port, reason);
    return reason;
  }

  /**
   * The address a judged, allowed `host` connects to: the host itself when it is an
   * address; else what it resolves to, each address judged again (see the file comment).
   * A refusal is reported and its reason returned.
   */
  private async destination(host: string, port: number): Promise<{ address: string } | { refused: string; status: number }> {
    if (isIP(host) !== 0) return { address: host };
    let addresses: { address: string }[];
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch (error) {
      return { refused: `${host} does not resolve: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, status: 502 };
    }
    const namesThisMachine = host === "localhost" || host.endsWith(".localhost");
    for (const { address } of addresses) {
      const canonical = normalizeHost(address);
      const judged = judgeDomain(this.options.policy, canonical, port);
      const why =
        judged.verdict === "denied"
          ? `${host} resolves to ${canonical}, which the turn's network policy denies (deny_domains entry ${JSON.stringify(judged.entry)})`
          : isLocalAddress(canonical) && !namesThisMachine && judged.verdict !== "allowed"
            ? `${host} resolves to ${canonical}, an address of this machine or its link, which only an allow_domains entry naming that address (or localhost) lets through`
            : undefined;
      if (why !== undefined) {
        this.report(host, port, why);
        return { refused: why, status: 403 };
      }
    }
    return { address: normalizeHost(addresses[0]!.address) };
  }

  private report(host: string, port: number, reason: string): void {
    try {
      this.options.onRefused({ host, port, reason });
    } catch {
      // The record could not be made (the turn is ending): the refusal stands all the same.
    }
  }

  private tunnel(req: IncomingMessage, client: Duplex, head: Buffer): void {
    this.track(client);
    const target = parseAuthority(req.url ?? "");
    if (!target) return refuseRaw(client, 400, `CONNECT needs host:port, got ${JSON.stringify(req.url)}`);
    const refused = this.judge(target.host, target.port);
    if (refused) return refuseRaw(client, 403, refused);
    void this.destination(target.host, target.port).then((to) => {
      if ("refused" in to) return refuseRaw(client, to.status, to.refused);
      if (!client.destroyed) this.openTunnel(req, client, head, to.address, target.port);
    });
  }

  private openTunnel(req: IncomingMessage, client: Duplex, head: Buffer, address: string, port: number): void {
    const upstream = connect({ host: address, port });
    this.track(upstream);
    let established = false;
    upstream.once("connect", () => {
      established = true;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.once("error", (error) => {
      if (!established) refuseRaw(client, 502, `connecting to ${req.url} failed: ${error.message}`);
      else client.destroy();
    });
    client.once("error", () => upstream.destroy());
    client.once("close", () => upstream.destroy());
    // Once the tunnel is up, either end closing closes the other; before, the 502 is sent first.
    upstream.once("close", () => {
      if (established) client.destroy();
    });
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      return refuse(res, 400, `this is a proxy: send an absolute http:// URI or CONNECT host:port, not ${JSON.stringify(req.url)}`);
    }
    if (url.protocol !== "http:") return refuse(res, 400, `only http:// URIs are forwarded (use CONNECT for ${url.protocol})`);
    const host = normalizeHost(url.hostname);
    const port = url.port === "" ? 80 : Number(url.port);
    const refused = this.judge(host, port);
    if (refused) return refuse(res, 403, refused);
    // Read no further until the destination is known: the body waits in the socket.
    req.pause();
    void this.destination(host, port).then((to) => {
      if ("refused" in to) return refuse(res, to.status, to.refused);
      this.send(req, res, url, to.address, port);
    });
  }

  private send(req: IncomingMessage, res: ServerResponse, url: URL, address: string, port: number): void {
    const headers = { ...req.headers };
    for (const name of HOP_HEADERS) delete headers[name];
    // The server is told the host the URI names, whatever Host the client sent beside it.
    headers.host = url.host;
    // agent: false: no connection outlives its request in a pool shared beyond this turn.
    const upstream = httpRequest(
      { host: address, port, method: req.method, path: `${url.pathname}${url.search}`, headers, agent: false },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.headers);
        answer.pipe(res);
      },
    );
    // Ended with the proxy, as tunnels are.
    upstream.once("socket", (socket) => this.track(socket));
    upstream.once("error", (error) => {
      if (!res.headersSent) refuse(res, 502, `forwarding to ${url.host} failed: ${error.message}`);
      else res.destroy();
    });
    req.pipe(upstream);
  }
}

/** `host:port` of a CONNECT request, IPv6 in brackets; undefined when it is not one. */
function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host: normalizeHost(match[1] ?? match[2]!), port };
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" });
  res.end(`turnspec sandbox proxy: ${message}\n`);
}

function refuseRaw(socket: Duplex, status: number, message: string): void {
  const body = `turnspec sandbox proxy: ${message}\n`;
  const text = status === 403 ? "Forbidden" : status === 400 ? "Bad Request" : "Bad Gateway";
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
