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
 * Writing appends LF to each frame, keeps frames in the order `send` was called, and
 * waits for 'drain' whenever the output asks for it, so a slow reader holds the writer
 * back instead of growing a buffer without end. Frames sent in one tick of the event loop
 * go out together, as one write (at most FLUSH_CHARS of text each): a server streaming
 * many small notifications pays one system call per batch, not one per frame, and every
 * frame of a batch shares its promise.
 */
import { StringDecoder } from "node:string_decoder";
import { finished } from "node:stream/promises";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "turnspec/rpc";
import { checkMaxFrameBytes, type OversizedReply } from "./frame-limit.js";

const LF = 0x0a;
const CR = 0x0d;

/** A batch holding this much text (UTF-16 code units) is written at once, without waiting for the end of the tick. */
const FLUSH_CHARS = 64 * 1024;

/** Frames sent and not yet handed to the output: their lines, and the promise they all resolve with. */
interface Batch {
  text: string;
  readonly written: Promise<void>;
  readonly settle: (error?: Error) => void;
}

function newBatch(): Batch {
  let settle!: (error?: Error) => void;
  const written = new Promise<void>((resolve, reject) => (settle = (error) => (error ? reject(error) : resolve())));
  // A batch nobody awaits must not fail the process as an unhandled rejection: whoever
  // sent into it holds the same promise and sees the failure.
  written.catch(() => undefined);
  return { text: "", written, settle };
}

export interface StdioTransportOptions {
  /** Where frames come from: process.stdin, or a child's stdout. */
  readonly input: Readable;
  /** Where frames go: process.stdout, or a child's stdin. */
  readonly output: Writable;
  /** Largest frame accepted, in bytes of UTF-8 without the line ending. */
  readonly maxFrameBytes: number;
  /**
   * Called with the size in bytes of each line that was over the limit and discarded,
   * once its end is reached. A server answers it (see `stdioServerTransport`);
   * without this callback the discarded line is reported through `onerror`.
   */
  readonly onOversized?: (bytes: number) => void;
  /** End the output when the transport closes, telling the peer we are done. Default true. */
  readonly endOutputOnClose?: boolean;
}

export class StdioTransport implements Transport {
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private readonly input: Readable;
  private readonly output: Writable;
  private readonly maxFrameBytes: number;
  private readonly onOversized: ((bytes: number) => void) | undefined;
  private readonly endOutputOnClose: boolean;

  // The line being read: its decoded parts, its size so far and its last byte.
  private parts: string[] = [];
  private decoder = new StringDecoder("utf8");
  private lineBytes = 0;
  private lastByte = -1;
  /** True once the current line went over the limit: its bytes are counted, not kept. */
  private discarding = false;

  private started = false;
  /** No more frames are delivered or accepted for sending. */
  private closed = false;
  private closeNotified = false;
  private closing: Promise<void> | undefined;
  /** The frames sent since the last write, written at the end of the tick (or once FLUSH_CHARS long). */
  private batch: Batch | undefined;
  /** True while a write waits for the output to drain: frames sent meanwhile join the batch. */
  private draining = false;
  /** Settles once the last batch handed to the output has been written (or failed). */
  private writeTail: Promise<void> = Promise.resolve();

  constructor(options: StdioTransportOptions) {
    this.input = options.input;
    this.output = options.output;
    this.maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes, "StdioTransport");
    this.onOversized = options.onOversized;
    this.endOutputOnClose = options.endOutputOnClose ?? true;
    // Listened to from the start: an 'error' event without a listener would crash the process
    // (an EPIPE on the output when the peer has gone, for instance).
    this.input.on("error", this.onInputError);
    this.output.on("error", this.onOutputError);
  }

  /** Bytes of the current, unfinished line held in memory; never more than the limit plus one. */
  get bufferedBytes(): number {
    return this.discarding ? 0 : this.lineBytes;
  }

  async start(): Promise<void> {
    if (this.started) return;
    if (this.closed) throw new Error("the stdio transport is closed");
    this.started = true;
    this.input.on("data", this.onData);
    this.input.on("end", this.onInputEnd);
    // A destroyed input may close without 'end'; either way nothing more will arrive.
    this.input.on("close", this.onInputEnd);
    if (this.input.readableEnded || this.input.destroyed) this.onInputEnd();
  }

  /**
   * Writes one frame as one line. Resolves when the output has taken it, rejects when the
   * transport is closed or the output fails. A frame must not contain a line break:
   * `JSON.stringify` never produces one, and the peer would split the frame there.
   */
  send(frame: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error("the stdio transport is closed"));
    if (frame.includes("\n")) {
      return Promise.reject(new Error("a stdio frame must be one line: serialize it without line breaks (JSON.stringify without indentation)"));
    }
    let batch = this.batch;
    if (batch === undefined) {
      batch = this.batch = newBatch();
      process.nextTick(this.flush);
    }
    batch.text += frame;
    batch.text += "\n";
    // A burst that never yields to the event loop still streams, one batch at a time.
    if (batch.text.length >= FLUSH_CHARS) this.flush();
    return batch.written;
  }

  /** Hands the batch to the output as one write, once the output takes more; frames sent while it waits join the batch. */
  private readonly flush = (): void => {
    const batch = this.batch;
    if (batch === undefined || this.draining) return;
    if (this.output.writableNeedDrain) {
      this.draining = true;
      this.drain().then(
        () => {
          this.draining = false;
          this.flush();
        },
        (error: Error) => {
          this.draining = false;
          if (this.batch === batch) this.batch = undefined;
          batch.settle(error);
        },
      );
      return;
    }
    this.batch = undefined;
    const written = this.write(batch.text);
    written.then(() => batch.settle(), (error: Error) => batch.settle(error));
    this.writeTail = written.catch(() => undefined);
  };

  /**
   * Stops reading, writes what was already sent, then ends the output (unless told not
   * to). onclose fires once, whatever closed the transport first.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.closed = true;
    this.stopReading();
    // What was sent before close goes out first.
    this.flush();
    if (this.batch) await this.batch.written.catch(() => undefined);
    await this.writeTail;
    if (this.endOutputOnClose && !this.output.writableEnded && !this.output.destroyed) {
      this.output.end();
      // Only the writing side: a Duplex output (a socket, a PassThrough) may never end its
      // readable side. A failing output has already been reported through onerror.
      await finished(this.output, { readable: false }).catch(() => undefined);
    }
    this.notifyClose();
  }

  private write(line: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.output.writableEnded || this.output.destroyed) {
        reject(new Error("the stdio transport's output is closed"));
        return;
      }
      this.output.write(line, "utf8", (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Waits for the output to ask for more; fails when it closes or errs instead. */
  private drain(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        this.output.off("drain", onDrain);
        this.output.off("close", onClose);
        this.output.off("error", done);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = () => done();
      const onClose = () => done(new Error("the stdio transport's output closed before it drained"));
      this.output.on("drain", onDrain);
      this.output.on("close", onClose);
      this.output.on("error", done);
    });
  }

  private readonly onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    let start = 0;
    while (start < bytes.length && !this.closed) {
      const newline = bytes.indexOf(LF, start);
      this.take(bytes.subarray(start, newline === -1 ? bytes.length : newline));
      if (newline === -1) break;
      this.finishLine();
      start = newline + 1;
    }
  };

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

    if (oversized) this.reportOversized(frameBytes);
    // Blank lines carry nothing; skipping them keeps a hand-typed session free of parse errors.
    else if (text.trim() !== "") this.deliver(text);
  }

  private reportOversized(bytes: number): void {
    try {
      if (this.onOversized) this.onOversized(bytes);
      else this.onerror?.(new Error(`discarded an incoming frame of ${bytes} bytes: over the limit of ${this.maxFrameBytes} bytes`));
    } catch (error) {
      this.onerror?.(asError(error));
    }
  }

  private deliver(frame: string): void {
    try {
      this.onmessage?.(frame);
    } catch (error) {
      this.onerror?.(asError(error));
    }
  }

  private readonly onInputEnd = (): void => {
    if (this.closed || this.closeNotified) return;
    // A last line without its LF is still a frame: the peer may end its output right after it.
    if (this.lineBytes > 0) this.finishLine();
    this.stopReading();
    // The peer will send nothing more, but frames can still be sent until close() or until
    // the output fails, so answers to requests already in flight are not lost (a client that
    // pipes in a file of requests and ends its input gets every answer).
    this.notifyClose();
  };

  private readonly onInputError = (error: Error): void => {
    this.onerror?.(new Error(`reading the stdio transport's input failed: ${error.message}`, { cause: error }));
  };

  private readonly onOutputError = (error: Error): void => {
    // The peer is gone (EPIPE, typically): nothing sent from now on can arrive.
    this.closed = true;
    this.stopReading();
    this.onerror?.(new Error(`writing to the stdio transport's output failed: ${error.message}`, { cause: error }));
    this.notifyClose();
  };

  private stopReading(): void {
    this.input.off("data", this.onData);
    this.input.off("end", this.onInputEnd);
    this.input.off("close", this.onInputEnd);
    // Paused, a stdin pipe no longer keeps the process alive.
    if (this.started) this.input.pause();
  }

  private notifyClose(): void {
    if (this.closeNotified) return;
    this.closeNotified = true;
    this.onclose?.();
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
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
