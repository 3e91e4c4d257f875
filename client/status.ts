/**
 * A turn's domain status, folded from its notifications: finer than the wire's
 * `TurnStatus`, which says InProgress whether the turn is thinking, waiting for a human to
 * answer a permission request, or waiting for a child turn it launched.
 *
 *   queued          the turn exists (turn/start answered) and nothing of it has run yet
 *   running         the turn is working
 *   awaiting_input  a permission request is open: the turn waits for the client's answer
 *   awaiting_child  a task item (a child turn) is running and no request is open
 *   blocked         stopped in a recoverable state; turn/resume continues it
 *   succeeded, failed, cancelled   terminal
 *
 * Pure and serialisable; notifications at or below the last sequence folded are ignored,
 * so a replayed or duplicated notification changes nothing.
 */
import type { AnyNotification } from "../generated/registry.js";
import type { TurnFailure, TurnStatus } from "../generated/types.js";

export type TurnDomainStatus = "queued" | "running" | "awaiting_input" | "awaiting_child" | "blocked" | "succeeded" | "failed" | "cancelled";

export interface TurnStatusState {
  readonly status: TurnDomainStatus;
  /** Permission requests opened and not yet resolved. */
  readonly openRequestIds: readonly string[];
  /** Task items (child turns) still in progress. */
  readonly runningChildItemIds: readonly string[];
  /** Why the turn failed or was cancelled, once it has. */
  readonly failure?: TurnFailure;
  readonly lastSequence: number;
}

export const initialTurnStatus: TurnStatusState = { status: "queued", openRequestIds: [], runningChildItemIds: [], lastSequence: 0 };

const TERMINAL: ReadonlySet<TurnDomainStatus> = new Set(["succeeded", "failed", "cancelled"]);

/** The wire status of each domain status. A failure of kind `interrupted` is the wire's Interrupted, like a cancellation. */
const WIRE: Readonly<Record<TurnDomainStatus, TurnStatus>> = {
  queued: "InProgress",
  running: "InProgress",
  awaiting_input: "InProgress",
  awaiting_child: "InProgress",
  blocked: "Blocked",
  succeeded: "Completed",
  failed: "Failed",
  cancelled: "Interrupted",
};

/** The wire `TurnStatus` of a folded state. */
export function wireStatus(state: Pick<TurnStatusState, "status" | "failure">): TurnStatus {
  return state.status === "failed" && state.failure?.kind === "interrupted" ? "Interrupted" : WIRE[state.status];
}

const without = (ids: readonly string[], id: string) => ids.filter((x) => x !== id);
const withId = (ids: readonly string[], id: string) => (ids.includes(id) ? ids : [...ids, id]);

/** While the turn is active, what it waits for decides the status. */
function activeStatus(openRequestIds: readonly string[], runningChildItemIds: readonly string[]): TurnDomainStatus {
  if (openRequestIds.length > 0) return "awaiting_input";
  if (runningChildItemIds.length > 0) return "awaiting_child";
  return "running";
}

/** Folds one notification of the turn into its status. Notifications without a sequence (derived views) are ignored. */
export function foldTurnStatus(state: TurnStatusState, notification: AnyNotification): TurnStatusState {
  const sequence = (notification.params as { sequence?: unknown }).sequence;
  if (typeof sequence !== "number" || sequence <= state.lastSequence) return state;
  // Nothing reopens a turn that has ended.
  if (TERMINAL.has(state.status)) return { ...state, lastSequence: sequence };
  let { openRequestIds, runningChildItemIds } = state;
  const base = { lastSequence: sequence };
  switch (notification.method) {
    case "turn/completed":
      return { ...base, status: "succeeded", openRequestIds: [], runningChildItemIds: [] };
    case "turn/failed": {
      const failure = notification.params.error;
      return { ...base, status: failure.kind === "cancelled" ? "cancelled" : "failed", openRequestIds: [], runningChildItemIds: [], failure };
    }
    case "turn/blocked":
      return { ...base, status: "blocked", openRequestIds, runningChildItemIds };
    case "turn/permission/request/opened":
      openRequestIds = withId(openRequestIds, notification.params.request.request_id);
      break;
    case "turn/permission/request/resolved":
      openRequestIds = without(openRequestIds, notification.params.request_id);
      break;
    case "item/started":
    case "item/updated":
    case "item/completed": {
      const item = notification.params.item;
      if (item.type === "task") {
        runningChildItemIds = item.status === "in_progress" ? withId(runningChildItemIds, item.id) : without(runningChildItemIds, item.id);
      }
      break;
    }
    default:
      break;
  }
  return { ...base, status: activeStatus(openRequestIds, runningChildItemIds), openRequestIds, runningChildItemIds };
}

/** The status after all of `notifications`, from a turn that was just accepted. */
export function turnStatusOf(notifications: Iterable<AnyNotification>): TurnStatusState {
  let state = initialTurnStatus;
  for (const n of notifications) state = foldTurnStatus(state, n);
  return state;
}
