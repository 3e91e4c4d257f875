/**
 * The rules of agent/route/create that need more than the params' JSON Schema: the schema
 * only checks the shape (agent_delegation_route_create_params.json says why), and these
 * checks answer route_validation_failed with the failing rule as error.data.detail.
 *
 * Pure: the current policy generations, the gateway's id and hop limit, the clock and the
 * existing routes all come in through the context, so the rules can be tested as a table.
 * The graph rules (cycle_detected, edge_limit_exceeded) need every live route and are
 * checked by the caller after these (see graph.ts).
 *
 * Rules, checked in this order; the first one broken is reported:
 *
 * 1. no_actions: allowed_actions is empty.
 * 2. unknown_action: an entry, once surrounding white space is trimmed, is not exactly one
 *    of the six wire names. No case folding or other aliasing: "Send_Message" is unknown,
 *    so a route's actions are always spelled the way admission compares them.
 * 3. duplicate_actions: two entries name the same action (after trimming).
 * 4. invalid_generation: source_policy_generation or destination_policy_generation is not
 *    a positive integer, or is not the current policy generation of its workspace (the
 *    source's, then the destination's). A stale caller must re-read policy first.
 * 5. invalid_expiry: expires_at is present and is not an RFC 3339 date-time with an
 *    offset, or is not after `now`.
 * 6. missing_disclosure: disclosure is absent or lacks any of text, artifacts, context,
 *    userInput, resultReturn. Nothing defaults: each class is granted on its own.
 * 7. cross_workspace_destination: destination_workspace_id differs from
 *    source_workspace_id.
 * 8. cross_gateway_destination: source_gateway_id or destination_gateway_id is not this
 *    gateway's id (routes never leave the gateway, whichever end names another).
 * 9. invalid_hop_bounds: hop_count or max_hops is not a non-negative integer, hop_count
 *    exceeds max_hops, or max_hops exceeds the gateway's limit.
 * 10. incompatible_result_return: the result-return policy cannot be carried:
 *    - return_route_id is given but resultReturn is "none" (a return route with nothing to
 *      return is a contradiction, most likely a mistake);
 *    - return_route_id names no existing route (reported under this detail, since
 *      errors.json has no separate one: the message says it does not exist);
 *    - the return route is not active (its derived status: an expired one counts as
 *      expired), does not allow deliver_result, or does not lead back: its
 *      source_thread_id must be this route's destination_thread_id and its
 *      destination_thread_id this route's source_thread_id;
 *    - resultReturn is not "none", there is no return_route_id and deliver_result is not
 *      among the actions: nothing could bring the result back.
 */
import type {
  AgentDelegationDisclosurePolicy,
  AgentDelegationRouteAction,
  AgentDelegationRouteCreateParams,
  AgentDelegationRouteProjection,
} from "@turnspec/protocol/types";
import { parseRfc3339 } from "./rfc3339.js";

/**
 * Every detail of route_validation_failed, in the order of schemas/errors.json (a test
 * compares the two). cycle_detected, edge_limit_exceeded and workspace_mismatch are reported by the caller (route service),
 * never by validateCreate.
 */
export const ROUTE_REJECTIONS = [
  "no_actions",
  "duplicate_actions",
  "unknown_action",
  "invalid_generation",
  "invalid_expiry",
  "missing_disclosure",
  "cross_workspace_destination",
  "workspace_mismatch",
  "cross_gateway_destination",
  "invalid_hop_bounds",
  "incompatible_result_return",
  "cycle_detected",
  "edge_limit_exceeded",
] as const;

export type RouteRejection = (typeof ROUTE_REJECTIONS)[number];

/** The six wire names of AgentDelegationRouteAction (a test compares them with the schema's enum). */
export const ROUTE_ACTIONS = [
  "send_message",
  "start_agent",
  "create_task",
  "schedule_task",
  "review_task_result",
  "deliver_result",
] as const satisfies readonly AgentDelegationRouteAction[];

/** The fields of a complete disclosure policy, in the order messages list them. */
const DISCLOSURE_FIELDS = [
  "text",
  "artifacts",
  "context",
  "userInput",
  "resultReturn",
] as const satisfies readonly (keyof AgentDelegationDisclosurePolicy)[];

// Compile only while the lists name every field of the generated disclosure policy, and every route action.
const disclosureFieldsComplete: [Exclude<keyof AgentDelegationDisclosurePolicy, (typeof DISCLOSURE_FIELDS)[number]>] extends [never]
  ? true
  : never = true;
const routeActionsComplete: [Exclude<AgentDelegationRouteAction, (typeof ROUTE_ACTIONS)[number]>] extends [never] ? true : never = true;
void disclosureFieldsComplete;
void routeActionsComplete;

export interface ValidateContext {
  readonly now: Date;
  /** This gateway's id: both ends of a route must be on it. */
  readonly gatewayId: string;
  /** The current policy generation of a workspace. */
  policyGeneration(workspaceId: string): number;
  /** The gateway's limit on max_hops. */
  readonly maxHops: number;
  /** An existing route with its derived status (expired when past expires_at), or undefined. */
  route(routeId: string): AgentDelegationRouteProjection | undefined;
}

export type CreateCheck =
  | { readonly ok: true; readonly actions: AgentDelegationRouteAction[]; readonly disclosure: AgentDelegationDisclosurePolicy }
  | { readonly ok: false; readonly detail: RouteRejection; readonly message: string; readonly data?: Record<string, unknown> };

type Rejection = Extract<CreateCheck, { ok: false }>;

/**
 * Checks `params` against the route rules (see the file comment for each and their order).
 * On success returns the normalized actions (trimmed wire names, in the caller's order)
 * and the disclosure policy reduced to its five fields.
 */
export function validateCreate(params: AgentDelegationRouteCreateParams, ctx: ValidateContext): CreateCheck {
  const actions = checkActions(params.allowed_actions);
  if (!Array.isArray(actions)) return actions;
  const disclosure = params.disclosure;
  const failure =
    checkGeneration("source_policy_generation", params.source_policy_generation, params.source_workspace_id, ctx) ??
    checkGeneration("destination_policy_generation", params.destination_policy_generation, params.destination_workspace_id, ctx) ??
    checkExpiry(params.expires_at, ctx.now) ??
    checkDisclosure(disclosure) ??
    checkPlacement(params, ctx.gatewayId) ??
    checkHops(params.hop_count, params.max_hops, ctx.maxHops);
  if (failure) return failure;
  // checkDisclosure has made sure every field is present.
  const policy = Object.fromEntries(
    DISCLOSURE_FIELDS.map((field) => [field, disclosure![field]]),
  ) as unknown as AgentDelegationDisclosurePolicy;
  return checkResultReturn(params, actions, policy, ctx) ?? { ok: true, actions, disclosure: policy };
}

function reject(detail: RouteRejection, message: string, data?: Record<string, unknown>): Rejection {
  return data === undefined ? { ok: false, detail, message } : { ok: false, detail, message, data };
}

function show(value: unknown): string {
  return value === undefined ? "undefined" : JSON.stringify(value);
}

/** The normalized actions, or the rejection of the first rule among 1-3 they break. */
function checkActions(names: readonly unknown[]): AgentDelegationRouteAction[] | Rejection {
  if (names.length === 0)
    return reject("no_actions", "allowed_actions is empty; a route must allow at least one action", { field: "allowed_actions" });
  const actions: AgentDelegationRouteAction[] = [];
  for (const [index, name] of names.entries()) {
    const trimmed = typeof name === "string" ? name.trim() : undefined;
    if (trimmed === undefined || !(ROUTE_ACTIONS as readonly string[]).includes(trimmed)) {
      return reject(
        "unknown_action",
        `allowed_actions[${index}] is ${show(name)}, not a route action: expected one of ${ROUTE_ACTIONS.join(", ")} ` +
          "(names must match exactly once surrounding spaces are trimmed; case is not folded)",
        { field: "allowed_actions", index, value: name },
      );
    }
    actions.push(trimmed as AgentDelegationRouteAction);
  }
  for (const [index, action] of actions.entries()) {
    const first = actions.indexOf(action);
    if (first !== index) {
      return reject("duplicate_actions", `allowed_actions names "${action}" twice, at ${first} and ${index}; list each action once`, {
        field: "allowed_actions",
        action,
        indexes: [first, index],
      });
    }
  }
  return actions;
}

function checkGeneration(
  field: "source_policy_generation" | "destination_policy_generation",
  held: number,
  workspaceId: string,
  ctx: ValidateContext,
): Rejection | undefined {
  const current = ctx.policyGeneration(workspaceId);
  const data = { field, current_generation: current };
  if (!Number.isInteger(held) || held < 1) {
    return reject(
      "invalid_generation",
      `${field} must be a positive integer, got ${show(held)}; workspace "${workspaceId}" is at policy generation ${current}`,
      data,
    );
  }
  if (held !== current) {
    return reject(
      "invalid_generation",
      `${field} is ${held} but workspace "${workspaceId}" is at policy generation ${current}; re-read the policy and retry`,
      data,
    );
  }
  return undefined;
}

function checkExpiry(expiresAt: string | undefined, now: Date): Rejection | undefined {
  if (expiresAt === undefined) return undefined;
  const at = typeof expiresAt === "string" ? parseRfc3339(expiresAt) : undefined;
  if (at === undefined) {
    return reject(
      "invalid_expiry",
      `expires_at ${show(expiresAt)} is not an RFC 3339 date-time with an offset, such as "2030-01-01T12:00:00Z"`,
      { field: "expires_at" },
    );
  }
  if (at <= now.getTime()) {
    return reject(
      "invalid_expiry",
      `expires_at "${expiresAt}" is not after the current time ${now.toISOString()}; omit it for a route without expiry`,
      { field: "expires_at" },
    );
  }
  return undefined;
}

function checkDisclosure(disclosure: AgentDelegationRouteCreateParams["disclosure"]): Rejection | undefined {
  const missing = DISCLOSURE_FIELDS.filter((field) => disclosure?.[field] === undefined);
  if (missing.length === 0) return undefined;
  const message =
    disclosure === undefined
      ? `disclosure is missing; a route must set every class: ${DISCLOSURE_FIELDS.join(", ")}`
      : `disclosure lacks ${missing.join(", ")}; a route must set every class explicitly, none has a default`;
  return reject("missing_disclosure", message, { field: "disclosure", missing });
}

function checkPlacement(params: AgentDelegationRouteCreateParams, gatewayId: string): Rejection | undefined {
  if (params.destination_workspace_id !== params.source_workspace_id) {
    return reject(
      "cross_workspace_destination",
      `destination_workspace_id "${params.destination_workspace_id}" is not the source's workspace "${params.source_workspace_id}"; a route stays inside one workspace`,
      { field: "destination_workspace_id" },
    );
  }
  for (const field of ["source_gateway_id", "destination_gateway_id"] as const) {
    if (params[field] !== gatewayId) {
      return reject(
        "cross_gateway_destination",
        `${field} "${params[field]}" is not this gateway ("${gatewayId}"); a route stays on one gateway`,
        {
          field,
          gateway_id: gatewayId,
        },
      );
    }
  }
  return undefined;
}

function checkHops(hopCount: number, maxHops: number, limit: number): Rejection | undefined {
  for (const [field, value] of [
    ["hop_count", hopCount],
    ["max_hops", maxHops],
  ] as const) {
    if (!Number.isInteger(value) || value < 0) {
      return reject("invalid_hop_bounds", `${field} must be a non-negative integer, got ${show(value)}`, { field });
    }
  }
  if (hopCount > maxHops) {
    return reject("invalid_hop_bounds", `hop_count ${hopCount} exceeds max_hops ${maxHops}; the chain is already longer than it allows`, {
      field: "hop_count",
    });
  }
  if (maxHops > limit) {
    return reject("invalid_hop_bounds", `max_hops ${maxHops} exceeds this gateway's limit of ${limit}`, { field: "max_hops", limit });
  }
  return undefined;
}

function checkResultReturn(
  params: AgentDelegationRouteCreateParams,
  actions: readonly AgentDelegationRouteAction[],
  disclosure: AgentDelegationDisclosurePolicy,
  ctx: ValidateContext,
): Rejection | undefined {
  const wanted = disclosure.resultReturn;
  const id = params.return_route_id;
  if (id === undefined) {
    if (wanted === "none" || actions.includes("deliver_result")) return undefined;
    return reject(
      "incompatible_result_return",
      `disclosure.resultReturn is "${wanted}" but nothing can carry a result back: allow deliver_result or give a return_route_id, or set resultReturn to "none"`,
      { field: "disclosure.resultReturn" },
    );
  }
  const data = { field: "return_route_id", return_route_id: id };
  if (wanted === "none") {
    return reject(
      "incompatible_result_return",
      `return_route_id "${id}" is given but disclosure.resultReturn is "none", so no result would travel back on it; drop one of them`,
      data,
    );
  }
  const back = ctx.route(id);
  if (back === undefined) return reject("incompatible_result_return", `return_route_id "${id}" does not exist`, data);
  if (back.status !== "active") return reject("incompatible_result_return", `return_route_id "${id}" is ${back.status}, not active`, data);
  if (!back.allowed_actions.includes("deliver_result")) {
    return reject("incompatible_result_return", `return_route_id "${id}" does not allow deliver_result, so it cannot carry a result`, data);
  }
  if (back.source_thread_id !== params.destination_thread_id || back.destination_thread_id !== params.source_thread_id) {
    return reject(
      "incompatible_result_return",
      `return_route_id "${id}" leads from thread ${back.source_thread_id} to ${back.destination_thread_id}, not back from ` +
        `${params.destination_thread_id} to ${params.source_thread_id}`,
      data,
    );
  }
  return undefined;
}
