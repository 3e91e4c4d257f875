/** Retry timing shared by provider and tool retries: exponential backoff and an abortable wait. */
import type { RetryPolicy } from "../config.js";

/** The wait before the retry that follows the `failures`-th failure (1 for the first): the first delay, multiplied, capped. */
export function backoffMs(policy: RetryPolicy, failures: number): number {
  return Math.round(Math.min(policy.max_delay_ms, policy.initial_delay_ms * policy.backoff_multiplier ** (failures - 1)));
}

/** Waits `ms`; resolves true when the wait ran out, false as soon as the signal aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
