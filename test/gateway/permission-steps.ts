/** Shared steps of the permission tests: a harness per test, and waiting for approval requests. */
import { afterEach, expect } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItem, TurnPermissionApprovalRequest } from "../../generated/types.js";
import { ofTurn, startHarness, type Harness, type HarnessOptions } from "./harness.js";

export let h: Harness;

/** Registers the per-test check that every frame was valid, and the clean-up. */
export function usePermissionHarness(): void {
  afterEach(async () => {
    expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
    await h.close();
  });
}

export type Opened = Extract<AnyNotification, { method: "turn/permission/request/opened" }>;
export const opened = (ns: readonly AnyNotification[]) =>
  ns.filter((n): n is Opened => n.method === "turn/permission/request/opened").map((n) => n.params.request);
export const audits = (ns: readonly AnyNotification[]) =>
  ns
    .filter((n): n is Extract<AnyNotification, { method: "turn/permission/audit" }> => n.method === "turn/permission/audit")
    .map((n) => n.params);
export const completed = (ns: readonly AnyNotification[], type: TurnItem["type"]) =>
  ns
    .filter((n): n is Extract<AnyNotification, { method: "item/completed" }> => n.method === "item/completed")
    .map((n) => n.params.item)
    .filter((i) => i.type === type);

export async function setup(options: HarnessOptions = {}) {
  h = await startHarness(options);
  return h.thread();
}

/** Starts a turn and resolves at its n-th approval request (1-based). */
export async function startAndWaitForRequest(
  params: Parameters<Harness["client"]["turnStart"]>[0],
  n = 1,
): Promise<TurnPermissionApprovalRequest> {
  await h.client.turnStart(params);
  const isNth = (x: AnyNotification) =>
    x.method === "turn/permission/request/opened" &&
    x.params.turn_id === params.turn_id &&
    opened(ofTurn(h.received, params.turn_id)).length >= n;
  await h.waitFor(isNth);
  return opened(ofTurn(h.received, params.turn_id))[n - 1]!;
}

export const terminalOf = (turnId: string) =>
  h.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);
