/**
 * MCP servers end to end through turn/start, against real servers started over stdio:
 * @modelcontextprotocol/server-filesystem and @modelcontextprotocol/server-everything
 * (and, for a tool that vanishes, a small server on the same SDK). The scripted model calls
 * their tools; each call is a dynamicToolCall item with its arguments, progress and outcome.
 * Slow: every test starts server processes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { GatewayConfig, TurnCapability, TurnItem } from "../../generated/types.js";
import { ofTurn, script, startHarness, text, type Harness } from "../gateway/harness.js";

const require = createRequire(import.meta.url);
const serverScript = (pkg: string) => join(realpathSync(join(require.resolve(`${pkg}/package.json`), "..")), "dist", "index.js");

let h: Harness | undefined;
afterEach(async () => {
  if (!h) return;
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
  h = undefined;
});

/** A gateway whose configuration names the filesystem server (over `dir`), the everything server, a vanishing one and one that cannot start. */
async function start(dir: string, extra: Partial<GatewayConfig> = {}): Promise<Harness> {
  h = await startHarness({
    config: {
      mcp_servers: {
        // The reference filesystem server's annotations are believed: the configuration trusts it.
        fs: { command: process.execPath, args: [serverScript("@modelcontextprotocol/server-filesystem"), dir], trusted: true },
        everything: {
          command: process.execPath,
          args: [serverScript("@modelcontextprotocol/server-everything"), "stdio"],
          tool_timeout_ms: 1500,
        },
        vanishing: { command: process.execPath, args: [join(import.meta.dirname, "..", "fixtures", "mcp", "vanishing-server.mjs")] },
        broken: { command: process.execPath, args: ["-e", "console.error('no such database'); process.exit(3)"], startup_timeout_ms: 5000 },
      },
      ...extra,
    },
  });
  return h;
}

const server = (id: string, name: string): TurnCapability => ({ id, kind: { type: "mcpServer", name, scopeKind: "workspace" } });
const tool = (id: string, serverName: string, rawToolName: string): TurnCapability => ({
  id,
  kind: { type: "mcpTool", serverName, rawToolName, scopeKind: "workspace" },
});

const calls = (ns: readonly AnyNotification[]) =>
  ns.flatMap((n) =>
    n.method === "item/completed" && n.params.item.type === "dynamicToolCall"
      ? [n.params.item as Extract<TurnItem, { type: "dynamicToolCall" }>]
      : [],
  );

function workDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-mcp-")));
  writeFileSync(join(dir, "notes.txt"), "first line\nsecond line\n");
  return dir;
}

describe("an MCP server selected for a turn", () => {
  it("offers its tools; the model's calls run on the real filesystem server as dynamicToolCall items", async () => {
    const dir = workDir();
    const gw = await start(dir);
    const thread = await gw.thread({ cwd: dir });
    const steps = script(
      { tool: "mcp__fs__read_text_file", args: { path: join(dir, "notes.txt") } },
      { tool: "mcp__fs__write_file", args: { path: join(dir, "out.txt"), content: "written over MCP" } },
      { say: "done" },
    );
    const { turn } = await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_fs",
      capabilities: [server("cap_fs", "fs")],
      input: text(steps),
    });
    expect(turn.capabilities).toEqual([
      {
        capabilityId: "cap_fs",
        status: "accepted",
        reason: "explicit_composer_capability",
        message: expect.stringMatching(/^\d+ tools offered$/),
      },
    ]);
    const end = await gw.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_fs");
    expect(end.method).toBe("turn/completed");
    expect(calls(ofTurn(gw.received, "trn_fs"))).toMatchObject([
      {
        tool_name: "mcp__fs__read_text_file",
        server_name: "fs",
        arguments: { path: join(dir, "notes.txt") },
        status: "completed",
        outcome: "success",
        output: "first line\nsecond line\n",
      },
      {
        tool_name: "mcp__fs__write_file",
        server_name: "fs",
        status: "completed",
        outcome: "success",
        tool_result: expect.stringContaining("Successfully wrote"),
      },
    ]);
    expect(readFileSync(join(dir, "out.txt"), "utf8")).toBe("written over MCP");
  }, 60_000);

  it("asks before a tool that is not read-only in a supervised turn, and runs a read-only one without asking", async () => {
    const dir = workDir();
    const gw = await start(dir);
    const thread = await gw.thread({ cwd: dir });
    const steps = script(
      { tool: "mcp__fs__read_text_file", args: { path: join(dir, "notes.txt") } },
      { tool: "mcp__fs__write_file", args: { path: join(dir, "denied.txt"), content: "must not be written" } },
      { say: "ok" },
    );
    await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_ask",
      permission_profile: { mode: "supervised" },
      capabilities: [server("cap_fs", "fs")],
      input: text(steps),
    });
    const opened = await gw.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.turn_id === "trn_ask");
    if (opened.method !== "turn/permission/request/opened") throw new Error("unreachable");
    expect(opened.params.request).toMatchObject({ tool_name: "mcp__fs__write_file", action: "mcp_write_or_unknown" });
    await gw.client.turnPermissionRequestRespond({
      request_id: opened.params.request.request_id,
      resolve_token: opened.params.request.resolve_token,
      resolution: "deny",
    });
    await gw.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_ask");
    const events = ofTurn(gw.received, "trn_ask");
    expect(events.filter((n) => n.method === "turn/permission/request/opened")).toHaveLength(1);
    expect(calls(events)).toMatchObject([
      { tool_name: "mcp__fs__read_text_file", outcome: "success" },
      { tool_name: "mcp__fs__write_file", status: "declined", outcome: "declined" },
    ]);
    expect(existsSync(join(dir, "denied.txt"))).toBe(false);
  }, 60_000);
});

describe("an MCP tool selected for a turn", () => {
  it("streams the server's progress onto the item", async () => {
    const gw = await start(workDir());
    const thread = await gw.thread();
    const steps = script({ tool: "mcp__everything__trigger-long-running-operation", args: { duration: 0.6, steps: 3 } }, { say: "ok" });
    await gw.runTurn({
      thread_id: thread,
      turn_id: "trn_progress",
      capabilities: [tool("cap_long", "everything", "trigger-long-running-operation")],
      input: text(steps),
    });
    const events = ofTurn(gw.received, "trn_progress");
    // The server's last progress notification may cross its result, after which the SDK drops it.
    const deltas = events.filter((n) => n.method === "item/tool/progress").map((n) => (n.params as { delta: string }).delta);
    expect(deltas.slice(0, 2)).toEqual(["1/3\n", "2/3\n"]);
    expect(calls(events)).toMatchObject([
      {
        server_name: "everything",
        outcome: "success",
        progress: deltas.join(""),
        output: expect.stringContaining("Long running operation completed"),
      },
    ]);
  }, 60_000);

  it("offers only that tool: another tool of the server is unknown to the turn", async () => {
    const gw = await start(workDir());
    const thread = await gw.thread();
    const steps = script(
      { tool: "mcp__everything__get-sum", args: { a: 2, b: 3 } },
      { tool: "mcp__everything__echo", args: { message: "hi" } },
      { say: "ok" },
    );
    await gw.runTurn({
      thread_id: thread,
      turn_id: "trn_one",
      capabilities: [tool("cap_sum", "everything", "get-sum")],
      input: text(steps),
    });
    expect(calls(ofTurn(gw.received, "trn_one"))).toMatchObject([
      { tool_name: "mcp__everything__get-sum", outcome: "success", output: expect.stringContaining("5") },
      { tool_name: "mcp__everything__echo", status: "failed", tool_result: expect.stringContaining("unknown tool") },
    ]);
  }, 60_000);

  it("reports a call past the server's tool timeout as timed out, to the item and the model, and the turn goes on", async () => {
    const gw = await start(workDir());
    const thread = await gw.thread();
    const steps = script(
      { tool: "mcp__everything__trigger-long-running-operation", args: { duration: 5, steps: 1 } },
      { say: "it timed out" },
    );
    const end = await gw.runTurn({
      thread_id: thread,
      turn_id: "trn_slow",
      capabilities: [server("cap_everything", "everything")],
      input: text(steps),
    });
    expect(end.method).toBe("turn/completed");
    const events = ofTurn(gw.received, "trn_slow");
    expect(calls(events)).toMatchObject([
      { status: "failed", outcome: "timed_out", tool_result: expect.stringContaining("did not answer within 1500 ms") },
    ]);
    expect(events.some((n) => n.method === "item/timeout_detected")).toBe(true);
  }, 60_000);

  it("reports a tool that vanished from the server after the turn started as a failed call", async () => {
    const gw = await start(workDir());
    const thread = await gw.thread();
    const steps = script({ tool: "mcp__vanishing__vanish" }, { tool: "mcp__vanishing__target" }, { say: "gone" });
    const end = await gw.runTurn({
      thread_id: thread,
      turn_id: "trn_vanish",
      capabilities: [server("cap_v", "vanishing")],
      input: text(steps),
    });
    expect(end.method).toBe("turn/completed");
    expect(calls(ofTurn(gw.received, "trn_vanish"))).toMatchObject([
      { tool_name: "mcp__vanishing__vanish", outcome: "success" },
      { tool_name: "mcp__vanishing__target", status: "failed", outcome: "error", tool_result: expect.stringMatching(/target/) },
    ]);
  }, 60_000);
});

describe("an MCP selection that cannot be honoured", () => {
  it("is rejected with the reason, and the turn still runs", async () => {
    const gw = await start(workDir());
    const thread = await gw.thread();
    const { turn } = await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_rejected",
      capabilities: [
        server("cap_broken", "broken"),
        tool("cap_missing", "everything", "no-such-tool"),
        { id: "cap_scope", kind: { type: "mcpServer", name: "fs", scopeKind: "user" } },
      ],
      input: text(script({ say: "ran anyway" })),
    });
    expect(turn.capabilities).toEqual([
      {
        capabilityId: "cap_broken",
        status: "rejected",
        reason: "dependency_missing",
        message: expect.stringContaining("no such database"),
      },
      { capabilityId: "cap_missing", status: "rejected", reason: "tool_missing", message: expect.stringContaining("echo") },
      { capabilityId: "cap_scope", status: "rejected", reason: "not_found", message: expect.stringContaining("scope workspace") },
    ]);
    const end = await gw.waitFor(
      (n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === "trn_rejected",
    );
    expect(end.method).toBe("turn/completed");
  }, 60_000);

  it("is provider_unsupported in a Chat-mode turn, which calls no tools", async () => {
    const gw = await start(workDir());
    const thread = await gw.thread();
    const { turn } = await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_chat",
      mode: "Chat",
      capabilities: [server("cap_fs", "fs")],
      input: text("hello"),
    });
    expect(turn.capabilities).toEqual([
      { capabilityId: "cap_fs", status: "rejected", reason: "provider_unsupported", message: expect.stringContaining("Chat-mode") },
    ]);
  }, 60_000);
});

describe("an MCP server reached over Streamable HTTP", () => {
  let server: ChildProcess | undefined;
  afterEach(() => {
    server?.kill();
    server = undefined;
  });

  /** A free port on 127.0.0.1 (asked of the system, then released for the server to take). */
  const freePort = () =>
    new Promise<number>((resolve, reject) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
      probe.on("error", reject);
    });

  it("serves its tools like a stdio one", async () => {
    const port = await freePort();
    server = spawn(process.execPath, [serverScript("@modelcontextprotocol/server-everything"), "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    await new Promise<void>((resolve, reject) => {
      server!.stderr!.on("data", (chunk: Buffer) => chunk.toString().includes("listening") && resolve());
      server!.once("exit", (code) => reject(new Error(`server-everything exited (${code})`)));
    });
    const gw = await start(workDir(), { mcp_servers: { remote: { url: `http://127.0.0.1:${port}/mcp` } } });
    const thread = await gw.thread();
    const steps = script({ tool: "mcp__remote__echo", args: { message: "over http" } }, { say: "ok" });
    const { turn } = await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_http",
      capabilities: [tool("cap_echo", "remote", "echo")],
      input: text(steps),
    });
    expect(turn.capabilities).toMatchObject([{ status: "accepted" }]);
    await gw.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_http");
    expect(calls(ofTurn(gw.received, "trn_http"))).toMatchObject([
      { server_name: "remote", outcome: "success", output: expect.stringContaining("over http") },
    ]);
  }, 60_000);
});

describe("a turn cancelled during an MCP call", () => {
  it("cancels the call: the item ends cancelled and the turn Interrupted", async () => {
    const gw = await start(workDir());
    const thread = await gw.thread();
    const steps = script({ tool: "mcp__everything__trigger-long-running-operation", args: { duration: 20, steps: 20 } }, { say: "never" });
    await gw.client.turnStart({
      thread_id: thread,
      turn_id: "trn_cancel",
      capabilities: [server("cap_everything", "everything")],
      input: text(steps),
    });
    await gw.waitFor((n) => n.method === "item/started" && n.params.turn_id === "trn_cancel" && n.params.item.type === "dynamicToolCall");
    const { turn } = await gw.client.turnCancel({ thread_id: thread, turn_id: "trn_cancel" });
    expect(turn.status).toBe("Interrupted");
    expect(calls(ofTurn(gw.received, "trn_cancel"))).toMatchObject([{ status: "cancelled", outcome: "cancelled" }]);
  }, 60_000);
});
