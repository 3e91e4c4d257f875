/**
 * RpcClient as either end of a connection, untyped: the requests the peer sends go to a
 * Dispatcher (the same one a server uses) and are answered, a batch of them in one batch;
 * without a dispatcher each is answered -32601; OutgoingRequests settles responses by id,
 * times out, and fails everything waiting when closed.
 */
import { describe, expect, it } from "vitest";
import { Dispatcher, LocalError, OutgoingRequests, RpcClient, RpcError, createInMemoryPair } from "../../packages/rpc/src/index.js";

const none = () => undefined;
const validators = { params: none, result: none, notification: none };

function served() {
  const dispatcher = new Dispatcher<string>({
    methods: new Set(["ask"]),
    handlers: { ask: (params: never, ctx: string) => ({ answer: `${(params as { q: string }).q}?`, ctx }) },
    validateParams: (_method, params) =>
      typeof (params as { q?: unknown }).q === "string" ? undefined : [{ pointer: "/q", message: "must be string" }],
    errors: {},
  });
  return dispatcher;
}

describe("RpcClient serving the peer's requests", () => {
  it("answers each request through the dispatcher, with the context it was given", async () => {
    const [a, b] = createInMemoryPair();
    const dispatcher = served();
    const end = new RpcClient(a, validators, { serve: (request) => dispatcher.handleParsed(request, "client-side") });
    const replies: unknown[] = [];
    b.onmessage = (frame) => replies.push(JSON.parse(frame));
    await Promise.all([end.start(), b.start()]);
    await b.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ask", params: { q: "why" } }));
    await b.send(
      JSON.stringify([
        { jsonrpc: "2.0", id: 2, method: "ask", params: { q: "how" } },
        { jsonrpc: "2.0", method: "ask", params: { q: "ignored: a notification" } },
        { jsonrpc: "2.0", id: 3, method: "ask", params: { q: 3 } },
      ]),
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(replies).toEqual([
      { jsonrpc: "2.0", id: 1, result: { answer: "why?", ctx: "client-side" } },
      [
        { jsonrpc: "2.0", id: 2, result: { answer: "how?", ctx: "client-side" } },
        {
          jsonrpc: "2.0",
          id: 3,
          error: expect.objectContaining({ code: -32602, data: expect.objectContaining({ reason: "invalid_params" }) }),
        },
      ],
    ]);
  });

  it.each([true, false])(
    "with answerMalformed %s, answers a frame that is not JSON -32700 with a null id and an invalid request -32600 (or only reports them), never a broken response, and keeps serving",
    async (answerMalformed) => {
      const [a, b] = createInMemoryPair();
      const dispatcher = served();
      const reported: string[] = [];
      const end = new RpcClient(a, validators, {
        serve: (request) => dispatcher.handleParsed(request, "server-side"),
        answerMalformed,
        onProtocolError: (error) => void reported.push(error.message),
      });
      const replies: unknown[] = [];
      b.onmessage = (frame) => replies.push(JSON.parse(frame));
      await Promise.all([end.start(), b.start()]);
      await b.send('{"jsonrpc": "2.0", "id": 1, "method": ');
      await b.send(JSON.stringify({ jsonrpc: "2.0", id: "r2", method: 42 }));
      await b.send(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no id" } }));
      await b.send(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "ask", params: { q: "still" } }));
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(replies).toEqual([
        ...(answerMalformed
          ? [
              { jsonrpc: "2.0", id: null, error: expect.objectContaining({ code: -32700, data: { reason: "parse_error" } }) },
              {
                jsonrpc: "2.0",
                id: "r2",
                error: { code: -32600, message: "Invalid Request: method must be a non-empty string", data: { reason: "invalid_request" } },
              },
            ]
          : []),
        { jsonrpc: "2.0", id: 4, result: { answer: "still?", ctx: "server-side" } },
      ]);
      expect(reported).toHaveLength(3);
    },
  );

  it("without a dispatcher answers every request -32601", async () => {
    const [a, b] = createInMemoryPair();
    const end = new RpcClient(a, validators);
    const replies: unknown[] = [];
    b.onmessage = (frame) => replies.push(JSON.parse(frame));
    await Promise.all([end.start(), b.start()]);
    await b.send(JSON.stringify({ jsonrpc: "2.0", id: "x", method: "ask", params: {} }));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(replies).toEqual([
      {
        jsonrpc: "2.0",
        id: "x",
        error: { code: -32601, message: "Method not found: ask", data: { reason: "method_not_found", method: "ask" } },
      },
    ]);
  });
});

describe("OutgoingRequests", () => {
  it("settles by id, reports a response it does not know, times out and fails all on close", async () => {
    const sent: { id: number; method: string }[] = [];
    const requests = new OutgoingRequests((frame) => void sent.push(JSON.parse(frame)), { requestTimeoutMs: 1000 });
    const first = requests.request("a", {});
    const second = requests.request("b", {});
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(sent.map((m) => m.method)).toEqual(["a", "b"]);
    expect(requests.settle({ jsonrpc: "2.0", id: sent[1]!.id, error: { code: -32001, message: "no", data: { reason: "nope" } } })).toBe(
      true,
    );
    await expect(second).rejects.toBeInstanceOf(RpcError);
    expect(requests.settle({ jsonrpc: "2.0", id: 99, result: 1 })).toBe(false);
    const timed = requests.request("c", {}, { timeoutMs: 5 });
    await expect(timed).rejects.toMatchObject({ kind: "timeout" });
    requests.close(new LocalError("transport_closed", "the connection closed"));
    await expect(first).rejects.toMatchObject({ kind: "transport_closed" });
    await expect(requests.request("d", {})).rejects.toMatchObject({ kind: "transport_closed" });
    expect(requests.waiting).toBe(0);
  });
});
