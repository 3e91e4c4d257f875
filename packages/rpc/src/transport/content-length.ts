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
 * Writing puts the header part before each message; the writing itself (order, 'drain',
 * one write per tick) is the one every byte-stream transport shares (byte-stream.ts).
 */
import { ByteStreamTransport, type ByteStreamTransportOptions } from "./byte-stream.js";

const HEADER_END = Buffer.from("\r\n\r\n", "latin1");
/** A header part longer than this is not a header part. */
const MAX_HEADER_BYTES = 8 * 1024;

/** The byte-stream options; a frame is a message body, its size counted without the header part. */
export type ContentLengthTransportOptions = ByteStreamTransportOptions;

export class ContentLengthTransport extends ByteStreamTransport {
  /** Bytes received and not yet taken apart into messages. */
  private buffered: Buffer = Buffer.alloc(0);
  /** The body length of the message being read, once its header part is complete. */
  private bodyBytes: number | undefined;
  /** Bytes still to drop of a message over the limit. */
  private skipping = 0;

  constructor(options: ContentLengthTransportOptions) {
    super(options, "the Content-Length transport", "ContentLengthTransport");
  }

  /** A message is its header part, then its body. */
  protected encode(frame: string): string {
    return `Content-Length: ${Buffer.byteLength(frame, "utf8")}\r\n\r\n${frame}`;
  }

  protected inputEnded(): void {
    if (this.buffered.length > 0 || this.bodyBytes !== undefined) this.onerror?.(new Error("the input ended inside a message"));
  }

  protected read(chunk: Buffer): void {
    let bytes = chunk;
    if (this.skipping > 0) {
      const dropped = Math.min(this.skipping, bytes.length);
      this.skipping -= dropped;
      bytes = bytes.subarray(dropped);
    }
    this.buffered = this.buffered.length === 0 ? bytes : Buffer.concat([this.buffered, bytes]);
    while (!this.closed && this.next()) {
      // Each pass takes one header part or one body off the buffer.
    }
  }

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
        this.reportOversized(bytes, `skipped an incoming message of ${bytes} bytes: over the limit of ${this.maxFrameBytes} bytes`);
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
}
