/**
 * The raw byte path to a server, below any JSON-RPC client: frames out as given (so a
 * test can send malformed ones, and a benchmark pays nothing for a client library), frames
 * in as text. Over a child's stdin and stdout (one frame per line) or over one WebSocket
 * (one frame per message).
 */
import { once } from "node:events";
import type { Writable } from "node:stream";
import WebSocket from "ws";

export interface RawLink {
  /** Sends the frames; `cuts` (fractions of the whole, stdio only) are where the byte stream is split between writes. */
  send(frames: readonly (Buffer | string)[], cuts?: readonly number[]): Promise<void>;
  /** Called with the text of each frame received. */
  onFrame?: (text: string) => void;
  close(): Promise<void>;
}

/** A link over a server's stdin and stdout: frames are lines, written in pieces cut anywhere. */
export function stdioLink(stdin: Writable, stdout: NodeJS.ReadableStream): RawLink {
  const link: RawLink = {
    async send(frames, cuts = []) {
      const bytes = Buffer.concat(frames.flatMap((f) => [Buffer.isBuffer(f) ? f : Buffer.from(f), Buffer.from("\n")]));
      const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].filter((n) => n > 0 && n < bytes.length).sort((a, b) => a - b);
      let start = 0;
      for (const end of [...at, bytes.length]) {
        if (!stdin.write(bytes.subarray(start, end))) await once(stdin, "drain");
        start = end;
      }
    },
    close: async () => undefined,
  };
  let partial = "";
  stdout.setEncoding("utf8");
  stdout.on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop()!;
    for (const line of lines) link.onFrame?.(line);
  });
  return link;
}

/** A link over one WebSocket: one frame per message, binary for bytes that are not UTF-8 text. */
export async function webSocketLink(url: string): Promise<RawLink & { readonly socket: WebSocket }> {
  const socket = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
  await once(socket, "open");
  const link: RawLink & { socket: WebSocket } = {
    socket,
    async send(frames) {
      for (const frame of frames) {
        // A text message must be UTF-8 (the server closes the connection otherwise): other bytes go as binary.
        const binary = Buffer.isBuffer(frame) && !isWellFormedUtf8(frame);
        await new Promise<void>((resolve, reject) => socket.send(frame, { binary }, (error) => (error ? reject(error) : resolve())));
      }
    },
    close: async () => {
      socket.close();
      if (socket.readyState !== WebSocket.CLOSED) await once(socket, "close");
    },
  };
  socket.on("message", (data: Buffer) => link.onFrame?.(data.toString("utf8")));
  return link;
}

function isWellFormedUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}
