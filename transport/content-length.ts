/**
 * A transport over a byte stream pair with `Content-Length` framing, as the Language Server
 * Protocol (and the Debug Adapter Protocol) use on stdio: each message is a header part
 *
 *   Content-Length: 52\r\n
 *   Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n   (optional)
 *   \r\n
 *
 * followed by exactly that many bytes of UTF-8 JSON. Bytes are counted, not characters,
 * so a message may arrive in any number of chunks and a chunk may hold several messages
 * or cut a multi-byte character. A message over the size limit is skipped (its bytes are
 * counted and dropped) and reported through `onOversized` or `onerror`. A header part
 * without a valid Content-Length cannot be skipped safely: it is reported and the
 * transport closes.
 *
 * Writing keeps messages in the order `send` was called and waits for 'drain' whenever the
 * output asks for it.
 */
import { finished } from "node:stream/promises";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "../rpc/transport.js";
import { checkMaxFrameBytes } from "./frame-limit.js";

const HEADER_END = Buffer.from("\r\n\r\n", "latin1");
/** A header part longer than this is not a header part. */
const MAX_HEADER_BYTES = 8 * 1024;

export interface ContentLengthTransportOptions {
  /** Where messages come from: process.stdin, or a child's stdout. */
  readonly input: Readable;
  /** Where messages go: process.stdout, or a child's stdin. */
  readonly output: Writable;
  /** Largest message body accepted, in bytes. */
  readonly maxFrameBytes: number;
  /** Called with the size of each message body that was over the limit and skipped. */
  readonly onOversized?: (bytes: number) => void;
  /** End the output when the transport closes. Default true. */
  readonly endOutputOnClose?: boolean;
}

export class ContentLengthTransport implements Transport {
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private readonly input: Readable;
  private readonly output: Writable;
  private readonly maxFrameBytes: number;
  private readonly onOversized: ((bytes: number) => void) | undefined;
  private readonly endOutputOnClose: boolean;

  /** Bytes received and not yet taken apart into messages. */
  private buffered: Buffer = Buffer.alloc(0);
  /** The body length of the message being read, once its header part is complete. */
  private bodyBytes: number | undefined;
  /** Bytes still to drop of a message over the limit. */
  private skipping = 0;

  private started = false;
  private closed = false;
  private closeNotified = false;
  private closing: Promise<void> | undefined;
  private writeTail: Promise<void> = Promise.resolve();

  constructor(options: ContentLengthTransportOptions) {
    this.input = options.input;
    this.output = options.output;
    this.maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes, "ContentLengthTransport");
    this.onOversized = options.onOversized;
    this.endOutputOnClose = options.endOutputOnClose ?? true;
    this.input.on("error", (error: Error) => this.onerror?.(new Error(`reading the transport's input failed: ${error.message}`, { cause: error })));
    this.output.on("error", (error: Error) => {
      this.closed = true;
      this.stopReading();
      this.onerror?.(new Error(`writing to the transport's output failed: ${error.message}`, { cause: error }));
      this.notifyClose();
    });
  }

  async start(): Promise<void> {
    if (this.started) return;
    if (this.closed) throw new Error("the Content-Length transport is closed");
    this.started = true;
    this.input.on("data", this.onData);
    this.input.on("end", this.onInputEnd);
    this.input.on("close", this.onInputEnd);
    if (this.input.readableEnded || this.input.destroyed) this.onInputEnd();
  }

  /** Writes one message with its header. Resolves when the output has taken it. */
  send(frame: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error("the Content-Length transport is closed"));
    const body = Buffer.from(frame, "utf8");
    const message = Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, "latin1"), body]);
    const written = this.writeTail.then(async () => {
      if (this.output.writableNeedDrain) await new Promise<void>((resolve) => this.output.once("drain", resolve));
      await new Promise<void>((resolve, reject) => {
        if (this.output.writableEnded || this.output.destroyed) reject(new Error("the transport's output is closed"));
        else this.output.write(message, (error) => (error ? reject(error) : resolve()));
      });
    });
    this.writeTail = written.catch(() => undefined);
    return written;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      this.stopReading();
      await this.writeTail;
      if (this.endOutputOnClose && !this.output.writableEnded && !this.output.destroyed) {
        this.output.end();
        await finished(this.output, { readable: false }).catch(() => undefined);
      }
      this.notifyClose();
    })();
    return this.closing;
  }

  private readonly onData = (chunk: Buffer | string): void => {
    let bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    if (this.skipping > 0) {
      const dropped = Math.min(this.skipping, bytes.length);
      this.skipping -= dropped;
      bytes = bytes.subarray(dropped);
    }
    this.buffered = this.buffered.length === 0 ? bytes : Buffer.concat([this.buffered, bytes]);
    while (!this.closed && this.next()) {
      // Each pass takes one header part or one body off the buffer.
    }
  };

  /** Takes one header part or one body off the buffer; false when more bytes are needed. */
  private next(): boolean {
    if (this.bodyBytes === undefined) {
      const end = this.buffered.indexOf(HEADER_END);
      if (end === -1) {
        if (this.buffered.length > MAX_HEADER_BYTES) this.fail(`no end of the header part within ${MAX_HEADER_BYTES} bytes`);
        return false;
      }
      const header = this.buffered.subarray(0, end).toString("latin1");
      this.buffered = this.buffered.subarray(end + HEADER_END.length);
      const length = /^content-length:[ \t]*(\d+)[ \t]*$/im.exec(header);
      if (!length) {
        this.fail(`a header part without Content-Length: ${JSON.stringify(header.slice(0, 200))}`);
        return false;
      }
      const bytes = Number(length[1]);
      if (bytes > this.maxFrameBytes) {
        const dropped = Math.min(bytes, this.buffered.length);
        this.buffered = this.buffered.subarray(dropped);
        this.skipping = bytes - dropped;
        this.reportOversized(bytes);
        return this.buffered.length > 0;
      }
      this.bodyBytes = bytes;
    }
    if (this.buffered.length < this.bodyBytes) return false;
    const body = this.buffered.subarray(0, this.bodyBytes).toString("utf8");
    this.buffered = this.buffered.subarray(this.bodyBytes);
    this.bodyBytes = undefined;
    this.deliver(body);
    return true;
  }

  private fail(problem: string): void {
    this.onerror?.(new Error(`the peer broke Content-Length framing: ${problem}`));
    void this.close();
  }

  private reportOversized(bytes: number): void {
    try {
      if (this.onOversized) this.onOversized(bytes);
      else this.onerror?.(new Error(`skipped an incoming message of ${bytes} bytes: over the limit of ${this.maxFrameBytes} bytes`));
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private deliver(frame: string): void {
    try {
      this.onmessage?.(frame);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private readonly onInputEnd = (): void => {
    if (this.closed || this.closeNotified) return;
    if (this.buffered.length > 0 || this.bodyBytes !== undefined) this.onerror?.(new Error("the input ended inside a message"));
    this.stopReading();
    this.notifyClose();
  };

  private stopReading(): void {
    this.input.off("data", this.onData);
    this.input.off("end", this.onInputEnd);
    this.input.off("close", this.onInputEnd);
    if (this.started) this.input.pause();
  }

  private notifyClose(): void {
    if (this.closeNotified) return;
    this.closeNotified = true;
    this.onclose?.();
  }
}
