/**
 * Requests in both directions between the generated MCP client and a server on the generated
 * dispatcher, over the in-memory pair: the client's handler map is checked by the compiler
 * (a missing or extra handler does not compile), what it receives and answers is validated,
 * a domain error it throws is answered with its registered code, and the server's request
 * to the client times out locally when no answer comes.
 */
import { describe, expect, it } from "vitest";
import { LocalError, RpcError, createInMemoryPair } from "@turnspec/rpc";
import { ProtocolClient, type ClientHandlers } from "../fixtures/mcp/expected/client.js";
import {
  createClientCaller,
  createDispatcher,
  protocolError,
  serveConnection,
  type ClientCaller,
  type Handlers,
  type ServerConnection,
} from "../fixtures/mcp/expected/server.js";

/** Handlers that do not use their context, for a server of any context type. */
const handlersFor = <Ctx>(): Handlers<Ctx> => ({
  initialize: () => ({ protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "mem", version: "1" } }),
  ping: () => ({}),
  "tools/list": () => ({ tools: [] }),
  "tools/call": () => ({ content: [] }),
  "resources/list": () => ({ resources: [] }),
});
const serverHandlers = handlersFor<ServerConnection>();

const clientHandlers: ClientHandlers = {
  // Either side may ping the other.
  ping: () => ({}),
  "roots/list": () => ({ roots: [{ uri: "file:///a" }] }),
  "sampling/createMessage": () => ({ role: "assistant", content: { type: "text", text: "ok" }, model: "m" }),
};

function pair(handlers: ClientHandlers, onInternalError?: (error: unknown) => void) {
  const [a, b] = createInMemoryPair();
  let server!: ServerConnection;
  const connected = new Promise<ServerConnection>((resolve) => {
    server = serveConnection(b, { ...serverHandlers, ping: (_params, conn) => (resolve(conn), {}) }, { requestTimeoutMs: 2000 });
  });
  const client = new ProtocolClient(a, { handlers, ...(onInternalError ? { onInternalError } : {}) });
  return { client, server, connected };
}

describe("MCP requests in both directions over the in-memory pair", () => {
  it("the server calls roots/list on its client and gets the typed, validated result", async () => {
    const { client, server, connected } = pair(clientHandlers);
    await Promise.all([server.start(), client.start()]);
    await client.ping({});
    const conn = await connected;
    await expect(conn.request("roots/list", {})).resolves.toEqual({ roots: [{ uri: "file:///a" }] });
  });

  it("a domain error thrown by a client handler is answered with its registered code and reason", async () => {
    const { client, server } = pair({
      ...clientHandlers,
      "roots/list": () => {
        throw protocolError("resource_not_found", "no roots here");
      },
    });
    await Promise.all([server.start(), client.start()]);
    const error = await server.request("roots/list", {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({ code: -32002, message: "no roots here", reason: "resource_not_found" });
  });

  it("a client handler's result that breaks its schema is answered -32603 and reported on the client's side", async () => {
    const reported: unknown[] = [];
    const { client, server } = pair({ ...clientHandlers, "roots/list": () => ({ roots: [{ name: "no uri" }] }) as never }, (e) =>
      reported.push(e),
    );
    await Promise.all([server.start(), client.start()]);
    await expect(server.request("roots/list", {})).rejects.toMatchObject({ code: -32603 });
    expect(String(reported[0])).toContain("/roots/0");
  });

  it("invalid params from the server are answered -32602 by the client's dispatcher", async () => {
    // The server side is a bare transport here, sending what a faulty server would.
    const [a, b] = createInMemoryPair();
    const client = new ProtocolClient(a, { handlers: clientHandlers });
    const replies: unknown[] = [];
    b.onmessage = (frame) => replies.push(JSON.parse(frame));
    await Promise.all([b.start(), client.start()]);
    await b.send(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "sampling/createMessage", params: { messages: "none", maxTokens: 1 } }));
    await b.send(JSON.stringify({ jsonrpc: "2.0", id: 10, method: "tools/list", params: {} }));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(replies).toEqual([
      { jsonrpc: "2.0", id: 9, error: expect.objectContaining({ code: -32602, message: expect.stringContaining("/messages") }) },
      // A method the client does not serve (it is the server's) is not found on the client.
      { jsonrpc: "2.0", id: 10, error: expect.objectContaining({ code: -32601 }) },
    ]);
  });

  it("a request to the client that gets no answer fails with a local timeout", async () => {
    const { client, server } = pair({ ...clientHandlers, "sampling/createMessage": () => new Promise(() => undefined) });
    await Promise.all([server.start(), client.start()]);
    const error = await server
      .request("sampling/createMessage", { messages: [], maxTokens: 1 }, { timeoutMs: 50 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LocalError);
    expect((error as LocalError).kind).toBe("timeout");
  });

  it("a method of the other direction is refused locally, not sent", async () => {
    const { client, server } = pair(clientHandlers);
    await Promise.all([server.start(), client.start()]);
    // @ts-expect-error -- tools/call is a method the client calls, not one the server calls on its client.
    const error = await server.request("tools/call", { name: "x" }).catch((e: unknown) => e);
    expect((error as LocalError).kind).toBe("invalid_outgoing");
    // @ts-expect-error -- notifications/tools/list_changed is sent by the server, not by the client.
    await expect(client.notify("notifications/tools/list_changed", {})).rejects.toMatchObject({ kind: "invalid_outgoing" });
  });

  it("a server that feeds its own frames to createDispatcher calls its client through createClientCaller", async () => {
    const [a, b] = createInMemoryPair();
    const caller = createClientCaller((frame) => b.send(frame), { requestTimeoutMs: 2000 });
    const unanswered: unknown[] = [];
    const dispatcher = createDispatcher<ClientCaller>(handlersFor<ClientCaller>(), {
      onResponse: (response, ctx) => {
        if (!ctx.handleResponse(response)) unanswered.push(response);
      },
    });
    b.onmessage = (frame) => void dispatcher.handleFrame(frame, caller).then((reply) => (reply === undefined ? undefined : b.send(reply)));
    const client = new ProtocolClient(a, { handlers: clientHandlers });
    await Promise.all([b.start(), client.start()]);
    await expect(
      caller.request("sampling/createMessage", { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 }),
    ).resolves.toEqual({
      role: "assistant",
      content: { type: "text", text: "ok" },
      model: "m",
    });
    await expect(client.ping({})).resolves.toEqual({});
    expect(unanswered).toEqual([]);
    caller.close();
    await expect(caller.request("roots/list", {})).rejects.toMatchObject({ kind: "transport_closed" });
  });

  it("the handler map is checked by the compiler: a missing or an extra handler does not compile", () => {
    const [a] = createInMemoryPair();
    // @ts-expect-error -- sampling/createMessage has no handler.
    const missing: ClientHandlers = { "roots/list": clientHandlers["roots/list"] };
    // @ts-expect-error -- the protocol has no method tools/explode.
    new ProtocolClient(a, { handlers: { ...clientHandlers, "tools/explode": () => ({}) } });
    // @ts-expect-error -- a client of a protocol whose server calls methods on it must be given the handlers.
    new ProtocolClient(a);
    expect(Object.keys(missing)).toEqual(["roots/list"]);
  });
});
