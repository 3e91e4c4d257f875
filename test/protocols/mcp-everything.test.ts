/**
 * The client generated from test/fixtures/mcp/schemas against a real MCP server nobody here
 * wrote: @modelcontextprotocol/server-everything, spawned over stdio. It initializes, lists
 * and calls tools, lists resources, pings, and answers the server's own requests (roots/list
 * and sampling/createMessage) through its typed handlers. Every frame the server sends is
 * checked: results and notifications by the client's validation, requests by the client's
 * dispatcher, and the test fails on any frame dropped as invalid or any answer sent as an error.
 */
import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import { LocalError, type Transport } from "@turnspec/rpc";
import { ChildProcessTransport } from "../../packages/rpc/src/transport/child-process.js";
import { ProtocolClient } from "../fixtures/mcp/expected/client.js";
import type { CreateMessageRequestParams } from "../fixtures/mcp/expected/types.js";
import { validateNotification } from "../fixtures/mcp/expected/validators.js";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

/** Records the frames both ways, for the assertions on what crossed the wire. */
function recording(transport: Transport): { transport: Transport; received: unknown[]; sent: unknown[] } {
  const received: unknown[] = [];
  const sent: unknown[] = [];
  const wrapped: Transport = {
    start: () => transport.start(),
    close: () => transport.close(),
    send: (frame) => {
      sent.push(JSON.parse(frame));
      return transport.send(frame);
    },
  };
  transport.onmessage = (frame) => {
    received.push(JSON.parse(frame));
    wrapped.onmessage?.(frame);
  };
  transport.onclose = () => wrapped.onclose?.();
  transport.onerror = (error) => wrapped.onerror?.(error);
  return { transport: wrapped, received, sent };
}

let client: ProtocolClient | undefined;
afterEach(async () => {
  await client?.close();
  client = undefined;
});

function connect() {
  const child = new ChildProcessTransport(process.execPath, [everything, "stdio"], { stderr: "collect" });
  const wire = recording(child);
  const dropped: { error: LocalError; frame: string }[] = [];
  const internal: unknown[] = [];
  const sampled: CreateMessageRequestParams[] = [];
  client = new ProtocolClient(wire.transport, {
    validateIncoming: "tolerant",
    requestTimeoutMs: 20_000,
    onProtocolError: (error, frame) => dropped.push({ error, frame }),
    onInternalError: (error) => internal.push(error),
    handlers: {
      // Either side may ping the other.
      ping: () => ({}),
      "roots/list": () => ({ roots: [{ uri: "file:///work/project", name: "project" }] }),
      "sampling/createMessage": (params) => {
        sampled.push(params);
        return { role: "assistant", content: { type: "text", text: "A sampled answer." }, model: "test-model", stopReason: "endTurn" };
      },
    },
  });
  return { client, wire, dropped, internal, sampled, child };
}

describe("the generated MCP client against @modelcontextprotocol/server-everything", () => {
  it("initializes, lists and calls tools, lists resources, pings, and answers roots/list and sampling", async () => {
    const { client, wire, dropped, internal, sampled } = connect();
    await client.start();
    const init = await client.initialize({
      protocolVersion: "2025-06-18",
      capabilities: { roots: { listChanged: true }, sampling: {} },
      clientInfo: { name: "turnspec-mcp-test", version: "1.0.0" },
    });
    expect(init.protocolVersion).toBe("2025-06-18");
    expect(init.serverInfo.name).toContain("everything");
    expect(init.capabilities.tools).toBeDefined();
    await client.notify("notifications/initialized", {});

    const tools = await client.toolsList({});
    const names = tools.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["echo", "get-sum", "trigger-sampling-request"]));
    for (const tool of tools.tools) expect(tool.inputSchema.type).toBe("object");

    const echoed = await client.toolsCall({ name: "echo", arguments: { message: "hello from turnspec" } });
    expect(echoed.content).toEqual([{ type: "text", text: "Echo: hello from turnspec" }]);
    const sum = await client.toolsCall({ name: "get-sum", arguments: { a: 2, b: 40 } });
    expect(sum.content[0]).toMatchObject({ type: "text" });
    expect((sum.content[0] as { text: string }).text).toContain("42");

    // The server asks the client to sample its LLM while the tool call is in flight.
    const viaSampling = await client.toolsCall({ name: "trigger-sampling-request", arguments: { prompt: "Say something", maxTokens: 20 } });
    expect(sampled).toHaveLength(1);
    expect(sampled[0]!.messages[0]!.content).toMatchObject({ type: "text" });
    expect(JSON.stringify(viaSampling.content)).toContain("A sampled answer.");

    // The server asks for the client's roots (after initialization) and reports what it got.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const roots = await client.toolsCall({ name: "get-roots-list", arguments: {} });
    expect(JSON.stringify(roots.content)).toContain("file:///work/project");

    const resources = await client.resourcesList({});
    expect(resources.resources.length).toBeGreaterThan(0);
    for (const resource of resources.resources) expect(typeof resource.uri).toBe("string");
    expect(await client.ping({})).toEqual({});

    // Every frame from the server was accepted: none dropped as invalid, none answered as an error.
    expect(dropped.map((d) => `${d.error.message}: ${d.frame}`)).toEqual([]);
    expect(internal).toEqual([]);
    const answers = wire.sent.filter(
      (m): m is { id: unknown; error?: unknown } => typeof m === "object" && m !== null && "id" in m && !("method" in m),
    );
    expect(answers.filter((a) => a.error !== undefined)).toEqual([]);
    const requestsFromServer = wire.received
      .filter((m) => typeof m === "object" && m !== null && "method" in m && "id" in m)
      .map((m) => (m as { method: string }).method);
    expect(requestsFromServer).toEqual(expect.arrayContaining(["roots/list", "sampling/createMessage"]));
    expect(answers.length).toBe(requestsFromServer.length);
    const notifications = wire.received.filter((m) => typeof m === "object" && m !== null && "method" in m && !("id" in m)) as {
      method: string;
      params?: unknown;
    }[];
    expect(notifications.map((n) => n.method)).toContain("notifications/tools/list_changed");
    for (const n of notifications) expect(validateNotification(n.method as never, n.params ?? {}, "tolerant").ok, n.method).toBe(true);
  }, 60_000);

  it("an unknown tool is a tool result with isError, and invalid params are refused before they are sent", async () => {
    const { client, wire } = connect();
    await client.start();
    await client.initialize({ protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } });
    const unknown = await client.toolsCall({ name: "no-such-tool", arguments: {} });
    expect(unknown.isError).toBe(true);
    const before = wire.sent.length;
    // @ts-expect-error -- name is required: the typed client does not compile this, and at run time it is refused locally.
    const refused = await client.toolsCall({ arguments: {} }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LocalError);
    expect((refused as LocalError).kind).toBe("invalid_outgoing");
    expect((refused as LocalError).message).toContain("name");
    expect(wire.sent.length).toBe(before);
  }, 60_000);
});
