/**
 * A server built on the dispatcher generated from the MCP slice (test/fixtures/mcp/server.ts),
 * driven over stdio by the official @modelcontextprotocol/sdk client: initialize, tools/list,
 * tools/call, and a tool call during which the server sends sampling/createMessage back to
 * the client and awaits its answer.
 */
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";

const server = fileURLToPath(new URL("../fixtures/mcp/server.ts", import.meta.url));

let client: Client | undefined;
afterEach(async () => {
  await client?.close();
  client = undefined;
});

async function connect(): Promise<{ client: Client; sampled: unknown[] }> {
  const sampled: unknown[] = [];
  client = new Client({ name: "sdk-test-client", version: "1.0.0" }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    sampled.push(request.params);
    return { role: "assistant", content: { type: "text", text: "forty-two" }, model: "sdk-model", stopReason: "endTurn" };
  });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ["--import", new URL("../../scripts/from-source.mjs", import.meta.url).href, server],
      stderr: "pipe",
    }),
  );
  return { client, sampled };
}

describe("a server on the generated MCP dispatcher, driven by the official MCP SDK client", () => {
  it("initializes, lists tools and calls one", async () => {
    const { client } = await connect();
    expect(client.getServerVersion()).toEqual({ name: "turnspec-mcp-fixture", version: "1.0.0" });
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["echo", "ask-model"]);
    const result = await client.callTool({ name: "echo", arguments: { message: "hi" } });
    expect(result.content).toEqual([{ type: "text", text: "Echo: hi" }]);
    await client.ping();
  }, 60_000);

  it("answers a sampling request the server sends during a tool call", async () => {
    const { client, sampled } = await connect();
    const result = await client.callTool({ name: "ask-model", arguments: { question: "What is six times seven?" } });
    expect(sampled).toEqual([
      { messages: [{ role: "user", content: { type: "text", text: "What is six times seven?" } }], maxTokens: 100 },
    ]);
    expect(result.content).toEqual([{ type: "text", text: "sdk-model says: forty-two" }]);
  }, 60_000);

  it("refuses params that do not match the schema with -32602 naming the field", async () => {
    const { client } = await connect();
    // The SDK's own types accept this call; the generated dispatcher refuses it: name must be a string.
    await expect(
      client.request(
        { method: "tools/call", params: { name: 7 } } as never,
        (await import("@modelcontextprotocol/sdk/types.js")).CallToolResultSchema,
      ),
    ).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining("/name"),
    });
  }, 60_000);
});
