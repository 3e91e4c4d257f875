/**
 * Deliberately broken gateways: the reference gateway behind a proxy that breaks it in one
 * known way (broken-gateways.ts). Each break is caught by the requirement that names it,
 * and nothing else fails: the full suite for some breaks, the suite's relevant part for
 * the others.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadCatalogue, selectIds } from "../../packages/conformance/src/catalogue.js";
import { runCertification } from "../../packages/conformance/src/certify.js";
import { startBrokenGateway, type BrokenGatewayName } from "./broken-gateways.js";
import { CLAIMED } from "./reference.js";

const all = loadCatalogue().map((r) => r.id);
const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of running.splice(0)) await close();
});

async function certifyWith(fault: BrokenGatewayName, patterns: readonly string[] | "all") {
  const selected = patterns === "all" ? new Set(all) : selectIds(patterns, all).ids;
  const broken = await startBrokenGateway(fault);
  running.push(() => broken.close());
  const report = await runCertification({
    transport: broken.transport,
    model: broken.model,
    capabilities: CLAIMED,
    level: "full",
    selected,
    expectedFailures: [],
    // A turn whose terminal notification never comes is asked about after a second of quiet.
    quietMs: 1000,
  });
  const by = (outcome: string) => report.results.filter((r) => r.outcome === outcome).map((r) => r.id);
  return { report, failed: by("fail"), errored: by("error") };
}

describe("deliberately broken gateways", () => {
  it.each([
    ["notifications-out-of-order", "all", ["ITEM-ORDER-STARTED-FIRST"]],
    ["missing-terminal", "all", ["TURN-COMPLETED-NOTIFIED", "TURN-ORDER-ONE-TERMINAL", "TURN-ORDER-SURFACED-LAST"]],
    ["denied-tool-runs", "all", ["PERM-DENY"]],
    ["allow-for-turn-ignored", ["PERM-*"], ["PERM-ALLOW-FOR-TURN"]],
    ["duplicate-route-actions", ["ROUTE-*"], ["ROUTE-DUPLICATE-ACTIONS"]],
    ["wrong-error-code", ["RPC-*", "TURN-*"], ["RPC-ERROR-CODES"]],
    ["stale-revoke-accepted", ["ROUTE-*"], ["ROUTE-REVOKE-STALE"]],
    ["wrong-last-sequence", ["TURN-*", "ITEM-*"], ["TURN-ITEMS-LAST-SEQUENCE"]],
    ["question-expires-early", ["TURN-QUESTION-*"], ["TURN-QUESTION-EXPIRE"]],
    ["question-replay-not-surfaced", ["TURN-QUESTION-*"], ["TURN-QUESTION-SURFACED"]],
  ] as const)("%s is caught (run: %j) by exactly %j", async (fault, patterns, expected) => {
    const { report, failed, errored } = await certifyWith(fault, patterns);
    expect(failed).toEqual(expected);
    expect(errored).toEqual([]);
    expect(report.certified).toBe(false);
    const first = report.results.find((r) => r.id === expected[0])!;
    expect(first.message).toBeTruthy();
    expect(first.transcript?.length).toBeGreaterThan(0);
  });
});
