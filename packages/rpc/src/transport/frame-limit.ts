/**
 * The frame size limit shared by the stdio and WebSocket transports: checking the
 * configured value, and the shape of the answer a server gives to a frame over it.
 *
 * Neither the limit a server enforces nor its answer is decided here: both belong to the
 * protocol and the server's configuration (the reference gateway answers with its
 * registry's payload_too_large error), which pass them in.
 */

/**
 * What a client accepts from a server when it names no limit of its own: a bound on
 * memory, so that a server under test cannot make a client buffer without end. Far above
 * anything a conforming server sends.
 */
export const CLIENT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/**
 * The frame a server sends back for a frame over its limit, which it discarded unread
 * (so its id, if it had one, is unknown: a JSON-RPC answer has id null).
 */
export type OversizedReply = (limitBytes: number, frameBytes: number) => string;

/** Throws a clear error unless `value` is a usable frame limit. */
export function checkMaxFrameBytes(value: number, where: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${where}: maxFrameBytes must be a positive integer number of bytes, got ${String(value)}`);
  }
  return value;
}
