/**
 * A route's status as of now, and whether it admits a piece of delegated work. Expiry is
 * derived when read, never written: a route past its expires_at reads as expired at once,
 * with no sweeper to wait for.
 */
import type { AgentDelegationRouteAction, AgentDelegationRouteProjection, AgentDelegationRouteStatus } from "@turnspec/protocol/types";
import { parseRfc3339 } from "./rfc3339.js";

/**
 * "expired" when the route is active or prepared and its expires_at is at or before
 * `now`; otherwise the stored status (a revoked route stays revoked once past its expiry).
 * An expires_at that does not parse counts as expired: validation never stores one, and a
 * route whose expiry cannot be read must not be taken as unbounded.
 */
export function effectiveStatus(
  route: { readonly status: AgentDelegationRouteStatus; readonly expires_at: string | null },
  now: Date,
): AgentDelegationRouteStatus {
  if ((route.status === "active" || route.status === "prepared") && route.expires_at !== null) {
    const at = parseRfc3339(route.expires_at);
    if (at === undefined || at <= now.getTime()) return "expired";
  }
  return route.status;
}

/** Why a route refuses work, in the order admission checks them. */
export const ADMISSION_REFUSALS = [
  "wrong_source",
  "revoked",
  "expired",
  "not_active",
  "generation_mismatch",
  "source_policy_changed",
  "destination_policy_changed",
  "action_not_allowed",
  "wrong_execution",
] as const;

export type AdmissionRefusal = (typeof ADMISSION_REFUSALS)[number];

export type Admission =
  { readonly admitted: true } | { readonly admitted: false; readonly reason: AdmissionRefusal; readonly message: string };

export interface AdmissionContext {
  readonly now: Date;
  /** The current policy generation of a workspace. */
  policyGeneration(workspaceId: string): number;
  /** The route generation the caller last saw; when given, a newer route is refused. */
  readonly expectedGeneration?: number;
  /** What the caller wants to do over the route. */
  readonly action: AgentDelegationRouteAction;
  /** The thread the caller acts from. */
  readonly sourceThreadId: string;
  /**
   * The execution (turn) the caller acts from. An execution_bound route admits only its
   * own source execution: without this, any turn of the source thread, or a caller naming
   * none, could use a route granted to one.
   */
  readonly executionId?: string;
}

/** The fields admission reads; a route projection fits, with its stored or derived status. */
export type AdmissionRoute = Pick<
  AgentDelegationRouteProjection,
  | "route_id"
  | "status"
  | "expires_at"
  | "generation"
  | "allowed_actions"
  | "source_policy_generation"
  | "destination_policy_generation"
  | "source_workspace_id"
  | "destination_workspace_id"
  | "source_thread_id"
  | "kind"
  | "source_execution_id"
>;

/**
 * Whether `route` admits `ctx.action` from `ctx.sourceThreadId` now. Checked in the order
 * of the refusal reasons: a caller that is not the route's source thread first (it learns
 * nothing else about a route that is not its own), then revoked, expired, not active (prepared), a generation other than
 * the expected one, a source or destination policy generation other than the current one
 * of its workspace (the grant was judged under a policy that no longer holds), an action
 * the route does not allow, and for an execution_bound route, an execution other than its
 * source execution.
 */
export function admission(route: AdmissionRoute, ctx: AdmissionContext): Admission {
  const refuse = (reason: AdmissionRefusal, message: string): Admission => ({
    admitted: false,
    reason,
    message: `route ${route.route_id} ${message}`,
  });
  if (route.source_thread_id !== ctx.sourceThreadId) {
    return refuse("wrong_source", `leads from thread ${route.source_thread_id}, not from ${ctx.sourceThreadId}`);
  }
  const status = effectiveStatus(route, ctx.now);
  if (status === "revoked") return refuse("revoked", "is revoked");
  if (status === "expired") return refuse("expired", route.expires_at === null ? "has expired" : `expired at ${route.expires_at}`);
  if (status !== "active") return refuse("not_active", `is ${status}, not active`);
  if (ctx.expectedGeneration !== undefined && route.generation !== ctx.expectedGeneration) {
    return refuse("generation_mismatch", `is at generation ${route.generation}, not the expected ${ctx.expectedGeneration}`);
  }
  const sourceNow = ctx.policyGeneration(route.source_workspace_id);
  if (route.source_policy_generation !== sourceNow) {
    return refuse(
      "source_policy_changed",
      `was granted under policy generation ${route.source_policy_generation} of workspace ${route.source_workspace_id}, which is now at ${sourceNow}`,
    );
  }
  const destinationNow = ctx.policyGeneration(route.destination_workspace_id);
  if (route.destination_policy_generation !== destinationNow) {
    return refuse(
      "destination_policy_changed",
      `was granted under policy generation ${route.destination_policy_generation} of workspace ${route.destination_workspace_id}, which is now at ${destinationNow}`,
    );
  }
  if (!route.allowed_actions.includes(ctx.action)) {
    return refuse("action_not_allowed", `does not allow ${ctx.action}; it allows ${route.allowed_actions.join(", ")}`);
  }
  if (route.kind === "execution_bound" && ctx.executionId !== route.source_execution_id) {
    return refuse(
      "wrong_execution",
      `is bound to execution ${route.source_execution_id}, not to ${ctx.executionId ?? "a caller that names none"}`,
    );
  }
  return { admitted: true };
}
