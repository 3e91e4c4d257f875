/**
 * Faults the gateway fuzzing found, each pinned by the smallest frame that showed it,
 * through the in-memory transport pair.
 */
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../../packages/gateway/src/config.js";
import { Gateway } from "../../packages/gateway/src/engine/gateway.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { createInMemoryPair, Dispatcher } from "../../packages/rpc/src/index.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** Sends raw frames to a gateway and resolves with the next `count` frames it sends back, parsed. */
async function rawGateway() {
  const gateway = new Gateway({
    store: new MemoryEventStore(),
    config: resolveConfig({}),
    providers: new Map([["scripted", new ScriptedProvider()]]),
    tools: [],
  });
  const [client, server] = createInMemoryPair();
  gateway.connect(server);
  const replies: unknown[] = [];
  const waiters: (() => void)[] = [];
  client.onmessage = (frame) => {
    replies.push(JSON.parse(frame));
    waiters.splice(0).forEach((w) => w());
  };
  await client.start();
  closers.push(async () => {
    await gateway.close();
    await client.close();
  });
  return {
    async exchange(frame: string): Promise<unknown> {
      const before = replies.length;
      await client.send(frame);
      while (replies.length === before) await new Promise<void>((resolve) => waiters.push(resolve));
      return replies[before];
    },
  };
}

/** A JSON value nested `depth` levels deep, as text: JSON.parse reads any depth, JSON.stringify cannot write it back. */
const deep = (depth: number) => `${"[".repeat(depth)}0${"]".repeat(depth)}`;

describe("a request whose params hold a value nested deeper than JSON.stringify can recurse", () => {
  it("is answered with invalid_params naming the field, without echoing the value", async () => {
    const g = await rawGateway();
    const reply = await g.exchange(`{"jsonrpc":"2.0","id":1,"method":"thread/get","params":{"thread_id":"thr_x","extra":${deep(50_000)}}}`);
    expect(reply).toMatchObject({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32602, data: { reason: "invalid_params", errors: [{ pointer: "/extra", message: "is not a known field" }] } },
    });
    expect(JSON.stringify(reply)).not.toContain("[[[");
  });

  it("does not cost the other requests of its batch their answers", async () => {
    const g = await rawGateway();
    const reply = await g.exchange(
      `[{"jsonrpc":"2.0","id":"a","method":"thread/get","params":{"thread_id":"thr_x","extra":${deep(50_000)}}},{"jsonrpc":"2.0","id":"b","method":"thread/get","params":{"thread_id":"thr_x"}}]`,
    );
    expect(reply).toEqual([
      expect.objectContaining({ id: "a", error: expect.objectContaining({ code: -32602 }) }),
      expect.objectContaining({
        id: "b",
        error: expect.objectContaining({ data: expect.objectContaining({ reason: "thread_not_found" }) }),
      }),
    ]);
  });
});

describe("a result nested deeper than JSON.stringify can write", () => {
  it("is answered with internal_error instead of nothing, and reported to the operator", async () => {
    let nested: unknown = 0;
    for (let i = 0; i < 50_000; i++) nested = [nested];
    const reported: unknown[] = [];
    const dispatcher = new Dispatcher<void>({
      methods: new Set(["deep"]),
      handlers: { deep: () => nested },
      validateParams: () => undefined,
      errors: {},
      onInternalError: (error) => reported.push(error),
    });
    const reply = await dispatcher.handleFrame(
      `[{"jsonrpc":"2.0","id":1,"method":"deep"},{"jsonrpc":"2.0","id":2,"method":"missing"}]`,
      undefined,
    );
    expect(JSON.parse(reply!)).toEqual([
      { jsonrpc: "2.0", id: 1, error: { code: -32603, message: "Internal error", data: { reason: "internal_error" } } },
      expect.objectContaining({ id: 2, error: expect.objectContaining({ code: -32601 }) }),
    ]);
    expect(reported).toHaveLength(1);
  });
});
