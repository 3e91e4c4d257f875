/**
 * The stdio transport end to end: a gateway (the generated dispatcher with fake handlers)
 * on one StdioTransport, driven either by the generated ProtocolClient on another, or
 * byte by byte through a PassThrough with the replies read back as plain lines.
 */
import { once } from "node:events";
import { PassThrough, Writable, type Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { LocalError, RpcError } from "@turnspec/rpc";
import { ProtocolClient } from "../../generated/client.js";
import { errors } from "../../generated/registry.js";
import { payloadTooLargeFrame } from "../../packages/gateway/src/payload-too-large.js";
import { StdioTransport, stdioServerTransport } from "../../packages/rpc/src/transport/stdio.js";
import { NEVER_ANSWERED_CWD, serve, thread } from "./fake-gateway.js";

const LIMIT = 256;

/** An output that takes every write at once and keeps what was written, write by write. */
function collectingOutput(): { output: Writable; chunks: string[] } {
  const chunks: string[] = [];
  const output = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  return { output, chunks };
}

/** A gateway reading `input` and writing `output` (the server side of stdio), answering oversized lines as the reference gateway does. */
function gateway(limit = LIMIT) {
  const input = new PassThrough();
  const output = new PassThrough();
  const oversized: number[] = [];
  const transport = stdioServerTransport({
    input,
    output,
    maxFrameBytes: limit,
    oversizedReply: payloadTooLargeFrame,
    onOversized: (bytes) => oversized.push(bytes),
  });
  const served = serve(transport);
  return { input, output, transport, served, oversized };
}

/** A ProtocolClient on a second StdioTransport over the gateway's streams. */
async function connectedClient(gw: ReturnType<typeof gateway>) {
  const transport = new StdioTransport({ input: gw.output, output: gw.input, maxFrameBytes: 1 << 20 });
  const client = new ProtocolClient(transport);
  await gw.transport.start();
  await client.start();
  return { client, transport };
}

/** Reads the gateway's replies as lines, with no transport code involved. */
function replies(stream: Readable) {
  let buffer = "";
  const lines: string[] = [];
  let wake: (() => void) | undefined;
  stream.setEncoding("utf8");
  stream.on("data", (text: string) => {
    buffer += text;
    for (let end = buffer.indexOf("\n"); end !== -1; end = buffer.indexOf("\n")) {
      lines.push(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
    }
    wake?.();
  });
  return {
    async next(): Promise<any> {
      while (lines.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return JSON.parse(lines.shift()!);
    },
  };
}

/** Writes one chunk and waits until the stream has emitted it, so chunks reach the reader one by one. */
async function writeChunk(stream: PassThrough, chunk: Buffer | string): Promise<void> {
  const emitted = once(stream, "data");
  stream.write(chunk);
  await emitted;
}

const request = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method, params });

/** A thread/get request padded with trailing JSON whitespace to exactly `bytes` bytes. */
function paddedRequest(id: number, bytes: number): string {
  const base = request(id, "thread/get", { thread_id: "thr_1" });
  return base + " ".repeat(bytes - Buffer.byteLength(base));
}

describe("StdioTransport", () => {
  it("carries a request/response round trip between the generated client and dispatcher", async () => {
    const gw = gateway();
    const { client } = await connectedClient(gw);

    await expect(client.threadStart({ cwd: "/srv/app" })).resolves.toEqual({ thread: thread("thr_000000000000000001", "/srv/app") });
    const failure = await client.threadGet({ thread_id: "thr_missing" }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RpcError);
    expect(failure).toMatchObject({ code: errors.thread_not_found.code, reason: "thread_not_found", data: { thread_id: "thr_missing" } });
  });

  it("joins a frame written one byte at a time", async () => {
    const gw = gateway();
    const lines = replies(gw.output);
    await gw.transport.start();
    const bytes = Buffer.from(`${request(1, "thread/start", {})}\n`);
    for (let i = 0; i < bytes.length; i++) await writeChunk(gw.input, bytes.subarray(i, i + 1));

    expect(await lines.next()).toMatchObject({ id: 1, result: { thread: { id: "thr_000000000000000001" } } });
    expect(gw.served.frames).toEqual([request(1, "thread/start", {})]);
  });

  it("splits several frames out of one chunk, and a frame split across chunks", async () => {
    const gw = gateway();
    const lines = replies(gw.output);
    await gw.transport.start();
    const third = request(3, "thread/get", { thread_id: "thr_3" });
    // Frame 2 ends with CRLF and is followed by a blank line: both are tolerated.
    await writeChunk(
      gw.input,
      `${request(1, "thread/start", {})}\n${request(2, "thread/get", { thread_id: "thr_2" })}\r\n\n${third.slice(0, 20)}`,
    );
    await writeChunk(gw.input, `${third.slice(20)}\n`);

    expect((await lines.next()).id).toBe(1);
    expect(await lines.next()).toMatchObject({ id: 2, error: { data: { thread_id: "thr_2" } } });
    expect(await lines.next()).toMatchObject({ id: 3, error: { data: { thread_id: "thr_3" } } });
    expect(gw.served.frames).toHaveLength(3);
  });

  it("decodes a multi-byte UTF-8 character split across chunks", async () => {
    const gw = gateway();
    const lines = replies(gw.output);
    await gw.transport.start();
    const id = "thr_€😀é";
    const bytes = Buffer.from(`${request(1, "thread/get", { thread_id: id })}\n`);
    const cut = bytes.indexOf(Buffer.from("😀")) + 2; // two of the emoji's four bytes on each side
    // Decoded chunk by chunk, the cut would show as replacement characters.
    expect(bytes.subarray(0, cut).toString("utf8")).toContain("\uFFFD");

    await writeChunk(gw.input, bytes.subarray(0, cut));
    await writeChunk(gw.input, bytes.subarray(cut));
    expect(await lines.next()).toMatchObject({ id: 1, error: { code: errors.thread_not_found.code, data: { thread_id: id } } });
  });

  it("discards an oversized line without buffering it, answers payload_too_large with id null, and keeps going", async () => {
    const gw = gateway();
    const lines = replies(gw.output);
    await gw.transport.start();
    const huge = request(9, "thread/get", { thread_id: "x".repeat(LIMIT * 10) });
    const hugeBytes = Buffer.from(huge);
    for (let at = 0; at < hugeBytes.length; at += 100) {
      await writeChunk(gw.input, hugeBytes.subarray(at, at + 100));
      // At most the limit plus one byte (a possible CR) is ever held.
      expect(gw.transport.bufferedBytes).toBeLessThanOrEqual(LIMIT + 1);
    }
    await writeChunk(gw.input, "\n");

    expect(await lines.next()).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: errors.payload_too_large.code,
        message: expect.stringContaining(`${hugeBytes.length} bytes`),
        data: { reason: "payload_too_large", limit_bytes: LIMIT },
      },
    });
    expect(gw.oversized).toEqual([hugeBytes.length]);
    expect(gw.served.frames).toEqual([]);

    await writeChunk(gw.input, `${request(10, "thread/start", {})}\n`);
    expect(await lines.next()).toMatchObject({ id: 10, result: { thread: { id: "thr_000000000000000001" } } });
  });

  it("accepts a frame of exactly the limit (with or without CR) and refuses one byte more", async () => {
    const gw = gateway();
    const lines = replies(gw.output);
    await gw.transport.start();
    await writeChunk(gw.input, `${paddedRequest(1, LIMIT)}\n`);
    await writeChunk(gw.input, `${paddedRequest(2, LIMIT)}\r\n`);
    await writeChunk(gw.input, `${paddedRequest(3, LIMIT + 1)}\n`);

    // The transport answers an oversized line at once, the dispatcher a little later: the
    // replies are compared without their order.
    const answers = [await lines.next(), await lines.next(), await lines.next()].map((reply) => [reply.id, reply.error.code]);
    expect(answers).toEqual(
      expect.arrayContaining([
        [1, errors.thread_not_found.code],
        [2, errors.thread_not_found.code],
        [null, errors.payload_too_large.code],
      ]),
    );
    expect(gw.oversized).toEqual([LIMIT + 1]);
  });

  it("reports a discarded line through onerror when nobody listens for oversized frames", async () => {
    const input = new PassThrough();
    const transport = new StdioTransport({ input, output: new PassThrough(), maxFrameBytes: 8 });
    const reported = new Promise<Error>((resolve) => (transport.onerror = resolve));
    await transport.start();
    input.write("0123456789\n");
    expect((await reported).message).toBe("discarded an incoming frame of 10 bytes: over the limit of 8 bytes");
  });

  it("delivers a last line without LF when the input ends, fires onclose, and still sends the answer", async () => {
    const gw = gateway();
    const lines = replies(gw.output);
    const closed = new Promise<void>((resolve) => (gw.transport.onclose = resolve));
    await gw.transport.start();
    gw.input.end(request(1, "thread/start", {}));

    await closed;
    expect(await lines.next()).toMatchObject({ id: 1, result: { thread: { id: "thr_000000000000000001" } } });
  });

  it("writes the frames of one tick as one write, in order, and waits for 'drain' before handing over more", async () => {
    const written: string[] = [];
    const finishWrite: Array<() => void> = [];
    let onWrite: (() => void) | undefined;
    // Holds every write until the test lets it finish; highWaterMark 1 asks for a drain after each.
    const output = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _encoding, callback) {
        written.push(chunk.toString());
        finishWrite.push(() => callback());
        onWrite?.();
      },
    });
    const nextWrite = () => new Promise<void>((resolve) => (onWrite = resolve));
    const transport = new StdioTransport({ input: new PassThrough(), output, maxFrameBytes: 1024 });

    let wrote = nextWrite();
    const first = ['{"n":1}', '{"n":2}'].map((frame) => transport.send(frame));
    await wrote;
    expect(written).toEqual(['{"n":1}\n{"n":2}\n']);
    // Sent while the output is full: held back, however many turns of the event loop pass.
    const later = ['{"n":3}', '{"n":4}'].map((frame) => transport.send(frame));
    await new Promise(setImmediate);
    await new Promise(setImmediate);
    expect(written).toHaveLength(1);
    expect(output.writableLength).toBe('{"n":1}\n{"n":2}\n'.length);
    wrote = nextWrite();
    finishWrite.shift()!();
    await expect(Promise.all(first)).resolves.toEqual([undefined, undefined]);
    await wrote;
    expect(written).toEqual(['{"n":1}\n{"n":2}\n', '{"n":3}\n{"n":4}\n']);
    finishWrite.shift()!();
    await expect(Promise.all(later)).resolves.toEqual([undefined, undefined]);
  });

  it("writes a long burst in batches as it goes, without waiting for the end of the tick", async () => {
    const { output, chunks } = collectingOutput();
    const transport = new StdioTransport({ input: new PassThrough(), output, maxFrameBytes: 1 << 20 });
    const frame = JSON.stringify({ text: "x".repeat(1000) });
    for (let i = 0; i < 200; i++) void transport.send(frame);
    // Still in the same tick: most of the burst has gone out already.
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.join("").length).toBeGreaterThan(150 * (frame.length + 1));
    await transport.close();
    expect(chunks.join("")).toBe(`${frame}\n`.repeat(200));
  });

  it("refuses a frame with a line break, and any frame once closed", async () => {
    const transport = new StdioTransport({ input: new PassThrough(), output: new PassThrough(), maxFrameBytes: 1024 });
    await expect(transport.send('{"a":\n1}')).rejects.toThrow("a stdio frame must be one line");
    await transport.close();
    await expect(transport.send("{}")).rejects.toThrow("the stdio transport is closed");
  });

  it("takes a compactJson sender's frames as they are: each is written once, whole, in order", async () => {
    const { output, chunks } = collectingOutput();
    const transport = new StdioTransport({ input: new PassThrough(), output, maxFrameBytes: 1024, compactJson: true });
    // Frames spliced from parts, as the gateway splices stored params into a notification.
    const params = (n: number) => `{"n":${n},"text":${JSON.stringify(`é ${"x".repeat(n)}`)}}`;
    const frames = Array.from({ length: 50 }, (_, n) => `{"jsonrpc":"2.0","method":"m","params":${params(n)}}`);
    await Promise.all(frames.map((frame) => transport.send(frame)));
    await transport.close();
    const lines = chunks.join("").split("\n");
    expect(lines.pop()).toBe("");
    expect(lines).toEqual(frames);
    expect(lines.map((line) => (JSON.parse(line) as { params: { n: number } }).params.n)).toEqual(frames.map((_, n) => n));
  });

  it("refuses a limit that is not a positive integer", () => {
    expect(() => new StdioTransport({ input: new PassThrough(), output: new PassThrough(), maxFrameBytes: 0 })).toThrow(
      "StdioTransport: maxFrameBytes must be a positive integer number of bytes, got 0",
    );
  });

  it("fails the client's pending requests with transport_closed when the gateway closes", async () => {
    const gw = gateway();
    const { client } = await connectedClient(gw);
    const pending = client.threadStart({ cwd: NEVER_ANSWERED_CWD }).catch((error: unknown) => error);
    await gw.served.received(1);

    await gw.transport.close(); // ends the gateway's output: the client's input ends
    const failure = await pending;
    expect(failure).toBeInstanceOf(LocalError);
    expect(failure).toMatchObject({ kind: "transport_closed" });
  });

  it("fails pending requests with transport_closed when the client closes", async () => {
    const gw = gateway();
    const { client } = await connectedClient(gw);
    const failure = client.threadStart({ cwd: NEVER_ANSWERED_CWD }).catch((error: unknown) => error);
    await gw.served.received(1);

    await client.close();
    expect(await failure).toMatchObject({ name: "LocalError", kind: "transport_closed" });
    // The client ended its output, so the gateway saw its input end.
    expect(gw.input.writableEnded).toBe(true);
  });
});
