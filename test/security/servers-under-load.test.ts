/**
 * The AG-UI endpoint and the inspector's server under what a hostile local client can do
 * without any token: send a huge body, send its headers one byte at a time and never end,
 * open more connections than the server serves, and (with the token) start a run and never
 * read its stream. Each must be bounded: the body refused with 413 before it is read whole,
 * the slow sender cut off, the extra connections dropped, the unread stream cut, and the
 * server still answering a well-behaved client afterwards. Nothing here measures time: the
 * servers are given short limits, and the tests wait for what the limits make happen.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { Readable, Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { AgUiBridge, serveAgUi, type AgUiServer, type AgUiServeOptions } from "../../packages/client/src/ag-ui/index.js";
import { startInspector, type RunningInspector } from "../../packages/inspect/src/server.js";
import { script } from "../gateway/harness.js";
import { startClientGateway, type ClientGateway } from "../client/gateway.js";

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function agUi(options: AgUiServeOptions = {}): Promise<{ server: AgUiServer; g: ClientGateway }> {
  const g = await startClientGateway();
  const server = await serveAgUi(await g.open(), 0, options);
  closers.push(
    () => g.close(),
    () => server.close(),
  );
  return { server, g };
}

/** An inspector started without a gateway: its page may name one (POST /api/target), which takes a body. */
async function inspector(): Promise<RunningInspector> {
  const started = await startInspector({ log: () => undefined });
  closers.push(() => started.close());
  return started;
}

/** A raw connection to `port`; resolves with everything the server sent once it closes the connection. */
function raw(port: number, write: (socket: Socket) => void): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (d) => (received += d.toString()));
    socket.on("error", () => undefined);
    socket.on("close", () => resolve(received));
    socket.on("connect", () => write(socket));
  });
}

const runBody = (text: string) =>
  JSON.stringify({
    threadId: "t",
    runId: `r_${Math.random().toString(36).slice(2)}`,
    state: {},
    messages: [{ id: "m", role: "user", content: text }],
    tools: [],
    context: [],
    forwardedProps: {},
  });

describe("the AG-UI endpoint, loaded", () => {
  it("refuses a huge body with 413 without reading it whole, declared or chunked, and goes on serving", async () => {
    const { server } = await agUi();
    const port = Number(new URL(server.url).port);
    const head = (extra: string) =>
      `POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${server.token}\r\nContent-Type: application/json\r\n${extra}\r\n`;
    // 50 MB announced, 64 KB sent: the answer comes before the rest, and the connection ends.
    const declared = await raw(port, (s) => s.write(`${head("Content-Length: 52428800\r\n")}${"x".repeat(65536)}`));
    expect(declared).toMatch(/^HTTP\/1.1 413 /);
    expect(declared).toContain("the request body exceeds 1048576 bytes (52428800 declared)");
    // Chunked, with no length: cut once past the limit.
    const chunked = await raw(port, (s) => {
      s.write(head("Transfer-Encoding: chunked\r\n"));
      const chunk = "y".repeat(256 * 1024);
      for (let i = 0; i < 8; i++) s.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    });
    expect(chunked).toMatch(/^HTTP\/1.1 413 /);
    const ok = await fetch(server.url, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: runBody(script({ say: "still-here", chunks: 1 })),
    });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("still-here");
  });

  it("cuts off a client that never finishes its headers, and drops connections past the limit", async () => {
    const { server } = await agUi({ requestTimeoutMs: 500, maxConnections: 4 });
    const port = Number(new URL(server.url).port);
    // Slowloris: a header line, then nothing. The server closes the connection (408 or a plain close).
    const slow = await raw(port, (s) => s.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `));
    expect(slow === "" || slow.startsWith("HTTP/1.1 408")).toBe(true);
    // Ten idle connections against a limit of four: the server serves four and drops the six past it.
    const sockets: Socket[] = [];
    const dropped: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      const socket = connect(port, "127.0.0.1");
      sockets.push(socket);
      dropped.push(new Promise<void>((resolve) => socket.on("close", () => resolve()).on("error", () => undefined)));
      await new Promise((resolve) => socket.once("connect", resolve));
    }
    await expect.poll(() => new Promise<number>((resolve) => server.server.getConnections((_e, n) => resolve(n)))).toBeLessThanOrEqual(4);
    await Promise.all(dropped.slice(4));
    for (const s of sockets) s.destroy();
    await expect.poll(() => new Promise<number>((resolve) => server.server.getConnections((_e, n) => resolve(n)))).toBe(0);
    const ok = await fetch(server.url, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: runBody(script({ say: "after-the-flood", chunks: 1 })),
    });
    expect(await ok.text()).toContain("after-the-flood");
  });

  it("cuts the stream of a client that does not read it, and the turn goes on in the gateway", async () => {
    // A loopback socket's kernel buffers hold tens of megabytes before a writer notices, so the
    // response here is a stream whose every write stays pending, as toward a client that stopped reading.
    const g = await startClientGateway();
    closers.push(() => g.close());
    const bridge = new AgUiBridge(await g.open(), { maxUnsentBytes: 64 * 1024, maxBodyBytes: 4 * 1024 * 1024 });
    class Unread extends Writable {
      status = 0;
      written: string[] = [];
      writeHead(status: number) {
        this.status = status;
        return this;
      }
      override _write(chunk: Buffer, _encoding: string, _done: () => void) {
        // never done: nothing more is taken
        this.written.push(chunk.toString());
      }
    }
    const res = new Unread();
    const closed = new Promise<void>((resolve) => res.on("close", () => resolve()));
    const body = runBody(script({ say: "z".repeat(1024 * 1024), chunks: 256 }));
    const req = Object.assign(Readable.from([Buffer.from(body)]), {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
    });
    await bridge.handle(req as unknown as IncomingMessage, res as unknown as ServerResponse);
    await closed;
    expect(res.status, res.written.join("")).toBe(200);
    expect(res.destroyed).toBe(true);
    // What it left unread was cut at the limit, not held: the last write is what passed it.
    expect(res.writableLength).toBeLessThan(64 * 1024 + 8 * 1024);
    // The turn is the gateway's and runs to its end.
    const runId = (JSON.parse(body) as { runId: string }).runId;
    await expect.poll(() => g.harness.gateway.turnState(runId)?.turn.status).toBe("Completed");
  }, 60_000);
});

describe("the inspector's server, loaded", () => {
  it("refuses a huge body with 413 before reading it, and goes on serving", async () => {
    const i = await inspector();
    const token = new URLSearchParams(new URL(i.url).hash.slice(1)).get("token")!;
    const big = await raw(i.port, (s) =>
      s.write(
        `POST /api/target HTTP/1.1\r\nHost: 127.0.0.1:${i.port}\r\nOrigin: http://127.0.0.1:${i.port}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 52428800\r\n\r\n${"x".repeat(65536)}`,
      ),
    );
    expect(big).toMatch(/^HTTP\/1.1 413 /);
    expect(big).toContain("the request body is over 65536 bytes (52428800 declared)");
    const info = await fetch(`http://127.0.0.1:${i.port}/api/info`, { headers: { authorization: `Bearer ${token}` } });
    expect(info.status).toBe(200);
  });
});
