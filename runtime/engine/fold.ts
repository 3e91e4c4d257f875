/**
 * A turn's state as a fold of its persisted events. The gateway never keeps a second,
 * mutable copy of a turn: `turn/get`, the agent loop's history and restart recovery all
 * read it from here, so they agree with `turn/items` by construction.
 */
import type { Turn, TurnItem, TurnPermissionApprovalRequest, TurnPermissionApprovalResolution } from "../../generated/types.js";
import type { StoredEvent } from "../store/store.js";

/** An approval request of the turn, with its resolution once it has one. */
export interface RequestState {
  readonly request: TurnPermissionApprovalRequest;
  readonly resolution?: TurnPermissionApprovalResolution;
  readonly resolved_at?: string;
}

export interface TurnState {
  /** The latest turn snapshot carried by turn/started, turn/completed, turn/failed or turn/blocked. */
  readonly turn: Turn;
  /** Every item, in the order it was opened, in its latest state (deltas applied). */
  readonly items: readonly TurnItem[];
  readonly lastSequence: number;
  /** Every approval request opened in the turn, by id. */
  readonly requests: ReadonlyMap<string, RequestState>;
  /** Scope hashes approved allow_for_turn: later actions with one of them run without asking. */
  readonly grants: ReadonlySet<string>;
}

/** The item field each delta stream appends to. The agent loop builds live items with the same map. */
export const DELTA_FIELD = {
  agent_message: "text",
  stdout: "stdout",
  stderr: "stderr",
  file_change: "output",
  tool_progress: "progress",
} as const;

const TURN_SNAPSHOTS = new Set(["turn/started", "turn/completed", "turn/failed", "turn/blocked"]);

export function foldTurn(events: readonly StoredEvent[]): TurnState | undefined {
  let turn: Turn | undefined;
  const items = new Map<string, TurnItem>();
  const requests = new Map<string, RequestState>();
  const grants = new Set<string>();
  let lastSequence = 0;
  for (const event of events) {
    lastSequence = event.sequence;
    const params = event.params as Record<string, unknown>;
    if (TURN_SNAPSHOTS.has(event.method)) {
      turn = params.turn as Turn;
    } else if (event.method === "item/started" || event.method === "item/updated" || event.method === "item/completed") {
      items.set(params.item_id as string, params.item as TurnItem);
    } else if (event.method === "turn/permission/request/opened") {
      const request = params.request as TurnPermissionApprovalRequest;
      requests.set(request.request_id, { request });
    } else if (event.method === "turn/permission/request/resolved") {
      const open = requests.get(params.request_id as string);
      if (open) {
        const resolution = params.resolution as TurnPermissionApprovalResolution;
        requests.set(open.request.request_id, { ...open, resolution, resolved_at: params.resolved_at as string });
        // A sandbox escape is approved once, for that very call: never a standing grant.
        if (resolution === "allow_for_turn" && !open.request.sandbox_escape) grants.add(open.request.scope_hash);
      }
    } else if (typeof params.stream === "string" && typeof params.delta === "string") {
      const item = items.get(params.item_id as string) as Record<string, unknown> | undefined;
      const field = (DELTA_FIELD as Record<string, string>)[params.stream];
      if (item && field) items.set(params.item_id as string, { ...item, [field]: `${(item[field] as string | undefined) ?? ""}${params.delta}` } as unknown as TurnItem);
    }
  }
  return turn ? { turn, items: [...items.values()], lastSequence, requests, grants } : undefined;
}

/** The statuses in which a turn still occupies its thread. */
export function isActive(turn: Turn): boolean {
  return turn.status === "InProgress" || turn.status === "Blocked";
}
