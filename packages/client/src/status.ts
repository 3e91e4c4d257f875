/**
 * A turn's domain status, folded from its notifications, as turn-lifecycle-types.md names
 * it: finer than the protocol's `TurnStatus`, which says InProgress whether the turn is
 * thinking, waiting for a human's decision, or waiting for a child turn it launched.
 *
 *   queued                    the turn exists (turn/start answered) and nothing of it has run yet
 *   running                   the turn is working, or waiting on its provider with no decision open
 *   awaiting_hitl             a decision (a permission request or a question) is open and someone is watching
 *   awaiting_hitl_resolution  a decision is open and nobody is watching: the turn waits until it is
 *                             resolved, expires or the turn is cancelled
 *   awaiting_subsession       a task item (a child turn) is running and no decision is open
 *   blocked                   stopped in a recoverable state; turn/resume continues it
 *   succeeded, failed, cancelled   terminal
 *
 * Whether someone is watching is not in the log: the holder of the fold says so with
 * `watching` (a live surface folds with `watching: true`, the default; a server-side
 * observer of a turn nobody follows sets it false). `lifecycleWireStatus` maps both
 * `awaiting_hitl*` to `awaiting_input`, as the lifecycle's wire form does; `wireStatus`
 * gives the protocol's `TurnStatus`.
 *
 * Pure and serialisable; notifications at or below the last sequence folded are ignored,
 * so a replayed or duplicated notification changes nothing.
 */
import type { AnyNotification } from "@turnspec/protocol/registry";
import type { TurnFailure, TurnStatus } from "@turnspec/protocol/types";

export type TurnDomainStatus =
  | "queued"
  | "running"
  | "awaiting_hitl"
  | "awaiting_hitl_resolution"
  | "awaiting_subsession"
  | "blocked"
  | "succeeded"
  | "failed"
  | "cancelled";

/** The lifecycle's wire form of a domain status: both `awaiting_hitl*` are `awaiting_input`. */
export type WireTurnStatus = Exclude<TurnDomainStatus, "awaiting_hitl" | "awaiting_hitl_resolution"> | "awaiting_input";

export interface TurnStatusState {
  readonly status: TurnDomainStatus;
  /** Permission requests opened and not yet resolved. */
  readonly openRequestIds: readonly string[];
  /** Questions opened and not yet resolved, as "call_id#index". */
  readonly openQuestionKeys: readonly string[];
  /** Task items (child turns) still in progress. */
  readonly runningChildItemIds: readonly string[];
  /** Whether someone is watching the turn (see the module comment). */
  readonly watching: boolean;
  /** Why the turn failed or was cancelled, once it has. */
  readonly failure?: TurnFailure;
  readonly lastSequence: number;
}

export const initialTurnStatus: TurnStatusState = {
  status: "queued",
  openRequestIds: [],
  openQuestionKeys: [],
  runningChildItemIds: [],
  watching: true,
  lastSequence: 0,
};

const TERMINAL: ReadonlySet<TurnDomainStatus> = new Set(["succeeded", "failed", "cancelled"]);

/** The protocol status of each domain status. A failure of kind `interrupted` is the wire's Interrupted, like a cancellation. */
const WIRE: Readonly<Record<TurnDomainStatus, TurnStatus>> = {
  queued: "InProgress",
  running: "InProgress",
  awaiting_hitl: "InProgress",
  awaiting_hitl_resolution: "InProgress",
  awaiting_subsession: "InProgress",
  blocked: "Blocked",
  succeeded: "Completed",
  failed: "Failed",
  cancelled: "Interrupted",
};

/** The protocol's `TurnStatus` of a folded state. */
export function wireStatus(state: Pick<TurnStatusState, "status" | "failure">): TurnStatus {
  return state.status === "failed" && state.failure?.kind === "interrupted" ? "Interrupted" : WIRE[state.status];
}

/** The lifecycle's wire form of a domain status. */
export function lifecycleWireStatus(status: TurnDomainStatus): WireTurnStatus {
  return status === "awaiting_hitl" || status === "awaiting_hitl_resolution" ? "awaiting_input" : status;
}

const without = (ids: readonly string[], id: string) => ids.filter((x) => x !== id);
const withId = (ids: readonly string[], id: string) => (ids.includes(id) ? ids : [...ids, id]);

type Waits = Pick<TurnStatusState, "openRequestIds" | "openQuestionKeys" | "runningChildItemIds" | "watching">;

/** While the turn is active, what it waits for decides the status. */
function activeStatus(waits: Waits): TurnDomainStatus {
  if (waits.openRequestIds.length > 0 || waits.openQuestionKeys.length > 0)
    return waits.watching ? "awaiting_hitl" : "awaiting_hitl_resolution";
  if (waits.runningChildItemIds.length > 0) return "awaiting_subsession";
  return "running";
}

/** The state with someone watching the turn, or nobody; an open decision's status follows. */
export function setWatching(state: TurnStatusState, watching: boolean): TurnStatusState {
  if (state.watching === watching) return state;
  const next = { ...state, watching };
  return state.status === "awaiting_hitl" || state.status === "awaiting_hitl_resolution" ? { ...next, status: activeStatus(next) } : next;
}

/** Folds one notification of the turn into its status. Notifications without a sequence (derived views) are ignored. */
export function foldTurnStatus(state: TurnStatusState, notification: AnyNotification): TurnStatusState {
  const sequence = (notification.params as { sequence?: unknown }).sequence;
  if (typeof sequence !== "number" || sequence <= state.lastSequence) return state;
  // Nothing reopens a turn that has ended.
  if (TERMINAL.has(state.status)) return { ...state, lastSequence: sequence };
  let { openRequestIds, openQuestionKeys, runningChildItemIds } = state;
  const base = { lastSequence: sequence, watching: state.watching };
  switch (notification.method) {
    case "turn/completed":
      return { ...base, status: "succeeded", openRequestIds: [], openQuestionKeys: [], runningChildItemIds: [] };
    case "turn/failed": {
      const failure = notification.params.error;
      return {
        ...base,
        status: failure.kind === "cancelled" ? "cancelled" : "failed",
        openRequestIds: [],
        openQuestionKeys: [],
        runningChildItemIds: [],
        failure,
      };
    }
    case "turn/blocked":
      return { ...base, status: "blocked", openRequestIds, openQuestionKeys, runningChildItemIds };
    case "turn/permission/request/opened":
      openRequestIds = withId(openRequestIds, notification.params.request.request_id);
      break;
    case "turn/permission/request/resolved":
      openRequestIds = without(openRequestIds, notification.params.request_id);
      break;
    case "turn/question/opened":
      openQuestionKeys = withId(openQuestionKeys, `${notification.params.call_id}#${notification.params.index}`);
      break;
    case "turn/question/resolved":
      openQuestionKeys = without(openQuestionKeys, `${notification.params.call_id}#${notification.params.index}`);
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
  const waits = { openRequestIds, openQuestionKeys, runningChildItemIds, watching: state.watching };
  return { ...base, status: activeStatus(waits), openRequestIds, openQuestionKeys, runningChildItemIds };
}

/** The status after all of `notifications`, from a turn that was just accepted. */
export function turnStatusOf(notifications: Iterable<AnyNotification>, options: { readonly watching?: boolean } = {}): TurnStatusState {
  let state = options.watching === false ? { ...initialTurnStatus, watching: false } : initialTurnStatus;
  for (const n of notifications) state = foldTurnStatus(state, n);
  return state;
}
