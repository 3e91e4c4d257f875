/**
 * The frame size limit shared by the stdio and WebSocket transports: checking the
 * configured value, and the one answer a gateway gives to a frame over it.
 *
 * The gateway's default limit is not repeated here: it belongs to the gateway
 * configuration (`limits.max_frame_bytes`), which passes it in.
 */
import { errors } from "../generated/registry.js";

/**
 * What a client accepts from a gateway when it names no limit of its own: a bound on
 * memory, so that a gateway under test cannot make a client buffer without end. Far above
 * anything a conforming gateway sends.
 */
export const CLIENT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** Throws a clear error unless `value` is a usable frame limit. */
export function checkMaxFrameBytes(value: number, where: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${where}: maxFrameBytes must be a positive integer number of bytes, got ${String(value)}`);
  }
  return value;
}

/**
 * The response to a frame over the limit. Its id is null: the frame was never parsed, so
 * its id (if it had one) is unknown. `data.limit_bytes` tells the client the limit, as the
 * error registry documents.
 */
export function payloadTooLargeFrame(limitBytes: number, frameBytes: number): string {
  const { code, message } = errors.payload_too_large;
  return JSON.stringify({
    jsonrpc: "2.0",
    id: null,
    error: {
      code,
      message: `${message}: a frame of ${frameBytes} bytes is over the limit of ${limitBytes} bytes`,
      data: { reason: "payload_too_large", limit_bytes: limitBytes },
    },
  });
}
