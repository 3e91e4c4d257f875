/**
 * A transport seen through a wrapper that may rewrite what the client sends and see what it
 * receives: how the tests break the reference client driver in one known way, from the
 * outside, as broken-gateways.ts breaks the reference gateway.
 */
import type { Transport } from "../../../packages/rpc/src/index.js";

export function wrapTransport(inner: Transport, hooks: { send?: (frame: string) => string; receive?: (frame: string) => void }): Transport {
  const outer: Transport = {
    start: () => inner.start(),
    close: () => inner.close(),
    send: (frame) => inner.send(hooks.send ? hooks.send(frame) : frame),
  };
  inner.onmessage = (frame) => {
    hooks.receive?.(frame);
    outer.onmessage?.(frame);
  };
  inner.onclose = () => outer.onclose?.();
  inner.onerror = (error) => outer.onerror?.(error);
  return outer;
}
