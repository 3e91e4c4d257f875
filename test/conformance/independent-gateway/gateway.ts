/**
 * A second gateway, written from the protocol documentation and docs/certify-contract.md
 * with the toolkit's generated server, not from runtime/: it makes its model calls without
 * streaming, ends a cancelled turn before answering turn/cancel, has its own tools and
 * argument names (tools.ts), its own id formats, and reports usage only when a turn ends.
 * It keeps everything in memory. Capabilities: core, permissions (supervised approvals
 * opened before the tool's item starts, grants for the turn kept on the turn) and work (a
 * projection of the turn's items, paged by position), routes (delegation routes between its
 * threads; a `delegate` call over one runs a child turn in the destination thread).
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import {
  createDispatcher,
  createNotifier,
  protocolError,
  serveConnection,
  type Handlers,
  type Notifier,
} from "../../../generated/server.js";
import type { NotificationParamsOf, ServerNotificationName } from "../../../generated/registry.js";
import type {
  AgentDelegationRouteAction,
  AgentDelegationRouteCreateParams,
  AgentDelegationRouteProjection,
  ExecutionBackend,
  Thread,
  ThreadTimelineBlock,
  Turn,
  TurnCapabilityResolution,
  TurnFailure,
  TurnItem,
  TurnItemEvent,
  TurnPermissionApprovalRequest,
  TurnPermissionApprovalResolution,
  TurnPermissionMode,
  TurnPermissionProfileSnapshot,
  TurnStartParams,
  TurnUsage,
  TurnWorkBlock,
  TurnWorkItem,
  ToolPermissionPolicySnapshot,
} from "../../../generated/types.js";
import type { Transport } from "@turnspec/rpc";
import {
  readInside,
  runCommand,
  stringArg,
  toolNamed,
  ToolArgumentError,
  TOOLS,
  writeInside,
  type CommandRun,
  type ToolSpec,
} from "./tools.js";

export interface IndependentOptions {
  /** The model's base URL, ending in /v1. */
  readonly providerUrl: string;
  /** The id delegation routes name this gateway by. Default gw_local. */
  readonly gatewayId?: string;
  /**
   * How the generated server is wired to the transport: its dispatcher fed frame by frame
   * with a notifier beside it (default), or the whole connection of `serveConnection`.
   */
  readonly serveWith?: "dispatcher" | "connection";
  /** The model name sent with each call. */
  readonly model?: string;
}

/** The one execution backend this gateway serves. */
const OWN_PROVIDER = "independent-openai-compatible";

type ChatMessage = {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
};
type ToolCall = { id: string; type: "function"; function: { name: string; arguments: string } };
type Completion = {
  choices?: { message?: { content?: string | null; reasoning_content?: string; tool_calls?: ToolCall[] }; finish_reason?: string }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number };
};

interface TurnState {
  turn: Turn;
  readonly threadId: string;
  readonly userText: string;
  readonly createdMicros: number;
  sequence: number;
  readonly events: TurnItemEvent[];
  readonly openItems: Map<string, TurnItem>;
  readonly abort: AbortController;
  command?: CommandRun;
  answer?: string;
  ended: boolean;
  /** Scope hashes granted allow_for_turn: they end with the turn. */
  readonly grants: Set<string>;
  /** Its approval requests still open. */
  readonly pending: Set<PendingRequest>;
  /** The work projection: one row per item but the user's message, in the order they opened. */
  readonly work: Map<string, TurnWorkItem>;
  projectionVersion: number;
  /** The sequence of the last item event the projection has taken in. */
  watermark: number;
  projectedAtMicros: number;
  /** Called once the turn has ended (a delegating turn waits on its child this way). */
  onEnd?: () => void;
}

interface PendingRequest {
  readonly request: TurnPermissionApprovalRequest;
  readonly turn: TurnState;
  resolution?: TurnPermissionApprovalResolution;
  resolvedAt?: string;
  readonly answered: (resolution: TurnPermissionApprovalResolution) => void;
}

interface ThreadState {
  readonly thread: Thread;
  readonly turns: TurnState[];
}

const POLICIES: Record<TurnPermissionMode, ToolPermissionPolicySnapshot> = {
  full_access: { ...policy("allow", "allow", "allow", "allow"), task_subagent: "allow" },
  auto_accept_edits: policy("allow", "allow", "ask", "ask"),
  supervised: policy("allow", "ask", "ask", "ask"),
};

function policy(
  read: "allow" | "ask",
  write: "allow" | "ask",
  shell: "allow" | "ask",
  network: "allow" | "ask",
): ToolPermissionPolicySnapshot {
  return {
    default_behavior: "ask",
    file_read: read,
    file_write: write,
    shell_command: shell,
    network,
    mcp_read: "ask",
    mcp_write_or_unknown: "ask",
    dynamic_skill_tool: "deny",
    computer_use: "deny",
    task_subagent: "deny",
  };
}

const micros = () => Date.now() * 1000;
const ACTIONS: readonly AgentDelegationRouteAction[] = [
  "send_message",
  "start_agent",
  "create_task",
  "schedule_task",
  "review_task_result",
  "deliver_result",
];
const invalidRoute = (detail: string, message: string) =>
  protocolError("route_validation_failed", `agent/route/create: ${message}`, { detail });

/** Serves the gateway on one transport (one client); resolves once the transport is started. */
export async function serveIndependentGateway(transport: Transport, options: IndependentOptions): Promise<void> {
  const threads = new Map<string, ThreadState>();
  const turnIds = new Set<string>();
  const model = options.model ?? "independent-model";
  let notifier: Notifier = createNotifier((frame) => transport.send(frame));

  const threadOf = (id: string) => {
    const state = threads.get(id);
    if (!state) throw protocolError("thread_not_found", `no thread ${id}`, { thread_id: id });
    return state;
  };
  const turnOf = (threadId: string, turnId: string) => {
    const state = threadOf(threadId).turns.find((t) => t.turn.id === turnId);
    if (!state) throw protocolError("turn_not_found", `thread ${threadId} has no turn ${turnId}`, { thread_id: threadId, turn_id: turnId });
    return state;
  };
  const snapshot = (state: TurnState): Turn => structuredClone(state.turn);

  /** Sends a notification of the turn with the turn's next sequence number, kept for turn/items when it is an item event. */
  function emit<N extends ServerNotificationName>(
    state: TurnState,
    name: N,
    params: Omit<NotificationParamsOf<N>, "sequence" | "thread_id" | "turn_id">,
  ): Promise<void> {
    const sequence = ++state.sequence;
    const full = { thread_id: state.threadId, turn_id: state.turn.id, sequence, ...params };
    if (name.startsWith("item/"))
      state.events.push({ sequence, method: name, params: structuredClone(full), recorded_at: new Date().toISOString() });
    return notifier.notify(name, full as unknown as NotificationParamsOf<N>);
  }

  function timelineChanged(state: TurnState): Promise<void> {
    return notifier.notify("thread/timeline/blocks/changed", {
      threadId: state.threadId,
      changedBlockIds: [`blk:${state.turn.id}`],
      turnId: state.turn.id,
    });
  }

  async function startItem(state: TurnState, item: TurnItem): Promise<void> {
    state.openItems.set(item.id, item);
    await emit(state, "item/started", { item_id: item.id, item: structuredClone(item) });
    await project(state, item);
  }

  async function completeItem(state: TurnState, item: TurnItem): Promise<void> {
    state.openItems.delete(item.id);
    await emit(state, "item/completed", { item_id: item.id, item: structuredClone(item) });
    await project(state, item);
  }

  const workState = (state: TurnState): TurnWorkBlock["state"] =>
    state.pending.size
      ? "awaiting_approval"
      : ({ InProgress: "running", Completed: "completed", Failed: "failed", Interrupted: "interrupted", Blocked: "blocked" } as const)[
          state.turn.status
        ];

  function workBlock(state: TurnState): TurnWorkBlock {
    const rows = [...state.work.values()];
    const count = (...statuses: string[]) => rows.filter((r) => statuses.includes(r.status)).length;
    const ended = state.turn.completed_at ? Date.parse(state.turn.completed_at) * 1000 : undefined;
    return {
      blockId: `blk:${state.turn.id}`,
      turnId: state.turn.id,
      presentation: { title: state.userText.slice(0, 80) || "(no text)", collapsed: ended !== undefined },
      state: workState(state),
      counts: {
        total: rows.length,
        inProgress: count("in_progress"),
        completed: count("completed"),
        failed: count("failed", "declined", "cancelled"),
      },
      cursors: { oldest: rows[0]?.orderKey ?? null, newest: rows.at(-1)?.orderKey ?? null },
      startedAtUnixMicros: state.createdMicros,
      ...(ended !== undefined ? { endedAtUnixMicros: ended } : {}),
      elapsedMs: Math.round(((ended ?? micros()) - state.createdMicros) / 1000),
    };
  }

  const freshness = (state: TurnState) => ({
    threadId: state.threadId,
    turnId: state.turn.id,
    projectionVersion: state.projectionVersion,
    sourceHighWatermark: state.watermark,
    projectionUpdatedAtUnixMicros: state.projectedAtMicros,
  });

  /** Takes an item's latest state into the work projection and announces the change. */
  async function project(state: TurnState, item: TurnItem): Promise<void> {
    if (item.type === "userMessage") return;
    const now = micros();
    const workItemId = `work:${item.id}`;
    const earlier = state.work.get(workItemId);
    state.work.set(workItemId, {
      workItemId,
      item: structuredClone(item),
      status: item.status,
      itemType: item.type,
      orderKey: earlier?.orderKey ?? String(state.work.size + 1).padStart(8, "0"),
      createdAtUnixMicros: earlier?.createdAtUnixMicros ?? now,
      updatedAtUnixMicros: now,
      sourceSequence: state.sequence,
      sourceUpdatedAtUnixMicros: now,
    });
    state.projectionVersion++;
    state.watermark = state.sequence;
    state.projectedAtMicros = now;
    await notifier.notify("turn/work/items/changed", { ...freshness(state), changedWorkItemIds: [workItemId] });
    await notifier.notify("turn/work/state/changed", { ...freshness(state), work: workBlock(state) });
  }

  /** Ends the turn once: open items are closed as cancelled, then the one terminal notification. */
  async function finish(
    state: TurnState,
    outcome: { usage?: TurnUsage } | { failure: TurnFailure; status: "Failed" | "Interrupted" },
  ): Promise<void> {
    if (state.ended) return;
    for (const pending of [...state.pending]) await resolveRequest(pending, "cancelled");
    state.ended = true;
    state.abort.abort();
    state.command?.kill();
    for (const item of [...state.openItems.values()]) await completeItem(state, { ...item, status: "cancelled" } as TurnItem);
    const thread = threadOf(state.threadId).thread;
    delete thread.active_turn_id;
    state.turn.completed_at = new Date().toISOString();
    state.turn.status = "failure" in outcome ? outcome.status : "Completed";
    state.projectionVersion++;
    state.projectedAtMicros = micros();
    await notifier.notify("turn/work/state/changed", { ...freshness(state), work: workBlock(state) });
    if ("failure" in outcome) {
      state.turn.status = outcome.status;
      state.turn.error = outcome.failure;
      await emit(state, "turn/failed", { turn: snapshot(state), error: outcome.failure });
    } else {
      state.turn.status = "Completed";
      if (outcome.usage) state.turn.usage = outcome.usage;
      await emit(state, "turn/completed", { turn: snapshot(state), ...(outcome.usage ? { usage: outcome.usage } : {}) });
    }
    await timelineChanged(state);
    state.onEnd?.();
  }

  /** The model's history for a new turn: earlier user messages and final answers. */
  function history(thread: ThreadState, current: TurnState): ChatMessage[] {
    const messages: ChatMessage[] = [{ role: "system", content: "You are the independent test gateway's agent." }];
    for (const earlier of thread.turns) {
      if (earlier === current) break;
      messages.push({ role: "user", content: earlier.userText });
      if (earlier.answer !== undefined) messages.push({ role: "assistant", content: earlier.answer });
    }
    messages.push({ role: "user", content: current.userText });
    return messages;
  }

  /** One model call, not streamed; a 5xx answer is tried again twice. */
  async function callModel(state: TurnState, messages: ChatMessage[], withTools: boolean): Promise<Completion> {
    const body = JSON.stringify({
      model,
      messages,
      stream: false,
      ...(withTools
        ? {
            tools: TOOLS.map((t) => ({
              type: "function",
              function: { name: t.name, description: t.description, parameters: t.parameters },
            })),
          }
        : {}),
    });
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(`${options.providerUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: state.abort.signal,
      });
      const text = await response.text();
      if (response.ok) return JSON.parse(text) as Completion;
      const retryable = response.status >= 500;
      if (retryable && attempt < 3) continue;
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
      } catch {
        // not JSON: keep the text
      }
      throw new ProviderError(`the model answered HTTP ${response.status}: ${message}`, retryable);
    }
  }

  const requests = new Map<string, PendingRequest>();
  const gatewayId = options.gatewayId ?? "gw_local";
  const routes = new Map<string, AgentDelegationRouteProjection>();
  const byKey = new Map<string, { params: string; routeId: string }>();

  /** Checks a create request against the rules of a route, naming the one it breaks. */
  function validateRoute(params: AgentDelegationRouteCreateParams): void {
    for (const [field, id] of [
      ["source_gateway_id", params.source_gateway_id],
      ["destination_gateway_id", params.destination_gateway_id],
    ] as const) {
      if (id !== gatewayId) throw invalidRoute("unknown_gateway", `${field} ${id} is not this gateway (${gatewayId})`);
    }
    threadOf(params.source_thread_id);
    threadOf(params.destination_thread_id);
    if (params.allowed_actions.length === 0) throw invalidRoute("no_actions", "allowed_actions is empty");
    const unknown = params.allowed_actions.find((a) => !ACTIONS.includes(a as AgentDelegationRouteAction));
    if (unknown !== undefined)
      throw invalidRoute("unknown_action", `allowed_actions names ${JSON.stringify(unknown)}, not one of ${ACTIONS.join(", ")}`);
    if (new Set(params.allowed_actions).size !== params.allowed_actions.length)
      throw invalidRoute("duplicate_actions", `allowed_actions names an action twice: ${params.allowed_actions.join(", ")}`);
    if (params.expires_at !== undefined && !(Date.parse(params.expires_at) > Date.now()))
      throw invalidRoute("invalid_expiry", `expires_at ${params.expires_at} is not in the future`);
    if (params.hop_count < 0 || params.max_hops < 0 || params.hop_count > params.max_hops)
      throw invalidRoute("invalid_hop_bounds", `hop_count ${params.hop_count} is outside 0..max_hops (${params.max_hops})`);
    const wants = params.disclosure?.resultReturn ?? "none";
    if (wants !== "none" && !params.allowed_actions.includes("deliver_result") && params.return_route_id === undefined) {
      throw invalidRoute(
        "incompatible_result_return",
        `resultReturn ${wants} needs deliver_result among allowed_actions or a return_route_id`,
      );
    }
    if (params.return_route_id !== undefined && !routes.has(params.return_route_id))
      throw invalidRoute("unknown_return_route", `return_route_id ${params.return_route_id} is not a route of this gateway`);
    // A cycle: the destination already reaches the source over live routes.
    const live = [...routes.values()].filter((r) => r.status === "active");
    const seen = new Set<string>();
    const reach = [params.destination_thread_id];
    while (reach.length) {
      const at = reach.pop()!;
      if (at === params.source_thread_id)
        throw invalidRoute(
          "cycle_detected",
          `a live route already leads from ${params.destination_thread_id} back to ${params.source_thread_id}`,
        );
      if (seen.has(at)) continue;
      seen.add(at);
      for (const r of live) if (r.source_thread_id === at) reach.push(r.destination_thread_id);
    }
  }

  function createRoute(params: AgentDelegationRouteCreateParams): AgentDelegationRouteProjection {
    const now = new Date().toISOString();
    const {
      idempotency_key,
      disclosure,
      allowed_actions,
      expires_at,
      return_route_id,
      destination_execution_id,
      destination_capsule_id,
      ...rest
    } = params;
    const route: AgentDelegationRouteProjection = {
      ...rest,
      route_id: `route.${randomUUID()}`,
      status: "active",
      allowed_actions: allowed_actions as AgentDelegationRouteAction[],
      disclosure: {
        text: disclosure?.text ?? true,
        artifacts: disclosure?.artifacts ?? false,
        context: disclosure?.context ?? false,
        userInput: disclosure?.userInput ?? false,
        resultReturn: disclosure?.resultReturn ?? "none",
      },
      generation: 1,
      grant_fingerprint: createHash("sha256")
        .update(JSON.stringify([params.source_thread_id, params.destination_thread_id, [...allowed_actions].sort(), disclosure ?? null]))
        .digest("hex"),
      expires_at: expires_at ?? null,
      return_route_id: return_route_id ?? null,
      destination_execution_id: destination_execution_id ?? null,
      destination_capsule_id: destination_capsule_id ?? null,
      created_at: now,
      updated_at: now,
      ...(idempotency_key !== undefined ? { idempotency_key } : {}),
    };
    routes.set(route.route_id, route);
    return route;
  }

  /** A delegate call: a child turn in the route's destination thread; its answer comes back as the call's result. */
  async function delegate(parent: TurnState, args: Record<string, unknown>): Promise<string> {
    const task = stringArg(args, "delegate", "task");
    const routeId = stringArg(args, "delegate", "route");
    const route = routes.get(routeId);
    if (!route) throw new ToolArgumentError(`delegate: there is no route ${routeId}`);
    if (route.status !== "active") throw new ToolArgumentError(`delegate: route ${routeId} is ${route.status}; nothing was started`);
    if (route.expires_at !== null && Date.parse(route.expires_at) <= Date.now())
      throw new ToolArgumentError(`delegate: route ${routeId} expired at ${route.expires_at}`);
    if (!route.allowed_actions.includes("start_agent"))
      throw new ToolArgumentError(`delegate: route ${routeId} does not allow start_agent`);
    if (route.source_thread_id !== parent.threadId)
      throw new ToolArgumentError(`delegate: route ${routeId} does not start from thread ${parent.threadId}`);
    const destination = threadOf(route.destination_thread_id);
    if (destination.thread.active_turn_id)
      throw new ToolArgumentError(`delegate: thread ${destination.thread.id} is busy with turn ${destination.thread.active_turn_id}`);
    const profile: TurnPermissionProfileSnapshot = {
      ...structuredClone(parent.turn.permission_profile),
      source: "inherited_from_parent_turn",
    };
    const child = admitTurn(destination, `child.${randomUUID()}`, [{ type: "text", text: task }], {
      mode: "Agent",
      model: parent.turn.model ?? model,
      permission_profile: profile,
      parent_turn_id: parent.turn.id,
      parent_thread_id: parent.threadId,
    });
    const ended = new Promise<void>((resolve) => (child.onEnd = resolve));
    const stop = () =>
      void finish(child, {
        failure: { kind: "cancelled", message: `the delegating turn ${parent.turn.id} ended`, retryable: false },
        status: "Interrupted",
      });
    parent.abort.signal.addEventListener("abort", stop, { once: true });
    await runToEnd(destination, child);
    await ended;
    parent.abort.signal.removeEventListener("abort", stop);
    if (child.turn.status !== "Completed")
      return `error: the delegated turn ${child.turn.id} ended ${child.turn.status}: ${child.turn.error?.message ?? ""}`;
    if (route.disclosure.resultReturn === "none") return `the delegated turn ${child.turn.id} completed (this route returns no result)`;
    return child.answer ?? "";
  }

  function audit(
    state: TurnState,
    record: Omit<NotificationParamsOf<"turn/permission/audit">, "sequence" | "thread_id" | "turn_id" | "audit_id" | "recorded_at">,
  ): Promise<void> {
    return emit(state, "turn/permission/audit", { audit_id: `audit:${randomUUID()}`, recorded_at: new Date().toISOString(), ...record });
  }

  /** Resolves a request once: the resolved notification and its audit record, then the waiting tool goes on. */
  async function resolveRequest(pending: PendingRequest, resolution: TurnPermissionApprovalResolution): Promise<void> {
    if (pending.resolution) return;
    pending.resolution = resolution;
    pending.resolvedAt = new Date().toISOString();
    const { request, turn } = pending;
    if (resolution === "allow_for_turn") turn.grants.add(request.scope_hash);
    await emit(turn, "turn/permission/request/resolved", {
      request_id: request.request_id,
      resolution,
      resolved_at: pending.resolvedAt,
      scope_hash: request.scope_hash,
    });
    await audit(turn, {
      kind: "request_resolved",
      request_id: request.request_id,
      tool_name: request.tool_name,
      action: request.action,
      decided_by: "resolution",
      resolution,
      scope_hash: request.scope_hash,
    });
    pending.answered(resolution);
  }

  /**
   * Whether the profile lets the call run: allowed outright, by a grant of this turn, or by
   * the client's answer to an approval request opened here (before the tool's item starts).
   */
  async function permitted(state: TurnState, tool: ToolSpec, args: Record<string, unknown>, summary: string): Promise<boolean> {
    const behavior = state.turn.permission_profile.effective_policy[tool.kind];
    const scopeHash = createHash("sha256")
      .update(JSON.stringify([tool.name, Object.entries(args).sort(([a], [b]) => a.localeCompare(b))]))
      .digest("hex")
      .slice(0, 32);
    const decided = (kind: "decision_allowed" | "decision_denied", decidedBy: "policy" | "turn_grant") =>
      audit(state, { kind, tool_name: tool.name, action: tool.kind, behavior, decided_by: decidedBy, scope_hash: scopeHash });
    if (behavior === "allow") return true;
    if (behavior === "deny") return (void (await decided("decision_denied", "policy")), false);
    if (state.grants.has(scopeHash)) return (void (await decided("decision_allowed", "turn_grant")), true);
    let answered!: (resolution: TurnPermissionApprovalResolution) => void;
    const answer = new Promise<TurnPermissionApprovalResolution>((resolve) => (answered = resolve));
    const request: TurnPermissionApprovalRequest = {
      request_id: `perm:${randomUUID()}`,
      workspace_id: state.turn.workspace_id!,
      thread_id: state.threadId,
      turn_id: state.turn.id,
      tool_name: tool.name,
      action: tool.kind,
      scope_hash: scopeHash,
      reason: `the ${state.turn.permission_profile.mode} profile asks before ${tool.kind.replace("_", " ")}`,
      summary,
      details: { arguments: args },
      allowed_scopes: ["allow_once", "allow_for_turn"],
      created_at: new Date().toISOString(),
      resolve_token: randomBytes(12).toString("base64url"),
    };
    const pending: PendingRequest = { request, turn: state, answered };
    requests.set(request.request_id, pending);
    state.pending.add(pending);
    await emit(state, "turn/permission/request/opened", { request: structuredClone(request) });
    await audit(state, {
      kind: "request_opened",
      request_id: request.request_id,
      tool_name: tool.name,
      action: tool.kind,
      behavior,
      scope_hash: scopeHash,
      reason: request.reason,
    });
    const resolution = await answer;
    state.pending.delete(pending);
    return resolution === "allow_once" || resolution === "allow_for_turn";
  }

  async function runTool(state: TurnState, call: ToolCall, cwd: string): Promise<string> {
    const tool = toolNamed(call.function.name);
    let args: Record<string, unknown> = {};
    let argError: string | undefined;
    try {
      const parsed: unknown = JSON.parse(call.function.arguments || "{}");
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
      else argError = `${call.function.name}: arguments must be a JSON object`;
    } catch (error) {
      argError = `${call.function.name}: arguments are not JSON: ${(error as Error).message}`;
    }
    if (!tool) return `error: there is no tool ${JSON.stringify(call.function.name)}; the tools are ${TOOLS.map((t) => t.name).join(", ")}`;
    const id = randomUUID();
    const summary = `${tool.name} ${call.function.arguments}`;
    const allowed = await permitted(state, tool, args, summary);
    if (state.ended) return "";
    if (!allowed) {
      const refusal = `the user refused ${summary}; it did not run`;
      const item: TurnItem =
        tool.name === "run_command"
          ? {
              type: "commandExecution",
              id,
              status: "in_progress",
              command: typeof args.cmd === "string" ? args.cmd : "",
              cwd,
              arguments: args,
              tool_call_id: call.id,
            }
          : {
              type: "fileChange",
              id,
              status: "in_progress",
              path: typeof args.file_path === "string" ? args.file_path : "",
              change_kind: "modify",
              arguments: args,
              tool_call_id: call.id,
            };
      if (tool.name !== "open_file") {
        await startItem(state, item);
        await completeItem(state, { ...item, status: "declined", outcome: "declined", tool_result: refusal } as TurnItem);
      }
      return `error: ${refusal}`;
    }
    if (tool.name === "run_command") {
      const cmd = typeof args.cmd === "string" ? args.cmd : "";
      const item: TurnItem & { type: "commandExecution" } = {
        type: "commandExecution",
        id,
        status: "in_progress",
        command: cmd,
        cwd,
        arguments: args,
        tool_call_id: call.id,
      };
      await startItem(state, item);
      try {
        if (argError) throw new ToolArgumentError(argError);
        stringArg(args, tool.name, "cmd");
        const deltas: Promise<void>[] = [];
        // Output still in the pipe when the turn ended (cancelled while it ran) belongs to no one any more.
        state.command = runCommand(
          cmd,
          cwd,
          (stream, delta) =>
            void (
              state.ended ||
              !state.openItems.has(id) ||
              deltas.push(emit(state, "item/command_execution/output_delta", { item_id: id, stream, delta }))
            ),
        );
        const { exitCode, stdout, stderr } = await state.command.done;
        await Promise.all(deltas);
        if (state.ended) return "";
        await completeItem(state, {
          ...item,
          status: exitCode === 0 ? "completed" : "failed",
          stdout,
          stderr,
          exit_code: exitCode,
          outcome: exitCode === 0 ? "success" : "error",
          tool_result: stdout,
        });
        return exitCode === 0 ? stdout : `exit code ${exitCode}\n${stdout}${stderr}`;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (!state.ended) await completeItem(state, { ...item, status: "failed", error: { message, retryable: false }, outcome: "error" });
        return `error: ${message}`;
      }
    }
    if (tool.name === "create_file") {
      const path = typeof args.file_path === "string" ? args.file_path : "";
      const item: TurnItem & { type: "fileChange" } = {
        type: "fileChange",
        id,
        status: "in_progress",
        path,
        change_kind: "add",
        arguments: args,
        tool_call_id: call.id,
      };
      await startItem(state, item);
      try {
        if (argError) throw new ToolArgumentError(argError);
        const kind = await writeInside(
          cwd,
          stringArg(args, tool.name, "file_path"),
          typeof args.body === "string" ? args.body : stringArg(args, tool.name, "body"),
        );
        const result = `wrote ${path}`;
        await completeItem(state, {
          ...item,
          change_kind: kind,
          status: "completed",
          outcome: "success",
          output: result,
          tool_result: result,
        });
        return result;
      } catch (error) {
        const message = (error as Error).message;
        if (!state.ended) await completeItem(state, { ...item, status: "failed", error: { message, retryable: false }, outcome: "error" });
        return `error: ${message}`;
      }
    }
    if (tool.name === "delegate") {
      try {
        if (argError) throw new ToolArgumentError(argError);
        return await delegate(state, args);
      } catch (error) {
        return `error: ${(error as Error).message}`;
      }
    }
    // open_file: a read is not a change, so it has no item of its own.
    try {
      if (argError) throw new ToolArgumentError(argError);
      return await readInside(cwd, stringArg(args, tool.name, "file_path"));
    } catch (error) {
      return `error: ${(error as Error).message}`;
    }
  }

  async function run(thread: ThreadState, state: TurnState): Promise<void> {
    await emit(state, "turn/started", { turn: snapshot(state) });
    await timelineChanged(state);
    const userItem: TurnItem = { type: "userMessage", id: randomUUID(), status: "in_progress", content: structuredClone(inputOf(state)) };
    await startItem(state, userItem);
    await completeItem(state, { ...userItem, status: "completed" });
    const agent = state.turn.mode === "Agent";
    const messages = history(thread, state);
    const usage: TurnUsage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
    let reported = false;
    for (let round = 1; !state.ended; round++) {
      const completion = await callModel(state, messages, agent);
      if (state.ended) return;
      if (completion.usage) {
        reported = true;
        usage.input_tokens += completion.usage.prompt_tokens ?? 0;
        usage.output_tokens += completion.usage.completion_tokens ?? 0;
        usage.total_tokens +=
          completion.usage.total_tokens ?? (completion.usage.prompt_tokens ?? 0) + (completion.usage.completion_tokens ?? 0);
      }
      const message = completion.choices?.[0]?.message;
      if (!message) throw new ProviderError("the model's answer has no choices[0].message", false);
      if (message.reasoning_content) {
        const item: TurnItem = { type: "reasoning", id: randomUUID(), status: "in_progress", round, text: "" };
        await startItem(state, item);
        await completeItem(state, { ...item, status: "completed", text: message.reasoning_content });
      }
      const calls = agent ? (message.tool_calls ?? []) : [];
      if (message.content) {
        const item: TurnItem & { type: "agentMessage" } = {
          type: "agentMessage",
          id: randomUUID(),
          status: "in_progress",
          round,
          text: "",
        };
        await startItem(state, item);
        // The answer came whole; it is passed on in word-sized pieces.
        for (const piece of message.content.match(/\S*\s*/g)?.filter((p) => p !== "") ?? [])
          await emit(state, "item/agent_message/delta", { item_id: item.id, stream: "agent_message", delta: piece });
        await completeItem(state, { ...item, status: "completed", text: message.content });
        if (!calls.length) state.answer = message.content;
      }
      if (!calls.length) break;
      messages.push({ role: "assistant", content: message.content ?? null, tool_calls: calls });
      for (const call of calls) {
        const result = await runTool(state, call, thread.thread.cwd);
        if (state.ended) return;
        messages.push({ role: "tool", tool_call_id: call.id, content: result });
      }
    }
    await finish(state, reported ? { usage } : {});
  }

  /** A new turn of the thread, registered and marked active; it has not started running. */
  function admitTurn(
    thread: ThreadState,
    turnId: string,
    input: TurnStartParams["input"],
    fields: Pick<Turn, "mode" | "model" | "permission_profile"> & Partial<Turn>,
  ): TurnState {
    const turn: Turn = {
      id: turnId,
      thread_id: thread.thread.id,
      workspace_id: thread.thread.workspace_id,
      status: "InProgress",
      created_at: new Date().toISOString(),
      model_provider: OWN_PROVIDER,
      prompt_manifest: null,
      ...fields,
    };
    const state: TurnState = {
      turn,
      threadId: thread.thread.id,
      userText: input.map((i) => (i.type === "text" ? i.text : "")).join("\n"),
      createdMicros: micros(),
      sequence: 0,
      events: [],
      openItems: new Map(),
      abort: new AbortController(),
      ended: false,
      grants: new Set(),
      pending: new Set(),
      work: new Map(),
      projectionVersion: 0,
      watermark: 0,
      projectedAtMicros: micros(),
    };
    inputs.set(state, input);
    turnIds.add(turn.id);
    thread.turns.push(state);
    thread.thread.active_turn_id = turn.id;
    return state;
  }

  /** Runs a turn; whatever stops it early fails it. */
  async function runToEnd(thread: ThreadState, state: TurnState): Promise<void> {
    try {
      await run(thread, state);
    } catch (error) {
      if (state.ended) return;
      const retryable = error instanceof ProviderError ? error.retryable : false;
      const failure: TurnFailure = {
        kind: error instanceof ProviderError ? "provider_error" : "internal",
        message: error instanceof Error ? error.message : String(error),
        retryable,
      };
      await finish(state, { failure, status: "Failed" }).catch((e: unknown) =>
        process.stderr.write(`independent gateway: turn ${state.turn.id}: ${String(e)}\n`),
      );
    }
  }

  const inputOf = (state: TurnState) => inputs.get(state)!;
  const inputs = new WeakMap<TurnState, TurnStartParams["input"]>();

  function refuseUnserved(params: TurnStartParams): void {
    for (const field of ["cli_runtime_options", "sandbox_policy"] as const) {
      if (params[field] !== undefined)
        throw protocolError("invalid_params", `turn/start: ${field} is not served by this gateway`, { field });
    }
    const nonText = params.input.findIndex((i) => i.type !== "text");
    if (nonText !== -1)
      throw protocolError(
        "invalid_params",
        `turn/start: input/${nonText} is of type ${params.input[nonText]!.type}; this gateway takes text input only`,
        { pointer: `/input/${nonText}` },
      );
    const selection = params.permission_profile;
    for (const field of ["allowed_tools", "denied_tools", "allowed_paths"] as const) {
      if (selection?.[field] !== undefined)
        throw protocolError("invalid_params", `turn/start: permission_profile.${field} is not served by this gateway`, {
          field: `permission_profile.${field}`,
        });
    }
  }

  function backendServed(backend: ExecutionBackend | undefined, provider: string | undefined): boolean {
    if (provider !== undefined && provider !== OWN_PROVIDER) return false;
    return backend === undefined || (backend.type === "apiProvider" && backend.provider === OWN_PROVIDER);
  }

  const handlers: Handlers<unknown> = {
    "thread/start": (params) => {
      const thread: Thread = {
        id: `thread-${randomUUID()}`,
        workspace_id: params.workspace_id ?? "ws-independent",
        cwd: params.cwd ?? process.cwd(),
        model_provider: OWN_PROVIDER,
        model: params.model ?? model,
        mode: params.mode ?? "Chat",
        created_at: new Date().toISOString(),
      };
      if (params.model_provider !== undefined && params.model_provider !== OWN_PROVIDER)
        throw protocolError(
          "invalid_params",
          `thread/start: model_provider ${params.model_provider} is not served; this gateway serves ${OWN_PROVIDER}`,
          { field: "model_provider" },
        );
      threads.set(thread.id, { thread, turns: [] });
      return { thread: structuredClone(thread) };
    },
    "thread/get": (params) => ({ thread: structuredClone(threadOf(params.thread_id).thread) }),
    "thread/timeline/page": (params) => {
      const thread = threadOf(params.threadId);
      const blocks: ThreadTimelineBlock[] = thread.turns.map((t) => ({
        blockId: `blk:${t.turn.id}`,
        kind: "turn_work",
        turnId: t.turn.id,
        status: t.turn.status,
        createdAtUnixMicros: t.createdMicros,
        userText: t.userText,
        ...(t.ended ? { completedAtUnixMicros: Date.parse(t.turn.completed_at!) * 1000 } : {}),
      }));
      const start = params.cursor === undefined ? 0 : Number(params.cursor);
      if (!Number.isInteger(start) || start < 0 || start > blocks.length)
        throw protocolError(
          "invalid_params",
          `thread/timeline/page: cursor ${JSON.stringify(params.cursor)} is not one this gateway gave out`,
          { field: "cursor" },
        );
      const limit = params.limit ?? 50;
      const page = blocks.slice(start, start + limit);
      const next = start + page.length;
      return {
        threadId: params.threadId,
        blocks: page,
        page: { nextCursor: next < blocks.length ? String(next) : null, hasMore: next < blocks.length },
      };
    },
    "turn/start": (params) => {
      const thread = threadOf(params.thread_id);
      if (turnIds.has(params.turn_id))
        throw protocolError("duplicate_turn_id", `turn id ${params.turn_id} is already used`, { turn_id: params.turn_id });
      if (thread.thread.active_turn_id)
        throw protocolError("turn_in_progress", `thread ${thread.thread.id} is running turn ${thread.thread.active_turn_id}`, {
          active_turn_id: thread.thread.active_turn_id,
        });
      if (!backendServed(params.execution_backend, params.model_provider)) {
        throw protocolError("execution_backend_unavailable", `this gateway serves only the API provider ${OWN_PROVIDER}`, {
          execution_backend: params.execution_backend ?? { type: "apiProvider", provider: params.model_provider },
        });
      }
      refuseUnserved(params);
      const mode = params.permission_profile?.mode;
      const profile: TurnPermissionProfileSnapshot = {
        mode: mode ?? "full_access",
        source: mode ? "composer" : "defaulted",
        effective_policy: POLICIES[mode ?? "full_access"],
      };
      const capabilities: TurnCapabilityResolution[] = (params.capabilities ?? []).map((c) => ({
        capabilityId: c.id,
        status: "rejected",
        reason: "not_found",
        message: `this gateway has no ${c.kind.type} ${JSON.stringify(c.kind)}`,
      }));
      const state = admitTurn(thread, params.turn_id, params.input, {
        mode: params.mode ?? thread.thread.mode,
        model: params.model ?? thread.thread.model ?? model,
        permission_profile: profile,
        ...(params.capabilities ? { capabilities } : {}),
      });
      // The turn runs once the response is on its way.
      setImmediate(() => void runToEnd(thread, state));
      return { turn: snapshot(state) };
    },
    "turn/cancel": async (params) => {
      const state = turnOf(params.thread_id, params.turn_id);
      if (state.ended)
        throw protocolError("turn_not_active", `turn ${params.turn_id} already ended ${state.turn.status}`, {
          turn_id: params.turn_id,
          status: state.turn.status,
        });
      // This gateway ends the turn first and answers afterwards.
      await finish(state, {
        failure: {
          kind: "cancelled",
          message: params.reason ? `cancelled: ${params.reason}` : "cancelled by the client",
          retryable: false,
        },
        status: "Interrupted",
      });
      return { turn: snapshot(state) };
    },
    "turn/resume": (params) => {
      const state = turnOf(params.thread_id, params.turn_id);
      throw protocolError("turn_not_blocked", `turn ${params.turn_id} is ${state.turn.status}, not Blocked`, {
        turn_id: params.turn_id,
        status: state.turn.status,
      });
    },
    "turn/get": (params) => ({ turn: snapshot(turnOf(params.thread_id, params.turn_id)) }),
    "turn/items": (params) => {
      const state = turnOf(params.thread_id, params.turn_id);
      const after = params.after_sequence ?? 0;
      const events = state.events.filter((e) => e.sequence > after).slice(0, params.limit ?? state.events.length);
      return {
        thread_id: state.threadId,
        workspace_id: state.turn.workspace_id!,
        turn_id: state.turn.id,
        events: structuredClone(events),
        last_sequence: events.at(-1)?.sequence ?? after,
      };
    },
    "turn/work/page": (params) => {
      const state = turnOf(params.threadId, params.turnId);
      const rows = [...state.work.values()];
      const limit = params.limit ?? 50;
      const anchor = params.anchor;
      let from: number;
      let to: number;
      if (anchor.kind === "newest") ((to = rows.length), (from = Math.max(0, to - limit)));
      else if (anchor.kind === "oldest") ((from = 0), (to = Math.min(rows.length, limit)));
      else {
        const at = rows.findIndex((r) => r.orderKey === anchor.cursor);
        if (at === -1)
          throw protocolError(
            "invalid_params",
            `turn/work/page: anchor.cursor ${JSON.stringify(anchor.cursor)} is not a row of turn ${params.turnId}`,
            { field: "anchor.cursor" },
          );
        if (anchor.kind === "before") ((to = at), (from = Math.max(0, at - limit)));
        else ((from = at + 1), (to = Math.min(rows.length, at + 1 + limit)));
      }
      const items = structuredClone(rows.slice(from, to));
      return {
        workspaceId: state.turn.workspace_id!,
        ...freshness(state),
        work: workBlock(state),
        items,
        page: {
          beforeCursor: items[0]?.orderKey ?? null,
          afterCursor: items.at(-1)?.orderKey ?? null,
          hasMoreBefore: from > 0,
          hasMoreAfter: to < rows.length,
        },
      };
    },
    "turn/work/items/get": (params) => {
      const state = turnOf(params.threadId, params.turnId);
      const items = params.workItemIds.flatMap((id) => (state.work.has(id) ? [structuredClone(state.work.get(id)!)] : []));
      return {
        workspaceId: state.turn.workspace_id!,
        ...freshness(state),
        items,
        removedWorkItemIds: params.workItemIds.filter((id) => !state.work.has(id)),
      };
    },
    "turn/permission/request/respond": async (params) => {
      const pending = requests.get(params.request_id);
      if (!pending)
        throw protocolError("permission_request_not_found", `no approval request ${params.request_id}`, { request_id: params.request_id });
      if (pending.resolution)
        throw protocolError(
          "permission_request_resolved",
          `approval request ${params.request_id} was already resolved ${pending.resolution}`,
          { request_id: params.request_id, resolution: pending.resolution },
        );
      if (params.resolve_token !== undefined && params.resolve_token !== pending.request.resolve_token)
        throw protocolError("unauthorized", `the resolve_token does not belong to approval request ${params.request_id}`, {
          request_id: params.request_id,
        });
      if (!pending.request.allowed_scopes.includes(params.resolution as never) && params.resolution !== "deny")
        throw protocolError(
          "invalid_params",
          `approval request ${params.request_id} allows ${pending.request.allowed_scopes.join(", ")}, not ${params.resolution}`,
          { request_id: params.request_id },
        );
      await resolveRequest(pending, params.resolution);
      const { request } = pending;
      return {
        request_id: request.request_id,
        thread_id: request.thread_id,
        turn_id: request.turn_id,
        resolution: params.resolution,
        resolved_at: pending.resolvedAt!,
      };
    },
    "agent/route/create": (params) => {
      const key = params.idempotency_key;
      const asked = JSON.stringify(params);
      if (key !== undefined && byKey.has(key)) {
        const earlier = byKey.get(key)!;
        if (earlier.params !== asked)
          throw protocolError("idempotency_conflict", `idempotency key ${key} was used for other params`, {
            idempotency_key: key,
            route_id: earlier.routeId,
          });
        return structuredClone(routes.get(earlier.routeId)!);
      }
      validateRoute(params);
      const route = createRoute(params);
      if (key !== undefined) byKey.set(key, { params: asked, routeId: route.route_id });
      return structuredClone(route);
    },
    "agent/route/list": (params) => {
      const all = [...routes.values()].filter((r) => r.source_execution_id === params.source_execution_id);
      const start = params.cursor === undefined ? 0 : Number(params.cursor);
      if (!Number.isInteger(start) || start < 0 || start > all.length)
        throw protocolError(
          "invalid_params",
          `agent/route/list: cursor ${JSON.stringify(params.cursor)} is not one this gateway gave out`,
          { field: "cursor" },
        );
      const page = all.slice(start, start + (params.limit ?? 100));
      const next = start + page.length;
      return { routes: structuredClone(page), next_cursor: next < all.length ? String(next) : null };
    },
    // Questions are not served: no turn of this gateway ever opens one, so none can be answered.
    "turn/question/respond": (params) => {
      throw protocolError("question_not_found", `this gateway asks no questions; there is no question ${params.call_id}#${params.index}`, {
        call_id: params.call_id,
        index: params.index,
      });
    },
    "agent/route/revoke": (params) => {
      const route = routes.get(params.route_id);
      if (!route) throw protocolError("route_not_found", `no route ${params.route_id}`, { route_id: params.route_id });
      if (params.expected_generation !== route.generation)
        throw protocolError(
          "generation_conflict",
          `route ${params.route_id} is at generation ${route.generation}, not ${params.expected_generation}`,
          { route_id: params.route_id, current_generation: route.generation },
        );
      if (params.idempotency_key !== undefined)
        throw protocolError(
          "invalid_params",
          "agent/route/revoke: idempotency_key is not served by this gateway (a revoke is decided by expected_generation)",
          { field: "idempotency_key" },
        );
      route.status = "revoked";
      route.generation++;
      route.updated_at = new Date().toISOString();
      return structuredClone(route);
    },
  };

  const onInternalError = (error: unknown, method: string) =>
    void process.stderr.write(
      `independent gateway: ${method}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  if (options.serveWith === "connection") {
    const connection = serveConnection(transport, handlers, { validationMode: "strict", onInternalError });
    notifier = connection;
    return connection.start();
  }
  const dispatcher = createDispatcher<unknown>(handlers, { validationMode: "strict", onInternalError });
  transport.onmessage = (frame) => {
    dispatcher
      .handleFrame(frame, undefined)
      .then((reply) => (reply === undefined ? undefined : transport.send(reply)))
      .catch((error: unknown) => process.stderr.write(`independent gateway: cannot answer a frame: ${String(error)}\n`));
  };
  await transport.start();
}

class ProviderError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}
