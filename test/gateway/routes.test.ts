/**
 * Delegation routes through the wire: create, list, revoke, validation, idempotency,
 * generations, admission through spawn_agent, disclosure, agent attribution, and
 * everything surviving a restart on SQLite.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentDelegationRouteCreateParams, TurnItem } from "../../generated/types.js";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";
import { ofTurn, routeParams, script, startHarness, text, type Harness, type HarnessOptions } from "./harness.js";

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) {
    expect(h.protocolErrors).toEqual([]);
    await h.close();
  }
});

async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = await startHarness(options);
  open.push(h);
  return h;
}

/** A route several turns of the source thread delegate over: identity_bound, since an execution_bound route admits its own source execution only. */
const delegationRoute = (source: string, destination: string, overrides: Partial<AgentDelegationRouteCreateParams> = {}) =>
  routeParams(source, destination, { kind: "identity_bound", ...overrides });

const completedTasks = (h: Harness, turnId: string) =>
  ofTurn(h.received, turnId)
    .filter((n) => n.method === "item/completed")
    .map((n) => (n.params as { item: TurnItem }).item)
    .filter((i): i is Extract<TurnItem, { type: "task" }> => i.type === "task");

describe("agent/route/create, list and revoke", () => {
  it("creates a route projection, lists every route once in a stable order, and revokes by generation", async () => {
    const h = await harness();
    const [a, b] = [await h.thread(), await h.thread()];
    const route = await h.client.agentRouteCreate(routeParams(a, b, { expires_at: new Date(Date.now() + 3_600_000).toISOString() }));
    expect(route).toMatchObject({
      status: "active",
      generation: 1,
      kind: "execution_bound",
      allowed_actions: ["start_agent", "deliver_result"],
      hop_count: 0,
      max_hops: 2,
      return_route_id: null,
      destination_execution_id: null,
    });
    expect(route.grant_fingerprint).toMatch(/^gfp_[0-9a-f]{64}$/);
    const ids = [route.route_id];
    for (let i = 0; i < 4; i++) ids.push((await h.client.agentRouteCreate(routeParams(a, b))).route_id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await h.client.agentRouteList({ source_execution_id: "trn_source", limit: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...page.routes.map((r) => r.route_id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(ids);
    expect((await h.client.agentRouteList({ source_execution_id: "trn_other" })).routes).toEqual([]);

    const stale = await h.client.agentRouteRevoke({ route_id: route.route_id, expected_generation: 7 }).catch((e: RpcError) => e);
    expect(stale).toMatchObject({ code: -32022, reason: "generation_conflict", data: { current_generation: 1 } });
    const revoked = await h.client.agentRouteRevoke({ route_id: route.route_id, expected_generation: 1 });
    expect(revoked).toMatchObject({ status: "revoked", generation: 2 });
    await expect(h.client.agentRouteRevoke({ route_id: "rte_missing", expected_generation: 1 })).rejects.toMatchObject({
      reason: "route_not_found",
    });
  });

  it("lets exactly one of two concurrent revokes with the same generation win", async () => {
    const h = await harness();
    const [a, b] = [await h.thread(), await h.thread()];
    const { route_id } = await h.client.agentRouteCreate(routeParams(a, b));
    const results = await Promise.allSettled([
      h.client.agentRouteRevoke({ route_id, expected_generation: 1, reason: "one" }),
      h.client.agentRouteRevoke({ route_id, expected_generation: 1, reason: "two" }),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.find((r) => r.status === "rejected")).toMatchObject({
      reason: { reason: "generation_conflict", data: { current_generation: 2 } },
    });
  });

  it("is idempotent with a key, and refuses the key with different params", async () => {
    const h = await harness();
    const [a, b] = [await h.thread(), await h.thread()];
    const first = await h.client.agentRouteCreate(routeParams(a, b, { idempotency_key: "key-1" }));
    expect(await h.client.agentRouteCreate(routeParams(a, b, { idempotency_key: "key-1" }))).toEqual(first);
    await expect(h.client.agentRouteCreate(routeParams(a, b, { idempotency_key: "key-1", max_hops: 3 }))).rejects.toMatchObject({
      code: -32023,
      reason: "idempotency_conflict",
    });
    expect((await h.client.agentRouteList({ source_execution_id: "trn_source" })).routes).toHaveLength(1);
  });

  it.each([
    ["no_actions", { allowed_actions: [] }],
    ["duplicate_actions", { allowed_actions: ["start_agent", "start_agent"] }],
    ["unknown_action", { allowed_actions: ["launch_missiles"] }],
    ["invalid_generation", { source_policy_generation: 2 }],
    ["invalid_expiry", { expires_at: "2001-01-01T00:00:00Z" }],
    ["missing_disclosure", { disclosure: { text: true } }],
    ["cross_workspace_destination", { destination_workspace_id: "ws_elsewhere" }],
    ["cross_gateway_destination", { destination_gateway_id: "gw_elsewhere" }],
    ["invalid_hop_bounds", { hop_count: 3, max_hops: 2 }],
    ["incompatible_result_return", { allowed_actions: ["start_agent"] }],
  ] as const)("rejects %s with its own detail", async (detail, overrides) => {
    const h = await harness();
    const [a, b] = [await h.thread(), await h.thread()];
    const error = await h.client
      .agentRouteCreate(routeParams(a, b, overrides as Partial<AgentDelegationRouteCreateParams>))
      .catch((e: RpcError) => e);
    expect(error).toMatchObject({ code: -32021, reason: "route_validation_failed", data: { detail } });
  });

  it("rejects a route that would close a cycle of live routes, and more routes than the limit", async () => {
    const h = await harness({ config: { routes: { max_routes_per_source: 2 } } });
    const [a, b, c] = [await h.thread(), await h.thread(), await h.thread()];
    await h.client.agentRouteCreate(routeParams(a, b));
    await h.client.agentRouteCreate(routeParams(b, c, { source_execution_id: "trn_b" }));
    const cycle = await h.client.agentRouteCreate(routeParams(c, a, { source_execution_id: "trn_c" })).catch((e: RpcError) => e);
    expect(cycle).toMatchObject({ data: { detail: "cycle_detected" } });
    await h.client.agentRouteCreate(routeParams(a, c));
    await expect(h.client.agentRouteCreate(routeParams(a, c))).rejects.toMatchObject({ data: { detail: "edge_limit_exceeded" } });
  });
});

describe("admission through spawn_agent", () => {
  async function delegate(h: Harness, source: string, turnId: string, args: Record<string, unknown>) {
    const end = await h.runTurn({
      thread_id: source,
      turn_id: turnId,
      input: text(script({ tool: "spawn_agent", args }, { say: "parent done" })),
    });
    expect(end.method).toBe("turn/completed");
    return completedTasks(h, turnId)[0]!;
  }

  it("runs the child in the route's destination thread, and refuses revoked, expired, foreign and action-less routes", async () => {
    const h = await harness();
    const [a, b] = [await h.thread(), await h.thread()];
    const route = await h.client.agentRouteCreate(delegationRoute(a, b));
    const ok = await delegate(h, a, "trn_d1", { prompt: "hello child", route_id: route.route_id });
    expect(ok).toMatchObject({
      status: "completed",
      child_thread_id: b,
      route_id: route.route_id,
      result: expect.stringContaining("hello child"),
    });

    const wrongGeneration = await delegate(h, a, "trn_d2", { prompt: "x", route_id: route.route_id, route_generation: 5 });
    expect(wrongGeneration).toMatchObject({ status: "failed", error: { message: expect.stringContaining("generation_mismatch") } });
    const foreign = await delegate(h, b, "trn_d3", { prompt: "x", route_id: route.route_id });
    expect(foreign.error?.message).toContain("wrong_source");
    const resultOnly = await h.client.agentRouteCreate(delegationRoute(a, b, { allowed_actions: ["deliver_result"] }));
    expect((await delegate(h, a, "trn_d4", { prompt: "x", route_id: resultOnly.route_id })).error?.message).toContain("action_not_allowed");
    // Far enough ahead to be in the future when the gateway checks it, even on a busy machine;
    // then the test waits until just past it.
    const expiresAt = Date.now() + 1_500;
    const shortLived = await h.client.agentRouteCreate(delegationRoute(a, b, { expires_at: new Date(expiresAt).toISOString() }));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now() + 20)));
    expect(
      (await h.client.agentRouteList({ source_execution_id: "trn_source" })).routes.find((r) => r.route_id === shortLived.route_id)?.status,
    ).toBe("expired");
    expect((await delegate(h, a, "trn_d5", { prompt: "x", route_id: shortLived.route_id })).error?.message).toContain("expired");
    await h.client.agentRouteRevoke({ route_id: route.route_id, expected_generation: 1 });
    expect((await delegate(h, a, "trn_d6", { prompt: "x", route_id: route.route_id })).error?.message).toContain("revoked");
  });

  it("discloses only what the route allows and returns the result as resultReturn says", async () => {
    const h = await harness();
    const [a, b] = [await h.thread(), await h.thread()];
    const secretive = await h.client.agentRouteCreate(
      delegationRoute(a, b, {
        disclosure: { text: false, artifacts: false, context: false, userInput: false, resultReturn: "full_result" },
      }),
    );
    const hidden = await delegate(h, a, "trn_hide", { prompt: "the secret plan", route_id: secretive.route_id });
    expect(hidden.result).not.toContain("the secret plan");
    expect(hidden.result).toContain("not disclosed");
    const silent = await h.client.agentRouteCreate(
      delegationRoute(a, b, { disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "none" } }),
    );
    const none = await delegate(h, a, "trn_none", { prompt: "work quietly", route_id: silent.route_id });
    expect(none.result).not.toContain("work quietly");
    expect(none.result).toContain("returns no result");
    const open_ = await h.client.agentRouteCreate(
      delegationRoute(a, b, {
        disclosure: { text: true, artifacts: false, context: false, userInput: true, resultReturn: "summary_only" },
      }),
    );
    const shared = await delegate(h, a, "trn_share", { prompt: "x".repeat(300), route_id: open_.route_id });
    expect(shared.result!.length).toBeLessThanOrEqual(200);
    const withInput = await h.client.agentRouteCreate(
      delegationRoute(a, b, { disclosure: { text: true, artifacts: false, context: false, userInput: true, resultReturn: "full_result" } }),
    );
    expect((await delegate(h, a, "trn_input", { prompt: "short", route_id: withInput.route_id })).result).toContain(
      "User input to the delegating agent",
    );
    // Context: the thread's earlier answers cross only when the route allows it.
    await h.runTurn({ thread_id: a, turn_id: "trn_earlier", input: text(script({ say: "the earlier answer" })) });
    const withContext = await h.client.agentRouteCreate(
      delegationRoute(a, b, { disclosure: { text: true, artifacts: false, context: true, userInput: false, resultReturn: "full_result" } }),
    );
    expect((await delegate(h, a, "trn_ctx", { prompt: "short", route_id: withContext.route_id })).result).toContain("the earlier answer");
    expect((await delegate(h, a, "trn_noctx", { prompt: "short", route_id: withInput.route_id })).result).not.toContain(
      "the earlier answer",
    );
  });

  it("stops admitting a route once the gateway's permission configuration changes (policy generation)", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-routes-")), "gateway.sqlite");
    const first = await harness({ store: new SqliteEventStore(file) });
    const [a, b] = [await first.thread(), await first.thread()];
    const route = await first.client.agentRouteCreate(delegationRoute(a, b));
    await first.close();
    open.splice(open.indexOf(first), 1);
    first.store.close();

    const same = await harness({ store: new SqliteEventStore(file) });
    expect(await same.client.agentRouteList({ source_execution_id: "trn_source" })).toEqual({ routes: [route], next_cursor: null });
    expect((await delegate(same, a, "trn_same", { prompt: "still fine", route_id: route.route_id })).status).toBe("completed");
    await same.close();
    open.splice(open.indexOf(same), 1);
    same.store.close();

    const changed = await harness({ store: new SqliteEventStore(file), config: { permissions: { allowed_paths: ["/srv/shared"] } } });
    const refused = await delegate(changed, a, "trn_changed", { prompt: "x", route_id: route.route_id });
    expect(refused.error?.message).toMatch(/policy/);
    // A route made now captures the new generation.
    await expect(changed.client.agentRouteCreate(delegationRoute(a, b))).rejects.toMatchObject({ data: { detail: "invalid_generation" } });
    expect(
      (await changed.client.agentRouteCreate(delegationRoute(a, b, { source_policy_generation: 2, destination_policy_generation: 2 })))
        .status,
    ).toBe("active");
    changed.store.close();
  });
});

describe("agent attribution", () => {
  it("keeps the presentation a child turn was created with after the agent's profile changes", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-actor-")), "gateway.sqlite");
    const before = await harness({ store: new SqliteEventStore(file), config: { agent: { display_name: "Scout", revision: 1 } } });
    const thread = await before.thread();
    await before.runTurn({
      thread_id: thread,
      turn_id: "trn_p1",
      input: text(script({ tool: "spawn_agent", args: { prompt: "hi" } }, { say: "ok" })),
    });
    const task = completedTasks(before, "trn_p1")[0]!;
    expect(task.actor).toMatchObject({ kind: "agent", presentation: { display_name: "Scout", revision: 1 } });
    await before.close();
    open.splice(open.indexOf(before), 1);
    before.store.close();

    const after = await harness({ store: new SqliteEventStore(file), config: { agent: { display_name: "Ranger", revision: 2 } } });
    const old = await after.client.turnGet({ thread_id: task.child_thread_id!, turn_id: task.child_turn_id! });
    expect(old.turn.actor?.presentation).toMatchObject({ display_name: "Scout", revision: 1, execution_id: "trn_p1" });
    await after.runTurn({
      thread_id: thread,
      turn_id: "trn_p2",
      input: text(script({ tool: "spawn_agent", args: { prompt: "hi" } }, { say: "ok" })),
    });
    expect(completedTasks(after, "trn_p2")[0]!.actor?.presentation?.display_name).toBe("Ranger");
    after.store.close();
  });
});
