/**
 * Recovery jobs and blocked turns. A turn blocks (a reached window total, exhausted
 * provider retries, a stop of the gateway) with a recovery job opened on an item, which
 * turn/resume continues through; every step is an event in the turn's log, so the fold
 * sees the jobs and a restarted gateway knows them. A graceful stop aborts running turns
 * with `GatewayShutdown`; a kill leaves only the log, from which the cut-off window's
 * counts are read back.
 */
import { randomUUID } from "node:crypto";
import type {
  ItemRecoveryKind,
  PromptManifest,
  Turn,
  TurnExecutionWindowCounts,
  TurnExecutionWindowExhaustionReason,
  TurnExecutionWindowStatus,
  TurnItem,
  TurnUsage,
} from "@turnspec/protocol/types";
import type { StoredEvent } from "../store/store.js";
import { asNotification, type TurnState } from "../log/fold.js";
import type { Clock, EventLog, ItemIds, TurnReader } from "../engine/ports.js";
import { zeroUsage } from "./outcome.js";
import { checkpointId, zeroCounts } from "./windows.js";
import { finishToolItem, isToolItem } from "./tool-items.js";

/** What recovery jobs are built from. */
export interface RecoveryPorts {
  readonly log: EventLog & TurnReader & ItemIds;
  readonly clock: Pick<Clock, "nowIso">;
}

/** How a turn is blocked: why, which recovery job, and how its current window ends. */
export interface BlockSpec {
  /** The window exhaustion reason the turn blocks for; also turn/blocked's reason. */
  readonly reason: TurnExecutionWindowExhaustionReason;
  /** What the recovery job recovers from. */
  readonly kind: ItemRecoveryKind;
  /** A recovery job already opened for this (a provider failure's), or undefined to open one. */
  readonly jobId?: string;
  /** Counts of the current window when it stopped. */
  readonly observed: TurnExecutionWindowCounts;
  /** Status the current window ends with (turn/execution_window/exhausted). */
  readonly windowStatus: TurnExecutionWindowStatus;
  /** Counts since the turn started or was last resumed, when a total was reached (turn/execution_window/blocked). */
  readonly totals?: TurnExecutionWindowCounts;
  /** The notice shown in the timeline. */
  readonly message: string;
  readonly usage: TurnUsage;
  /** The manifest of the last prompt compiled for the turn, recorded on the Blocked snapshot. */
  readonly promptManifest?: PromptManifest;
}

/** Opens recovery jobs and blocks turns, writing each step to the turn's log. */
export class RecoveryJobs {
  constructor(private readonly ports: RecoveryPorts) {}

  /** Publishes a gateway-authored notice as a completed systemEvent item; returns its id. */
  notice(threadId: string, turnId: string, level: "info" | "warning" | "error", code: string, message: string): string {
    const id = this.ports.log.nextItemId(turnId);
    const item: TurnItem = { type: "systemEvent", id, status: "completed", level, code, message };
    this.ports.log.publish(threadId, turnId, "item/started", { item_id: id, item: { ...item, status: "in_progress" } });
    this.ports.log.publish(threadId, turnId, "item/completed", { item_id: id, item });
    return id;
  }

  /** Opens a recovery job for an item (item/recovery_opened); returns its id. */
  openJob(
    threadId: string,
    turnId: string,
    itemId: string,
    kind: ItemRecoveryKind,
    exhaustionReason?: TurnExecutionWindowExhaustionReason,
  ): string {
    const id = `rec_${randomUUID().replace(/-/g, "")}`;
    this.ports.log.publish(threadId, turnId, "item/recovery_opened", {
      item_id: itemId,
      recovery_job_id: id,
      reason: kind,
      ...(exhaustionReason ? { exhaustion_reason: exhaustionReason } : {}),
    });
    return id;
  }

  /**
   * Blocks a turn: its current window ends (exhausted, then checkpointed so a resume can
   * continue from it), a recovery job is opened unless one is given, and turn/blocked
   * carries the Blocked snapshot. Nothing more is sent for the turn until turn/resume.
   */
  block(threadId: string, turnId: string, spec: BlockSpec): Turn {
    const state = this.ports.log.state(turnId)!;
    const window = state.windows.at(-1);
    if (window && !window.observed) {
      this.ports.log.publish(threadId, turnId, "turn/execution_window/exhausted", {
        window_id: window.window_id,
        reason: spec.reason,
        observed: spec.observed,
        status: spec.windowStatus,
      });
      this.ports.log.publish(threadId, turnId, "turn/execution_window/checkpointed", {
        window_id: window.window_id,
        checkpoint_id: checkpointId(turnId, window.window_index),
        status: "checkpointed",
      });
    }
    let jobId = spec.jobId;
    if (jobId === undefined) {
      const item = this.notice(threadId, turnId, "warning", spec.reason, spec.message);
      jobId = this.openJob(threadId, turnId, item, spec.kind, spec.kind === "execution_window_exhausted" ? spec.reason : undefined);
    }
    if (spec.totals && window) {
      this.ports.log.publish(threadId, turnId, "turn/execution_window/blocked", {
        window_id: window.window_id,
        reason: spec.reason,
        totals: spec.totals,
        recovery_job_id: jobId,
      });
    }
    const { completed_at: _completed, error: _error, ...current } = this.ports.log.state(turnId)!.turn;
    const manifest = spec.promptManifest ? { prompt_manifest: spec.promptManifest } : {};
    const turn: Turn = {
      ...current,
      ...manifest,
      status: "Blocked",
      usage: spec.usage,
      blocked: { reason: spec.reason, recovery_job_id: jobId },
    };
    this.ports.log.publish(threadId, turnId, "turn/blocked", { turn, reason: spec.reason, recovery_job_id: jobId });
    return turn;
  }

  /** Blocks a turn whose run stopped with the gateway: what was open is closed first, as a stop left it. */
  blockCutOffTurn(
    threadId: string,
    turnId: string,
    state: TurnState,
    observed: TurnExecutionWindowCounts,
    usage?: TurnUsage,
    promptManifest?: PromptManifest,
  ): Turn {
    const message = "the gateway stopped while the turn was running";
    for (const { request, resolution } of state.requests.values()) {
      if (resolution) continue;
      this.ports.log.publish(threadId, turnId, "turn/permission/request/resolved", {
        request_id: request.request_id,
        resolution: "cancelled",
        resolved_at: this.ports.clock.nowIso(),
        scope_hash: request.scope_hash,
      });
      this.ports.log.audit(threadId, turnId, {
        kind: "request_resolved",
        request_id: request.request_id,
        resolution: "cancelled",
        scope_hash: request.scope_hash,
        reason: "the gateway stopped while the request was open",
      });
    }
    // A question cut off with its run ends with it, like an approval: the resumed run asks again if it needs to.
    for (const { question, resolution } of state.questions.values()) {
      if (resolution) continue;
      this.ports.log.publish(threadId, turnId, "turn/question/resolved", {
        call_id: question.call_id,
        index: question.index,
        resolution: "cancelled",
        resolved_at: this.ports.clock.nowIso(),
      });
    }
    for (const item of state.items) {
      if (item.status !== "in_progress") continue;
      this.ports.log.publish(threadId, turnId, "item/completed", {
        item_id: item.id,
        item: cutOff(item, `${message}; the call did not finish`),
      });
    }
    return this.block(threadId, turnId, {
      reason: "runtime_shutdown_continuation",
      kind: "runtime_shutdown",
      observed,
      windowStatus: "interrupted",
      message: `${message}; resume it with turn/resume`,
      usage: usage ?? state.turn.usage ?? zeroUsage(),
      ...(promptManifest ? { promptManifest } : {}),
    });
  }
}

/** An item a stop left open, closed as cancelled with the reason the model and the client see. */
function cutOff(item: TurnItem, message: string): TurnItem {
  if (item.type === "agentMessage") return { ...item, status: "cancelled", partial: true };
  if (!isToolItem(item) || item.tool_call_id === undefined) return { ...item, status: "cancelled" };
  return finishToolItem(item, { status: "cancelled", outcome: "cancelled", error: { message }, resultText: message });
}

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
    const n = asNotification(event);
    if (n.method !== "item/started") continue;
    const { item } = n.params;
    if ("round" in item && item.round !== undefined) rounds.add(item.round);
    if ("tool_call_id" in item && item.tool_call_id !== undefined) toolCalls++;
  }
  const last = inWindow.at(-1);
  const elapsed = last ? Date.parse(last.recorded_at) - Date.parse(window.started_at) : 0;
  return { agent_rounds: rounds.size, tool_calls: toolCalls, wall_clock_ms: Math.max(0, elapsed), provider_tokens: 0 };
}
