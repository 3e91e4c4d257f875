/**
 * The generated client and server of the protocol-level construct fixtures
 * (test/fixtures/constructs/), talking over an in-memory pair with every frame recorded and
 * checked by the message checker from both sides: a message either side sends, params left
 * out and absent, positional params and an "either" method, error data of its own type,
 * union results and params, and batches where the protocol takes them and where it does not.
 */
import { rmdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { generateFiles, writeToDisk } from "../../packages/generator/src/generate.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { compileProtocol } from "../../packages/generator/src/runtime-protocol.js";
import { createInMemoryPair, MessageChecker, RpcError, type Transport } from "../../packages/rpc/src/index.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const runDir = join(repoRoot, "test/.tmp-constructs", `${process.pid}-runtime`);

afterAll(() => {
  rmSync(runDir, { recursive: true, force: true });
  try {
    rmdirSync(dirname(runDir));
  } catch {
    // another run's folder is still there
  }
});

// The generated modules are untyped here: each fixture has its own client and server types
// (their types are checked in constructs.test.ts).
type Module = any;

/** The fixture's generated client and server modules, loaded from a folder of this run. */
async function load(name: string): Promise<{ client: Module; server: Module }> {
  const out = join(runDir, name);
  writeToDisk(await generateFiles({ schemasDir: join(repoRoot, "test/fixtures/constructs", name, "schemas") }), out);
  const [client, server] = await Promise.all([
    import(/* @vite-ignore */ join(out, "client.ts")),
    import(/* @vite-ignore */ join(out, "server.ts")),
  ]);
  return { client, server };
}

/** An in-memory pair whose frames are recorded with their sender. */
function recordedPair(): { client: Transport; server: Transport; frames: { from: "client" | "server"; message: unknown }[] } {
  const [a, b] = createInMemoryPair();
  const frames: { from: "client" | "server"; message: unknown }[] = [];
  const record = (transport: Transport, from: "client" | "server"): Transport => {
    const send = transport.send.bind(transport);
    transport.send = (frame) => {
      frames.push({ from, message: JSON.parse(frame) });
      return send(frame);
    };
    return transport;
  };
  return { client: record(a, "client"), server: record(b, "server"), frames };
}

/** Every recorded frame checked by the message checker with its sender: the findings, as lines. */
function check(name: string, frames: readonly { from: "client" | "server"; message: unknown }[]): string[] {
  const view = compileProtocol(loadSchemas(join(repoRoot, "test/fixtures/constructs", name, "schemas")));
  const checker = new MessageChecker("strict", { protocol: view });
  return frames
    .flatMap((f, i) => checker.check(f.message, i, f.from))
    .map((f) => `${f.method ?? ""} ${f.part}${f.issue.pointer}: ${f.issue.message}`);
}

/** Sends one raw frame from the client's end and resolves with the server's answer. */
function raw(transport: Transport, frame: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    transport.onmessage = (text) => resolve(JSON.parse(text) as Record<string, unknown>);
    void transport.send(JSON.stringify(frame));
  });
}

describe("generated clients and servers of the protocol-level constructs", () => {
  it("a message either side sends: each side pings the other and each answers", async () => {
    const { client: c, server: s } = await load("both-way");
    const wire = recordedPair();
    const heardByServer: unknown[] = [];
    const heardByClient: unknown[] = [];
    let serverSide!: Module;
    const started = new Promise<void>((resolve) => {
      serverSide = s.serveConnection(wire.server, { ping: () => ({}), "work/start": () => (resolve(), {}) });
    });
    serverSide.on("progress", (p: unknown) => heardByServer.push(p));
    await serverSide.start();
    const client = new c.ProtocolClient(wire.client, { handlers: { ping: (params: unknown) => (heardByClient.push(params), {}) } });
    client.on("progress", (p: unknown) => heardByClient.push(p));
    await client.start();

    await expect(client.ping()).resolves.toEqual({});
    await client.workStart({ job: "j" });
    await started;
    await expect(serverSide.request("ping", { note: "back" })).resolves.toEqual({});
    await client.notify("progress", { token: 1, done: 0.5 });
    await serverSide.notify("progress", { token: "t", done: 1 });
    await new Promise((r) => setTimeout(r, 10));

    expect(heardByClient).toEqual([{ note: "back" }, { token: "t", done: 1 }]);
    expect(heardByServer).toEqual([{ token: 1, done: 0.5 }]);
    // ping without params leaves them out of the frame.
    expect(wire.frames[0]).toEqual({ from: "client", message: { jsonrpc: "2.0", id: 1, method: "ping" } });
    // Both sides number their own requests: id 1 is on the wire from each.
    expect(
      wire.frames
        .filter((f) => (f.message as { method?: string }).method === "ping")
        .map((f) => [f.from, (f.message as { id: number }).id]),
    ).toEqual([
      ["client", 1],
      ["server", 1],
    ]);
    expect(check("both-way", wire.frames)).toEqual([]);
    // A server may not call what only the client calls.
    await expect(serverSide.request("work/start", { job: "j" })).rejects.toMatchObject({ kind: "invalid_outgoing" });
    await client.close();
  });

  it("params left out where allowed and absent where none are taken; required ones refused when left out", async () => {
    const { client: c, server: s } = await load("optional-params");
    const wire = recordedPair();
    const seen: unknown[] = [];
    let exited!: () => void;
    const exit = new Promise<void>((resolve) => (exited = resolve));
    const server = s.serveConnection(wire.server, {
      list: (params: unknown) => (seen.push(params), { items: ["a"] }),
      get: (params: { name: string }) => ({ value: params.name }),
      shutdown: (params: unknown) => (seen.push(params), null),
    });
    server.on("exit", (params: unknown) => (seen.push(params), exited()));
    await server.start();
    const client = new c.ProtocolClient(wire.client);
    await client.start();

    await expect(client.list()).resolves.toEqual({ items: ["a"] });
    await expect(client.list({ cursor: "c" })).resolves.toEqual({ items: ["a"] });
    await expect(client.shutdown()).resolves.toBeNull();
    await client.notify("exit", undefined);
    await exit;
    expect(seen).toEqual([undefined, { cursor: "c" }, undefined, undefined]);
    expect(wire.frames.map((f) => "params" in (f.message as object))).toEqual([false, false, true, false, false, false, false]);
    expect(check("optional-params", wire.frames)).toEqual([]);
    // Refused before sending: get requires its params.
    await expect(client.request("get", undefined)).rejects.toMatchObject({ kind: "invalid_outgoing" });
    await client.close();

    const [a, b] = createInMemoryPair();
    const bare = s.serveConnection(b, { list: () => ({ items: [] }), get: () => ({ value: "" }), shutdown: () => null });
    await bare.start();
    await a.start();
    expect(await raw(a, { jsonrpc: "2.0", id: 1, method: "get" })).toMatchObject({
      id: 1,
      error: { code: -32602, data: { errors: [{ pointer: "", message: "are required: the message may not leave its params out" }] } },
    });
    expect(await raw(a, { jsonrpc: "2.0", id: 2, method: "shutdown", params: {} })).toMatchObject({ id: 2, error: { code: -32602 } });
    // This protocol takes no batches.
    expect(await raw(a, [{ jsonrpc: "2.0", id: 3, method: "list" }])).toMatchObject({
      id: null,
      error: { code: -32600, message: "Invalid Request: the protocol does not allow batches" },
    });
    await a.close();
  });

  it("params by position, and an either method sent by position and handled by name", async () => {
    const { client: c, server: s } = await load("positional");
    const wire = recordedPair();
    const handled: unknown[] = [];
    const server = s.serveConnection(wire.server, {
      "balance/get": (params: unknown) => (handled.push(params), "0x10"),
      transfer: (params: unknown) => (handled.push(params), { ok: true }),
    });
    await server.start();
    const client = new c.ProtocolClient(wire.client);
    await client.start();
    const a = `0x${"a".repeat(40)}`;
    const b = `0x${"b".repeat(40)}`;
    await expect(client.balanceGet([a, "latest"])).resolves.toBe("0x10");
    await expect(client.balanceGet([a])).resolves.toBe("0x10");
    await expect(client.transfer({ from: a, to: b, amount: 5 })).resolves.toEqual({ ok: true });
    expect(handled).toEqual([[a, "latest"], [a], { from: a, to: b, amount: 5 }]);
    expect(wire.frames.filter((f) => f.from === "client").map((f) => (f.message as { params: unknown }).params)).toEqual([
      [a, "latest"],
      [a],
      [a, b, 5],
    ]);
    expect(check("positional", wire.frames)).toEqual([]);
    await expect(client.transfer({ from: a, to: b, amount: 5, memo: "m" })).resolves.toEqual({ ok: true });
    expect(handled.at(-1)).toEqual({ from: a, to: b, amount: 5, memo: "m" });
    await client.close();

    const [x, y] = createInMemoryPair();
    const bare = s.serveConnection(y, { "balance/get": () => "0x0", transfer: (p: unknown) => (handled.push(p), { ok: true }) });
    await bare.start();
    await x.start();
    const wrong = await raw(x, { jsonrpc: "2.0", id: 1, method: "balance/get", params: [a, 12] });
    expect(wrong).toMatchObject({
      id: 1,
      error: { code: -32602, data: { errors: expect.arrayContaining([expect.objectContaining({ pointer: "/1" })]) } },
    });
    expect(await raw(x, { jsonrpc: "2.0", id: 2, method: "transfer", params: { from: a, to: b, amount: 2 } })).toMatchObject({
      id: 2,
      result: { ok: true },
    });
    expect(handled.at(-1)).toEqual({ from: a, to: b, amount: 2 });
    expect(await raw(x, { jsonrpc: "2.0", id: 3, method: "transfer", params: [a, b, 2, "m", "extra"] })).toMatchObject({
      id: 3,
      error: { code: -32602 },
    });
    await x.close();
  });

  it("an error whose data has a type: sent as it is, received typed, checked", async () => {
    const { client: c, server: s } = await load("error-data");
    const wire = recordedPair();
    const server = s.serveConnection(wire.server, {
      fetch: () => {
        throw s.protocolError("rate_limited", undefined, { retryAfterMs: 250 });
      },
    });
    await server.start();
    const client = new c.ProtocolClient(wire.client);
    await client.start();
    const error = await client.fetch({ url: "u" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({ code: -32029, message: "Rate limited", data: { retryAfterMs: 250 } });
    // No reason is added to data a schema describes.
    expect((wire.frames[1]!.message as { error: { data: unknown } }).error.data).toEqual({ retryAfterMs: 250 });
    expect(check("error-data", wire.frames)).toEqual([]);
    await client.close();
  });

  it("a union result, and union params on a request the server sends", async () => {
    const { client: c, server: s } = await load("union-result");
    const wire = recordedPair();
    let asked: unknown;
    let server!: Module;
    server = s.serveConnection(wire.server, {
      call: async (params: { name: string; queue?: boolean }) => {
        await server.request("ask", { mode: "url", url: "https://example.test/" });
        return params.queue ? { taskId: "t1" } : { content: "done" };
      },
    });
    await server.start();
    const client = new c.ProtocolClient(wire.client, { handlers: { ask: (params: unknown) => ((asked = params), {}) } });
    await client.start();
    await expect(client.call({ name: "a" })).resolves.toEqual({ content: "done" });
    await expect(client.call({ name: "a", queue: true })).resolves.toEqual({ taskId: "t1" });
    expect(asked).toEqual({ mode: "url", url: "https://example.test/" });
    expect(check("union-result", wire.frames)).toEqual([]);
    await client.close();
  });

  it("a batch where the protocol takes batches", async () => {
    const { server: s } = await load("batches");
    const [a, b] = createInMemoryPair();
    const server = s.serveConnection(b, { echo: (p: { text: string }) => ({ text: p.text }) });
    await server.start();
    await a.start();
    const reply = await raw(a, [
      { jsonrpc: "2.0", id: 1, method: "echo", params: { text: "x" } },
      { jsonrpc: "2.0", id: 2, method: "echo", params: { text: "y" } },
    ]);
    expect(reply).toEqual([
      { jsonrpc: "2.0", id: 1, result: { text: "x" } },
      { jsonrpc: "2.0", id: 2, result: { text: "y" } },
    ]);
    await a.close();
  });
});
