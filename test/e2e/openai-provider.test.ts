/**
 * `turnspec serve --provider-url`: the gateway's default provider becomes an
 * OpenAI-compatible server, here a local one that streams the documented chunk format.
 * Also: a configuration file that does not match its schema stops serve with the place.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProtocolClient } from "../../generated/client.js";
import type { AnyNotification } from "../../generated/registry.js";
import { spawnStdioTransport } from "../../packages/rpc/src/transport/child-process.js";

const requests: Record<string, unknown>[] = [];
const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) => ({
  id: "chatcmpl-e2e",
  object: "chat.completion.chunk",
  created: 1,
  model: "local-model",
  choices: [{ index: 0, delta, finish_reason }],
});
// First call: a tool call whose arguments arrive in two pieces. Second call: the answer.
const answers = [
  [
    chunk({
      role: "assistant",
      tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "shell", arguments: '{"command":' } }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"echo via-openai"}' } }] }),
    chunk({}, "tool_calls"),
  ],
  [chunk({ role: "assistant", content: "The command " }), chunk({ content: "printed via-openai." }), chunk({}, "stop")],
];
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c: Buffer) => (body += c.toString()));
  req.on("end", () => {
    requests.push(JSON.parse(body) as Record<string, unknown>);
    const answer = answers[requests.length - 1] ?? [chunk({ content: "unscripted" }, "stop")];
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const c of answer) res.write(`data: ${JSON.stringify(c)}\n\n`);
    res.end("data: [DONE]\n\n");
  });
});
let baseURL = "";
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("turnspec serve --provider-url", () => {
  it("runs an Agent turn against an OpenAI-compatible server: tool call, tool result back to the model, streamed answer", async () => {
    const transport = spawnStdioTransport("node", ["bin/turnspec.js", "serve", "--stdio", "--memory", "--provider-url", baseURL], {
      stderr: "collect",
    });
    const client = new ProtocolClient(transport, { validateIncoming: "strict" });
    const received: AnyNotification[] = [];
    let finished!: (n: AnyNotification) => void;
    const terminal = new Promise<AnyNotification>((resolve) => (finished = resolve));
    client.onAny((n) => {
      received.push(n);
      if (n.method === "turn/completed" || n.method === "turn/failed") finished(n);
    });
    await client.start();
    try {
      const cwd = mkdtempSync(join(tmpdir(), "turnspec-openai-"));
      const { thread } = await client.threadStart({ cwd });
      const { turn } = await client.turnStart({
        thread_id: thread.id,
        turn_id: "trn_openai",
        input: [{ type: "text", text: "run the command" }],
      });
      expect(turn).toMatchObject({ model_provider: "openai" });
      expect((await terminal).method).toBe("turn/completed");
      const deltas = received.filter((n) => n.method === "item/agent_message/delta").map((n) => (n.params as { delta: string }).delta);
      expect(deltas.join("")).toBe("The command printed via-openai.");
      expect(requests).toHaveLength(2);
      expect(requests[0]).toMatchObject({ stream: true, messages: [{ role: "user", content: "run the command" }] });
      expect((requests[0]!.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(
        expect.arrayContaining(["shell", "read_file", "write_file", "web_fetch", "spawn_agent"]),
      );
      const messages = requests[1]!.messages as { role: string; content?: string; tool_call_id?: string }[];
      expect(messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_1" });
      expect(messages.at(-1)!.content).toContain("via-openai");
    } finally {
      await client.close();
    }
  });
});

describe("turnspec serve --config", () => {
  it("stops with exit 2 and names each wrong place of an invalid configuration", () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-config-")), "gateway.json");
    writeFileSync(file, JSON.stringify({ limits: { max_frame_bytes: "big" }, tools: { shell_timeout: 5 } }));
    const run = spawnSync("node", ["bin/turnspec.js", "serve", "--stdio", "--memory", "--config", file], { encoding: "utf8", input: "" });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`the config file ${file} is invalid`);
    expect(run.stderr).toContain("limits/max_frame_bytes: must be integer");
    expect(run.stderr).toContain("tools/shell_timeout: is not a known field");
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it("refuses to start with both or neither transport", () => {
    const run = spawnSync("node", ["bin/turnspec.js", "serve", "--memory"], { encoding: "utf8" });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("Choose one transport: --stdio, --port N or --ag-ui N.");
  });
});
