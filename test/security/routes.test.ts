/**
 * Hole 5: a route is checked against the workspaces its threads really belong to, not the
 * ids the caller declares.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RpcError } from "../../rpc/index.js";
import { startHarness, type Harness } from "../gateway/harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors).toEqual([]);
  await h.close();
});

describe("agent/route/create across workspaces", () => {
  it("refuses a destination thread of another workspace declared as the source's", async () => {
    h = await startHarness();
    const source = await h.thread({ workspace_id: "ws_default" });
    const other = await h.thread({ workspace_id: "ws_other" });
    const refused = (await h.client
      .agentRouteCreate({
        kind: "execution_bound",
        source_execution_id: "trn_any",
        source_capsule_id: source,
        source_thread_id: source,
        source_workspace_id: "ws_default",
        source_gateway_id: "gw_local",
        destination_thread_id: other,
        // The lie: the thread is in ws_other.
        destination_workspace_id: "ws_default",
        destination_gateway_id: "gw_local",
        allowed_actions: ["start_agent", "deliver_result"],
        disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "full_result" },
        source_policy_generation: 1,
        destination_policy_generation: 1,
        hop_count: 0,
        max_hops: 1,
      })
      .catch((e: unknown) => e)) as RpcError;
    expect(refused).toMatchObject({ code: -32021, reason: "route_validation_failed", data: { detail: "workspace_mismatch", thread_id: other } });
    expect((await h.client.agentRouteList({ source_execution_id: "trn_any" })).routes).toEqual([]);
  });
});
