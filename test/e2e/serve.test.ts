/**
 * `turnspec serve` as a real process, over stdio and over WebSocket: a scripted turn with
 * a tool call, every frame validated strictly, and a restart on the same SQLite file.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Transport } from "../../packages/rpc/src/index.js";
import { spawnStdioTransport } from "../../packages/rpc/src/transport/child-process.js";
import { connectWebSocket, WebSocketHandshakeError } from "../../packages/rpc/src/transport/websocket.js";
import { startStrictClient, type StrictClient } from "../../bench/strict-client.js";

const CLI = ["bin/turnspec.js", "serve"];
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Session = StrictClient;

async function session(transport: Transport): Promise<Session> {
  const s = await startStrictClient(transport);
  cleanups.push(() => s.client.close());
  return s;
}

const scriptedTurn = JSON.stringify({
  script: [
    { tool: "shell", args: { command: "echo from-the-tool" } },
    { say: "The tool said from-the-tool.", chunks: 2 },
  ],
});

/** Runs one scripted turn with a tool call and checks what a client relies on. */
async function runScriptedTurn(s: Session, cwd: string, turnId: string) {
  const { thread } = await s.client.threadStart({ cwd });
  const terminal = s.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed");
  const { turn } = await s.client.turnStart({ thread_id: thread.id, turn_id: turnId, input: [{ type: "text", text: scriptedTurn }] });
  expect(turn.status).toBe("InProgress");
  expect((await terminal).method).toBe("turn/completed");
  const live = s.received.filter((n) => "turn_id" in n.params && n.params.turn_id === turnId);
  expect(live.map((n) => n.method)).toContain("item/command_execution/output_delta");
  const command = live.find((n) => n.method === "item/completed" && n.params.item.type === "commandExecution");
  expect(command?.params).toMatchObject({ item: { stdout: "from-the-tool\n", exit_code: 0, status: "completed" } });
  const items = await s.client.turnItems({ thread_id: thread.id, turn_id: turnId });
  expect(items.events.map((e) => ({ method: e.method, params: e.params }))).toEqual(
    live.map((n) => ({ method: n.method, params: n.params })),
  );
  expect(s.protocolErrors).toEqual([]);
  return thread.id;
}

function stdioGateway(args: string[]): ReturnType<typeof spawnStdioTransport> {
  const transport = spawnStdioTransport("node", [...CLI, "--stdio", ...args], { stderr: "collect" });
  return transport;
}

/** Starts `serve --port 0` and resolves with its URL, read from its stderr. */
async function webSocketGateway(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn("node", [...CLI, "--port", "0", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  cleanups.push(
    () => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : (child.once("exit", resolve), child.kill("SIGTERM")))),
  );
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (ws:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`serve exited with ${code} before listening: ${stderr}`)));
  });
  return { url, child };
}

describe("turnspec serve --stdio", () => {
  it("runs a scripted turn with a tool call, every frame valid", async () => {
    const s = await session(stdioGateway(["--memory"]));
    await runScriptedTurn(s, mkdtempSync(join(tmpdir(), "turnspec-e2e-")), "trn_stdio");
  });

  it("answers a frame over the size limit with payload_too_large and stays usable", async () => {
    const transport = stdioGateway(["--memory", "--max-frame-bytes", "2048"]);
    const s = await session(transport);
    await transport.send(JSON.stringify({ jsonrpc: "2.0", id: 99, method: "thread/start", params: { cwd: "x".repeat(5000) } }));
    const { thread } = await s.client.threadStart({});
    expect(thread.id).toMatch(/^thr_/);
    expect(s.protocolErrors.join("\n")).toMatch(/Payload too large/);
  });

  it("reads the same turn back after a restart on the same SQLite file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "turnspec-e2e-"));
    const db = join(dir, "gateway.sqlite");
    const first = await session(stdioGateway(["--db", db]));
    const threadId = await runScriptedTurn(first, dir, "trn_durable");
    const before = await first.client.turnGet({ thread_id: threadId, turn_id: "trn_durable" });
    const beforeItems = await first.client.turnItems({ thread_id: threadId, turn_id: "trn_durable" });
    await first.client.close();

    const second = await session(stdioGateway(["--db", db]));
    expect(await second.client.turnGet({ thread_id: threadId, turn_id: "trn_durable" })).toEqual(before);
    expect(await second.client.turnItems({ thread_id: threadId, turn_id: "trn_durable" })).toEqual(beforeItems);
  });
});

describe("turnspec serve --port", () => {
  it("refuses a missing or wrong token before reading any message, and serves the right one", async () => {
    const { url } = await webSocketGateway(["--memory", "--token", "e2e-secret"]);
    await expect(connectWebSocket(url)).rejects.toBeInstanceOf(WebSocketHandshakeError);
    await expect(connectWebSocket(url, { token: "wrong" })).rejects.toMatchObject({ status: 401 });
    const s = await session(await connectWebSocket(url, { token: "e2e-secret" }));
    await runScriptedTurn(s, mkdtempSync(join(tmpdir(), "turnspec-e2e-")), "trn_ws");
  });

  it("prints a generated token when none is given, and accepts it in the query", async () => {
    const child = spawn("node", [...CLI, "--port", "0", "--memory"], { stdio: ["ignore", "ignore", "pipe"] });
    cleanups.push(
      () => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : (child.once("exit", resolve), child.kill("SIGTERM")))),
    );
    let stderr = "";
    const { url, token } = await new Promise<{ url: string; token: string }>((resolve) => {
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        const url = /listening on (ws:\/\/\S+)/.exec(stderr)?.[1];
        const token = /token: (\S+)/.exec(stderr)?.[1];
        if (url && token) resolve({ url, token });
      });
    });
    const s = await session(await connectWebSocket(`${url}?token=${encodeURIComponent(token)}`));
    expect((await s.client.threadStart({})).thread.workspace_id).toBe("ws_default");
  });
});
