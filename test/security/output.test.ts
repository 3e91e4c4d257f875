/**
 * Hole 12: output nobody reads must not grow the gateway's memory without limit. A shell
 * printing without end streams a bounded amount and says the rest is not streamed; a
 * WebSocket peer that stops reading is dropped once its unsent frames pass the bound.
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { SHELL_STREAM_LIMIT, shellTool } from "../../packages/gateway/src/tools/shell.js";
import { startWebSocketServer, type WebSocketTransport } from "../../packages/rpc/src/transport/websocket.js";
import { testContext } from "../tools/context.js";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-output-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a shell printing far past the stream limit", () => {
  it("streams at most the limit and a notice, and still runs to the end", async () => {
    const ctx = testContext(dir);
    const total = 3 * SHELL_STREAM_LIMIT;
    const result = await shellTool.run({ command: `head -c ${total} /dev/zero | tr '\\0' a; echo done >&2` }, ctx);
    expect(result.item.exit_code).toBe(0);
    const streamed = ctx.emitted
      .filter((e) => e.stream === "stdout")
      .map((e) => e.delta)
      .join("");
    expect(streamed.length).toBeLessThan(SHELL_STREAM_LIMIT + 200);
    expect(streamed).toMatch(/stdout past 1000000 characters is not streamed; the command goes on/);
    expect(
      ctx.emitted
        .filter((e) => e.stream === "stderr")
        .map((e) => e.delta)
        .join(""),
    ).toBe("done\n");
  });
});

describe("a WebSocket peer that stops reading", () => {
  it("is dropped once its unsent frames pass maxBufferedBytes, instead of being buffered without end", async () => {
    let serverSide: WebSocketTransport | undefined;
    const connected = new Promise<WebSocketTransport>((done) => {
      void startWebSocketServer({
        maxFrameBytes: 1 << 20,
        maxBufferedBytes: 1 << 20,
        onConnection: (t) => {
          serverSide = t;
          void t.start();
          done(t);
        },
      }).then((server) => {
        running = server;
        const client = new WebSocket(server.url);
        // Stop reading at the TCP level once open: frames pile up on the server side.
        client.on("open", () => (client as unknown as { _socket: { pause(): void } })._socket.pause());
        peer = client;
      });
    });
    let running: Awaited<ReturnType<typeof startWebSocketServer>> | undefined;
    let peer: WebSocket | undefined;
    const transport = await connected;
    const frame = JSON.stringify({ jsonrpc: "2.0", method: "x", params: { data: "y".repeat(64 * 1024) } });
    let refused: Error | undefined;
    let sent = 0;
    // 64 MiB would be far past the bound; the kernel's socket buffers take a few MiB at most.
    for (; sent < 1024 && !refused; sent++)
      await Promise.race([transport.send(frame), new Promise((r) => setTimeout(r, 0))]).catch((e: Error) => (refused = e));
    expect(refused?.message).toMatch(/the peer does not read/);
    expect(sent).toBeLessThan(1024);
    expect(serverSide).toBe(transport);
    peer?.terminate();
    await running?.close();
  });
});
