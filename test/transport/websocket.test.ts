/**
 * The WebSocket transport end to end on 127.0.0.1: the fake gateway (generated dispatcher)
 * behind startWebSocketServer, driven by the generated ProtocolClient over
 * connectWebSocket, and by raw sockets where the test must see the wire itself.
 */
import { once } from "node:events";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { LocalError, RpcError, type JsonRpcErrorObject } from "@turnspec/rpc";
import { ProtocolClient, type ClientOptions } from "../../generated/client.js";
import { errors } from "../../generated/registry.js";
import {
  connectWebSocket,
  startWebSocketServer,
  WebSocketHandshakeError,
  type ConnectionInfo,
  type RunningWebSocketServer,
  type WebSocketServerOptions,
  type WebSocketTransport,
} from "../../packages/rpc/src/transport/websocket.js";
import { payloadTooLargeFrame } from "../../packages/gateway/src/payload-too-large.js";
import { NEVER_ANSWERED_CWD, serve, thread, type Served } from "./fake-gateway.js";

const LIMIT = 1024;
const TOKEN = "s3cret-token-for-tests";

const cleanup: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  // Clients first, then servers: the reverse of the order they were made in.
  for (const step of cleanup.splice(0).reverse()) await step();
});

interface Connection {
  readonly transport: WebSocketTransport;
  readonly info: ConnectionInfo;
  readonly served: Served;
}

async function gateway(options: Partial<WebSocketServerOptions> = {}) {
  const connections: Connection[] = [];
  const oversized: number[] = [];
  const server = await startWebSocketServer({
    maxFrameBytes: LIMIT,
    oversizedReply: payloadTooLargeFrame,
    ...options,
    onConnection: (transport, info) => {
      connections.push({ transport, info, served: serve(transport) });
      void transport.start();
    },
    onOversized: (bytes) => oversized.push(bytes),
  });
  cleanup.push(() => server.close());
  return { server, connections, oversized };
}

async function client(url: string, token?: string, options: ClientOptions = {}) {
  const transport = await connectWebSocket(url, token === undefined ? {} : { token });
  const protocol = new ProtocolClient(transport, options);
  cleanup.push(() => protocol.close());
  await protocol.start();
  return { transport, protocol };
}

/** The reason a connection attempt failed. */
async function refusal(url: string, token?: string): Promise<unknown> {
  return connectWebSocket(url, token === undefined ? {} : { token }).then(
    (transport) => {
      cleanup.push(() => transport.close());
      throw new Error("the connection was accepted");
    },
    (error: unknown) => error,
  );
}

/** A client-to-server text frame (masked, as RFC 6455 requires of clients), for a short payload. */
function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload.map((byte, i) => byte ^ mask[i % 4]!)]);
}

const request = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method, params });

describe("WebSocket transport", () => {
  it("listens on 127.0.0.1 and carries a round trip between the generated client and dispatcher", async () => {
    const gw = await gateway({ port: 0 });
    expect(gw.server.url).toBe(`ws://127.0.0.1:${gw.server.port}/`);
    const { protocol } = await client(gw.server.url);

    await expect(protocol.threadStart({ cwd: "/srv/app" })).resolves.toEqual({ thread: thread("thr_000000000000000001", "/srv/app") });
    const failure = await protocol.threadGet({ thread_id: "thr_é" }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RpcError);
    expect(failure).toMatchObject({ code: errors.thread_not_found.code, reason: "thread_not_found", data: { thread_id: "thr_é" } });
    expect(gw.connections.map((c) => c.info)).toEqual([{ remoteAddress: "127.0.0.1", remotePort: expect.any(Number), path: "/" }]);
  });

  describe("bearer token", () => {
    it("answers an upgrade without a token with HTTP 401 and reads none of its messages", async () => {
      const gw = await gateway({ token: TOKEN });
      const socket = connect(gw.server.port, "127.0.0.1");
      await once(socket, "connect");
      let response = "";
      let wake: (() => void) | undefined;
      socket.setEncoding("utf8").on("data", (text: string) => {
        response += text;
        wake?.();
      });
      // A request sent right behind the upgrade, in the same write: it must not be read.
      socket.write(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
      );
      socket.write(maskedTextFrame(request(1, "thread/start", {})));
      const closed = once(socket, "close");
      while (!response.includes("\r\n\r\n")) await new Promise<void>((resolve) => (wake = resolve));

      expect(response).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);
      expect(response).toContain('WWW-Authenticate: Bearer realm="turnspec"');
      await closed; // the server hangs up rather than read on
      expect(gw.connections).toEqual([]);
    });

    it("refuses a client without a token, or with a wrong one in the header or the query", async () => {
      const gw = await gateway({ token: TOKEN });
      const missing = await refusal(gw.server.url);
      expect(missing).toBeInstanceOf(WebSocketHandshakeError);
      expect(missing).toMatchObject({ status: 401 });
      expect(await refusal(gw.server.url, "wrong-token")).toMatchObject({ name: "WebSocketHandshakeError", status: 401 });
      // A token one character short must not pass a comparison that stops at the shorter length.
      expect(await refusal(gw.server.url, TOKEN.slice(0, -1))).toMatchObject({ status: 401 });
      const query = await refusal(`${gw.server.url}?token=wrong-token`);
      expect(query).toMatchObject({ status: 401 });
      // The error names the URL but never the token in it.
      expect((query as Error).message).toBe(
        `the WebSocket handshake with ${gw.server.url}?token=REDACTED was refused: HTTP 401 Unauthorized`,
      );
      expect(gw.connections).toEqual([]);
    });

    it("accepts the right token in the Authorization header", async () => {
      const gw = await gateway({ token: TOKEN });
      const { protocol } = await client(gw.server.url, TOKEN);
      await expect(protocol.threadStart({})).resolves.toEqual({ thread: thread("thr_000000000000000001") });
    });

    it("accepts the right token in the query, and keeps it out of the connection info", async () => {
      const gw = await gateway({ token: TOKEN });
      const { protocol } = await client(`${gw.server.url}?token=${TOKEN}`);
      await expect(protocol.threadStart({})).resolves.toEqual({ thread: thread("thr_000000000000000001") });
      expect(gw.connections[0]!.info.path).toBe("/");
      expect(JSON.stringify(gw.connections[0]!.info)).not.toContain(TOKEN);
    });

    it("refuses an empty token as a configuration mistake", async () => {
      await expect(startWebSocketServer({ token: "", maxFrameBytes: LIMIT, onConnection: () => undefined })).rejects.toThrow(
        "startWebSocketServer: the token is empty; pass a non-empty token, or undefined to serve without authentication",
      );
    });

    it("lets an authenticate hook decide on each upgrade request, before any message is read", async () => {
      const seen: Array<string | undefined> = [];
      const gw = await gateway({
        authenticate: async (request) => {
          seen.push(request.headers.authorization);
          return request.headers.authorization === "Bearer let-me-in";
        },
      });
      const { protocol } = await client(gw.server.url, "let-me-in");
      await expect(protocol.threadStart({})).resolves.toEqual({ thread: thread("thr_000000000000000001") });
      const refused = await refusal(gw.server.url, "wrong");
      expect(refused).toBeInstanceOf(WebSocketHandshakeError);
      expect((refused as WebSocketHandshakeError).status).toBe(401);
      expect(seen).toEqual(["Bearer let-me-in", "Bearer wrong"]);
      expect(gw.connections).toHaveLength(1);
    });

    it("refuses the connection when the authenticate hook throws, and reports the error", async () => {
      const reported: string[] = [];
      const gw = await gateway({
        authenticate: () => {
          throw new Error("directory unreachable");
        },
        onError: (error) => reported.push(error.message),
      });
      expect(((await refusal(gw.server.url, "any")) as WebSocketHandshakeError).status).toBe(401);
      expect(reported).toEqual(["authenticate failed: directory unreachable"]);
      expect(gw.connections).toEqual([]);
    });

    it("refuses a token and an authenticate hook together as a configuration mistake", async () => {
      await expect(
        startWebSocketServer({ token: TOKEN, authenticate: () => true, maxFrameBytes: LIMIT, onConnection: () => undefined }),
      ).rejects.toThrow("startWebSocketServer: both token and authenticate are given");
    });
  });

  it("negotiates no compression, even when the client offers it", async () => {
    const gw = await gateway();
    const socket = new WebSocket(gw.server.url, { perMessageDeflate: true });
    cleanup.push(() => socket.close());
    // Both listened for before either can fire: ws emits 'open' right after 'upgrade'.
    const upgraded = once(socket, "upgrade");
    const opened = once(socket, "open");
    const [response] = (await upgraded) as [{ headers: Record<string, string | undefined> }];
    await opened;

    expect(response.headers["sec-websocket-extensions"]).toBeUndefined();
    expect(socket.extensions).toBe("");
    expect(gw.connections[0]!.transport.extensions).toBe("");
    const { transport } = await client(gw.server.url);
    expect(transport.extensions).toBe("");
  });

  describe("size limit", () => {
    /** A ProtocolClient that hands the test every frame it could not match to a request. */
    async function watchingClient(url: string) {
      const unmatched: Array<{ id: null; error: JsonRpcErrorObject }> = [];
      let wake: (() => void) | undefined;
      const connected = await client(url, undefined, {
        onProtocolError: (_error, frame) => {
          unmatched.push(JSON.parse(frame));
          wake?.();
        },
      });
      let closed = false;
      const clientClose = connected.transport.onclose;
      connected.transport.onclose = () => {
        clientClose?.();
        closed = true;
        wake?.();
      };
      const nextUnmatched = async () => {
        while (unmatched.length === 0 && !closed) await new Promise<void>((resolve) => (wake = resolve));
        if (unmatched.length === 0) throw new Error(`the connection closed (code ${connected.transport.closeCode}) instead of answering`);
        return unmatched.shift()!;
      };
      return { ...connected, nextUnmatched };
    }

    it("answers a frame over the limit with payload_too_large (id null) and keeps the connection usable", async () => {
      const gw = await gateway();
      const { transport, protocol, nextUnmatched } = await watchingClient(gw.server.url);
      const oversized = request(7, "thread/get", { thread_id: "x".repeat(LIMIT * 4) });
      await transport.send(oversized);

      expect(await nextUnmatched()).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: {
          code: errors.payload_too_large.code,
          message: `Payload too large: a frame of ${Buffer.byteLength(oversized)} bytes is over the limit of ${LIMIT} bytes`,
          data: { reason: "payload_too_large", limit_bytes: LIMIT },
        },
      });
      expect(gw.oversized).toEqual([Buffer.byteLength(oversized)]);
      expect(gw.connections[0]!.served.frames).toEqual([]);

      // The same connection goes on.
      await expect(protocol.threadStart({ cwd: "/after" })).resolves.toEqual({ thread: thread("thr_000000000000000001", "/after") });
      expect(transport.closeCode).toBeUndefined();
      expect(gw.connections).toHaveLength(1);
    });

    it("accepts a frame of exactly the limit and refuses one byte more", async () => {
      const gw = await gateway();
      const { transport, nextUnmatched } = await watchingClient(gw.server.url);
      const base = request(1, "thread/get", { thread_id: "thr_1" });
      const exact = base + " ".repeat(LIMIT - Buffer.byteLength(base));
      await transport.send(exact);
      await transport.send(`${exact} `);

      expect((await nextUnmatched()).error.code).toBe(errors.payload_too_large.code);
      expect(gw.oversized).toEqual([LIMIT + 1]);
      await gw.connections[0]!.served.received(1);
      expect(gw.connections[0]!.served.frames).toEqual([exact]);
    });

    it("closes the connection with 1009 when the server gives no oversizedReply", async () => {
      const gw = await gateway({ oversizedReply: undefined });
      const { transport } = await client(gw.server.url);
      const closed = new Promise<void>((resolve) => {
        const previous = transport.onclose;
        transport.onclose = () => {
          previous?.();
          resolve();
        };
      });
      await transport.send(request(1, "thread/get", { thread_id: "x".repeat(LIMIT) }));

      await closed;
      expect(transport.closeCode).toBe(1009);
      expect(gw.oversized).toHaveLength(1);
      expect(gw.connections[0]!.served.frames).toEqual([]);
    });

    it("closes the connection with 1009 when a frame is over the read limit", async () => {
      const gw = await gateway({ readLimitBytes: LIMIT * 2 });
      const { transport } = await client(gw.server.url);
      const closed = new Promise<void>((resolve) => {
        const previous = transport.onclose;
        transport.onclose = () => {
          previous?.();
          resolve();
        };
      });
      await transport.send("x".repeat(LIMIT * 2 + 1));

      await closed;
      expect(transport.closeCode).toBe(1009);
      expect(gw.oversized).toEqual([]);
    });

    it("reads a binary frame as UTF-8 text", async () => {
      const gw = await gateway();
      const socket = new WebSocket(gw.server.url);
      cleanup.push(() => socket.close());
      await once(socket, "open");
      socket.send(Buffer.from(request(3, "thread/get", { thread_id: "thr_€" })), { binary: true });
      const [reply] = (await once(socket, "message")) as [Buffer];

      expect(JSON.parse(reply.toString("utf8"))).toMatchObject({
        id: 3,
        error: { code: errors.thread_not_found.code, data: { thread_id: "thr_€" } },
      });
    });
  });

  describe("closing", () => {
    it("fails the client's pending requests with transport_closed when the server closes", async () => {
      const gw = await gateway();
      const { transport, protocol } = await client(gw.server.url);
      const failure = protocol.threadStart({ cwd: NEVER_ANSWERED_CWD }).catch((error: unknown) => error);
      await gw.connections[0]!.served.received(1);
      expect(gw.connections).toHaveLength(1);

      await gw.server.close();
      expect(await failure).toBeInstanceOf(LocalError);
      expect(await failure).toMatchObject({ kind: "transport_closed" });
      expect(transport.closeCode).toBe(1001);
    });

    it("fails pending requests with transport_closed when the client closes, and the server sees the close", async () => {
      const gw = await gateway();
      const { protocol } = await client(gw.server.url);
      const failure = protocol.threadStart({ cwd: NEVER_ANSWERED_CWD }).catch((error: unknown) => error);
      await gw.connections[0]!.served.received(1);
      const serverSide = gw.connections[0]!.transport;
      const serverSaw = new Promise<void>((resolve) => (serverSide.onclose = resolve));

      await protocol.close();
      expect(await failure).toMatchObject({ name: "LocalError", kind: "transport_closed" });
      await serverSaw;
      expect(serverSide.closeCode).toBe(1000);
      await expect(serverSide.send("{}")).rejects.toThrow("the WebSocket connection is closed");
    });
  });

  it("says which address could not be listened on", async () => {
    const gw = await gateway();
    await expect(startWebSocketServer({ port: gw.server.port, maxFrameBytes: LIMIT, onConnection: () => undefined })).rejects.toThrow(
      `cannot listen on 127.0.0.1:${gw.server.port}: EADDRINUSE`,
    );
  });
});
