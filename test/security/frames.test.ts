/**
 * Hostile frames sent raw, past any client-side validation: a megabyte-long id (hole 16)
 * and a turn/start whose input is nested 5,000 deep (hole 11).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createInMemoryPair, type Transport } from "../../packages/rpc/src/index.js";
import { resolveConfig } from "../../packages/gateway/src/config.js";
import { Gateway } from "../../packages/gateway/src/engine/gateway.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import { builtinTools } from "../../packages/gateway/src/tools/registry.js";

interface Raw {
  /** Sends a frame as given (for JSON deeper than JSON.stringify can write here). */
  send(frame: string): Promise<{ result?: any; error?: { code: number; message: string; data?: any } }>;
  readonly store: MemoryEventStore;
  readonly frames: string[];
  call(method: string, params: unknown): Promise<{ result?: any; error?: { code: number; message: string; data?: any } }>;
  close(): Promise<void>;
}

let raw: Raw;
afterEach(() => raw.close());

async function rawGateway(): Promise<Raw> {
  const cwd = mkdtempSync(join(tmpdir(), "turnspec-frames-"));
  const store = new MemoryEventStore();
  const gateway = new Gateway({
    store,
    config: resolveConfig({ tools: { default_cwd: cwd } }),
    providers: new Map([["scripted", new ScriptedProvider()]]),
    tools: builtinTools(),
  });
  const [client, server]: [Transport, Transport] = createInMemoryPair();
  gateway.connect(server);
  const frames: string[] = [];
  const waiting = new Map<number, (m: any) => void>();
  client.onmessage = (frame) => {
    frames.push(frame);
    const message = JSON.parse(frame);
    if (message.id !== undefined && waiting.has(message.id)) waiting.get(message.id)!(message);
  };
  await client.start();
  let next = 1;
  return {
    store,
    frames,
    send: (frame) =>
      new Promise((done) => {
        waiting.set(JSON.parse(frame).id, done);
        void client.send(frame);
      }),
    call: (method, params) =>
      new Promise((done) => {
        const id = next++;
        waiting.set(id, done);
        void client.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      }),
    close: async () => {
      await gateway.close();
      await client.close();
    },
  };
}

const text = (value: string, textElements: unknown[] = []) => [{ type: "text", text: value, textElements }];

describe("hostile turn/start frames", () => {
  it("refuses a 1 MiB turn_id as invalid params, without echoing it back (hole 16)", async () => {
    raw = await rawGateway();
    const thread = (await raw.call("thread/start", {})).result.thread.id as string;
    const answer = await raw.call("turn/start", { thread_id: thread, turn_id: "t".repeat(1 << 20), input: text("hi") });
    expect(answer.error?.code).toBe(-32602);
    expect(JSON.stringify(answer.error)).toMatch(/turn_id/);
    expect(raw.frames.reduce((n, f) => n + f.length, 0)).toBeLessThan(64 * 1024);
    expect(raw.store.turnsOfThread(thread)).toEqual([]);
  });

  it("leaves no turn behind when the input cannot be stored, and the thread takes the next turn (hole 11)", async () => {
    raw = await rawGateway();
    const thread = (await raw.call("thread/start", {})).result.thread.id as string;
    const deep = '{"child":'.repeat(5000) + "{}" + "}".repeat(5000);
    const frame = `{"jsonrpc":"2.0","id":99,"method":"turn/start","params":{"thread_id":${JSON.stringify(thread)},"turn_id":"trn_deep","input":[{"type":"text","text":"hi","textElements":[${deep}]}]}}`;
    const answer = await raw.send(frame);
    expect(answer.error).toMatchObject({
      code: -32602,
      data: { errors: [{ pointer: expect.stringMatching(/^\/input\/0\/textElements\/0(\/child)+$/) }] },
    });
    expect(raw.store.turnsOfThread(thread)).toEqual([]);
    const next = await raw.call("turn/start", { thread_id: thread, turn_id: "trn_next", input: text("hi") });
    expect(next.error).toBeUndefined();
    expect(next.result.turn.id).toBe("trn_next");
  });
});
