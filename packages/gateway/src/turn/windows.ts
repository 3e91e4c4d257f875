/**
 * Execution windows: an Agent-mode turn runs in bounded windows (turns-api.md,
 * "Execution windows"). The agent loop counts each window's rounds, tool calls, wall-clock
 * time and provider tokens; between rounds it checks them against the window's limits,
 * and the counts summed since the turn started or was last resumed against the totals.
 * Limits are checked between rounds, so a round that starts under a limit runs whole and
 * the observed counts may pass it.
 */
import type { TurnExecutionWindowCounts, TurnExecutionWindowExhaustionReason, TurnExecutionWindowLimits } from "@turnspec/protocol/types";
import type { WindowTotals } from "../config.js";

/** The window limit each exhaustion reason names, in the order they are checked. */
const LIMITS = [
  ["max_agent_rounds_per_window", "agent_rounds"],
  ["max_tool_calls_per_window", "tool_calls"],
  ["max_wall_clock_ms_per_window", "wall_clock_ms"],
  ["max_provider_tokens_per_window", "provider_tokens"],
] as const satisfies readonly (readonly [
  keyof TurnExecutionWindowLimits & TurnExecutionWindowExhaustionReason,
  keyof TurnExecutionWindowCounts,
])[];

/** The total each count is held to. */
const TOTALS = {
  agent_rounds: "max_agent_rounds",
  tool_calls: "max_tool_calls",
  wall_clock_ms: "max_wall_clock_ms",
  provider_tokens: "max_provider_tokens",
} as const satisfies Record<keyof TurnExecutionWindowCounts, keyof WindowTotals>;

export const zeroCounts = (): TurnExecutionWindowCounts => ({ agent_rounds: 0, tool_calls: 0, wall_clock_ms: 0, provider_tokens: 0 });

export function addCounts(a: TurnExecutionWindowCounts, b: TurnExecutionWindowCounts): TurnExecutionWindowCounts {
  return {
    agent_rounds: a.agent_rounds + b.agent_rounds,
    tool_calls: a.tool_calls + b.tool_calls,
    wall_clock_ms: a.wall_clock_ms + b.wall_clock_ms,
    provider_tokens: a.provider_tokens + b.provider_tokens,
  };
}

export const windowId = (turnId: string, index: number) => `win_${turnId}_${index}`;
export const checkpointId = (turnId: string, index: number) => `chk_${turnId}_${index}`;

/** The counts of the window that is running now. */
export class WindowMeter {
  private rounds = 0;
  private toolCalls = 0;
  private tokens = 0;

  constructor(
    readonly windowId: string,
    readonly index: number,
    private readonly startedAtMs: number,
  ) {}

  round(): void {
    this.rounds++;
  }

  toolCall(): void {
    this.toolCalls++;
  }

  providerTokens(count: number): void {
    this.tokens += count;
  }

  counts(nowMs: number): TurnExecutionWindowCounts {
    return {
      agent_rounds: this.rounds,
      tool_calls: this.toolCalls,
      wall_clock_ms: Math.max(0, Math.round(nowMs - this.startedAtMs)),
      provider_tokens: this.tokens,
    };
  }
}

/**
 * The first window limit the counts have reached, or undefined while the window may go on.
 * A window that has not run a round yet is never exhausted, so every window makes progress.
 */
export function exhaustedBy(
  counts: TurnExecutionWindowCounts,
  limits: TurnExecutionWindowLimits,
): TurnExecutionWindowExhaustionReason | undefined {
  if (counts.agent_rounds === 0) return undefined;
  return LIMITS.find(([limit, count]) => counts[count] >= limits[limit])?.[0];
}

/**
 * The first total the counts (summed since the turn started or was last resumed) have
 * reached, named by the window limit of the same count, or undefined while the turn may go on.
 */
export function totalReached(counts: TurnExecutionWindowCounts, totals: WindowTotals): TurnExecutionWindowExhaustionReason | undefined {
  if (counts.agent_rounds === 0) return undefined;
  return LIMITS.find(([, count]) => counts[count] >= totals[TOTALS[count]])?.[0];
}
