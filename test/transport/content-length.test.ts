/**
 * Content-Length framing (LSP's stdio framing): messages split across chunks and several in
 * one chunk, bodies counted in bytes (multi-byte characters cut by a chunk boundary), the
 * optional Content-Type header, oversized bodies skipped without losing the next message,
 * a header part without Content-Length reported, and writes in order with their headers.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ContentLengthTransport } from "../../packages/rpc/src/transport/content-length.js";

const framed = (body: string) => Buffer.concat([Buffer.from(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`), Buffer.from(body)]);

function setup(maxFrameBytes = 1024) {
  const input = new PassThrough();
  const output = new PassThrough();
  const transport = new ContentLengthTransport({ input, output, maxFrameBytes });
  const frames: string[] = [];
  const errors: string[] = [];
  transport.onmessage = (frame) => frames.push(frame);
  transport.onerror = (error) => errors.push(error.message);
  return { input, output, transport, frames, errors };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("ContentLengthTransport", () => {
  it("reads messages cut into single bytes, several in one chunk, with a Content-Type header", async () => {
    const { input, transport, frames, errors } = setup();
    await transport.start();
    const a = '{"jsonrpc":"2.0","method":"initialized","params":{}}';
    const b = '{"jsonrpc":"2.0","id":1,"result":{"text":"héllo – ✓"}}';
    const all = Buffer.concat([
      framed(a),
      Buffer.from(`Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`),
      framed(a),
    ]);
    for (let i = 0; i < all.length; i++) input.write(all.subarray(i, i + 1));
    await tick();
    expect(frames).toEqual([a, b, a]);
    input.write(Buffer.concat([framed(b), framed(a)]));
    await tick();
    expect(frames.slice(3)).toEqual([b, a]);
    expect(errors).toEqual([]);
  });

  it("skips a body over the limit and reads the message after it", async () => {
    const { input, transport, frames, errors } = setup(32);
    await transport.start();
    const big = JSON.stringify({ jsonrpc: "2.0", method: "x", params: { pad: "p".repeat(100) } });
    const small = '{"jsonrpc":"2.0","method":"y"}';
    const all = Buffer.concat([framed(big), framed(small)]);
    input.write(all.subarray(0, 40));
    input.write(all.subarray(40));
    await tick();
    expect(frames).toEqual([small]);
    expect(errors).toEqual([`skipped an incoming message of ${Buffer.byteLength(big)} bytes: over the limit of 32 bytes`]);
  });

  it("reports a header part without Content-Length and closes", async () => {
    const { input, transport, errors } = setup();
    let closed = false;
    transport.onclose = () => (closed = true);
    await transport.start();
    input.write("Content-Type: text/plain\r\n\r\n{}");
    await tick();
    expect(errors[0]).toContain("a header part without Content-Length");
    expect(closed).toBe(true);
  });

  it("writes each message with its byte length, in the order sent", async () => {
    const { output, transport } = setup();
    const chunks: Buffer[] = [];
    output.on("data", (c: Buffer) => chunks.push(c));
    await Promise.all([transport.send('{"a":"✓"}'), transport.send('{"b":2}')]);
    await tick();
    expect(Buffer.concat(chunks).toString("utf8")).toBe('Content-Length: 11\r\n\r\n{"a":"✓"}Content-Length: 7\r\n\r\n{"b":2}');
  });
});
