/**
 * The agent loop (tool-loop.md): record the user message; then, round after round,
 * rebuild the conversation from the log, call the provider streaming its deltas, run the
 * tool calls it returns; stop at the final answer. A provider failure fails the turn and
 * keeps any partial text as an audit item. Chat mode is one provider call without tools.
 */
import { faultOn } from "../faults.js";
import type { TurnFailure, TurnItem, TurnUsage } from "../../generated/types.js";
import { classifyToolCall } from "../permissions/classify.js";
import { outsideRoots } from "../permissions/paths.js";
import { decide } from "../permissions/policy.js";
import { scopeOf } from "../permissions/scope.js";
import { processEnvironment } from "../permissions/security.js";
import { ProviderError, type ProviderEvent, type ToolCall } from "../providers/provider.js";
import { parseToolArguments } from "../tools/registry.js";
import type { Tool } from "../tools/tool.js";
import type { Gateway, GatewayOptions } from "./gateway.js";
import { DELTA_FIELD } from "./fold.js";
import { historyOf } from "./history.js";
import { spawnAgentTool } from "./spawn-agent.js";

/** The delta notification of each output stream. */
const DELTA_METHOD = {
  stdout: "item/command_execution/output_delta",
  stderr: "item/command_execution/output_delta",
  file_change: "item/file_change/output_delta",
  tool_progress: "item/tool/progress",
} as const;

const zeroUsage = (): TurnUsage => ({ input_tokens: 0, output_tokens: 0, total_tokens: 0 });

export class TurnRunner {
  private readonly tools: Map<string, Tool>;

  constructor(
    private readonly gateway: Gateway,
    private readonly options: GatewayOptions,
  ) {
    const tools = [...options.tools, spawnAgentTool(gateway)];
    this.tools = new Map(tools.map((t) => [t.spec.name, t]));
  }

  private itemId(turnId: string): string {
    return `${turnId}_item_${this.options.store.lastSequence(turnId) + 1}`;
  }

  private toolNameOf = (item: TurnItem): string => {
    if (item.type === "dynamicToolCall") return item.tool_name;
    for (const tool of this.tools.values()) if (tool.itemType === item.type) return tool.spec.name;
    return item.type;
  };

  async run(threadId: string, turnId: string, signal: AbortSignal, depth: number): Promise<void> {
    const g = this.gateway;
    const turn = g.turnState(turnId)!.turn;
    const thread = g.thread(threadId);
    const usage = zeroUsage();
    const provider = this.options.providers.get(turn.model_provider ?? "");
    if (!provider) {
      g.finish(threadId, turnId, { status: "Failed", usage, error: { kind: "provider_error", message: `model provider "${turn.model_provider}" is not configured on this gateway`, retryable: false } });
      return;
    }
    const agent = (turn.mode ?? thread.mode) === "Agent";
    const specs = agent ? [...this.tools.values()].filter((t) => t.spec.name !== "spawn_agent" || depth < this.options.config.maxSpawnDepth).map((t) => t.spec) : [];
    const interrupted = (): void => {
      g.finish(threadId, turnId, { status: "Interrupted", usage, error: { kind: "cancelled", message: reasonOf(signal), retryable: false } });
    };

    for (let round = 1; ; round++) {
      if (signal.aborted) return interrupted();
      if (round > this.options.config.maxAgentRounds) {
        g.finish(threadId, turnId, { status: "Failed", usage, error: { kind: "budget_exhausted", message: `the turn reached its limit of ${this.options.config.maxAgentRounds} model calls`, retryable: false } });
        return;
      }
      const history = this.history(threadId, turnId);
      let message: { id: string; text: string } | undefined;
      let calls: readonly ToolCall[] = [];
      // Only what the provider throws is a provider failure: an error of the gateway's own
      // (writing the log, say) propagates and ends the turn as an internal failure.
      let failedWith: unknown;
      let events: AsyncIterator<ProviderEvent> | undefined;
      try {
        events = provider.stream({ model: turn.model ?? this.options.config.defaultModel, messages: history, tools: specs, signal })[Symbol.asyncIterator]();
      } catch (error) {
        failedWith = error;
      }
      while (events) {
        let next: IteratorResult<ProviderEvent>;
        try {
          next = await events.next();
        } catch (error) {
          failedWith = error;
          break;
        }
        if (next.done) break;
        const event = next.value;
        if (event.type === "text_delta") {
          if (!message) {
            message = { id: this.itemId(turnId), text: "" };
            if (!faultOn("notifications-out-of-order")) g.publish(threadId, turnId, "item/started", { item_id: message.id, item: { type: "agentMessage", id: message.id, status: "in_progress", round, text: "" } });
          }
          message.text += event.text;
          g.publish(threadId, turnId, "item/agent_message/delta", { item_id: message.id, stream: "agent_message", delta: event.text });
          if (faultOn("notifications-out-of-order") && message.text === event.text) g.publish(threadId, turnId, "item/started", { item_id: message.id, item: { type: "agentMessage", id: message.id, status: "in_progress", round, text: "" } });
        } else if (event.type === "reasoning") {
          const id = this.itemId(turnId);
          const item: TurnItem = { type: "reasoning", id, status: "completed", round, text: event.text };
          g.publish(threadId, turnId, "item/started", { item_id: id, item: { ...item, status: "in_progress" } });
          g.publish(threadId, turnId, "item/completed", { item_id: id, item });
        } else if (event.type === "tool_calls") {
          calls = event.calls;
        } else {
          usage.input_tokens += event.input_tokens;
          usage.output_tokens += event.output_tokens;
          usage.total_tokens = usage.input_tokens + usage.output_tokens;
        }
      }
      if (failedWith !== undefined) {
        if (message) {
          // Partial text is kept as audit evidence; history leaves it out (history.ts).
          const status = signal.aborted ? "cancelled" : "failed";
          g.publish(threadId, turnId, "item/completed", { item_id: message.id, item: { type: "agentMessage", id: message.id, status, round, text: message.text, partial: true } });
        }
        if (signal.aborted) return interrupted();
        const failure: TurnFailure =
          failedWith instanceof ProviderError
            ? { kind: "provider_error", message: failedWith.message, retryable: failedWith.retryable }
            : { kind: "provider_error", message: `the model provider failed: ${(failedWith as Error).message}`, retryable: false };
        g.finish(threadId, turnId, { status: "Failed", usage, error: failure });
        return;
      }
      if (message) g.publish(threadId, turnId, "item/completed", { item_id: message.id, item: { type: "agentMessage", id: message.id, status: "completed", round, text: message.text } });
      if (!agent || calls.length === 0) {
        g.finish(threadId, turnId, { status: "Completed", usage });
        return;
      }
      for (const call of calls) {
        if (signal.aborted) return interrupted();
        await this.runTool(threadId, turnId, call, round, signal, depth, thread.cwd);
      }
    }
  }

  /** The conversation so far: earlier turns of the thread, then this turn, from the log. */
  private history(threadId: string, turnId: string) {
    const turns = this.options.store
      .turnsOfThread(threadId)
      .map((ref) => ({ ref, state: this.gateway.turnState(ref.turn_id) }))
      .filter(({ ref, state }) => state && (ref.turn_id === turnId || state.turn.status === "Completed"))
      .map(({ state }) => state!.items);
    return historyOf(turns, this.toolNameOf);
  }

  private async runTool(threadId: string, turnId: string, call: ToolCall, round: number, signal: AbortSignal, depth: number, cwd: string): Promise<void> {
    const g = this.gateway;
    const id = this.itemId(turnId);
    const tool = this.tools.get(call.name);
    const finishItem = (item: Record<string, unknown>) => g.publish(threadId, turnId, "item/completed", { item_id: id, item: item as unknown as TurnItem });

    if (!tool) {
      const message = `unknown tool "${call.name}": the tools are ${[...this.tools.keys()].join(", ")}`;
      const item = { type: "dynamicToolCall", id, status: "in_progress", round, tool_name: call.name, tool_call_id: call.id, arguments: safeArguments(call.arguments) };
      g.publish(threadId, turnId, "item/started", { item_id: id, item: item as unknown as TurnItem });
      finishItem({ ...item, status: "failed", outcome: "error", error: { message }, tool_result: message });
      return;
    }
    const parsed = parseToolArguments(tool, call.arguments);
    const args = parsed.ok ? parsed.args : safeArguments(call.arguments);
    const base: Record<string, unknown> = {
      type: tool.itemType,
      id,
      status: "in_progress",
      round,
      tool_call_id: call.id,
      ...(tool.itemType === "task" ? {} : { arguments: args }),
      ...(tool.itemType === "dynamicToolCall" ? { tool_name: tool.spec.name } : {}),
      ...describeSafely(tool, args, cwd),
    };
    g.publish(threadId, turnId, "item/started", { item_id: id, item: base as unknown as TurnItem });
    if (!parsed.ok) {
      finishItem({ ...base, status: "failed", outcome: "error", error: { message: parsed.error }, ...resultField(tool, parsed.error) });
      return;
    }
    const turnNow = g.turnState(turnId)!;
    const verdict = await this.permit(threadId, turnId, tool.spec.name, args, cwd, id, signal);
    if (!verdict.allowed && !faultOn("denied-tool-runs")) {
      finishItem({ ...base, status: signal.aborted ? "cancelled" : "declined", outcome: signal.aborted ? "cancelled" : "declined", error: { message: verdict.message }, ...resultField(tool, verdict.message) });
      return;
    }
    const security = turnNow.turn.security;
    const timeoutCap = security?.process.timeout_cap_ms ?? this.options.config.maxShellTimeoutMs;
    // The item as clients see it so far: deltas and updates folded in, as fold.ts does.
    let current: Record<string, unknown> = base;
    const result = await tool.run(args, {
      cwd,
      signal,
      env: security ? processEnvironment(security, this.options.env ?? process.env) : (this.options.env ?? process.env),
      maxTimeoutMs: Math.min(timeoutCap, this.options.config.maxShellTimeoutMs),
      turn: { thread_id: threadId, turn_id: turnId, depth },
      emit: (stream, delta) => {
        const field = DELTA_FIELD[stream];
        current = { ...current, [field]: `${(current[field] as string | undefined) ?? ""}${delta}` };
        g.publish(threadId, turnId, DELTA_METHOD[stream], { item_id: id, stream, delta });
      },
      update: (fields) => {
        current = { ...current, ...fields };
        g.publish(threadId, turnId, "item/updated", { item_id: id, item: current as unknown as TurnItem });
      },
    });
    const outcome = result.ok ? "success" : signal.aborted ? "cancelled" : result.item.timed_out === true ? "timed_out" : "error";
    const status = result.ok ? "completed" : signal.aborted ? "cancelled" : "failed";
    finishItem({ ...base, ...result.item, status, ...(tool.itemType === "task" ? {} : { outcome }), ...resultField(tool, result.content) });
  }

  /**
   * Decides whether one tool call may run: the policy of the turn's profile, then the
   * rules no mode overrides (a sandbox escape is always asked; a path outside the turn's
   * roots is never allowed silently), then an earlier allow_for_turn grant for the same
   * scope, and finally the client's answer to an approval request. Every decision is audited.
   */
  private async permit(
    threadId: string,
    turnId: string,
    toolName: string,
    args: Record<string, unknown>,
    cwd: string,
    itemId: string,
    signal: AbortSignal,
  ): Promise<{ allowed: true } | { allowed: false; message: string }> {
    const g = this.gateway;
    const state = g.turnState(turnId)!;
    const profile = state.turn.permission_profile;
    const call = classifyToolCall(toolName, args, cwd);
    const roots = [g.thread(threadId).cwd, ...(profile.effective_policy.allowed_paths ?? [])];
    const outside = profile.mode === "full_access" ? [] : outsideRoots(call.paths, roots);
    const scope = scopeOf(call.action, {
      tool: toolName,
      ...(call.command === undefined ? {} : { command: call.command }),
      ...(call.paths[0] === undefined ? {} : { path: call.paths[0] }),
      ...(call.domain === undefined ? {} : { domain: call.domain }),
    });
    const audit = { tool_name: toolName, action: call.action, scope_hash: scope.hash };
    let behavior = decide(profile.effective_policy, toolName, call.action);
    let reason = policyReason(profile.mode, call.action, behavior);
    if (behavior === "deny") {
      g.audit(threadId, turnId, { kind: "decision_denied", ...audit, behavior, decided_by: "policy", reason });
      return { allowed: false, message: `${toolName} is not allowed in this turn: ${reason}` };
    }
    if (call.escapeSandbox) {
      behavior = "ask";
      reason = "the call asks to run outside the sandbox, which always needs a one-time approval";
    } else if (outside.length > 0) {
      behavior = "ask";
      reason = `the call reaches ${outside.join(", ")}, outside the turn's roots`;
    }
    if (behavior === "allow") {
      g.audit(threadId, turnId, { kind: "decision_allowed", ...audit, behavior, decided_by: "policy", reason });
      return { allowed: true };
    }
    if (!call.escapeSandbox && state.grants.has(scope.hash) && !faultOn("allow-for-turn-ignored")) {
      g.audit(threadId, turnId, { kind: "decision_allowed", ...audit, behavior, decided_by: "turn_grant", reason: "an earlier allow_for_turn covers this scope" });
      return { allowed: true };
    }
    const resolution = await g.approvals.ask(
      {
        threadId,
        turnId,
        itemId,
        toolName,
        action: call.action,
        scopeHash: scope.hash,
        reason,
        summary: summaryOf(toolName, call, args),
        details: { arguments: args, ...(call.paths.length ? { paths: call.paths } : {}), ...(outside.length ? { resolved_outside_paths: outside } : {}), scope: scope.normalized },
        outsidePaths: outside,
        sandboxEscape: call.escapeSandbox,
      },
      signal,
    );
    if (resolution === "allow_once" || resolution === "allow_for_turn") {
      g.audit(threadId, turnId, { kind: "decision_allowed", ...audit, behavior, decided_by: "resolution", resolution, reason: `approved ${resolution}` });
      return { allowed: true };
    }
    g.audit(threadId, turnId, { kind: "decision_denied", ...audit, behavior, decided_by: "resolution", resolution, reason: DECLINED[resolution] ?? resolution });
    return { allowed: false, message: `${toolName} did not run: ${DECLINED[resolution] ?? resolution}` };
  }
}

/** A one-line description of a call for the approval prompt. */
function summaryOf(toolName: string, call: ReturnType<typeof classifyToolCall>, args: Record<string, unknown>): string {
  if (call.command !== undefined) return `${call.escapeSandbox ? "Run outside the sandbox" : "Run"}: ${call.command}`;
  if (call.domain !== undefined) return `Fetch ${String(args.url)}`;
  if (call.paths[0] !== undefined) return `${call.write ? "Write" : "Read"} ${call.paths[0]}`;
  return `Use ${toolName}`;
}

/** Why a decision went the way it did, in words for the audit log and the model. */
function policyReason(mode: string, action: string, behavior: string): string {
  return `the ${mode} profile ${behavior === "allow" ? "allows" : behavior === "deny" ? "denies" : "asks before"} ${action}`;
}

/** What the model is told when a call it made does not run. */
const DECLINED: Record<string, string> = {
  deny: "the user denied this call",
  expired: "the approval request expired without an answer, which counts as a denial",
  cancelled: "the approval request was cancelled with the turn",
};

/** Where a tool item keeps the text the model received: `tool_result`, or a task's `result`. */
function resultField(tool: Tool, text: string): Record<string, string> {
  return tool.itemType === "task" ? { result: text } : { tool_result: text };
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

/** The item fields a tool knows before it runs; with invalid arguments, placeholders that keep the item valid. */
function describeSafely(tool: Tool, args: Record<string, unknown>, cwd: string): Record<string, unknown> {
  try {
    const fields = tool.describe(args, { cwd });
    if (Object.values(fields).every((v) => v !== undefined)) return fields;
  } catch {
    // fall through to placeholders
  }
  const placeholders: Record<Tool["itemType"], Record<string, unknown>> = {
    commandExecution: { command: String(args.command ?? ""), cwd },
    fileChange: { path: String(args.path ?? ""), change_kind: "modify" },
    webFetch: { url: String(args.url ?? "") },
    dynamicToolCall: {},
    task: { prompt: String(args.prompt ?? "") },
  };
  return placeholders[tool.itemType];
}

function reasonOf(signal: AbortSignal): string {
  const reason = signal.reason as unknown;
  return reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "the turn was cancelled";
}
