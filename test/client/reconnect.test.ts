/**
 * Reconnect: a turn followed across a dropped connection delivers every event exactly
 * once, in order, equal to turn/items. Over a real WebSocket server whose connection the
 * test drops mid-turn, and against a scripted peer that sends live notifications while the
 * catch-up page is in flight and repeats events the page also holds.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  followTurn,
  GatewayConnection,
  streamTurn,
  TurnClientError,
  type TurnNotification,
  type TurnStreamEvent,
} from "../../packages/client/src/index.js";
import type { AnyNotification } from "../../generated/registry.js";
import { createInMemoryPair, type Transport } from "../../packages/rpc/src/index.js";
import { connectWebSocket, startWebSocketServer, type WebSocketTransport } from "../../packages/rpc/src/transport/websocket.js";
import { script, startHarness, text, type Harness } from "../gateway/harness.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A promise with its resolve function, for gates the test opens when an event has happened. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

describe("reconnect over WebSocket", () => {
  it("catches up after the connection drops mid-turn: every event once, in order, equal to turn/items", async () => {
    const h = await startHarness();
    cleanups.push(() => h.close());
    const server = await startWebSocketServer({
      token: "s3cret",
      maxFrameBytes: 1024 * 1024,
      onConnection: (transport) => {
        serverSide.push(transport);
        h.gateway.connect(transport);
      },
    });
    const serverSide: WebSocketTransport[] = [];
    cleanups.push(() => server.close());

    const threadId = await h.thread();
    const turnId = "trn_reconnect";
    const reconnectGate = gate();
    let connects = 0;
    const connection = await GatewayConnection.open({
      connect: async () => {
        if (connects++ > 0) await reconnectGate.promise;
        return connectWebSocket(server.url, { token: "s3cret" });
      },
      reconnect: { delaysMs: [10] },
      validateIncoming: "strict",
    });
    cleanups.push(() => connection.close());
    const changes: string[] = [];
    connection.onChange((c) => changes.push(c.type));

    /**
     * At the second approval the test drops the connection (server side), answers the
     * request from the harness's own connection, waits for the turn to end, and only then
     * lets the client reconnect: everything after the drop must come from turn/items.
     */
    const whileAway = async (request: { request_id: string; resolve_token?: string }) => {
      await serverSide[0]!.close(1001, "dropped by the test");
      const ended = h.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === turnId);
      await h.client.turnPermissionRequestRespond({
        request_id: request.request_id,
        resolution: "allow_once",
        ...(request.resolve_token ? { resolve_token: request.resolve_token } : {}),
      });
      await ended;
      reconnectGate.open();
    };

    const raw: TurnNotification[] = [];
    const rawErrors: Error[] = [];
    const input = text(
      script(
        { tool: "shell", args: { command: "echo one" } },
        { tool: "shell", args: { command: "echo two" } },
        { say: "Both ran.", chunks: 3 },
      ),
    );
    const stream = streamTurn(connection, { thread_id: threadId, turn_id: turnId, input, permission_profile: { mode: "supervised" } });
    const events: TurnStreamEvent[] = [];
    let approvals = 0;
    for await (const event of stream) {
      events.push(event);
      if (events.length === 1) {
        // A raw feed on the same connection, from the start of the turn (caught up from turn/items).
        followTurn(connection, threadId, turnId, { event: (n) => raw.push(n), error: (e) => rawErrors.push(e) });
      }
      if (event.type === "approval_pending" && ++approvals === 1) await event.respond("allow_once");
      else if (event.type === "approval_pending") void whileAway(event.request);
    }

    expect(changes).toEqual(["disconnected", "reconnected"]);
    expect(rawErrors).toEqual([]);
    expect(serverSide).toHaveLength(2);
    const log = await connection.client.turnItems({ thread_id: threadId, turn_id: turnId });
    const expected = log.events.map((e) => ({ method: e.method, params: e.params }));
    expect(raw.map((n) => ({ method: n.method, params: n.params }))).toEqual(expected);
    expect(raw.map((n) => n.params.sequence)).toEqual(expected.map((_, i) => i + 1));
    // The high-level stream saw both tools and the whole answer, each once.
    expect(events.filter((e) => e.type === "tool_started")).toHaveLength(2);
    expect(events.filter((e) => e.type === "tool_completed")).toHaveLength(2);
    expect(events.filter((e) => e.type === "approval_resolved")).toHaveLength(2);
    expect(events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : [])).join("")).toBe("Both ran.");
    expect(events.at(-1)).toMatchObject({ type: "done", status: "Completed" });
    const sequences = events.map((e) => e.sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(h.protocolErrors).toEqual([]);
  });

  it("ends the stream with a typed error when the connection drops and reconnecting is off", async () => {
    const h = await startHarness();
    cleanups.push(() => h.close());
    const [clientSide, serverSide] = createInMemoryPair();
    h.gateway.connect(serverSide);
    const connection = await GatewayConnection.open({ connect: () => clientSide });
    const threadId = await h.thread();
    const input = text(script({ tool: "shell", args: { command: "sleep 5" } }, { say: "never" }));
    const seen: string[] = [];
    const error = await (async () => {
      for await (const event of streamTurn(connection, { thread_id: threadId, turn_id: "trn_lost", input })) {
        seen.push(event.type);
        if (event.type === "tool_started") await serverSide.close();
      }
    })().catch((e: unknown) => e);
    expect(seen).toContain("tool_started");
    expect(error).toBeInstanceOf(TurnClientError);
    expect(error).toMatchObject({ kind: "connection_lost" });
    await h.gateway.cancelTurn("trn_lost", "test over");
  });

  it("gives up after the configured attempts and ends the stream with the reason", async () => {
    const h = await startHarness();
    cleanups.push(() => h.close());
    let serverSide: Transport | undefined;
    const connection = await GatewayConnection.open({
      connect: () => {
        if (serverSide) throw new Error("the gateway is unreachable");
        const [clientSide, server] = createInMemoryPair();
        h.gateway.connect(server);
        serverSide = server;
        return clientSide;
      },
      reconnect: { delaysMs: [1], maxAttempts: 2 },
    });
    const changes: string[] = [];
    connection.onChange((c) => changes.push(c.type));
    const threadId = await h.thread();
    const input = text(script({ tool: "shell", args: { command: "sleep 5" } }, { say: "never" }));
    const error = await (async () => {
      for await (const event of streamTurn(connection, { thread_id: threadId, turn_id: "trn_gone", input })) {
        if (event.type === "tool_started") await serverSide!.close();
      }
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: "TurnClientError",
      kind: "connection_lost",
      message: "could not reconnect to the gateway after 2 attempts: the gateway is unreachable",
    });
    expect(changes).toEqual(["disconnected", "closed"]);
    expect(connection.status).toBe("closed");
    await h.gateway.cancelTurn("trn_gone", "test over");
  });
});

/**
 * A peer that answers like a gateway from a recorded turn: turn/items from the log, and
 * on the first turn/items of a connection, live notifications sent before the answer
 * (`live`) and after it (`later`).
 */
function scriptedPeer(
  log: readonly TurnNotification[],
  live: readonly TurnNotification[],
  later: readonly TurnNotification[] = [],
  asked: { pages: number } = { pages: 0 },
): () => Transport {
  return () => {
    const [client, server] = createInMemoryPair();
    let answered = false;
    server.onmessage = (frame) => {
      const request = JSON.parse(frame) as { id: number; method: string; params: { after_sequence?: number } };
      if (request.method !== "turn/items") throw new Error(`unexpected ${request.method}`);
      asked.pages++;
      const send = (message: unknown) => void server.send(JSON.stringify(message));
      const notify = (ns: readonly TurnNotification[]) => {
        for (const n of ns) send({ jsonrpc: "2.0", method: n.method, params: n.params });
      };
      if (!answered) notify(live);
      const events = log.filter((n) => n.params.sequence > (request.params.after_sequence ?? 0));
      send({
        jsonrpc: "2.0",
        id: request.id,
        result: {
          thread_id: "thr",
          workspace_id: "ws",
          turn_id: "trn",
          events: events.map((n) => ({
            sequence: n.params.sequence,
            method: n.method,
            params: n.params,
            recorded_at: "2026-01-01T00:00:00Z",
          })),
          last_sequence: log.at(-1)!.params.sequence,
        },
      });
      if (!answered) notify(later);
      answered = true;
    };
    void server.start();
    return client;
  };
}

describe("the turn feed", () => {
  let recorded: TurnNotification[] = [];
  let h: Harness;

  async function record(): Promise<TurnNotification[]> {
    h = await startHarness();
    cleanups.push(() => h.close());
    const threadId = await h.thread();
    await h.runTurn({
      thread_id: threadId,
      turn_id: "trn_rec",
      input: text(script({ tool: "shell", args: { command: "echo rec" } }, { say: "recorded", chunks: 2 })),
    });
    return h.received
      .filter((n): n is TurnNotification => "sequence" in n.params && "turn_id" in n.params && n.params.turn_id === "trn_rec")
      .map((n) => ({ method: n.method, params: { ...n.params, thread_id: "thr", turn_id: "trn" } }) as TurnNotification);
  }

  it("merges live notifications that arrive while the catch-up page is in flight, without repeating any", async () => {
    recorded = await record();
    expect(recorded.length).toBeGreaterThan(8);
    const cut = 5;
    // Before the page arrives: its last two events again and two more; after it, an old event
    // repeated and the rest of the turn.
    const connection = await GatewayConnection.open({
      connect: scriptedPeer(recorded.slice(0, cut), recorded.slice(cut - 2, cut + 2), [recorded[1]!, ...recorded.slice(cut + 2)]),
    });
    cleanups.push(() => connection.close());
    const got: AnyNotification[] = [];
    const done = gate<Error | undefined>();
    followTurn(connection, "thr", "trn", {
      event: (n) => {
        got.push(n);
        if (n.method === "turn/completed") done.open(undefined);
      },
      error: (e) => done.open(e),
    });
    expect(await done.promise).toBeUndefined();
    expect(got).toEqual(recorded);
  });

  it("resumes after a given sequence and reports a gap the log cannot fill", async () => {
    recorded = await record();
    // The peer's log stops at 3 but a live event 7 arrives: 4..6 are nowhere.
    const connection = await GatewayConnection.open({ connect: scriptedPeer(recorded.slice(0, 3), [recorded[6]!]) });
    cleanups.push(() => connection.close());
    const got: number[] = [];
    const failed = gate<Error>();
    followTurn(connection, "thr", "trn", { event: (n) => got.push(n.params.sequence), error: (e) => failed.open(e) }, { afterSequence: 1 });
    const error = await failed.promise;
    expect(got).toEqual([2, 3]);
    expect(error).toMatchObject({
      name: "TurnClientError",
      kind: "invalid_event",
      message: expect.stringContaining("events 4…6 of turn trn are missing"),
    });
  });

  it("reports a gap inside turn/items (the log lost an event but has later ones) instead of asking for the same page again and again", async () => {
    recorded = await record();
    const asked = { pages: 0 };
    // Event 4 is missing from the log, which has everything after it; a live event 6 arrives.
    const connection = await GatewayConnection.open({
      connect: scriptedPeer(
        recorded.filter((n) => n.params.sequence !== 4),
        [recorded[5]!],
        [],
        asked,
      ),
    });
    cleanups.push(() => connection.close());
    const got: number[] = [];
    const failed = gate<Error>();
    followTurn(connection, "thr", "trn", { event: (n) => got.push(n.params.sequence), error: (e) => failed.open(e) }, { afterSequence: 1 });
    const error = await failed.promise;
    expect(got).toEqual([2, 3]);
    expect(error).toMatchObject({
      name: "TurnClientError",
      kind: "invalid_event",
      message: expect.stringContaining("events 4…4 of turn trn are missing"),
    });
    expect(asked.pages).toBeLessThanOrEqual(3);
  });
});
