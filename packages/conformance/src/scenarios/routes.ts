/** Scenarios of the routes capability: delegation route create, list, revoke and validation. */
import type { AgentDelegationRouteCreateParams } from "@turnspec/protocol/types";
import { Failure, shown, type Scenario, type ScenarioContext } from "../scenario.js";
import { agentTurn } from "./core.js";

/** Two fresh threads and a valid create request between them, with `overrides`. */
async function endpoints(ctx: ScenarioContext) {
  const [source, destination] = [await ctx.thread(), await ctx.thread()];
  const execution = ctx.id("trn_source");
  const params = (
    overrides: Partial<AgentDelegationRouteCreateParams> = {},
    from = source,
    to = destination,
  ): AgentDelegationRouteCreateParams => ({
    kind: "execution_bound",
    source_execution_id: execution,
    source_capsule_id: from.id,
    source_thread_id: from.id,
    source_workspace_id: from.workspace_id,
    source_gateway_id: ctx.gatewayId,
    destination_thread_id: to.id,
    destination_workspace_id: to.workspace_id,
    destination_gateway_id: ctx.gatewayId,
    allowed_actions: ["start_agent", "deliver_result"],
    disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "summary_only" },
    source_policy_generation: 1,
    destination_policy_generation: 1,
    hop_count: 0,
    max_hops: 2,
    ...overrides,
  });
  return { source, destination, execution, params };
}

const lifecycle: Scenario = {
  name: "route create, list and revoke",
  checks: ["ROUTE-CREATE", "ROUTE-LIST", "ROUTE-REVOKE", "ROUTE-REVOKE-STALE", "ROUTE-REVOKE-NOT-FOUND"],
  async run(ctx) {
    const { execution, params, destination } = await endpoints(ctx);
    const [first, second] = await ctx.step("ROUTE-CREATE", async () => {
      const first = await ctx.client.agentRouteCreate(params());
      if (first.status !== "active" || first.generation !== 1)
        throw new Failure(`the new route is ${first.status} at generation ${first.generation}, expected active at 1`);
      if (
        JSON.stringify(first.allowed_actions) !== JSON.stringify(["start_agent", "deliver_result"]) ||
        first.destination_thread_id !== destination.id ||
        first.disclosure.resultReturn !== "summary_only"
      ) {
        throw new Failure(`the route does not carry what was asked: ${shown(first)}`);
      }
      return [first, await ctx.client.agentRouteCreate(params())];
    });
    await ctx.attempt("ROUTE-LIST", async () => {
      const { routes } = await ctx.client.agentRouteList({ source_execution_id: execution });
      const ids = routes.map((r) => r.route_id);
      if (ids.length !== 2 || !ids.includes(first.route_id) || !ids.includes(second.route_id))
        throw new Failure(`the list holds ${shown(ids)}, expected ${first.route_id} and ${second.route_id}`);
    });
    await ctx.attempt("ROUTE-REVOKE-STALE", async () => {
      const error = await ctx.rejects(
        ctx.client.agentRouteRevoke({ route_id: second.route_id, expected_generation: second.generation + 5 }),
        "generation_conflict",
        "a revoke with a stale generation",
      );
      const current = (error.data as { current_generation?: unknown } | undefined)?.current_generation;
      if (current !== second.generation)
        throw new Failure(`generation_conflict carries current_generation ${shown(current)}, expected ${second.generation}`);
      const { routes } = await ctx.client.agentRouteList({ source_execution_id: execution });
      const after = routes.find((r) => r.route_id === second.route_id);
      if (after?.status !== "active" || after.generation !== second.generation)
        throw new Failure(
          after
            ? `after the refused revoke the route is ${after.status} at generation ${after.generation}, expected active at ${second.generation}`
            : "after the refused revoke the route is no longer listed",
        );
    });
    await ctx.attempt("ROUTE-REVOKE", async () => {
      const revoked = await ctx.client.agentRouteRevoke({
        route_id: first.route_id,
        expected_generation: first.generation,
        reason: "certification",
      });
      if (revoked.status !== "revoked" || revoked.generation <= first.generation)
        throw new Failure(`the revoked route is ${revoked.status} at generation ${revoked.generation}`);
    });
    await ctx.attempt("ROUTE-REVOKE-NOT-FOUND", () =>
      ctx.rejects(
        ctx.client.agentRouteRevoke({ route_id: ctx.id("rte_missing"), expected_generation: 1 }),
        "route_not_found",
        "revoking an unknown route",
      ),
    );
  },
};

/** One validation rule: the params that break it and the detail expected. */
const rule = (
  id: string,
  detail: string,
  does: string,
  make: (p: Awaited<ReturnType<typeof endpoints>>) => AgentDelegationRouteCreateParams,
) => ({ id, detail, does, make });

const rules = [
  rule("ROUTE-NO-ACTIONS", "no_actions", "creates a route with no allowed actions", (e) => e.params({ allowed_actions: [] })),
  rule("ROUTE-DUPLICATE-ACTIONS", "duplicate_actions", "creates a route naming start_agent twice, valid otherwise", (e) =>
    e.params({ allowed_actions: ["start_agent", "deliver_result", "start_agent"] }),
  ),
  rule("ROUTE-INVALID-EXPIRY", "invalid_expiry", "creates a route that expired an hour ago", (e) =>
    e.params({ expires_at: new Date(Date.now() - 3_600_000).toISOString() }),
  ),
  rule("ROUTE-HOP-BOUNDS", "invalid_hop_bounds", "creates a route with hop_count 3 and max_hops 1", (e) =>
    e.params({ hop_count: 3, max_hops: 1 }),
  ),
  rule(
    "ROUTE-RESULT-RETURN",
    "incompatible_result_return",
    "creates a route asking for the full result without deliver_result or a return route",
    (e) =>
      e.params({
        allowed_actions: ["start_agent"],
        disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "full_result" },
      }),
  ),
];

const validation: Scenario = {
  name: "route validation",
  checks: [...rules.map((r) => r.id), "ROUTE-CYCLE"],
  async run(ctx) {
    const e = await endpoints(ctx);
    for (const r of rules) {
      await ctx.attempt(r.id, async () => {
        const error = await ctx.rejects(ctx.client.agentRouteCreate(r.make(e)), "route_validation_failed", r.does);
        const detail = (error.data as { detail?: unknown } | undefined)?.detail;
        if (detail !== r.detail) throw new Failure(`the rejection names detail ${shown(detail)}, expected ${r.detail}`);
      });
    }
    await ctx.attempt("ROUTE-CYCLE", async () => {
      await ctx.client.agentRouteCreate(
        e.params({
          allowed_actions: ["start_agent"],
          disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "none" },
        }),
      );
      const back = e.params(
        {
          allowed_actions: ["start_agent"],
          disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "none" },
        },
        e.destination,
        e.source,
      );
      const error = await ctx.rejects(ctx.client.agentRouteCreate(back), "route_validation_failed", "a route closing a cycle");
      const detail = (error.data as { detail?: unknown } | undefined)?.detail;
      if (detail !== "cycle_detected") throw new Failure(`the rejection names detail ${shown(detail)}, expected cycle_detected`);
    });
  },
};

const idempotent: Scenario = {
  name: "idempotent route creation",
  checks: ["ROUTE-IDEMPOTENT-CREATE"],
  async run(ctx) {
    const e = await endpoints(ctx);
    await ctx.step("ROUTE-IDEMPOTENT-CREATE", async () => {
      const key = ctx.id("idem");
      const a = await ctx.client.agentRouteCreate(e.params({ idempotency_key: key }));
      const b = await ctx.client.agentRouteCreate(e.params({ idempotency_key: key }));
      if (a.route_id !== b.route_id) throw new Failure(`the repeated create made a second route (${a.route_id}, ${b.route_id})`);
      await ctx.rejects(
        ctx.client.agentRouteCreate(e.params({ idempotency_key: key, max_hops: 3 })),
        "idempotency_conflict",
        "the same key with other params",
      );
    });
  },
};

const admission: Scenario = {
  name: "delegation over a route",
  checks: ["ROUTE-ADMISSION"],
  async run(ctx) {
    const e = await endpoints(ctx);
    const answer = `child-answer-${ctx.token.slice(-6)}`;
    const task = (route_id: string) => ({
      reply: { toolCalls: [{ tool: "spawn_agent", args: { prompt: `Do the delegated task [${ctx.token}]`, route_id } }] },
    });
    await ctx.step("ROUTE-ADMISSION", async () => {
      // identity_bound: the delegating turn does not exist yet, and an execution_bound route admits only its own source execution.
      const route = await ctx.client.agentRouteCreate(
        e.params({
          kind: "identity_bound",
          disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "full_result" },
        }),
      );
      const script = ctx.script([
        task(route.route_id),
        { reply: { text: answer } },
        { reply: { text: "Delegated." } },
        task(route.route_id),
        { reply: { text: "Refused, as expected." } },
      ]);
      const parent = await ctx.startTurn(e.source.id, "Delegate the task", agentTurn("full_access"));
      const end = await ctx.ended(parent.id);
      const child = ctx.notifications.find((n) => n.method === "turn/started" && n.params.thread_id === e.destination.id);
      if (!child) throw new Failure("no turn started in the route's destination thread");
      if (end.turn.status !== "Completed") throw new Failure(`the delegating turn ended ${end.turn.status}`);
      const told = script.calls[2]?.messages.at(-1);
      if (!JSON.stringify(told ?? "").includes(answer))
        throw new Failure(`the parent's model was told ${shown(told)}, expected the child's answer`);

      await ctx.client.agentRouteRevoke({ route_id: route.route_id, expected_generation: route.generation });
      const before = ctx.notifications.filter((n) => n.method === "turn/started" && n.params.thread_id === e.destination.id).length;
      const second = await ctx.startTurn(e.source.id, "Delegate it again", agentTurn("full_access"));
      await ctx.ended(second.id);
      const after = ctx.notifications.filter((n) => n.method === "turn/started" && n.params.thread_id === e.destination.id).length;
      if (after !== before) throw new Failure("a delegation over the revoked route started a turn in the destination thread");
      if (script.calls.length !== 5)
        throw new Failure(
          `expected 5 model calls (the refused delegation reaching the model as a tool result), got ${script.calls.length}`,
        );
    });
  },
};

export const routeScenarios: readonly Scenario[] = [lifecycle, validation, idempotent, admission];
