/**
 * What every transport over a byte stream pair shares, whatever its framing (one frame per
 * line in stdio.ts, Content-Length headers in content-length.ts): starting and stopping
 * the reading, delivering frames and reporting the ones over the size limit, closing
 * once, and writing.
 *
 * Writing keeps frames in the order `send` was called and waits for 'drain' whenever the
 * output asks for it, so a slow reader holds the writer back instead of growing the
 * Writable's buffer without end. Frames sent in one tick of the event loop go out together,
 * as one write (at most FLUSH_CHARS of text each): a server streaming many small
 * notifications pays one system call per batch, not one per frame, and every frame of a
 * batch shares its promise.
 */
import { finished } from "node:stream/promises";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "../transport.js";
import { checkMaxFrameBytes } from "./frame-limit.js";

/** A batch holding this much text (UTF-16 code units) is written at once, without waiting for the end of the tick. */
const FLUSH_CHARS = 64 * 1024;

export interface ByteStreamTransportOptions {
  /** Where frames come from: process.stdin, or a child's stdout. */
  readonly input: Readable;
  /** Where frames go: process.stdout, or a child's stdin. */
  readonly output: Writable;
  /** Largest frame accepted, in bytes of UTF-8 (without its framing). */
  readonly maxFrameBytes: number;
  /**
   * Called with the size in bytes of each incoming frame that was over the limit and
   * dropped. Without it the dropped frame is reported through `onerror`.
   */
  readonly onOversized?: (bytes: number) => void;
  /** End the output when the transport closes, telling the peer we are done. Default true. */
  readonly endOutputOnClose?: boolean;
}

/**
 * Frames sent and not yet handed to the output: their encoded texts, and the promise they
 * all resolve with. The texts are joined once, when written: a flat string is converted to
 * UTF-8 at memory speed, where one grown by appending (a rope of every frame) is walked
 * piece by piece.
 */
interface Batch {
  readonly texts: string[];
  /** Their total length in UTF-16 code units. */
  chars: number;
  readonly written: Promise<void>;
  readonly settle: (error?: Error) => void;
}

function newBatch(): Batch {
  let settle!: (error?: Error) => void;
  const written = new Promise<void>((resolve, reject) => (settle = (error) => (error ? reject(error) : resolve())));
  // A batch nobody awaits must not fail the process as an unhandled rejection: whoever
  // sent into it holds the same promise and sees the failure.
  written.catch(() => undefined);
  return { texts: [], chars: 0, written, settle };
}

export abstract class ByteStreamTransport implements Transport {
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  protected readonly input: Readable;
  protected readonly output: Writable;
  protected readonly maxFrameBytes: number;
  private readonly onOversized: ((bytes: number) => void) | undefined;
  private readonly endOutputOnClose: boolean;

  private started = false;
  /** No more frames are delivered or accepted for sending. */
  protected closed = false;
  private closeNotified = false;
  private closing: Promise<void> | undefined;
  /** The frames sent since the last write, written at the end of the tick (or once FLUSH_CHARS long). */
  private batch: Batch | undefined;
  /** True while a write waits for the output to drain: frames sent meanwhile join the batch. */
  private draining = false;
  /** Settles once the last batch handed to the output has been written (or failed). */
  private writeTail: Promise<void> = Promise.resolve();

  /** `name` names the transport in errors ("the stdio transport"); `className` in the option check. */
  protected constructor(
    options: ByteStreamTransportOptions,
    private readonly name: string,
    className: string,
  ) {
    this.input = options.input;
    this.output = options.output;
    this.maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes, className);
    this.onOversized = options.onOversized;
    this.endOutputOnClose = options.endOutputOnClose ?? true;
    // Listened to from the start: an 'error' event without a listener would crash the process
    // (an EPIPE on the output when the peer has gone, for instance).
    this.input.on("error", this.onInputError);
    this.output.on("error", this.onOutputError);
  }

  /** Takes a chunk of the input apart into frames (deliver) and oversized frames (reportOversized). */
  protected abstract read(chunk: Buffer): void;
  /** The input ended: the framing finishes or reports what it still holds. */
  protected abstract inputEnded(): void;
  /** The text a frame is written as, with its framing; an Error for a frame the framing cannot carry. */
  protected abstract encode(frame: string): string | Error;

  async start(): Promise<void> {
    if (this.started) return;
    if (this.closed) throw new Error(`${this.name} is closed`);
    this.started = true;
    this.input.on("data", this.onData);
    this.input.on("end", this.onInputEnd);
    // A destroyed input may close without 'end'; either way nothing more will arrive.
    this.input.on("close", this.onInputEnd);
    if (this.input.readableEnded || this.input.destroyed) this.onInputEnd();
  }

  /** Writes one frame. Resolves when the output has taken it, rejects when the transport is closed or the output fails. */
  send(frame: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`${this.name} is closed`));
    const encoded = this.encode(frame);
    if (encoded instanceof Error) return Promise.reject(encoded);
    let batch = this.batch;
    if (batch === undefined) {
      batch = this.batch = newBatch();
      process.nextTick(this.flush);
    }
    batch.texts.push(encoded);
    batch.chars += encoded.length;
    // A burst that never yields to the event loop still streams, one batch at a time.
    if (batch.chars >= FLUSH_CHARS) this.flush();
    return batch.written;
  }

  /**
   * Stops reading, writes what was already sent, then ends the output (unless told not
   * to). onclose fires once, whatever closed the transport first.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /** Hands a frame read to onmessage; what it throws goes to onerror. */
  protected deliver(frame: string): void {
    try {
      this.onmessage?.(frame);
    } catch (error) {
      this.onerror?.(asError(error));
    }
  }

  /** Reports an incoming frame of `bytes` that was over the limit and dropped; `message` is what onerror gets without onOversized. */
  protected reportOversized(bytes: number, message: string): void {
    try {
      if (this.onOversized) this.onOversized(bytes);
      else this.onerror?.(new Error(message));
    } catch (error) {
      this.onerror?.(asError(error));
    }
  }

  protected stopReading(): void {
    this.input.off("data", this.onData);
    this.input.off("end", this.onInputEnd);
    this.input.off("close", this.onInputEnd);
    // Paused, a stdin pipe no longer keeps the process alive.
    if (this.started) this.input.pause();
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
    const written = this.write(batch.texts.length === 1 ? batch.texts[0]! : batch.texts.join(""));
    written.then(
      () => batch.settle(),
      (error: Error) => batch.settle(error),
    );
    this.writeTail = written.catch(() => undefined);
  };

  private write(text: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.output.writableEnded || this.output.destroyed) {
        reject(new Error(`${this.name}'s output is closed`));
        return;
      }
      this.output.write(text, "utf8", (error) => (error ? reject(error) : resolve()));
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
      const onClose = () => done(new Error(`${this.name}'s output closed before it drained`));
      this.output.on("drain", onDrain);
      this.output.on("close", onClose);
      this.output.on("error", done);
    });
  }

  private readonly onData = (chunk: Buffer | string): void => {
    this.read(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk);
  };

  private readonly onInputEnd = (): void => {
    if (this.closed || this.closeNotified) return;
    this.inputEnded();
    this.stopReading();
    // The peer will send nothing more, but frames can still be sent until close() or until
    // the output fails, so answers to requests already in flight are not lost (a client that
    // pipes in a file of requests and ends its input gets every answer).
    this.notifyClose();
  };

  private readonly onInputError = (error: Error): void => {
    this.onerror?.(new Error(`reading ${this.name}'s input failed: ${error.message}`, { cause: error }));
  };

  private readonly onOutputError = (error: Error): void => {
    // The peer is gone (EPIPE, typically): nothing sent from now on can arrive.
    this.closed = true;
    this.stopReading();
    this.onerror?.(new Error(`writing to ${this.name}'s output failed: ${error.message}`, { cause: error }));
    this.notifyClose();
  };

  private notifyClose(): void {
    if (this.closeNotified) return;
    this.closeNotified = true;
    this.onclose?.();
  }
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
