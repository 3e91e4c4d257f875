/**
 * The reference gateway's answer to a frame over its size limit, handed to the transports
 * (which know no protocol) as their `oversizedReply`.
 */
import { errors } from "@turnspec/protocol/registry";

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
