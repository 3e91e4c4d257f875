/**
 * The route rules of agent/route/create. Each rule has failing rows and, next to them,
 * the nearest valid neighbour, all built on one valid base request: a row that passes
 * proves the rule does not over-reach, a row that fails proves it exists.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { AgentDelegationRouteCreateParams, AgentDelegationRouteProjection } from "../../generated/types.js";
import {
  ROUTE_ACTIONS,
  ROUTE_REJECTIONS,
  type RouteRejection,
  type ValidateContext,
  validateCreate,
} from "../../packages/gateway/src/routes/validate.js";

const NOW = new Date("2026-03-01T12:00:00.000Z");
const GENERATIONS: Record<string, number> = { ws_a: 3, ws_b: 5 };

function route(overrides: Partial<AgentDelegationRouteProjection>): AgentDelegationRouteProjection {
  return {
    route_id: "rte_back",
    kind: "execution_bound",
    status: "active",
    allowed_actions: ["deliver_result"],
    disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "none" },
    generation: 1,
    source_policy_generation: 3,
    destination_policy_generation: 3,
    hop_count: 0,
    max_hops: 2,
    grant_fingerprint: "gfp_x",
    expires_at: null,
    return_route_id: null,
    source_execution_id: "exe_dst",
    source_capsule_id: "cap_dst",
    source_thread_id: "th_dst",
    source_workspace_id: "ws_a",
    source_gateway_id: "gw_local",
    destination_execution_id: null,
    destination_capsule_id: null,
    destination_thread_id: "th_src",
    destination_workspace_id: "ws_a",
    destination_gateway_id: "gw_local",
    created_at: "2026-03-01T11:00:00.000Z",
    updated_at: "2026-03-01T11:00:00.000Z",
    ...overrides,
  };
}

/** Existing routes; rte_back is the valid way back for the base request. */
const ROUTES: Record<string, AgentDelegationRouteProjection> = {
  rte_back: route({}),
  rte_back_and_more: route({ route_id: "rte_back_and_more", allowed_actions: ["send_message", "deliver_result"] }),
  rte_revoked: route({ route_id: "rte_revoked", status: "revoked" }),
  // ctx.route gives the derived status, so a route past its expiry arrives as "expired".
  rte_expired: route({ route_id: "rte_expired", status: "expired", expires_at: "2026-03-01T00:00:00Z" }),
  rte_prepared: route({ route_id: "rte_prepared", status: "prepared" }),
  rte_no_deliver: route({ route_id: "rte_no_deliver", allowed_actions: ["send_message"] }),
  rte_from_elsewhere: route({ route_id: "rte_from_elsewhere", source_thread_id: "th_other" }),
  rte_to_elsewhere: route({ route_id: "rte_to_elsewhere", destination_thread_id: "th_other" }),
  rte_same_way: route({ route_id: "rte_same_way", source_thread_id: "th_src", destination_thread_id: "th_dst" }),
};

function context(overrides: Partial<ValidateContext> = {}): ValidateContext {
  return {
    now: NOW,
    gatewayId: "gw_local",
    policyGeneration: (ws) => GENERATIONS[ws] ?? 1,
    maxHops: 4,
    route: (id) => ROUTES[id],
    ...overrides,
  };
}

function base(): AgentDelegationRouteCreateParams {
  return {
    kind: "execution_bound",
    source_execution_id: "exe_src",
    source_capsule_id: "cap_src",
    source_thread_id: "th_src",
    source_workspace_id: "ws_a",
    source_gateway_id: "gw_local",
    destination_thread_id: "th_dst",
    destination_workspace_id: "ws_a",
    destination_gateway_id: "gw_local",
    allowed_actions: ["send_message", "create_task"],
    disclosure: { text: true, artifacts: true, context: false, userInput: true, resultReturn: "summary_only" },
    source_policy_generation: 3,
    destination_policy_generation: 3,
    hop_count: 0,
    max_hops: 2,
    expires_at: "2026-03-02T12:00:00Z",
    return_route_id: "rte_back",
    idempotency_key: "key-1",
  };
}

type Params = AgentDelegationRouteCreateParams;
interface Row {
  mutate: (p: Params) => void;
  ctx?: Partial<ValidateContext>;
  /** The detail expected, or undefined when the request must pass. */
  want: RouteRejection | undefined;
  /** Text the message must contain: the field and the value at fault. */
  says?: string;
  data?: Record<string, unknown>;
}

// Loosely typed on purpose: these rows send what the schema would let through, or a
// caller that skipped it.
const actions =
  (...names: unknown[]) =>
  (p: Params) =>
    void (p.allowed_actions = names as string[]);
const noReturn = (p: Params) => {
  delete p.return_route_id;
  p.disclosure!.resultReturn = "none";
};

const baseRow: [string, Row] = ["the base request", { mutate: () => {}, want: undefined }];

/** Per rule: rows that break it and the nearest requests that pass. */
const rules: [RouteRejection, [string, Row][]][] = [
  [
    "no_actions",
    [
      ["no actions", { mutate: actions(), want: "no_actions", says: "allowed_actions is empty" }],
      ["one action", { mutate: actions("send_message"), want: undefined }],
    ],
  ],
  [
    "unknown_action",
    [
      [
        "an action in another case",
        {
          mutate: actions("send_message", "Create_Task"),
          want: "unknown_action",
          says: 'allowed_actions[1] is "Create_Task"',
          data: { index: 1, value: "Create_Task" },
        },
      ],
      ["an action in camel case", { mutate: actions("sendMessage"), want: "unknown_action", says: '"sendMessage"' }],
      ["an empty action name", { mutate: actions("send_message", "  "), want: "unknown_action", says: "allowed_actions[1]" }],
      ["an action that is not a string", { mutate: actions(42), want: "unknown_action", says: "allowed_actions[0] is 42" }],
      ["an action with spaces around it", { mutate: actions(" send_message\t", "create_task"), want: undefined }],
      ["all six actions", { mutate: actions(...ROUTE_ACTIONS), want: undefined }],
    ],
  ],
  [
    "duplicate_actions",
    [
      [
        "an action twice",
        {
          mutate: actions("send_message", "create_task", "send_message"),
          want: "duplicate_actions",
          says: '"send_message" twice, at 0 and 2',
        },
      ],
      [
        "an action twice once trimmed",
        { mutate: actions("send_message", " send_message"), want: "duplicate_actions", says: '"send_message"' },
      ],
      // Unknown is checked first: the repeat of a name that is not an action is reported as unknown.
      ["an unknown action twice", { mutate: actions("nope", "nope"), want: "unknown_action" }],
      ["two different actions", { mutate: actions("send_message", "start_agent"), want: undefined }],
    ],
  ],
  [
    "invalid_generation",
    [
      [
        "source generation zero",
        {
          mutate: (p) => void (p.source_policy_generation = 0),
          want: "invalid_generation",
          says: "source_policy_generation must be a positive integer, got 0",
          data: { field: "source_policy_generation", current_generation: 3 },
        },
      ],
      [
        "source generation negative",
        { mutate: (p) => void (p.source_policy_generation = -3), want: "invalid_generation", says: "source_policy_generation" },
      ],
      [
        "source generation fractional",
        { mutate: (p) => void (p.source_policy_generation = 2.5), want: "invalid_generation", says: "got 2.5" },
      ],
      [
        "source generation stale",
        {
          mutate: (p) => void (p.source_policy_generation = 2),
          want: "invalid_generation",
          says: 'source_policy_generation is 2 but workspace "ws_a" is at policy generation 3',
          data: { field: "source_policy_generation", current_generation: 3 },
        },
      ],
      [
        "source generation ahead",
        { mutate: (p) => void (p.source_policy_generation = 4), want: "invalid_generation", says: "source_policy_generation is 4" },
      ],
      [
        "destination generation stale",
        {
          mutate: (p) => void (p.destination_policy_generation = 2),
          want: "invalid_generation",
          says: "destination_policy_generation is 2",
          data: { field: "destination_policy_generation", current_generation: 3 },
        },
      ],
      [
        "destination generation zero",
        {
          mutate: (p) => void (p.destination_policy_generation = 0),
          want: "invalid_generation",
          says: "destination_policy_generation must be a positive integer",
        },
      ],
      [
        "generations current after a policy change",
        {
          mutate: (p) => void (p.source_policy_generation = p.destination_policy_generation = 1),
          ctx: { policyGeneration: () => 1 },
          want: undefined,
        },
      ],
    ],
  ],
  [
    "invalid_expiry",
    [
      [
        "expiry without offset",
        {
          mutate: (p) => void (p.expires_at = "2026-03-02T12:00:00"),
          want: "invalid_expiry",
          says: 'expires_at "2026-03-02T12:00:00" is not an RFC 3339 date-time',
        },
      ],
      ["expiry as a date only", { mutate: (p) => void (p.expires_at = "2026-03-02"), want: "invalid_expiry", says: "expires_at" }],
      [
        "expiry on a day that does not exist",
        { mutate: (p) => void (p.expires_at = "2026-02-30T12:00:00Z"), want: "invalid_expiry", says: "2026-02-30" },
      ],
      ["expiry as words", { mutate: (p) => void (p.expires_at = "tomorrow"), want: "invalid_expiry", says: '"tomorrow"' }],
      [
        "expiry exactly now",
        {
          mutate: (p) => void (p.expires_at = "2026-03-01T12:00:00Z"),
          want: "invalid_expiry",
          says: "is not after the current time 2026-03-01T12:00:00.000Z",
        },
      ],
      [
        "expiry a millisecond ago",
        { mutate: (p) => void (p.expires_at = "2026-03-01T11:59:59.999Z"), want: "invalid_expiry", says: "not after" },
      ],
      [
        "expiry now, written at another offset",
        { mutate: (p) => void (p.expires_at = "2026-03-01T13:00:00+01:00"), want: "invalid_expiry", says: "not after" },
      ],
      ["expiry a millisecond ahead", { mutate: (p) => void (p.expires_at = "2026-03-01T12:00:00.001Z"), want: undefined }],
      ["expiry ahead, written at a negative offset", { mutate: (p) => void (p.expires_at = "2026-03-01T07:00:01-05:00"), want: undefined }],
      ["no expiry", { mutate: (p) => void delete p.expires_at, want: undefined }],
    ],
  ],
  [
    "missing_disclosure",
    [
      [
        "no disclosure",
        {
          mutate: (p) => void delete p.disclosure,
          want: "missing_disclosure",
          says: "disclosure is missing",
          data: { missing: ["text", "artifacts", "context", "userInput", "resultReturn"] },
        },
      ],
      [
        "an empty disclosure",
        {
          mutate: (p) => void (p.disclosure = {}),
          want: "missing_disclosure",
          says: "disclosure lacks text, artifacts, context, userInput, resultReturn",
        },
      ],
      [
        "a disclosure without userInput",
        {
          mutate: (p) => void delete p.disclosure!.userInput,
          want: "missing_disclosure",
          says: "disclosure lacks userInput;",
          data: { missing: ["userInput"] },
        },
      ],
      [
        "a disclosure without resultReturn",
        { mutate: (p) => void delete p.disclosure!.resultReturn, want: "missing_disclosure", says: "disclosure lacks resultReturn" },
      ],
      // false is a value, not a gap.
      [
        "a disclosure that grants nothing",
        {
          mutate: (p) => {
            noReturn(p);
            p.disclosure = { text: false, artifacts: false, context: false, userInput: false, resultReturn: "none" };
          },
          want: undefined,
        },
      ],
    ],
  ],
  [
    "cross_workspace_destination",
    [
      [
        "a destination in another workspace",
        {
          mutate: (p) => {
            p.destination_workspace_id = "ws_b";
            p.destination_policy_generation = 5;
          },
          want: "cross_workspace_destination",
          says: 'destination_workspace_id "ws_b" is not the source\'s workspace "ws_a"',
        },
      ],
      [
        "both ends in another workspace",
        {
          mutate: (p) => {
            p.source_workspace_id = p.destination_workspace_id = "ws_b";
            p.source_policy_generation = p.destination_policy_generation = 5;
          },
          want: undefined,
        },
      ],
    ],
  ],
  [
    "cross_gateway_destination",
    [
      [
        "a source on another gateway",
        {
          mutate: (p) => void (p.source_gateway_id = "gw_other"),
          want: "cross_gateway_destination",
          says: 'source_gateway_id "gw_other" is not this gateway ("gw_local")',
          data: { field: "source_gateway_id" },
        },
      ],
      [
        "a destination on another gateway",
        {
          mutate: (p) => void (p.destination_gateway_id = "gw_other"),
          want: "cross_gateway_destination",
          says: 'destination_gateway_id "gw_other"',
          data: { field: "destination_gateway_id" },
        },
      ],
      [
        "both ends on another gateway than this one",
        { mutate: (p) => void (p.source_gateway_id = p.destination_gateway_id = "gw_other"), want: "cross_gateway_destination" },
      ],
      [
        "both ends on this gateway under another id",
        {
          mutate: (p) => void (p.source_gateway_id = p.destination_gateway_id = "gw_other"),
          ctx: { gatewayId: "gw_other" },
          want: undefined,
        },
      ],
    ],
  ],
  [
    "invalid_hop_bounds",
    [
      [
        "a negative hop count",
        { mutate: (p) => void (p.hop_count = -1), want: "invalid_hop_bounds", says: "hop_count must be a non-negative integer, got -1" },
      ],
      [
        "a negative max_hops",
        {
          mutate: (p) => {
            p.hop_count = 0;
            p.max_hops = -1;
          },
          want: "invalid_hop_bounds",
          says: "max_hops must be a non-negative integer, got -1",
        },
      ],
      ["a fractional hop count", { mutate: (p) => void (p.hop_count = 0.5), want: "invalid_hop_bounds", says: "got 0.5" }],
      [
        "a hop count above max_hops",
        {
          mutate: (p) => {
            p.hop_count = 3;
            p.max_hops = 2;
          },
          want: "invalid_hop_bounds",
          says: "hop_count 3 exceeds max_hops 2",
        },
      ],
      [
        "max_hops above the gateway's limit",
        {
          mutate: (p) => void (p.max_hops = 5),
          want: "invalid_hop_bounds",
          says: "max_hops 5 exceeds this gateway's limit of 4",
          data: { field: "max_hops", limit: 4 },
        },
      ],
      [
        "a hop count equal to max_hops",
        {
          mutate: (p) => {
            p.hop_count = 2;
            p.max_hops = 2;
          },
          want: undefined,
        },
      ],
      ["max_hops at the gateway's limit", { mutate: (p) => void (p.max_hops = 4), want: undefined }],
      [
        "no hops allowed, none taken",
        {
          mutate: (p) => {
            p.hop_count = 0;
            p.max_hops = 0;
          },
          want: undefined,
        },
      ],
    ],
  ],
  [
    "incompatible_result_return",
    [
      [
        "a result asked for with no way back",
        {
          mutate: (p) => void delete p.return_route_id,
          want: "incompatible_result_return",
          says: 'disclosure.resultReturn is "summary_only" but nothing can carry a result back',
        },
      ],
      [
        "a full result asked for with no way back",
        {
          mutate: (p) => {
            delete p.return_route_id;
            p.disclosure!.resultReturn = "full_result";
          },
          want: "incompatible_result_return",
          says: '"full_result"',
        },
      ],
      [
        "a result carried by deliver_result",
        {
          mutate: (p) => {
            delete p.return_route_id;
            p.allowed_actions.push("deliver_result");
          },
          want: undefined,
        },
      ],
      ["no result asked for and no way back", { mutate: noReturn, want: undefined }],
      [
        "a return route with nothing to return",
        {
          mutate: (p) => void (p.disclosure!.resultReturn = "none"),
          want: "incompatible_result_return",
          says: 'return_route_id "rte_back" is given but disclosure.resultReturn is "none"',
        },
      ],
      [
        "a return route that does not exist",
        {
          mutate: (p) => void (p.return_route_id = "rte_missing"),
          want: "incompatible_result_return",
          says: 'return_route_id "rte_missing" does not exist',
          data: { return_route_id: "rte_missing" },
        },
      ],
      [
        "a revoked return route",
        {
          mutate: (p) => void (p.return_route_id = "rte_revoked"),
          want: "incompatible_result_return",
          says: '"rte_revoked" is revoked, not active',
        },
      ],
      [
        "an expired return route",
        {
          mutate: (p) => void (p.return_route_id = "rte_expired"),
          want: "incompatible_result_return",
          says: '"rte_expired" is expired, not active',
        },
      ],
      [
        "a prepared return route",
        { mutate: (p) => void (p.return_route_id = "rte_prepared"), want: "incompatible_result_return", says: "is prepared, not active" },
      ],
      [
        "a return route without deliver_result",
        {
          mutate: (p) => void (p.return_route_id = "rte_no_deliver"),
          want: "incompatible_result_return",
          says: '"rte_no_deliver" does not allow deliver_result',
        },
      ],
      [
        "a return route from another thread",
        {
          mutate: (p) => void (p.return_route_id = "rte_from_elsewhere"),
          want: "incompatible_result_return",
          says: "leads from thread th_other to th_src, not back from th_dst to th_src",
        },
      ],
      [
        "a return route to another thread",
        {
          mutate: (p) => void (p.return_route_id = "rte_to_elsewhere"),
          want: "incompatible_result_return",
          says: "leads from thread th_dst to th_other",
        },
      ],
      [
        "a return route the same way as this one",
        {
          mutate: (p) => void (p.return_route_id = "rte_same_way"),
          want: "incompatible_result_return",
          says: "leads from thread th_src to th_dst",
        },
      ],
      [
        "a return route that allows more than deliver_result",
        { mutate: (p) => void (p.return_route_id = "rte_back_and_more"), want: undefined },
      ],
      ["a full result over the return route", { mutate: (p) => void (p.disclosure!.resultReturn = "full_result"), want: undefined }],
    ],
  ],
];
const rows: [string, Row][] = [
  baseRow,
  ...rules.flatMap(([rule, group]) => group.map(([name, row]): [string, Row] => [`${rule}: ${name}`, row])),
];

describe("validateCreate", () => {
  it.each(rows)("%s", (_name, row) => {
    const params = base();
    row.mutate(params);
    const result = validateCreate(params, context(row.ctx));
    if (row.want === undefined) {
      expect(result).toMatchObject({ ok: true });
      return;
    }
    expect(result).toMatchObject({ ok: false, detail: row.want });
    if (result.ok) return;
    if (row.says !== undefined) expect(result.message).toContain(row.says);
    if (row.data !== undefined) expect(result.data).toMatchObject(row.data);
  });

  it("has, for every rule it checks, a row that breaks it and a neighbour that passes", () => {
    const byGraph: RouteRejection[] = ["cycle_detected", "edge_limit_exceeded", "workspace_mismatch"];
    expect(rules.map(([rule]) => rule).sort()).toEqual(ROUTE_REJECTIONS.filter((r) => !byGraph.includes(r)).sort());
    for (const [rule, group] of rules) {
      expect(
        group.some(([, row]) => row.want === rule),
        `${rule} has a failing row`,
      ).toBe(true);
      expect(
        group.some(([, row]) => row.want === undefined),
        `${rule} has a passing neighbour`,
      ).toBe(true);
    }
  });

  it("returns the trimmed wire names in the caller's order and the five disclosure fields", () => {
    const params = base();
    params.allowed_actions = [" review_task_result", "send_message ", "create_task"];
    // A caller that skipped schema validation may send an extra field; it is not stored.
    (params.disclosure as Record<string, unknown>).extra = true;
    expect(validateCreate(params, context())).toEqual({
      ok: true,
      actions: ["review_task_result", "send_message", "create_task"],
      disclosure: { text: true, artifacts: true, context: false, userInput: true, resultReturn: "summary_only" },
    });
  });

  it("reports the first broken rule, in the documented order", () => {
    // Every rule broken at once, then fixed one at a time: each fix reveals the next rule.
    const params: AgentDelegationRouteCreateParams = {
      ...base(),
      allowed_actions: [],
      source_policy_generation: 0,
      destination_policy_generation: 0,
      expires_at: "soon",
      disclosure: {},
      destination_workspace_id: "ws_b",
      source_gateway_id: "gw_other",
      hop_count: -1,
    };
    delete params.return_route_id;
    // One generation everywhere, so moving the destination back to ws_a breaks no generation.
    const ctx = context({ policyGeneration: () => 3 });
    const fixes: [RouteRejection, (p: Params) => void][] = [
      ["no_actions", (p) => void (p.allowed_actions = ["Nope", "Nope"])],
      ["unknown_action", (p) => void (p.allowed_actions = ["send_message", "send_message"])],
      ["duplicate_actions", (p) => void (p.allowed_actions = ["send_message"])],
      ["invalid_generation", (p) => void (p.source_policy_generation = 3)],
      // The destination's generation is a second failure of the same rule.
      ["invalid_generation", (p) => void (p.destination_policy_generation = 3)],
      ["invalid_expiry", (p) => void delete p.expires_at],
      [
        "missing_disclosure",
        (p) => void (p.disclosure = { text: true, artifacts: true, context: true, userInput: true, resultReturn: "full_result" }),
      ],
      ["cross_workspace_destination", (p) => void (p.destination_workspace_id = "ws_a")],
      ["cross_gateway_destination", (p) => void (p.source_gateway_id = "gw_local")],
      ["invalid_hop_bounds", (p) => void (p.hop_count = 0)],
      ["incompatible_result_return", (p) => void (p.return_route_id = "rte_back")],
    ];
    for (const [detail, fix] of fixes) {
      expect(validateCreate(params, ctx)).toMatchObject({ ok: false, detail });
      fix(params);
    }
    expect(validateCreate(params, ctx)).toMatchObject({ ok: true });
  });

  it("asks for the policy generation of each end's own workspace", () => {
    const asked: string[] = [];
    const params = base();
    validateCreate(params, context({ policyGeneration: (ws) => (asked.push(ws), 3) }));
    expect(asked).toEqual(["ws_a", "ws_a"]);
    params.destination_workspace_id = "ws_b";
    asked.length = 0;
    validateCreate(params, context({ policyGeneration: (ws) => (asked.push(ws), 3) }));
    expect(asked).toEqual(["ws_a", "ws_b"]);
  });
});

describe("the lists the rules are named by", () => {
  it("RouteRejection is the list of route_validation_failed details in schemas/errors.json", () => {
    const errors = JSON.parse(readFileSync(new URL("../../schemas/errors.json", import.meta.url), "utf8")) as {
      errors: { reason: string; details?: { detail: string }[] }[];
    };
    const entry = errors.errors.find((e) => e.reason === "route_validation_failed");
    expect(entry?.details?.map((d) => d.detail)).toEqual([...ROUTE_REJECTIONS]);
  });

  it("ROUTE_ACTIONS is the enum of agent_delegation_route_action.json", () => {
    const schema = JSON.parse(readFileSync(new URL("../../schemas/agent_delegation_route_action.json", import.meta.url), "utf8")) as {
      enum: string[];
    };
    expect([...ROUTE_ACTIONS]).toEqual(schema.enum);
  });
});
