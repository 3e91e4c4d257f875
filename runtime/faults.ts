/**
 * Deliberate faults, for conformance testing only: each one breaks the reference gateway
 * in one known way, so a test can show that the certification suite catches it (and
 * catches nothing else). `turnspec serve --fault NAME` switches one on. Engine faults are
 * one-line checks of `faultOn` where the behaviour lives; wire faults rewrite what the
 * gateway sends, in `withWireFaults`.
 */
import type { Transport } from "../rpc/transport.js";

/** Every fault, with what it breaks. */
export const FAULTS = {
  "notifications-out-of-order": "sends an agent message's first delta before the item/started of its item",
  "missing-terminal": "never sends turn/completed (the turn still completes in the log)",
  "allow-for-turn-ignored": "asks again for an action an allow_for_turn answer already covers",
  "denied-tool-runs": "runs a tool call even though it was denied",
  "duplicate-route-actions": "accepts a delegation route that names an action twice",
  "wrong-error-code": "answers turn_not_found errors with the code of thread_not_found",
  "stale-revoke-accepted": "revokes a route whatever expected_generation it is given",
  "wrong-last-sequence": "reports a turn/items last_sequence one past the last event",
} as const satisfies Record<string, string>;

export type FaultName = keyof typeof FAULTS;

const active = new Set<FaultName>();

export function isFaultName(name: string): name is FaultName {
  return Object.hasOwn(FAULTS, name);
}

/** Switches faults on for this process (there is no switching off: a faulty gateway stays faulty). */
export function switchOnFaults(names: readonly FaultName[]): void {
  for (const name of names) active.add(name);
}

export function faultOn(name: FaultName): boolean {
  return active.size > 0 && active.has(name);
}

/** What the gateway sends through `transport`, with the wire faults that are on applied. */
export function withWireFaults(transport: Transport): Transport {
  if (!faultOn("missing-terminal") && !faultOn("wrong-error-code")) return transport;
  const send = transport.send.bind(transport);
  transport.send = (frame: string) => {
    const message = JSON.parse(frame) as { method?: string; error?: { code: number; data?: { reason?: string } } };
    if (faultOn("missing-terminal") && message.method === "turn/completed") return Promise.resolve();
    if (faultOn("wrong-error-code") && message.error?.data?.reason === "turn_not_found") {
      return send(JSON.stringify({ ...message, error: { ...message.error, code: -32001 } }));
    }
    return send(frame);
  };
  return transport;
}
