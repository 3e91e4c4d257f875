/**
 * The generated ProtocolClient against a generated dispatcher, over the in-memory pair:
 * typed round trips, the two error families, validation in both directions, typed
 * notification subscriptions, timeouts, aborts and a closing connection.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalError, RpcError, createInMemoryPair, type Transport } from "@turnspec/rpc";
import { ProtocolClient, type ClientOptions } from "../../generated/client.js";
import { createDispatcher, createNotifier, protocolError, type Handlers, type Notifier } from "../../generated/server.js";
import type { ItemDeltaNotification, Turn, TurnStartParams, TurnStartResponse } from "../../generated/types.js";
import { SUPERVISED_PROFILE, THREAD, TURN } from "../fixtures/sample-turn.js";

const supervisedTurn: Turn = {
  id: TURN,
  thread_id: THREAD,
  status: "InProgress",
  mode: "Agent",
  prompt_manifest: null,
  permission_profile: SUPERVISED_PROFILE,
};

const startParams: TurnStartParams = {
  thread_id: THREAD,
  turn_id: TURN,
  mode: "Agent",
  permission_profile: { mode: "supervised" },
  input: [{ type: "text", text: "Inspect the project and summarize the architecture.", textElements: [] }],
};

const delta: ItemDeltaNotification = {
  thread_id: THREAD,
  turn_id: TURN,
  sequence: 4,
  item_id: "itm_000000000000000002",
  stream: "agent_message",
  delta: "The project is split into ",
};

const unused = (): never => {
  throw new Error("this handler is not used by these tests");
};

function handlers(overrides: Partial<Handlers>): Handlers {
  return {
    "thread/start": unused,
    "thread/get": unused,
    "thread/timeline/page": unused,
    "turn/start": async (params) => ({ turn: { ...supervisedTurn, id: params.turn_id, thread_id: params.thread_id } }),
    "turn/cancel": unused,
    "turn/resume": unused,
    "turn/get": unused,
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

interface Setup {
  client: ProtocolClient;
  /** The gateway's end of the pair. */
  server: Transport;
  /** Every frame the gateway received. */
  seen: string[];
  notifier: Notifier;
  protocolErrors: Array<[LocalError, string]>;
}

const open: ProtocolClient[] = [];
afterEach(async () => {
  for (const client of open.splice(0)) await client.close();
});

async function connect(overrides: Partial<Handlers> = {}, options: ClientOptions = {}): Promise<Setup> {
  const [clientEnd, server] = createInMemoryPair();
  const dispatcher = createDispatcher(handlers(overrides));
  const seen: string[] = [];
  server.onmessage = (frame) => {
    seen.push(frame);
    void dispatcher.handleFrame(frame, undefined).then((reply) => (reply === undefined ? undefined : server.send(reply)));
  };
  await server.start();
  const protocolErrors: Array<[LocalError, string]> = [];
  const client = new ProtocolClient(clientEnd, { onProtocolError: (error, frame) => protocolErrors.push([error, frame]), ...options });
  await client.start();
  open.push(client);
  return { client, server, seen, notifier: createNotifier((frame) => server.send(frame)), protocolErrors };
}

const turnOfTheLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
const never = () => new Promise<never>(() => undefined);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject, but it resolved");
}

async function localError(promise: Promise<unknown>, kind: LocalError["kind"]): Promise<LocalError> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(LocalError);
  expect((error as LocalError).kind).toBe(kind);
  return error as LocalError;
}

describe("requests", () => {
  it("returns the typed result of turn/start", async () => {
    const { client, seen } = await connect();
    const result: TurnStartResponse = await client.turnStart(startParams);
    expect(result).toEqual({ turn: supervisedTurn });
    expect(result.turn.permission_profile.effective_policy.file_write).toBe("ask");
    const sent = JSON.parse(seen[0]!);
    expect(sent).toMatchObject({ jsonrpc: "2.0", method: "turn/start", params: startParams });
    expect(typeof sent.id === "number" || typeof sent.id === "string").toBe(true);
  });

  it("correlates concurrent requests by id", async () => {
    const { client } = await connect({
      "turn/start": async (params) => {
        // The first request answers last.
        if (params.turn_id.endsWith("1")) await new Promise((r) => setTimeout(r, 10));
        return { turn: { ...supervisedTurn, id: params.turn_id } };
      },
    });
    const [first, second] = await Promise.all([
      client.turnStart(startParams),
      client.turnStart({ ...startParams, turn_id: "trn_000000000000000002" }),
    ]);
    expect(first.turn.id).toBe(TURN);
    expect(second.turn.id).toBe("trn_000000000000000002");
  });

  it("rejects with an RpcError carrying the gateway's code, message, data and reason", async () => {
    const { client } = await connect({
      "turn/start": () => {
        throw protocolError("turn_in_progress", undefined, { active_turn_id: "trn_000000000000000000", active_turn_status: "InProgress" });
      },
    });
    const error = await rejection(client.turnStart(startParams));
    expect(error).toBeInstanceOf(RpcError);
    const rpc = error as RpcError;
    expect(rpc.code).toBe(-32003);
    expect(rpc.message).toBe("A turn is already in progress in this thread");
    expect(rpc.data).toEqual({ reason: "turn_in_progress", active_turn_id: "trn_000000000000000000", active_turn_status: "InProgress" });
    expect(rpc.reason).toBe("turn_in_progress");
  });

  it("rejects invalid params locally with invalid_outgoing before anything is sent", async () => {
    const { client, seen } = await connect();
    const bad = { ...startParams, permission_profile: { mode: "admin" } } as unknown as TurnStartParams;
    const error = await localError(client.turnStart(bad), "invalid_outgoing");
    expect(error.issues).toEqual([expect.objectContaining({ pointer: "/permission_profile/mode", received: "admin" })]);
    expect(error.message).toContain("permission_profile/mode");
    await turnOfTheLoop();
    expect(seen).toEqual([]);
  });

  it("sends invalid params unchecked when outgoing validation is off, and the gateway answers -32602", async () => {
    const { client, seen } = await connect({}, { validateOutgoing: false });
    const bad = { ...startParams, permission_profile: { mode: "admin" } } as unknown as TurnStartParams;
    const error = await rejection(client.turnStart(bad));
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe(-32602);
    expect(seen).toHaveLength(1);
  });

  it("rejects a result that does not match its schema with invalid_incoming", async () => {
    const { client } = await connect({ "turn/start": async () => ({ turn: { ...supervisedTurn, status: "Running" } }) as never });
    const error = await localError(client.turnStart(startParams), "invalid_incoming");
    expect(error.issues).toEqual([expect.objectContaining({ pointer: "/turn/status", received: "Running" })]);
  });

  describe("an unknown extra field in a result", () => {
    const newer = { turn: { ...supervisedTurn, queue_position: 2 } };

    it("is accepted by default (tolerant incoming), and kept", async () => {
      const { client } = await connect({ "turn/start": async () => newer as never });
      expect(await client.turnStart(startParams)).toEqual(newer);
    });

    it("is rejected with strict incoming validation", async () => {
      const { client } = await connect({ "turn/start": async () => newer as never }, { validateIncoming: "strict" });
      const error = await localError(client.turnStart(startParams), "invalid_incoming");
      expect(error.issues).toEqual([expect.objectContaining({ pointer: "/turn/queue_position", message: "is not a known field" })]);
    });
  });
});

describe("notifications", () => {
  it("delivers a typed notification to its subscribers", async () => {
    const { client, notifier } = await connect();
    const got: ItemDeltaNotification[] = [];
    client.on("item/agent_message/delta", (params) => got.push(params));
    await notifier.notify("item/agent_message/delta", delta);
    await notifier.notify("item/agent_message/delta", { ...delta, sequence: 5, delta: "a generator and a runtime." });
    await turnOfTheLoop();
    expect(got.map((p) => p.delta).join("")).toBe("The project is split into a generator and a runtime.");
    expect(got[0]).toEqual(delta);
  });

  it("delivers only the subscribed method", async () => {
    const { client, notifier } = await connect();
    const got: unknown[] = [];
    client.on("item/tool/progress", (params) => got.push(params));
    await notifier.notify("item/agent_message/delta", delta);
    await turnOfTheLoop();
    expect(got).toEqual([]);
  });

  it("drops an invalid notification and reports it to onProtocolError", async () => {
    const { client, server, protocolErrors } = await connect();
    const got: unknown[] = [];
    client.on("item/agent_message/delta", (params) => got.push(params));
    // A gateway that does not validate what it sends.
    const careless = createNotifier((frame) => server.send(frame), { validate: false });
    await careless.notify("item/agent_message/delta", { ...delta, stream: "telepathy" } as unknown as ItemDeltaNotification);
    await turnOfTheLoop();
    expect(got).toEqual([]);
    expect(protocolErrors).toHaveLength(1);
    const [error, frame] = protocolErrors[0]!;
    expect(error).toBeInstanceOf(LocalError);
    expect(error.kind).toBe("invalid_incoming");
    expect(error.issues).toEqual([expect.objectContaining({ pointer: "/stream", received: "telepathy" })]);
    expect(JSON.parse(frame)).toMatchObject({ method: "item/agent_message/delta" });
  });

  it("stops delivering after unsubscribe, without affecting other subscribers", async () => {
    const { client, notifier } = await connect();
    const first: number[] = [];
    const second: number[] = [];
    const unsubscribe = client.on("item/agent_message/delta", (p) => first.push(p.sequence));
    client.on("item/agent_message/delta", (p) => second.push(p.sequence));
    await notifier.notify("item/agent_message/delta", delta);
    await turnOfTheLoop();
    unsubscribe();
    await notifier.notify("item/agent_message/delta", { ...delta, sequence: 5 });
    await turnOfTheLoop();
    expect(first).toEqual([4]);
    expect(second).toEqual([4, 5]);
  });
});

describe("local failures of a pending request", () => {
  it("rejects with timeout when no response arrives in time", async () => {
    const { client, seen } = await connect({ "turn/start": never }, { requestTimeoutMs: 20 });
    const error = await localError(client.turnStart(startParams), "timeout");
    expect(error.message).toContain("turn/start");
    expect(seen).toHaveLength(1);
  });

  it("lets a per-request timeout override the client's", async () => {
    const { client } = await connect({ "turn/start": never });
    await localError(client.turnStart(startParams, { timeoutMs: 15 }), "timeout");
  });

  it("rejects with aborted when the signal aborts", async () => {
    const { client, seen } = await connect({ "turn/start": never });
    const controller = new AbortController();
    const pending = client.turnStart(startParams, { signal: controller.signal });
    await turnOfTheLoop();
    expect(seen).toHaveLength(1);
    controller.abort();
    await localError(pending, "aborted");
  });

  it("rejects with aborted, sending nothing, when the signal is already aborted", async () => {
    const { client, seen } = await connect();
    await localError(client.turnStart(startParams, { signal: AbortSignal.abort() }), "aborted");
    await turnOfTheLoop();
    expect(seen).toEqual([]);
  });

  it("rejects pending requests with transport_closed when the gateway closes the connection", async () => {
    const { client, server } = await connect({ "turn/start": never });
    const pending = client.turnStart(startParams);
    await turnOfTheLoop();
    await server.close();
    await localError(pending, "transport_closed");
    // And the connection stays closed for later requests.
    await localError(client.turnStart(startParams), "transport_closed");
  });

  it("rejects pending requests with transport_closed when the client closes", async () => {
    const { client } = await connect({ "turn/start": never });
    const pending = client.turnStart(startParams);
    await turnOfTheLoop();
    await client.close();
    await localError(pending, "transport_closed");
  });
});
