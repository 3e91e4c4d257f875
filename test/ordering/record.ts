/** A transport wrapper that records every frame both ways, parsed, in the order seen by the client. */
import type { Transport } from "../../packages/rpc/src/index.js";

export type FrameDirection = "server_to_client" | "client_to_server";

export interface RecordedFrame {
  readonly direction: FrameDirection;
  readonly frame: unknown;
}

/** Returns `transport` seen through a recorder that appends to `frames`. */
export function recording(transport: Transport, frames: RecordedFrame[]): Transport {
  const recorder: Transport = {
    start: () => transport.start(),
    close: () => transport.close(),
    send: (frame) => {
      frames.push({ direction: "client_to_server", frame: JSON.parse(frame) });
      return transport.send(frame);
    },
  };
  transport.onmessage = (frame) => {
    frames.push({ direction: "server_to_client", frame: JSON.parse(frame) });
    recorder.onmessage?.(frame);
  };
  transport.onclose = () => recorder.onclose?.();
  transport.onerror = (error) => recorder.onerror?.(error);
  return recorder;
}
