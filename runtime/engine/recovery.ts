/**
 * Recovery after a stop: what the gateway needs to block a turn its run left behind.
 * A graceful stop aborts running turns with `GatewayShutdown`; a kill leaves only the log,
 * from which the cut-off window's counts are read back.
 */
import type { TurnExecutionWindowCounts } from "../../generated/types.js";
import type { StoredEvent } from "../store/store.js";
import type { TurnState } from "./fold.js";
import { zeroCounts } from "./windows.js";

/** The abort reason of a turn stopped because the gateway is shutting down (not cancelled by a client). */
export class GatewayShutdown extends Error {
  constructor() {
    super("the gateway is shutting down");
    this.name = "GatewayShutdown";
  }
}

export const isShutdown = (signal: AbortSignal): boolean => signal.aborted && signal.reason instanceof GatewayShutdown;

/**
 * What the turn's current window had done when the gateway died, as far as the log
 * tells: rounds and tool calls from the items it opened, wall-clock time up to its last
 * event. Provider tokens are known only when a window ends, so a killed window reports 0.
 */
export function observedInLog(events: readonly StoredEvent[], state: TurnState): TurnExecutionWindowCounts {
  const window = state.windows.at(-1);
  if (!window || window.observed) return zeroCounts();
  const from = events.findIndex((e) => e.method === "turn/execution_window/started" && e.params.window_id === window.window_id);
  const inWindow = events.slice(from);
  const rounds = new Set<number>();
  let toolCalls = 0;
  for (const event of inWindow) {
    if (event.method !== "item/started") continue;
    const item = event.params.item as { round?: number; tool_call_id?: string };
    if (item.round !== undefined) rounds.add(item.round);
    if (item.tool_call_id !== undefined) toolCalls++;
  }
  const last = inWindow.at(-1);
  const elapsed = last ? Date.parse(last.recorded_at) - Date.parse(window.started_at) : 0;
  return { agent_rounds: rounds.size, tool_calls: toolCalls, wall_clock_ms: Math.max(0, elapsed), provider_tokens: 0 };
}
