/**
 * A transport over a byte stream pair: one JSON-RPC message (or batch) per line. The
 * server runs it over process.stdin/stdout or any other pair of streams (see
 * `stdioServerTransport`); a client runs it over a child process's pipes (see
 * child-process.ts).
 *
 * Reading splits on LF at the byte level (a CR before the LF is dropped), so a frame may
 * arrive in any number of chunks and one chunk may hold several frames. Each line is
 * decoded with its own StringDecoder, so a multi-byte UTF-8 character cut by a chunk
 * boundary is joined back together. A line over the size limit is not kept: once it
 * passes the limit its bytes are counted and dropped until the next LF, and the line is
 * then reported through `onOversized` (a server answers it with payload_too_large).
 *
 * Writing appends LF to each frame; the writing itself (order, 'drain', one write per
 * tick) is the one every byte-stream transport shares (byte-stream.ts).
 */
import { StringDecoder } from "node:string_decoder";
import type { Readable, Writable } from "node:stream";
import { asError, ByteStreamTransport, type ByteStreamTransportOptions } from "./byte-stream.js";
import { checkMaxFrameBytes, type OversizedReply } from "./frame-limit.js";

const LF = 0x0a;
const CR = 0x0d;

/** The byte-stream options; a frame is a line, its size counted without the line ending. */
export interface StdioTransportOptions extends ByteStreamTransportOptions {
  /**
   * The sender's promise that every frame it sends is compact JSON (what JSON.stringify
   * writes without indentation, or text spliced from such JSON), which never holds a line
   * break: frames are then not searched for one. Searching a frame built from parts makes
   * it one flat string first, a copy that joining the frames for the write makes again.
   * Default false: a frame with a line break is refused.
   */
  readonly compactJson?: boolean;
}

export class StdioTransport extends ByteStreamTransport {
  // The line being read: its decoded parts, its size so far and its last byte.
  private parts: string[] = [];
  private decoder = new StringDecoder("utf8");
  private lineBytes = 0;
  private lastByte = -1;
  /** True once the current line went over the limit: its bytes are counted, not kept. */
  private discarding = false;

  private readonly compactJson: boolean;

  constructor(options: StdioTransportOptions) {
    super(options, "the stdio transport", "StdioTransport");
    this.compactJson = options.compactJson ?? false;
  }

  /** Bytes of the current, unfinished line held in memory; never more than the limit plus one. */
  get bufferedBytes(): number {
    return this.discarding ? 0 : this.lineBytes;
  }

  /**
   * One frame is one line. A frame must not contain a line break: `JSON.stringify` never
   * produces one, and the peer would split the frame there.
   */
  protected encode(frame: string): string | Error {
    if (!this.compactJson && frame.includes("\n"))
      return new Error("a stdio frame must be one line: serialize it without line breaks (JSON.stringify without indentation)");
    return `${frame}\n`;
  }

  protected read(bytes: Buffer): void {
    let start = 0;
    while (start < bytes.length && !this.closed) {
      const newline = bytes.indexOf(LF, start);
      this.take(bytes.subarray(start, newline === -1 ? bytes.length : newline));
      if (newline === -1) break;
      this.finishLine();
      start = newline + 1;
    }
  }

  /** A last line without its LF is still a frame: the peer may end its output right after it. */
  protected inputEnded(): void {
    if (this.lineBytes > 0) this.finishLine();
  }

  /** Adds a piece of the current line, or only counts it once the line is over the limit. */
  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    this.lineBytes += piece.length;
    this.lastByte = piece[piece.length - 1]!;
    if (this.discarding) return;
    // One byte of slack: a CR ending the line is not part of the frame, and is only known
    // to end it once the LF arrives.
    if (this.lineBytes > this.maxFrameBytes + 1) {
      this.discarding = true;
      this.parts = [];
      this.decoder = new StringDecoder("utf8");
      return;
    }
    this.parts.push(this.decoder.write(piece));
  }

  private finishLine(): void {
    const endsWithCR = this.lastByte === CR;
    const frameBytes = this.lineBytes - (endsWithCR ? 1 : 0);
    const oversized = this.discarding || frameBytes > this.maxFrameBytes;
    let text = oversized ? "" : this.parts.join("") + this.decoder.end();
    if (endsWithCR) text = text.slice(0, -1);
    this.parts = [];
    this.decoder = new StringDecoder("utf8");
    this.lineBytes = 0;
    this.lastByte = -1;
    this.discarding = false;

    if (oversized)
      this.reportOversized(frameBytes, `discarded an incoming frame of ${frameBytes} bytes: over the limit of ${this.maxFrameBytes} bytes`);
    // Blank lines carry nothing; skipping them keeps a hand-typed session free of parse errors.
    else if (text.trim() !== "") this.deliver(text);
  }
}

export interface StdioServerOptions {
  /** Where requests come from. Default process.stdin. */
  readonly input?: Readable;
  /** Where answers go. Default process.stdout, which then carries nothing but frames. */
  readonly output?: Writable;
  /** Largest frame accepted, in bytes of UTF-8 without the line ending. */
  readonly maxFrameBytes: number;
  /** The frame sent back for each line over the limit, which is discarded unread. */
  readonly oversizedReply: OversizedReply;
  /** Called after an oversized line was answered, for the server's log. */
  readonly onOversized?: (bytes: number) => void;
}

/**
 * The server side of a stdio connection: a transport over a pair of streams (the process's
 * own stdin and stdout unless told otherwise) that answers every line over the limit with
 * `oversizedReply` and keeps reading. Set its callbacks, then start it.
 */
export function stdioServerTransport(options: StdioServerOptions): StdioTransport {
  const maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes, "stdioServerTransport");
  const transport: StdioTransport = new StdioTransport({
    input: options.input ?? process.stdin,
    output: options.output ?? process.stdout,
    maxFrameBytes,
    onOversized: (bytes) => {
      transport.send(options.oversizedReply(maxFrameBytes, bytes)).catch((error: unknown) => transport.onerror?.(asError(error)));
      options.onOversized?.(bytes);
    },
  });
  return transport;
}
