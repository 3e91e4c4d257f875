/**
 * The agent loop (tool-loop.md): record the user message; then, round after round,
 * rebuild the conversation from the log, call the provider streaming its deltas, run the
 * tool calls it returns; stop at the final answer. Chat mode is one provider call without
 * tools.
 *
 * Rounds run in execution windows (windows.ts): between rounds a window that reached a
 * limit is checkpointed and continued in a new one, and a reached total blocks the turn.
 * A retryable provider failure is retried with backoff under a recovery job and blocks the
 * turn when the attempts run out; any other provider failure fails the turn, keeping
 * partial text as an audit item. A stop of the gateway blocks the turn; a resumed turn
 * runs on from the log, with rounds, usage and attempts counted on.
 */
import type {
  PromptManifest,
  TurnExecutionWindowCounts,
  TurnExecutionWindowExhaustionReason,
  TurnFailure,
  TurnItem,
  TurnUsage,
} from "@turnspec/protocol/types";
import { processEnvironment } from "../permissions/security.js";
import { scopeOf } from "../permissions/scope.js";
import { startTurnSandbox } from "../sandbox/turn.js";
import { fileConfinementOf } from "../tools/confined-open.js";
import type { GatewayFiles } from "../permissions/own-files.js";
import {
  ProviderError,
  type ChatMessage,
  type ModelProvider,
  type ProviderEvent,
  type ProviderRequest,
  type ToolCall,
  type ToolSpec,
} from "../providers/provider.js";
import { parseToolCall } from "../tools/arguments.js";
import type { BoundToolCall, ChildTurns, Tool, ToolContext, ToolResult } from "../tools/tool.js";
import { compressHistory, foldFirst } from "../prompt/compression.js";
import type { ResolvedConfig } from "../config.js";
import type { EventStore } from "../store/store.js";
import type { Approvals } from "../flows/approvals.js";
import type { Clock, EventLog, ItemIds, ThreadLookup, TurnExtras, TurnOutcome, TurnReader, TurnRun } from "../engine/ports.js";
import type { RecoveryJobs } from "./recovery.js";
import { ToolGate, type GateVerdict } from "./tool-gate.js";
import { finishToolItem, openToolItem, updateToolItem, type ToolItem, type ToolItemEnd } from "./tool-items.js";
import { appendToField } from "@turnspec/rpc";
import { promptManifest, skillsPrompt, type SkillEntry } from "../prompt/compiler.js";
import { DELTA_FIELD } from "../log/fold.js";
import { reasonOf, zeroUsage } from "./outcome.js";
import { isShutdown, type BlockSpec } from "./recovery.js";
import { backoffMs, sleep } from "./retry.js";
import { addCounts, checkpointId, exhaustedBy, totalReached, WindowMeter, windowId, zeroCounts } from "./windows.js";
import { historyOf } from "../prompt/history.js";
import { extensions } from "@turnspec/protocol/registry";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";

/** Provider events handled in a row before the round lets the event loop run (writes, commits, other requests). */
const BURST_EVENTS = 256;

/** The notification each delta stream is sent as (the ItemDeltaStream schema's x-sent-as). */
const DELTA_METHOD = extensions.ItemDeltaStream["x-sent-as"];

/** What one provider call gave: the tool calls of its answer, or why it failed. */
type RoundAnswer =
  | { readonly ok: true; readonly calls: readonly ToolCall[] }
  | { readonly ok: false; readonly message: string; readonly retryable: boolean };

/** The recovery job a provider call is retried under, and the attempt it is on. */
interface Recovery {
  readonly itemId: string;
  readonly jobId: string;
  readonly attempt: number;
  /** The attempt this episode of retries began with: the policy's attempts count from it. */
  readonly firstAttempt: number;
}

/** What the round loop calls: the log and the turn's state, the threads, the clock, approvals and recovery. */
export interface RunnerPorts {
  readonly log: EventLog & TurnReader & ItemIds;
  readonly threads: ThreadLookup;
  readonly clock: Clock;
  /** The gateway's own files: no tool reads or writes them, and the sandbox hides them. */
  readonly ownFiles?: GatewayFiles;
  readonly approvals: Pick<Approvals, "ask">;
  readonly recovery: Pick<RecoveryJobs, "block" | "blockCutOffTurn" | "notice" | "openJob">;
}

/** What the round loop runs with: configuration, providers, tools (spawn_agent among them), the store it reads history from. */
export interface RunnerSetup {
  readonly config: ResolvedConfig;
  readonly providers: ReadonlyMap<string, ModelProvider>;
  readonly tools: readonly Tool[];
  readonly store: Pick<EventStore, "turnsOfThread">;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export class TurnRunner {
  private readonly tools: Map<string, Tool>;
  private readonly gate: ToolGate;

  constructor(
    private readonly gateway: RunnerPorts,
    private readonly options: RunnerSetup,
  ) {
    this.tools = new Map(options.tools.map((t) => [t.spec.name, t]));
    this.gate = new ToolGate(gateway);
  }

  private itemId(turnId: string): string {
    return this.gateway.log.nextItemId(turnId);
  }

  private toolNameOf = (item: TurnItem): string => {
    if (item.type === "dynamicToolCall") return item.tool_name;
    for (const tool of this.tools.values()) if (tool.itemType === item.type) return tool.spec.name;
    return item.type;
  };

  /** Runs one turn to its end; `extras` gives what the run adds to the built-in tools and the prompt (its capabilities' tools and skills). */
  async run(run: TurnRun, extras: () => Promise<TurnExtras>): Promise<void> {
    const { threadId, turnId, signal, depth, resumed } = run;
    const g = this.gateway;
    const config = this.options.config;
    const begin = g.log.state(turnId)!;
    const turn = begin.turn;
    const thread = g.threads.thread(threadId);
    // Usage goes on from the snapshot a resumed turn was blocked with.
    const usage: TurnUsage = { ...(turn.usage ?? zeroUsage()) };
    const provider = this.options.providers.get(turn.model_provider ?? "");
    if (!provider) {
      run.finish({
        status: "Failed",
        usage,
        error: {
          kind: "provider_error",
          message: `model provider "${turn.model_provider}" is not configured on this gateway`,
          retryable: false,
        },
      });
      return;
    }
    const agent = (turn.mode ?? thread.mode) === "Agent";
    const added = await extras();
    // The turn's dynamic tools come after the built-in ones, which keep their names.
    const tools = new Map(this.tools);
    for (const tool of added.tools) if (!tools.has(tool.spec.name)) tools.set(tool.spec.name, tool);
    const specs = agent
      ? [...tools.values()].filter((t) => t.spec.name !== "spawn_agent" || depth < config.maxSpawnDepth).map((t) => t.spec)
      : [];
    const skills = added.skills.map((s) => ({ slug: s.slug, name: s.name, description: s.description }));
    const nowMs = () => g.clock.now().getTime();

    // The current window: opened here for a new turn, by turn/resume for a resumed one.
    let window = begin.windows.at(-1);
    if (!window) {
      g.log.publish(threadId, turnId, "turn/execution_window/started", {
        window_id: windowId(turnId, 0),
        window_index: 0,
        limits: config.windowLimits,
        status: "running",
      });
      window = g.log.state(turnId)!.windows.at(-1)!;
    }
    let meter = new WindowMeter(window.window_id, window.window_index, nowMs());
    /** Counts of the windows ended since the turn started or was resumed, against the totals. */
    let ended = zeroCounts();
    // The tool-loop budget counts over the whole turn, resumes included; rounds number on.
    const rounds = new Set(begin.items.map((i) => (i as { round?: number }).round).filter((r): r is number => r !== undefined));
    let turnRounds = rounds.size;
    let turnToolCalls = begin.items.filter((i) => (i as { tool_call_id?: string }).tool_call_id !== undefined).length;
    let round = Math.max(0, ...rounds) + 1;
    let recovery: Recovery | undefined = resumed
      ? { itemId: resumed.item_id, jobId: resumed.recovery_job_id, attempt: resumed.attempts + 1, firstAttempt: resumed.attempts + 1 }
      : undefined;

    /** The manifest of the last prompt compiled, recorded on the turn when it ends or blocks. */
    let manifest: PromptManifest | undefined;
    const end = (outcome: TurnOutcome): void => void run.finish({ ...outcome, ...(manifest ? { promptManifest: manifest } : {}) });
    const block = (spec: BlockSpec): void =>
      void g.recovery.block(threadId, turnId, { ...spec, ...(manifest ? { promptManifest: manifest } : {}) });
    const stopped = (): void => {
      if (isShutdown(signal)) g.recovery.blockCutOffTurn(threadId, turnId, g.log.state(turnId)!, meter.counts(nowMs()), usage, manifest);
      else end({ status: "Interrupted", usage, error: { kind: "cancelled", message: reasonOf(signal), retryable: false } });
    };

    for (; ; round++) {
      if (signal.aborted) return stopped();
      if (turnRounds >= config.maxAgentRounds)
        return end(this.overBudget(threadId, turnId, "rounds", config.maxAgentRounds, turnRounds, usage));
      if (turnToolCalls >= config.maxToolCalls)
        return end(this.overBudget(threadId, turnId, "tool_calls", config.maxToolCalls, turnToolCalls, usage));
      const observed = meter.counts(nowMs());
      const sinceResume = addCounts(ended, observed);
      const total = totalReached(sinceResume, config.windowTotals);
      const exhausted = exhaustedBy(observed, config.windowLimits);
      if (total) {
        block({
          reason: exhausted ?? total,
          kind: "execution_window_exhausted",
          observed,
          windowStatus: "exhausted",
          totals: sinceResume,
          message: `the turn reached its total budget (${total.replace(/_per_window$/, "")}) since it started or was last resumed; resume it with turn/resume`,
          usage,
        });
        return;
      }
      if (exhausted) {
        meter = this.continueInNewWindow(threadId, turnId, meter, exhausted, observed);
        ended = sinceResume;
      }

      const model = turn.model ?? config.defaultModel;
      let answer: RoundAnswer;
      for (;;) {
        answer = await this.providerRound(
          threadId,
          turnId,
          provider,
          { model, tools: specs, signal, attempt: recovery?.attempt ?? 1 },
          round,
          usage,
          meter,
          skills,
          (compiled) => (manifest = compiled),
        );
        if (answer.ok || signal.aborted || !answer.retryable) break;
        // A retryable failure: retried with backoff under one recovery job, until the policy's attempts are spent.
        const policy = config.providerRetry;
        const attempt = recovery?.attempt ?? 1;
        if (!recovery) {
          const itemId = g.recovery.notice(
            threadId,
            turnId,
            "warning",
            "provider_retry",
            `the model provider failed (${answer.message}); the call is retried`,
          );
          recovery = { itemId, jobId: g.recovery.openJob(threadId, turnId, itemId, "provider_failure"), attempt, firstAttempt: attempt };
        }
        const failures = attempt - recovery.firstAttempt + 1;
        if (failures >= policy.max_attempts) {
          g.log.publish(threadId, turnId, "item/recovery_exhausted", {
            item_id: recovery.itemId,
            attempts: attempt,
            error: answer.message,
            recovery_job_id: recovery.jobId,
          });
          block({
            reason: "provider_failure_continuation",
            kind: "provider_failure",
            jobId: recovery.jobId,
            observed: meter.counts(nowMs()),
            windowStatus: "failed",
            message: `the model provider failed ${failures} times (${answer.message}); resume the turn with turn/resume`,
            usage,
          });
          return;
        }
        const delayMs = backoffMs(policy, failures);
        g.log.publish(threadId, turnId, "item/retry_scheduled", {
          item_id: recovery.itemId,
          attempt: attempt + 1,
          max_attempts: recovery.firstAttempt + policy.max_attempts - 1,
          delay_ms: delayMs,
          next_attempt_at: new Date(nowMs() + delayMs).toISOString(),
          error: answer.message,
        });
        if (!(await sleep(delayMs, signal))) break;
        recovery = { ...recovery, attempt: attempt + 1 };
        g.log.publish(threadId, turnId, "item/retry_attempt_started", { item_id: recovery.itemId, attempt: recovery.attempt });
      }
      if (signal.aborted) return stopped();
      if (!answer.ok) {
        const failure: TurnFailure = { kind: "provider_error", message: answer.message, retryable: answer.retryable };
        end({ status: "Failed", usage, error: failure });
        return;
      }
      if (recovery) {
        g.log.publish(threadId, turnId, "item/recovery_succeeded", {
          item_id: recovery.itemId,
          attempt: recovery.attempt,
          recovery_job_id: recovery.jobId,
        });
        recovery = undefined;
      }
      meter.round();
      turnRounds++;
      if (!agent || answer.calls.length === 0) {
        end({ status: "Completed", usage });
        return;
      }
      for (const call of answer.calls) {
        if (signal.aborted) return stopped();
        meter.toolCall();
        turnToolCalls++;
        await this.runTool(threadId, turnId, tools, call, round, signal, depth, thread.cwd, run.children);
      }
    }
  }

  /** Ends the window `meter` counts (exhausted, checkpointed) and opens the next one (continued, started); returns its meter. */
  private continueInNewWindow(
    threadId: string,
    turnId: string,
    meter: WindowMeter,
    reason: TurnExecutionWindowExhaustionReason,
    observed: TurnExecutionWindowCounts,
  ): WindowMeter {
    const g = this.gateway;
    const next = meter.index + 1;
    const checkpoint = checkpointId(turnId, meter.index);
    g.log.publish(threadId, turnId, "turn/execution_window/exhausted", {
      window_id: meter.windowId,
      reason,
      observed,
      status: "exhausted",
    });
    g.log.publish(threadId, turnId, "turn/execution_window/checkpointed", {
      window_id: meter.windowId,
      checkpoint_id: checkpoint,
      status: "checkpointed",
    });
    g.log.publish(threadId, turnId, "turn/execution_window/continued", {
      previous_window_id: meter.windowId,
      window_id: windowId(turnId, next),
      window_index: next,
      checkpoint_id: checkpoint,
      reason,
    });
    g.log.publish(threadId, turnId, "turn/execution_window/started", {
      window_id: windowId(turnId, next),
      window_index: next,
      limits: this.options.config.windowLimits,
      status: "running",
    });
    return new WindowMeter(windowId(turnId, next), next, g.clock.now().getTime());
  }

  /** The tool loop hit a budget that holds over the whole turn: turn/tool_loop/budget_exceeded, and the turn fails with the outcome returned. */
  private overBudget(
    threadId: string,
    turnId: string,
    budget: "rounds" | "tool_calls",
    limit: number,
    observed: number,
    usage: TurnUsage,
  ): TurnOutcome {
    this.gateway.log.publish(threadId, turnId, "turn/tool_loop/budget_exceeded", { budget, limit, observed });
    const what = budget === "rounds" ? "model calls" : "tool calls";
    return {
      status: "Failed",
      usage,
      error: { kind: "budget_exhausted", message: `the turn reached its limit of ${limit} ${what}`, retryable: false },
    };
  }

  /**
   * One provider call: rebuilds the conversation from the log, streams the answer into
   * items, and counts its usage. Only what the provider throws is a provider failure: an
   * error of the gateway's own (writing the log, say) propagates and ends the turn as an
   * internal failure. Partial text of a failed call is kept as audit evidence (prompt/history.ts
   * leaves it out).
   */
  private async providerRound(
    threadId: string,
    turnId: string,
    provider: ModelProvider,
    request: Omit<ProviderRequest, "messages">,
    round: number,
    usage: TurnUsage,
    meter: WindowMeter,
    skills: readonly SkillEntry[],
    compiled: (manifest: PromptManifest) => void,
  ): Promise<RoundAnswer> {
    const g = this.gateway;
    const history = this.prompt(threadId, turnId, request.tools, skills, compiled);
    // The answer's pieces, joined once when it completes.
    let message: { id: string; pieces: string[] } | undefined;
    let calls: readonly ToolCall[] = [];
    let failedWith: unknown;
    let events: AsyncIterator<ProviderEvent | readonly ProviderEvent[]> | undefined;
    try {
      events = provider.stream({ ...request, messages: history })[Symbol.asyncIterator]();
    } catch (error) {
      failedWith = error;
    }
    let sinceYield = 0;
    const take = (event: ProviderEvent): void => {
      if (event.type === "text_delta") {
        if (!message) {
          message = { id: this.itemId(turnId), pieces: [] };
          g.log.publish(threadId, turnId, "item/started", {
            item_id: message.id,
            item: { type: "agentMessage", id: message.id, status: "in_progress", round, text: "" },
          });
        }
        message.pieces.push(event.text);
        g.log.publishDelta(threadId, turnId, DELTA_METHOD.agent_message, message.id, "agent_message", event.text);
      } else if (event.type === "reasoning") {
        const id = this.itemId(turnId);
        const item: TurnItem = { type: "reasoning", id, status: "completed", round, text: event.text };
        g.log.publish(threadId, turnId, "item/started", { item_id: id, item: { ...item, status: "in_progress" } });
        g.log.publish(threadId, turnId, "item/completed", { item_id: id, item });
      } else if (event.type === "tool_calls") {
        calls = event.calls;
      } else {
        usage.input_tokens += event.input_tokens;
        usage.output_tokens += event.output_tokens;
        usage.total_tokens = usage.input_tokens + usage.output_tokens;
        meter.providerTokens(event.input_tokens + event.output_tokens);
      }
    };
    while (events) {
      let next: IteratorResult<ProviderEvent | readonly ProviderEvent[]>;
      try {
        next = await events.next();
      } catch (error) {
        failedWith = error;
        break;
      }
      if (next.done) break;
      const value = next.value;
      const many = isEventList(value);
      const count = many ? value.length : 1;
      for (let i = 0; i < count; i++) {
        // A provider that produces a burst without waiting (a chunk holding many deltas) would
        // hold the event loop for the whole burst: the frames would pile up unwritten while
        // the output waits to drain, and other connections' requests would wait behind it.
        if (++sinceYield === BURST_EVENTS) {
          sinceYield = 0;
          await yieldToEventLoop();
        }
        take(many ? value[i]! : value);
      }
    }
    if (failedWith !== undefined) {
      if (message) {
        const status = request.signal.aborted ? "cancelled" : "failed";
        g.log.publish(threadId, turnId, "item/completed", {
          item_id: message.id,
          item: { type: "agentMessage", id: message.id, status, round, text: message.pieces.join(""), partial: true },
        });
      }
      return failedWith instanceof ProviderError
        ? { ok: false, message: failedWith.message, retryable: failedWith.retryable }
        : { ok: false, message: `the model provider failed: ${(failedWith as Error).message}`, retryable: false };
    }
    if (message)
      g.log.publish(threadId, turnId, "item/completed", {
        item_id: message.id,
        item: { type: "agentMessage", id: message.id, status: "completed", round, text: message.pieces.join("") },
      });
    return { ok: true, calls };
  }

  /**
   * What one provider call is sent: the conversation rebuilt from the log, compacted when it
   * is over the configured budget. Compaction is decided once, before the turn's first
   * model call, so its events (context/compressing, context/compressed) come before any
   * output of the turn; later rounds fold the same earlier messages again, read from the
   * log (TurnState.compacted), and a turn that started within budget is not compacted
   * midway. The compiled prompt's manifest goes to `compiled`.
   */
  private prompt(
    threadId: string,
    turnId: string,
    tools: readonly ToolSpec[],
    skills: readonly SkillEntry[],
    compiled: (manifest: PromptManifest) => void,
  ): ChatMessage[] {
    const g = this.gateway;
    const { maxHistoryTokens, keepRecentMessages } = this.options.config.context;
    const full = this.history(threadId, turnId);
    const state = g.log.state(turnId)!;
    const firstCall = state.items.every((item) => item.type === "userMessage");
    let compression: { messages: ChatMessage[]; summarized: number } | undefined;
    if (state.compacted !== undefined) compression = foldFirst(full, state.compacted);
    else if (firstCall) {
      const decided = compressHistory(full, maxHistoryTokens, keepRecentMessages);
      if (decided) {
        g.log.publish(threadId, turnId, "context/compressing", {
          reason: "summarized",
          messages_before: decided.messagesBefore,
          estimated_tokens: decided.estimatedTokens,
        });
        g.log.publish(threadId, turnId, "context/compressed", {
          reason: "summarized",
          summarized_messages: decided.summarized,
          messages_after: decided.messages.length,
          summary_preview: decided.summary.slice(0, 200),
        });
        compression = decided;
      }
    }
    const messages = compression?.messages ?? full;
    const mode = g.log.state(turnId)!.turn.mode ?? g.threads.thread(threadId).mode;
    const diagnostics = compression
      ? [
          {
            severity: "info" as const,
            message: `${compression.summarized} earlier messages were folded into a summary to fit the history budget`,
            section_id: "history_summary",
          },
        ]
      : [];
    compiled(promptManifest({ mode, tools, messages, diagnostics, skills }));
    return skills.length ? [{ role: "system", content: skillsPrompt(skills) }, ...messages] : messages;
  }

  /** The conversation so far: earlier turns of the thread, then this turn, from the log. */
  private history(threadId: string, turnId: string) {
    const turns = this.options.store
      .turnsOfThread(threadId)
      .map((ref) => ({ ref, state: this.gateway.log.state(ref.turn_id) }))
      .filter(({ ref, state }) => state && (ref.turn_id === turnId || state.turn.status === "Completed"))
      .map(({ state }) => state!.items);
    return historyOf(turns, this.toolNameOf);
  }

  private async runTool(
    threadId: string,
    turnId: string,
    tools: ReadonlyMap<string, Tool>,
    call: ToolCall,
    round: number,
    signal: AbortSignal,
    depth: number,
    cwd: string,
    children: ChildTurns,
  ): Promise<void> {
    const g = this.gateway;
    const id = this.itemId(turnId);
    const tool = tools.get(call.name);
    const finish = (item: ToolItem, end: ToolItemEnd) =>
      g.log.publish(threadId, turnId, "item/completed", { item_id: id, item: finishToolItem(item, end) });
    const failed = (message: string): ToolItemEnd => ({ status: "failed", outcome: "error", error: { message }, resultText: message });

    if (!tool) {
      const message = `unknown tool "${call.name}": the tools are ${[...tools.keys()].join(", ")}`;
      const item = openToolItem("dynamicToolCall", {
        id,
        round,
        toolCallId: call.id,
        toolName: call.name,
        args: safeArguments(call.arguments),
        described: {},
      });
      g.log.publish(threadId, turnId, "item/started", { item_id: id, item });
      finish(item, failed(message));
      return;
    }
    // The arguments are checked against the tool's schema here, once: the call is bound to them.
    const parsed = parseToolCall(tool, call.arguments);
    const args = parsed.ok ? parsed.args : safeArguments(call.arguments);
    const base = openToolItem(tool.itemType, {
      id,
      round,
      toolCallId: call.id,
      toolName: tool.spec.name,
      args,
      described: parsed.ok ? describeSafely(tool, parsed.call, args, cwd) : placeholders(tool, args, cwd),
    });
    g.log.publish(threadId, turnId, "item/started", { item_id: id, item: base });
    if (!parsed.ok) {
      finish(base, failed(parsed.error));
      return;
    }
    const bound = parsed.call;
    const turnNow = g.log.state(turnId)!;
    // A question to the user is the user's decision already: it is not gated behind an approval.
    const verdict: GateVerdict = tool.asksUser
      ? { allowed: true }
      : await this.gate.permit(
          threadId,
          turnId,
          tool.spec.name,
          args,
          cwd,
          id,
          signal,
          tool.permissionAction,
          bound.approvalContext({ thread_id: threadId, turn_id: turnId }),
        );
    if (!verdict.allowed) {
      const ended = signal.aborted ? "cancelled" : "declined";
      finish(base, { status: ended, outcome: ended, error: { message: verdict.message }, resultText: verdict.message });
      return;
    }
    const security = turnNow.turn.security;
    const timeoutCap = security?.process.timeout_cap_ms ?? this.options.config.maxShellTimeoutMs;
    // A write the tool's output (or its proxy's audit) could not make, from an event handler
    // that has nobody to throw to: the tool is stopped, its processes killed, and the call
    // fails the turn once the tool has returned.
    const stopped = new AbortController();
    let lostWrite: { readonly error: unknown } | undefined;
    const writing = (write: () => void): void => {
      if (lostWrite) return;
      try {
        write();
      } catch (error) {
        lostWrite = { error };
        stopped.abort(error);
      }
    };
    // A connection the turn's network proxy refuses is a denial like any other: audited.
    const sandbox = await startTurnSandbox(
      security,
      this.options.config.sandbox,
      ({ host, port, reason }) =>
        writing(() =>
          g.log.audit(threadId, turnId, {
            kind: "decision_denied",
            tool_name: "shell",
            action: "network",
            behavior: "deny",
            decided_by: "config",
            scope_hash: scopeOf("network", { domain: host, port }).hash,
            reason,
          }),
        ),
      g.ownFiles,
    );
    const files = fileConfinementOf(security, verdict.approvedOutside ?? []);
    // The item as clients see it so far: deltas and updates folded in, as fold.ts does. Output
    // deltas are kept as pieces and built into it only when an update sends the whole item.
    let current: ToolItem = base;
    const output = new Map<string, string[]>();
    const built = (): ToolItem => {
      for (const [field, pieces] of output) current = appendToField(current, field, pieces.join(""));
      output.clear();
      return current;
    };
    const context: ToolContext = {
      cwd,
      signal: AbortSignal.any([signal, stopped.signal]),
      env: security ? processEnvironment(security, this.options.env ?? process.env) : (this.options.env ?? process.env),
      ...(sandbox ? { sandbox } : {}),
      ...(files ? { files } : {}),
      ...(g.ownFiles ? { ownFiles: g.ownFiles } : {}),
      maxTimeoutMs: Math.min(timeoutCap, this.options.config.maxShellTimeoutMs),
      turn: { thread_id: threadId, turn_id: turnId, depth },
      callId: call.id,
      itemId: id,
      children,
      emit: (stream, delta) => {
        const field = DELTA_FIELD[stream];
        const pieces = output.get(field);
        if (pieces) pieces.push(delta);
        else output.set(field, [delta]);
        writing(() => g.log.publishDelta(threadId, turnId, DELTA_METHOD[stream], id, stream, delta));
      },
      update: (fields) => {
        current = updateToolItem(built(), fields);
        writing(() => g.log.publish(threadId, turnId, "item/updated", { item_id: id, item: current }));
      },
    };
    const result = await this.runWithRetries(threadId, turnId, id, tool.spec.name, bound, context);
    if (lostWrite) throw lostWrite.error;
    const outcome = result.ok
      ? "success"
      : signal.aborted
        ? "cancelled"
        : result.item.timed_out === true || result.timeout !== undefined
          ? "timed_out"
          : "error";
    const status = result.ok ? "completed" : signal.aborted ? "cancelled" : "failed";
    finish(base, { status, outcome, resultText: result.content, reported: result.item });
  }

  /**
   * Runs a tool call, retrying a failure the tool calls retryable under the tool retry
   * policy (item/tool/retry_scheduled, then retry_resolved or retry_exhausted). An attempt
   * past its deadline is reported as item/timeout_detected.
   */
  private async runWithRetries(
    threadId: string,
    turnId: string,
    itemId: string,
    toolName: string,
    call: BoundToolCall,
    context: ToolContext,
  ): Promise<ToolResult> {
    const g = this.gateway;
    const policy = this.options.config.toolRetry;
    for (let attempt = 1; ; attempt++) {
      const result = await call.run(context);
      if (result.timeout) g.log.publish(threadId, turnId, "item/timeout_detected", { item_id: itemId, ...result.timeout, attempt });
      const retry = !result.ok && result.retryable === true && !context.signal.aborted;
      if (!retry) {
        if (attempt > 1)
          g.log.publish(threadId, turnId, "item/tool/retry_resolved", {
            item_id: itemId,
            tool_name: toolName,
            attempts: attempt,
            outcome: result.ok ? "succeeded" : "failed",
          });
        return result;
      }
      const error = result.content.split("\n", 1)[0] ?? result.content;
      if (attempt >= policy.max_attempts) {
        g.log.publish(threadId, turnId, "item/tool/retry_exhausted", { item_id: itemId, tool_name: toolName, attempts: attempt, error });
        return result;
      }
      const delayMs = backoffMs(policy, attempt);
      g.log.publish(threadId, turnId, "item/tool/retry_scheduled", {
        item_id: itemId,
        tool_name: toolName,
        attempt: attempt + 1,
        max_attempts: policy.max_attempts,
        delay_ms: delayMs,
        error,
      });
      if (!(await sleep(delayMs, context.signal))) return result;
    }
  }
}

/** The call's arguments as an object, even when the model sent something else (kept for the record). */
function safeArguments(json: string): Record<string, unknown> {
  try {
    const value = JSON.parse(json) as unknown;
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
  } catch {
    return { raw: json };
  }
}

/** The item fields a tool knows before it runs; placeholders that keep the item valid when the tool cannot say. */
function describeSafely(tool: Tool, call: BoundToolCall, args: Record<string, unknown>, cwd: string): Record<string, unknown> {
  try {
    const fields = call.describe({ cwd });
    if (Object.values(fields).every((v) => v !== undefined)) return fields;
  } catch {
    // fall through to placeholders
  }
  return placeholders(tool, args, cwd);
}

/** The item fields of a call whose arguments its tool refused, or could not describe: what the arguments hold, or empty. */
function placeholders(tool: Tool, args: Record<string, unknown>, cwd: string): Record<string, unknown> {
  const byType: Record<Tool["itemType"], Record<string, unknown>> = {
    commandExecution: { command: String(args.command ?? ""), cwd },
    fileChange: { path: String(args.path ?? ""), change_kind: "modify" },
    webFetch: { url: String(args.url ?? "") },
    dynamicToolCall: {},
    task: { prompt: String(args.prompt ?? "") },
  };
  return byType[tool.itemType];
}

/** Whether a provider gave several events at once. */
function isEventList(value: ProviderEvent | readonly ProviderEvent[]): value is readonly ProviderEvent[] {
  return Array.isArray(value);
}
