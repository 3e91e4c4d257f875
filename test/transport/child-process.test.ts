/**
 * The child-process transport: a tiny script that echoes JSON-RPC requests, for the
 * process's life cycle (start, stderr, exit, close, kill); and the fake gateway served
 * over a real process's stdin and stdout, driven by the generated ProtocolClient.
 */
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalError, RpcClient, RpcError, type JsonRpcErrorObject } from "@turnspec/rpc";
import { ProtocolClient } from "../../generated/client.js";
import { errors } from "../../generated/registry.js";
import { spawnStdioTransport, type ChildProcessTransport, type SpawnStdioOptions } from "../../packages/rpc/src/transport/child-process.js";
import { thread } from "./fake-gateway.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const gatewayScript = fileURLToPath(new URL("fixtures/stdio-gateway.ts", import.meta.url));

/**
 * Answers each request line with its method and params; "hang" is never answered and
 * "exit" makes it exit with code 3. With IGNORE_SIGTERM set it survives SIGTERM.
 */
const ECHO = `
if (process.env.IGNORE_SIGTERM) {
  process.on("SIGTERM", () => process.stderr.write("ignoring SIGTERM\\n"));
  setInterval(() => {}, 1 << 30);
}
process.stderr.write("echo ready\\n");
require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.method === "exit") {
    process.stderr.write("exiting as asked\\n");
    process.exit(3);
  }
  if (message.method === "hang") return;
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { method: message.method, params: message.params } }) + "\\n");
});
`;

const open: ChildProcessTransport[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((transport) => transport.close()));
});

function echo(options: SpawnStdioOptions = {}) {
  const transport = spawnStdioTransport(process.execPath, ["-e", ECHO], { stderr: "collect", ...options });
  open.push(transport);
  const none = () => undefined;
  const rpc = new RpcClient(transport, { params: none, result: none, notification: none });
  return { transport, rpc };
}

describe("spawnStdioTransport", () => {
  it("exchanges requests and responses with the child, UTF-8 intact", async () => {
    const { rpc } = echo();
    await rpc.start();
    const results = await Promise.all([rpc.request("echo", { text: "héllo €😀" }), rpc.request("again", { n: 2 })]);
    expect(results).toEqual([
      { method: "echo", params: { text: "héllo €😀" } },
      { method: "again", params: { n: 2 } },
    ]);
  });

  it("reports a child that exits on its own with its code and stderr, and fails pending requests", async () => {
    const { transport, rpc } = echo();
    const reported = new Promise<Error>((resolve) => (transport.onerror = resolve));
    await rpc.start();
    const pending = rpc.request("exit", {});

    await expect(pending).rejects.toMatchObject({ name: "LocalError", kind: "transport_closed" });
    const error = await reported;
    expect(error.message).toContain("exited with code 3");
    expect(error.message).toContain("exiting as asked");
    expect(transport.stderrText).toBe("echo ready\nexiting as asked\n");
  });

  it("stops the child on close and fails the requests still pending", async () => {
    const { transport, rpc } = echo();
    await rpc.start();
    const failure = rpc.request("hang", {}).catch((error: unknown) => error);

    await rpc.close();
    expect(await failure).toBeInstanceOf(LocalError);
    expect(await failure).toMatchObject({ kind: "transport_closed" });
    const exit = await transport.exited;
    expect(exit.code !== null || exit.signal !== null).toBe(true);
    expect(transport.child.exitCode !== null || transport.child.signalCode !== null).toBe(true);
  });

  it("kills a child that ignores SIGTERM once the kill timeout has passed", async () => {
    const { transport, rpc } = echo({ env: { ...process.env, IGNORE_SIGTERM: "1" }, killTimeoutMs: 200 });
    await rpc.start();
    // An answer proves the script has installed its SIGTERM handler (it does so first).
    await rpc.request("echo", {});

    await rpc.close();
    expect(await transport.exited).toEqual({ code: null, signal: "SIGKILL" });
    expect(transport.stderrText).toContain("ignoring SIGTERM");
  });

  it("rejects start() with the command when it cannot be started", async () => {
    const transport = spawnStdioTransport("/nonexistent/turnspec-gateway", ["--stdio"]);
    open.push(transport);
    await expect(transport.start()).rejects.toThrow(
      "could not start `/nonexistent/turnspec-gateway --stdio`: spawn /nonexistent/turnspec-gateway ENOENT",
    );
  });
});

describe("a gateway on a child process's stdio", () => {
  async function gatewayClient() {
    const transport = spawnStdioTransport(
      process.execPath,
      ["--import", new URL("../../scripts/from-source.mjs", import.meta.url).href, gatewayScript],
      {
        cwd: repoRoot,
        env: { ...process.env, MAX_FRAME_BYTES: "512" },
        stderr: "collect",
      },
    );
    open.push(transport);
    const dropped: unknown[] = [];
    let onDropped: (() => void) | undefined;
    const client = new ProtocolClient(transport, {
      onProtocolError: (_error, frame) => {
        dropped.push(JSON.parse(frame));
        onDropped?.();
      },
    });
    await client.start();
    const nextDropped = () => new Promise<void>((resolve) => (onDropped = resolve));
    return { transport, client, dropped, nextDropped };
  }

  it("answers the generated client over real pipes", async () => {
    const { client } = await gatewayClient();
    await expect(client.threadStart({})).resolves.toEqual({ thread: thread("thr_000000000000000001") });
    const failure = await client.threadGet({ thread_id: "thr_é" }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RpcError);
    expect(failure).toMatchObject({ code: errors.thread_not_found.code, data: { thread_id: "thr_é" } });
  });

  it("answers an oversized frame with payload_too_large (id null) and keeps serving", async () => {
    const { transport, client, dropped, nextDropped } = await gatewayClient();
    const arrived = nextDropped();
    const oversized = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "thread/get", params: { thread_id: "x".repeat(2000) } });
    await transport.send(oversized);
    await arrived;

    const reply = dropped[0] as { id: null; error: JsonRpcErrorObject };
    expect(reply.id).toBeNull();
    expect(reply.error).toMatchObject({ code: errors.payload_too_large.code, data: { reason: "payload_too_large", limit_bytes: 512 } });
    await expect(client.threadStart({ cwd: "/after" })).resolves.toEqual({ thread: thread("thr_000000000000000001", "/after") });
    // stderr is a pipe of its own: it is complete only once the child has gone.
    await client.close();
    expect(transport.stderrText).toContain(`discarded a frame of ${Buffer.byteLength(oversized)} bytes`);
  });
});
