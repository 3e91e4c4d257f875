/**
 * Routes checked against what is real, not what the caller declares: the threads'
 * workspaces (hole 5), and the execution that uses an execution_bound route and the
 * per-source edge limit (hole 9).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AgentDelegationRouteCreateParams, TurnItem } from "../../generated/types.js";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { routeParams, script, startHarness, text, type Harness } from "../gateway/harness.js";

const params = (source: string, destination: string, execution: string): AgentDelegationRouteCreateParams =>
  routeParams(source, destination, { source_execution_id: execution, max_hops: 1 });

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
    expect(refused).toMatchObject({
      code: -32021,
      reason: "route_validation_failed",
      data: { detail: "workspace_mismatch", thread_id: other },
    });
    expect((await h.client.agentRouteList({ source_execution_id: "trn_any" })).routes).toEqual([]);
  });
});

describe("an execution_bound route (hole 9)", () => {
  it("admits its own source execution only", async () => {
    h = await startHarness();
    const [a, b] = [await h.thread(), await h.thread()];
    const route = await h.client.agentRouteCreate(params(a, b, "trn_granted"));
    const delegate = async (turnId: string) => {
      await h.runTurn({
        thread_id: a,
        turn_id: turnId,
        input: text(script({ tool: "spawn_agent", args: { prompt: "child", route_id: route.route_id } }, { say: "done" })),
      });
      return h.received
        .filter((n) => n.method === "item/completed" && n.params.turn_id === turnId)
        .map((n) => (n.params as { item: TurnItem }).item)
        .find((i) => i.type === "task")!;
    };
    const other = await delegate("trn_other");
    expect(other.status).toBe("failed");
    expect(JSON.stringify(other)).toMatch(/wrong_execution/);
    expect((await delegate("trn_granted")).status).toBe("completed");
  });

  it("counts the per-source edge limit per source thread, so made-up execution ids do not reset it", async () => {
    h = await startHarness({ config: { routes: { max_routes_per_source: 2 } } });
    const source = await h.thread();
    const targets = [await h.thread(), await h.thread(), await h.thread()];
    await h.client.agentRouteCreate(params(source, targets[0]!, "trn_made_up_1"));
    await h.client.agentRouteCreate(params(source, targets[1]!, "trn_made_up_2"));
    await expect(h.client.agentRouteCreate(params(source, targets[2]!, "trn_made_up_3"))).rejects.toMatchObject({
      data: { detail: "edge_limit_exceeded" },
    });
  });
});

describe("hop bounds (hole 7)", () => {
  it("are enforced at admission: a chain over routes that each declare max_hops 0 stops after the first hop", async () => {
    h = await startHarness();
    const [a, b, c, d] = [await h.thread(), await h.thread(), await h.thread(), await h.thread()];
    const hop = async (from: string, to: string) =>
      (await h.client.agentRouteCreate({ ...params(from, to, "trn_any"), kind: "identity_bound", max_hops: 0 })).route_id;
    const [ab, bc, cd] = [await hop(a, b), await hop(b, c), await hop(c, d)];
    const third = script({ tool: "spawn_agent", args: { prompt: script({ say: "at d" }), route_id: cd } }, { say: "c done" });
    const second = script({ tool: "spawn_agent", args: { prompt: third, route_id: bc } }, { say: "b done" });
    const end = await h.runTurn({
      thread_id: a,
      turn_id: "trn_hops",
      permission_profile: { mode: "full_access" },
      input: text(script({ tool: "spawn_agent", args: { prompt: second, route_id: ab } }, { say: "a done" })),
    });
    expect(end.method).toBe("turn/completed");
    const threadsWithTurns = new Set(h.store.allTurns().map((t) => t.thread_id));
    expect([a, b, c, d].map((t) => threadsWithTurns.has(t))).toEqual([true, true, false, false]);
    const inB = h.store.allTurns().find((t) => t.thread_id === b)!;
    const refused = h.gateway.turnState(inB.turn_id)!.items.find((i) => i.type === "task")!;
    expect(refused.status).toBe("failed");
    expect(JSON.stringify(refused)).toMatch(/hop_limit/);
  });
});
