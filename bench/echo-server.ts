/**
 * The baseline of the throughput benchmark: a bare JSON-RPC server on the gateway's own
 * transport code (StdioTransport, or the WebSocket server), with no store, no validation
 * and no turn engine. One request, `stream` with `{count, params}`, makes it send `count`
 * notifications built from `params` (each with its own `sequence`, serialized one by one,
 * as a server builds them), then answer the request.
 *
 * Run: node --import ./scripts/from-source.mjs bench/echo-server.ts --stdio | --port 0 (prints "listening on URL" on stderr)
 */
import type { Transport } from "@turnspec/rpc";
import { StdioTransport, startWebSocketServer } from "@turnspec/rpc/transport";

const MAX_FRAME_BYTES = 8 * 1024 * 1024;

interface StreamRequest {
  readonly id: number | string;
  readonly method: string;
  readonly params: { readonly count: number; readonly method: string; readonly params: Record<string, unknown> };
}

function serveBaseline(transport: Transport): void {
  transport.onmessage = (frame) => {
    const request = JSON.parse(frame) as StreamRequest;
    const { count, method, params } = request.params;
    for (let sequence = 1; sequence <= count; sequence++)
      void transport.send(JSON.stringify({ jsonrpc: "2.0", method, params: { ...params, sequence } }));
    void transport.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, result: { sent: count } }));
  };
  void transport.start();
}

if (process.argv.includes("--stdio")) {
  serveBaseline(new StdioTransport({ input: process.stdin, output: process.stdout, maxFrameBytes: MAX_FRAME_BYTES }));
} else {
  const server = await startWebSocketServer({ port: 0, maxFrameBytes: MAX_FRAME_BYTES, onConnection: serveBaseline });
  process.stderr.write(`listening on ${server.url}\n`);
}
