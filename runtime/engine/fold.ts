/**
 * A turn's state as a fold of its persisted events. The gateway never keeps a second,
 * mutable copy of a turn: `turn/get`, the agent loop's history and restart recovery all
 * read it from here, so they agree with `turn/items` by construction.
 */
import type { Turn, TurnItem } from "../../generated/types.js";
import type { StoredEvent } from "../store/store.js";

export interface TurnState {
  /** The latest turn snapshot carried by turn/started, turn/completed, turn/failed or turn/blocked. */
  readonly turn: Turn;
  /** Every item, in the order it was opened, in its latest state (deltas applied). */
  readonly items: readonly TurnItem[];
  readonly lastSequence: number;
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
  let lastSequence = 0;
  for (const event of events) {
    lastSequence = event.sequence;
    const params = event.params as Record<string, unknown>;
    if (TURN_SNAPSHOTS.has(event.method)) {
      turn = params.turn as Turn;
    } else if (event.method === "item/started" || event.method === "item/updated" || event.method === "item/completed") {
      items.set(params.item_id as string, params.item as TurnItem);
    } else if (typeof params.stream === "string" && typeof params.delta === "string") {
      const item = items.get(params.item_id as string) as Record<string, unknown> | undefined;
      const field = (DELTA_FIELD as Record<string, string>)[params.stream];
      if (item && field) items.set(params.item_id as string, { ...item, [field]: `${(item[field] as string | undefined) ?? ""}${params.delta}` } as TurnItem);
    }
  }
  return turn ? { turn, items: [...items.values()], lastSequence } : undefined;
}

/** The statuses in which a turn still occupies its thread. */
export function isActive(turn: Turn): boolean {
  return turn.status === "InProgress" || turn.status === "Blocked";
}
