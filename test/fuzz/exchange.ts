/**
 * Sends fuzz frames to a gateway in one pipelined burst and checks every reply against
 * what the oracle says each frame is owed: nothing missing, nothing extra, each reply a
 * valid response. A link is the raw byte path to the gateway (stdio pipes or a WebSocket),
 * so frames can be malformed in ways no client library would produce.
 */
import { once } from "node:events";
import type { Writable } from "node:stream";
import WebSocket from "ws";
import { owedBy, replyProblems, type Owed } from "./frames.js";

export interface Link {
  /** Sends the frames; `cuts` (fractions of the whole, stdio only) are where the byte stream is split between writes. */
  send(frames: readonly Buffer[], cuts: readonly number[]): Promise<void>;
  /** Called with each parsed reply frame. */
  onReply?: (reply: unknown) => void;
  /** Called when the gateway sends bytes that are not JSON. */
  onGarbage?: (text: string) => void;
  close(): Promise<void>;
}

/** A link over a gateway's stdin and stdout: frames are lines, written in pieces cut anywhere. */
export function stdioLink(stdin: Writable, stdout: NodeJS.ReadableStream): Link {
  const link: Link = {
    async send(frames, cuts) {
      const bytes = Buffer.concat(frames.flatMap((f) => [f, Buffer.from("\n")]));
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
    for (const line of lines) deliver(link, line);
  });
  return link;
}

/** A link over one WebSocket: one frame per message, binary for bytes that are not UTF-8 text. */
export async function webSocketLink(url: string): Promise<Link & { readonly socket: WebSocket }> {
  const socket = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
  await once(socket, "open");
  const link: Link & { socket: WebSocket } = {
    socket,
    async send(frames) {
      for (const frame of frames) {
        // A text message must be UTF-8 (the server closes the connection otherwise): other bytes go as binary.
        const binary = !isWellFormedUtf8(frame);
        await new Promise<void>((resolve, reject) => socket.send(frame, { binary }, (error) => (error ? reject(error) : resolve())));
      }
    },
    close: async () => {
      socket.close();
      if (socket.readyState !== WebSocket.CLOSED) await once(socket, "close");
    },
  };
  socket.on("message", (data: Buffer) => deliver(link, data.toString("utf8")));
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

function deliver(link: Link, text: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    link.onGarbage?.(text);
    return;
  }
  link.onReply?.(parsed);
}

let sentinels = 0;

export interface ExchangeOptions {
  /** How long to wait for the owed replies before reporting the missing ones. A liveness bound, not a timing check. */
  readonly patienceMs?: number;
}

/**
 * Sends the frames and returns every problem: a missing reply, an extra one, a reply that
 * is not what its frame was owed. A final request (a sentinel, answered after everything
 * sent before it has been read) flushes out replies that should not have come.
 */
export async function exchange(link: Link, frames: readonly Buffer[], cuts: readonly number[] = [], options: ExchangeOptions = {}): Promise<string[]> {
  const problems: string[] = [];
  const owed = new Map<string, Owed[]>();
  let remaining = 0;
  for (const o of frames.flatMap(owedBy)) {
    const key = JSON.stringify(o.id);
    (owed.get(key) ?? owed.set(key, []).get(key)!).push(o);
    remaining++;
  }
  const sentinel = `sentinel-${++sentinels}`;
  let allOwed!: () => void;
  let sentinelAnswered!: () => void;
  const everythingOwed = new Promise<void>((resolve) => (allOwed = resolve));
  const sentinelReply = new Promise<void>((resolve) => (sentinelAnswered = resolve));
  if (remaining === 0) allOwed();

  const take = (reply: unknown) => {
    const id = (reply as { id?: unknown } | null)?.id;
    if (id === sentinel) {
      sentinelAnswered();
      return;
    }
    const bucket = owed.get(JSON.stringify(id ?? null));
    if (!bucket || bucket.length === 0) {
      problems.push(`a reply nothing was owed: ${JSON.stringify(reply).slice(0, 300)}`);
      return;
    }
    // Replies with the same id (null, mostly) are told apart by what they say: an owed
    // reply that names its error is matched before one that takes any error.
    const fitting = bucket.flatMap((o, i) => (replyProblems(reply, o).length === 0 ? [i] : []));
    const fits = fitting.find((i) => bucket[i]!.reason !== undefined) ?? fitting[0] ?? -1;
    const [match] = bucket.splice(fits >= 0 ? fits : 0, 1);
    if (fits < 0) problems.push(...replyProblems(reply, match!));
    if (--remaining === 0) allOwed();
  };
  link.onReply = (reply) => {
    if (Array.isArray(reply)) {
      if (reply.length === 0) problems.push("an empty batch reply");
      reply.forEach(take);
    } else take(reply);
  };
  link.onGarbage = (text) => problems.push(`the gateway sent a frame that is not JSON: ${text.slice(0, 200)}`);

  await link.send(frames, cuts);
  let timer: NodeJS.Timeout | undefined;
  const patience = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), options.patienceMs ?? 30_000)));
  const outcome = await Promise.race([everythingOwed.then(() => "done" as const), patience]);
  clearTimeout(timer);
  if (outcome === "timeout") {
    const missing = [...owed.values()].flat();
    problems.push(`${missing.length} owed replies never came, e.g. ${JSON.stringify(missing.slice(0, 5))}`);
    return problems;
  }
  await link.send([Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: sentinel, method: "thread/get", params: { thread_id: "thr_sentinel" } }))], []);
  await sentinelReply;
  return problems;
}
