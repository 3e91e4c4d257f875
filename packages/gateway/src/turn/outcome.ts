/** What every way of ending a turn shares: the usage of a turn that used no tokens, and the reason a cancel gave. */
import type { TurnUsage } from "@turnspec/protocol/types";

/** The usage of a turn nothing was counted for (a run that never reached a model, a runtime that reports none). */
export const zeroUsage = (): TurnUsage => ({ input_tokens: 0, output_tokens: 0, total_tokens: 0 });

/** Why a turn's signal was aborted, as the turn's Interrupted error says it. */
export function reasonOf(signal: AbortSignal): string {
  const reason = signal.reason as unknown;
  return reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "the turn was cancelled";
}
