/**
 * The generated dispatcher, driven frame by frame through the in-memory transport pair:
 * what a gateway answers to malformed frames, unknown methods, invalid params, batches,
 * notifications and failing handlers.
 */
import { describe, expect, it } from "vitest";
import { createInMemoryPair, type Dispatcher } from "@turnspec/rpc";
import { createDispatcher, protocolError, type Handlers, type ServerOptions } from "../../generated/server.js";
import type { Turn, TurnStartParams } from "../../generated/types.js";
import { SUPERVISED_PROFILE, THREAD, TURN } from "../fixtures/sample-turn.js";

const supervisedTurn: Turn = {
  id: TURN,
  thread_id: THREAD,
  status: "InProgress",
  prompt_manifest: null,
  permission_profile: SUPERVISED_PROFILE,
};

const validStart: TurnStartParams = {
  thread_id: THREAD,
  turn_id: TURN,
  permission_profile: { mode: "supervised" },
  input: [{ type: "text", text: "Inspect the project and summarize the architecture.", textElements: [] }],
};

const unused = (): never => {
  throw new Error("this handler is not used by these tests");
};

/** Small fakes: every method the gateway serves, recording what they were called with. */
function fakeHandlers(calls: Array<[string, unknown]>, overrides: Partial<Handlers> = {}): Handlers {
  return {
    "thread/start": unused,
    "thread/get": async (params) => {
      calls.push(["thread/get", params]);
      return {
        thread: {
          id: params.thread_id,
          workspace_id: "ws_000000000000000001",
          cwd: "/srv/project",
          mode: "Agent",
          created_at: "2025-06-01T10:00:00Z",
        },
      };
    },
    "thread/timeline/page": unused,
    "turn/start": async (params) => {
      calls.push(["turn/start", params]);
      return { turn: { ...supervisedTurn, id: params.turn_id, thread_id: params.thread_id } };
    },
    "turn/cancel": unused,
    "turn/resume": unused,
    "turn/get": async (params) => {
      calls.push(["turn/get", params]);
      return { turn: { ...supervisedTurn, id: params.turn_id } };
    },
    "turn/items": unused,
    "turn/work/page": unused,
    "turn/work/items/get": unused,
    "turn/permission/request/respond": unused,
    "turn/question/respond": unused,
    "agent/route/create": unused,
    "agent/route/list": unused,
    "agent/route/revoke": unused,
    ...overrides,
  };
}

interface Wire {
  /** Sends one raw frame and returns every frame the gateway sent back for it, parsed. */
  exchange(frame: string): Promise<unknown[]>;
  calls: Array<[string, unknown]>;
  notifications: Array<[string, unknown]>;
  internalErrors: Array<[unknown, string]>;
}

/** A gateway on one end of an in-memory pair: onmessage → handleFrame → send. */
async function gateway(overrides: Partial<Handlers> = {}, options: ServerOptions<void> = {}): Promise<Wire> {
  const calls: Array<[string, unknown]> = [];
  const notifications: Array<[string, unknown]> = [];
  const internalErrors: Array<[unknown, string]> = [];
  const dispatcher: Dispatcher<void> = createDispatcher(fakeHandlers(calls, overrides), {
    onNotification: (method, params) => notifications.push([method, params]),
    onInternalError: (error, method) => internalErrors.push([error, method]),
    ...options,
  });
  const [client, server] = createInMemoryPair();
  const inflight: Promise<void>[] = [];
  server.onmessage = (frame) => {
    inflight.push(
      dispatcher.handleFrame(frame, undefined).then(async (reply) => {
        if (reply !== undefined) await server.send(reply);
      }),
    );
  };
  let received: string[] = [];
  client.onmessage = (frame) => received.push(frame);
  await server.start();
  await client.start();
  const turnOfTheLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    calls,
    notifications,
    internalErrors,
    async exchange(frame) {
      received = [];
      await client.send(frame);
      await turnOfTheLoop(); // the frame reaches the server
      await Promise.all(inflight.splice(0)); // the dispatcher answered (or decided not to)
      await turnOfTheLoop(); // the reply reaches the client
      return received.map((f) => JSON.parse(f) as unknown);
    },
  };
}

const request = (id: unknown, method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method, params });
const notification = (method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", method, params });

async function one(wire: Wire, frame: string): Promise<any> {
  const replies = await wire.exchange(frame);
  expect(replies).toHaveLength(1);
  return replies[0];
}

describe("framing errors", () => {
  it("answers a frame that is not JSON with -32700 and a null id", async () => {
    const wire = await gateway();
    const reply = await one(wire, '{"jsonrpc":"2.0","id":1,"method":"turn/start","params":{');
    expect(reply).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700, data: { reason: "parse_error" } } });
    expect(wire.calls).toEqual([]);
  });

  it.each([
    ["a jsonrpc other than 2.0", { jsonrpc: "1.0", id: 7, method: "turn/get", params: { thread_id: THREAD, turn_id: TURN } }, 7],
    ["a method that is not a string", { jsonrpc: "2.0", id: "req-b", method: 42, params: {} }, "req-b"],
    ["an id that is an object", { jsonrpc: "2.0", id: { n: 1 }, method: "turn/get", params: { thread_id: THREAD, turn_id: TURN } }, null],
    ["an id that is a boolean", { jsonrpc: "2.0", id: true, method: "turn/get", params: { thread_id: THREAD, turn_id: TURN } }, null],
    ["params that are a string", { jsonrpc: "2.0", id: 9, method: "turn/get", params: "thr_000000000000000001" }, 9],
    ["a message that is not an object", 17, null],
  ])("answers %s with -32600, echoing the id only when it is a valid id", async (_name, message, wantId) => {
    const wire = await gateway();
    const reply = await one(wire, JSON.stringify(message));
    expect(reply).toMatchObject({ jsonrpc: "2.0", error: { code: -32600, data: { reason: "invalid_request" } } });
    expect(reply.id).toStrictEqual(wantId);
    expect(wire.calls).toEqual([]);
  });
});

describe("method resolution and params", () => {
  it("answers a method the protocol does not have with -32601 naming it", async () => {
    const wire = await gateway();
    const reply = await one(wire, request(3, "turn/fork", { thread_id: THREAD }));
    expect(reply).toMatchObject({ id: 3, error: { code: -32601, data: { reason: "method_not_found", method: "turn/fork" } } });
  });

  it("answers a gateway-to-client notification name used as a request with -32601", async () => {
    const wire = await gateway();
    const reply = await one(wire, request(4, "turn/started", { thread_id: THREAD, turn_id: TURN }));
    expect(reply).toMatchObject({ id: 4, error: { code: -32601 } });
  });

  it.each([
    [
      "an unknown permission mode",
      { ...validStart, permission_profile: { mode: "admin" } },
      { pointer: "/permission_profile/mode", expected: ["full_access", "auto_accept_edits", "supervised"], received: "admin" },
    ],
    ["a missing thread_id", { turn_id: TURN, input: validStart.input }, { pointer: "/thread_id", message: "is required" }],
    [
      "an unknown extra field",
      { ...validStart, priority: "high" },
      { pointer: "/priority", message: "is not a known field", received: "high" },
    ],
    ["input that is not an array", { ...validStart, input: "hello" }, { pointer: "/input", expected: "array", received: "hello" }],
  ])("answers turn/start with %s with -32602 listing the failing pointer", async (_name, params, wantIssue) => {
    const wire = await gateway();
    const reply = await one(wire, request("req-5", "turn/start", params));
    expect(reply).toMatchObject({ id: "req-5", error: { code: -32602, data: { reason: "invalid_params" } } });
    expect(reply.error.data.errors).toEqual([expect.objectContaining(wantIssue)]);
    expect(reply.error.message).toContain(wantIssue.pointer);
    // The handler never saw invalid params.
    expect(wire.calls).toEqual([]);
  });

  it("refuses a request that leaves out params its method requires", async () => {
    const wire = await gateway();
    const reply = await one(wire, JSON.stringify({ jsonrpc: "2.0", id: 6, method: "turn/get" }));
    expect(reply).toMatchObject({ id: 6, error: { code: -32602 } });
    expect(reply.error.data.errors).toEqual([{ pointer: "", message: "are required: the message may not leave its params out" }]);
    expect(wire.calls).toEqual([]);
  });

  it("lets the params through to the handler unchanged when they are valid", async () => {
    const wire = await gateway();
    const reply = await one(wire, request(8, "turn/start", validStart));
    expect(reply).toEqual({ jsonrpc: "2.0", id: 8, result: { turn: { ...supervisedTurn, id: TURN, thread_id: THREAD } } });
    expect(wire.calls).toEqual([["turn/start", validStart]]);
  });
});

describe("ids", () => {
  it.each([
    ["a string id", "ccccccccccccccccccccc"],
    ["a number id", 12345],
    ["a zero id", 0],
    ["an empty string id", ""],
  ])("echoes %s exactly", async (_name, id) => {
    const wire = await gateway();
    const reply = await one(wire, request(id, "turn/get", { thread_id: THREAD, turn_id: TURN }));
    expect(reply.id).toStrictEqual(id);
    expect(reply.result.turn.id).toBe(TURN);
  });
});

describe("batches", () => {
  it("answers each request of a mixed batch once, in an array, and never a notification", async () => {
    const wire = await gateway();
    const replies = await wire.exchange(
      JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "turn/get", params: { thread_id: THREAD, turn_id: TURN } },
        { jsonrpc: "2.0", method: "turn/get", params: { thread_id: THREAD, turn_id: TURN } },
        { jsonrpc: "2.0", id: "b", method: "thread/get", params: { thread_id: THREAD } },
        { jsonrpc: "2.0", id: 3, method: "turn/fork", params: {} },
        { jsonrpc: "2.0", method: "turn/fork", params: {} },
      ]),
    );
    expect(replies).toHaveLength(1);
    const batch = replies[0] as Array<{ id: unknown; result?: any; error?: any }>;
    expect(Array.isArray(batch)).toBe(true);
    expect(batch).toHaveLength(3);
    const byId = new Map(batch.map((r) => [r.id, r]));
    expect([...byId.keys()].sort()).toEqual([1, 3, "b"].sort());
    expect(byId.get(1)?.result.turn.id).toBe(TURN);
    expect(byId.get("b")?.result.thread.id).toBe(THREAD);
    expect(byId.get(3)?.error.code).toBe(-32601);
    // Handlers ran for the requests only.
    expect(wire.calls.map(([m]) => m).sort()).toEqual(["thread/get", "turn/get"]);
  });

  it("answers an invalid member of a batch in place, next to the valid ones", async () => {
    const wire = await gateway();
    const [batch] = (await wire.exchange(
      JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "turn/get", params: { thread_id: THREAD, turn_id: TURN } }, 5]),
    )) as [Array<{ id: unknown; error?: { code: number } }>];
    expect(batch).toHaveLength(2);
    expect(batch.find((r) => r.id === null)?.error?.code).toBe(-32600);
  });

  it("sends nothing at all for a batch of notifications", async () => {
    const wire = await gateway();
    const replies = await wire.exchange(
      JSON.stringify([
        { jsonrpc: "2.0", method: "turn/get", params: { thread_id: THREAD, turn_id: TURN } },
        { jsonrpc: "2.0", method: "thread/get", params: { thread_id: THREAD } },
      ]),
    );
    expect(replies).toEqual([]);
  });

  it("answers an empty batch with a single -32600, not an array", async () => {
    const wire = await gateway();
    const reply = await one(wire, "[]");
    expect(reply).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
  });
});

describe("client notifications", () => {
  it.each([
    ["a valid notification", notification("turn/get", { thread_id: THREAD, turn_id: TURN })],
    ["a notification with invalid params", notification("turn/start", { thread_id: 42 })],
    ["a notification of an unknown method", notification("turn/fork", {})],
  ])("never get a reply: %s", async (_name, frame) => {
    const wire = await gateway();
    expect(await wire.exchange(frame)).toEqual([]);
    // A notification is not a request: no handler runs for it.
    expect(wire.calls).toEqual([]);
  });

  it("passes on only notifications the protocol lets a client send: a method's name is not one", async () => {
    const wire = await gateway();
    await wire.exchange(notification("turn/get", { thread_id: THREAD, turn_id: TURN }));
    await wire.exchange(notification("turn/started", { thread_id: THREAD }));
    expect(wire.notifications).toEqual([]);
  });
});

describe("handler errors", () => {
  it("answers a registered domain error with its code, data.reason and the extra data", async () => {
    const wire = await gateway({
      "turn/start": async (params) => {
        throw protocolError("thread_not_found", undefined, { thread_id: params.thread_id });
      },
    });
    const reply = await one(wire, request(21, "turn/start", { ...validStart, thread_id: "thr_missing0000000001" }));
    expect(reply).toEqual({
      jsonrpc: "2.0",
      id: 21,
      error: { code: -32001, message: "Thread not found", data: { reason: "thread_not_found", thread_id: "thr_missing0000000001" } },
    });
    expect(wire.internalErrors).toEqual([]);
  });

  it("keeps a domain error's own message when the handler gives one", async () => {
    const wire = await gateway({
      "turn/start": () => {
        throw protocolError("turn_in_progress", `turn trn_000000000000000000 is still running in ${THREAD}`, {
          active_turn_id: "trn_000000000000000000",
          active_turn_status: "InProgress",
        });
      },
    });
    const reply = await one(wire, request(22, "turn/start", validStart));
    expect(reply.error).toEqual({
      code: -32003,
      message: `turn trn_000000000000000000 is still running in ${THREAD}`,
      data: { reason: "turn_in_progress", active_turn_id: "trn_000000000000000000", active_turn_status: "InProgress" },
    });
  });

  it("answers any other thrown error with -32603 without leaking it, and reports it to onInternalError", async () => {
    const secret = "ECONNREFUSED postgres://gateway:hunter2@10.0.0.5/events";
    const thrown = new Error(secret);
    const wire = await gateway({
      "turn/start": () => {
        throw thrown;
      },
    });
    const frame = await wire.exchange(request(23, "turn/start", validStart));
    expect(frame).toHaveLength(1);
    const reply = frame[0] as any;
    expect(reply).toMatchObject({ id: 23, error: { code: -32603, data: { reason: "internal_error" } } });
    const wireText = JSON.stringify(reply);
    expect(wireText).not.toContain("hunter2");
    expect(wireText).not.toContain("ECONNREFUSED");
    expect(wire.internalErrors).toEqual([[thrown, "turn/start"]]);
  });

  it("treats a rejected promise like a throw", async () => {
    const wire = await gateway({
      "turn/get": () => Promise.reject(new TypeError("cannot read properties of undefined (reading 'events')")),
    });
    const reply = await one(wire, request(24, "turn/get", { thread_id: THREAD, turn_id: TURN }));
    expect(reply.error.code).toBe(-32603);
    expect(JSON.stringify(reply)).not.toContain("reading 'events'");
    expect(wire.internalErrors).toHaveLength(1);
  });
});

describe("validateResults", () => {
  // A turn whose status is not one of the wire statuses.
  const badResult = { turn: { ...supervisedTurn, status: "Running" } };

  it("answers -32603 and reports the mismatch when a handler returns an invalid result", async () => {
    const wire = await gateway({ "turn/get": async () => badResult as never }, { validateResults: true });
    const reply = await one(wire, request(31, "turn/get", { thread_id: THREAD, turn_id: TURN }));
    expect(reply).toMatchObject({ id: 31, error: { code: -32603 } });
    expect(reply.result).toBeUndefined();
    expect(JSON.stringify(reply)).not.toContain("Running");
    expect(wire.internalErrors).toHaveLength(1);
    const [error, method] = wire.internalErrors[0]!;
    expect(method).toBe("turn/get");
    expect(String((error as Error).message)).toContain("/turn/status");
  });

  it("sends the invalid result as it is when validateResults is off (the default)", async () => {
    const wire = await gateway({ "turn/get": async () => badResult as never });
    const reply = await one(wire, request(32, "turn/get", { thread_id: THREAD, turn_id: TURN }));
    expect(reply.result).toEqual(badResult);
  });

  it("sends a valid result unchanged when validateResults is on", async () => {
    const wire = await gateway({}, { validateResults: true });
    const reply = await one(wire, request(33, "turn/get", { thread_id: THREAD, turn_id: TURN }));
    expect(reply.result).toEqual({ turn: supervisedTurn });
    expect(wire.internalErrors).toEqual([]);
  });
});
