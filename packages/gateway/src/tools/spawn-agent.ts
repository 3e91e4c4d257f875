/**
 * `spawn_agent`: runs a child turn and returns its final answer to the parent as the tool
 * result. The child runs under the parent's permission mode (or a narrower one it asks
 * for, never a broader one), is cancelled with the parent, and is authored by the agent:
 * it carries an actor reference with the presentation snapshot of the moment.
 *
 * Without a route, the child gets a thread of its own and sees the prompt. With
 * `route_id`, the delegation must be admitted by that route (active, unexpired, current
 * generations, start_agent allowed, from this thread); the child runs in the route's
 * destination thread, sees the parent's text, user input, context and artifacts only as
 * the route's disclosure allows, and its result comes back as the route's resultReturn says.
 */
import { randomUUID } from "node:crypto";
import type { AgentActorRef, AgentDelegationDisclosurePolicy, ThreadStartParams, TurnItem, UserInput } from "@turnspec/protocol/types";
import { defineTool, type ArgumentsOf } from "./arguments.js";
import type { ApprovalContext } from "./tool.js";
import type { ResolvedConfig } from "../config.js";
import type { RouteService } from "../routes/service.js";
import type { EventStore, ThreadRecord } from "../store/store.js";
import type { EventLog, ThreadLookup, TurnReader } from "../engine/ports.js";

/**
 * What spawn_agent is built from. The child turns themselves are started and cancelled
 * through the calling turn's context (ToolContext.children).
 */
export interface SpawnPorts {
  /** The turns' states, and the parent's log, where a delegation is announced (turn/handoff/started). */
  readonly log: TurnReader & Pick<EventLog, "publish">;
  readonly threads: ThreadLookup & {
    create(params: Pick<ThreadStartParams, "workspace_id" | "cwd" | "model_provider" | "model" | "mode">): ThreadRecord;
  };
  readonly routes: Pick<RouteService, "admit" | "route">;
  readonly store: Pick<EventStore, "turnsOfThread">;
  /** The agent's identity and presentation, as configured. */
  readonly agent: ResolvedConfig["agent"];
  /** Levels of sub-agents below a client's turn (limits.max_spawn_depth). */
  readonly maxSpawnDepth: number;
  /** Route hops a delegation chain may take on this gateway (routes.max_hops). */
  readonly maxRouteHops: number;
}

/** How much of a result `summary_only` lets through. */
const SUMMARY_CHARS = 200;

/** A delegation without a route: the child gets the prompt, nothing else of the parent's, and returns its whole answer. */
const DIRECT_DELEGATION: AgentDelegationDisclosurePolicy = {
  text: true,
  artifacts: false,
  context: false,
  userInput: false,
  resultReturn: "full_result",
};

/** The arguments of a spawn_agent call, as the model sees them. */
const PARAMETERS = {
  type: "object",
  additionalProperties: false,
  required: ["prompt"],
  properties: {
    prompt: { type: "string", minLength: 1, description: "The task for the sub-agent, as its first user message." },
    permission_mode: {
      type: "string",
      enum: ["supervised", "auto_accept_edits", "full_access"],
      description: "Permission mode for the sub-agent. Never more than this turn's own: a broader one is capped to it.",
    },
    route_id: {
      type: "string",
      minLength: 1,
      description: "Delegate over this route: the sub-agent runs in the route's destination thread, under its disclosure rules.",
    },
    route_generation: {
      type: "integer",
      minimum: 1,
      description: "The route generation the delegation expects; a route changed since is refused.",
    },
  },
} as const;

type SpawnArguments = ArgumentsOf<typeof PARAMETERS>;

export function spawnAgentTool(ports: SpawnPorts) {
  return defineTool({
    spec: {
      name: "spawn_agent",
      description: "Start a sub-agent on a task and wait for its final answer, which is returned as this call's result.",
      parameters: PARAMETERS,
    },
    itemType: "task",
    describe: ({ prompt, route_id }) => ({ prompt, ...(route_id === undefined ? {} : { route_id }) }),
    approvalContext: (args, turn) => destinationOf(ports, args, turn.thread_id),
    async run(args, ctx) {
      const parent = ctx.turn;
      const children = ctx.children;
      if (!parent || !children)
        return { ok: false, content: "spawn_agent can only run inside a turn", item: { error: { message: "no parent turn" } } };
      // Enforced here, where the call is made: the tool list leaves spawn_agent out at the
      // limit, but a model may call it anyway.
      if (parent.depth >= ports.maxSpawnDepth) {
        const message = `spawn_agent is not available at depth ${parent.depth}: sub-agents nest at most ${ports.maxSpawnDepth} levels (limits.max_spawn_depth)`;
        return { ok: false, content: message, item: { error: { message } } };
      }
      const parentState = ports.log.state(parent.turn_id)!;
      const parentTurn = parentState.turn;
      const parentThread = ports.threads.thread(parent.thread_id);
      const { prompt } = args;

      let threadId: string;
      let disclosure = DIRECT_DELEGATION;
      const routeId = args.route_id;
      if (routeId !== undefined) {
        // The admitting execution is the parent turn: an execution_bound route admits only its own.
        const verdict = ports.routes.admit(routeId, parent.thread_id, "start_agent", args.route_generation, parent.turn_id);
        if (!verdict.admitted) {
          const message = `route ${routeId} does not admit this delegation (${verdict.reason}): ${verdict.message}`;
          return { ok: false, content: message, item: { route_id: routeId, error: { message } } };
        }
        // Hop bounds hold where the delegation is made: the hops the chain has taken to reach
        // this turn, counted from the turns themselves, not from what the route declares.
        const hops = routeHopsTo(ports, parent.turn_id);
        const bound = Math.min(verdict.route.max_hops, ports.maxRouteHops);
        if (hops > bound) {
          const message = `route ${routeId} does not admit this delegation (hop_limit): this turn is ${hops} route hops deep, and the route allows ${verdict.route.max_hops} (the gateway ${ports.maxRouteHops})`;
          return { ok: false, content: message, item: { route_id: routeId, error: { message } } };
        }
        threadId = verdict.route.destination_thread_id;
        disclosure = verdict.route.disclosure;
      } else {
        threadId = ports.threads.create({
          workspace_id: parentThread.workspace_id,
          cwd: parentThread.cwd,
          mode: "Agent",
          ...(parentTurn.model_provider ? { model_provider: parentTurn.model_provider } : {}),
          ...(parentTurn.model ? { model: parentTurn.model } : {}),
        }).id;
      }

      const childTurnId = `${parent.turn_id}_child_${randomUUID().slice(0, 8)}`;
      const actor = agentActor(ports, parent.turn_id);
      let started;
      try {
        started = children.startTurn(
          {
            thread_id: threadId,
            turn_id: childTurnId,
            input: childInput(prompt, parentState.items, threadContext(ports, parent.thread_id, parent.turn_id), disclosure),
          },
          {
            turn: parentTurn,
            depth: parent.depth,
            actor,
            ...(args.permission_mode === undefined ? {} : { requestedMode: args.permission_mode }),
          },
        );
      } catch (error) {
        // For example a destination thread that already runs a turn: the model is told.
        const message = `the sub-agent could not start: ${(error as Error).message}`;
        return { ok: false, content: message, item: { error: { message } } };
      }
      ctx.update?.({ child_thread_id: threadId, child_turn_id: childTurnId, actor });
      // The parent turn's watchers learn that it now delegates, once per delegation.
      ports.log.publish(parent.thread_id, parent.turn_id, "turn/handoff/started", {
        item_id: ctx.itemId ?? "",
        child_agent_id: ports.agent.identityId,
        child_thread_id: threadId,
        child_turn_id: childTurnId,
        ...(routeId === undefined ? {} : { route_id: routeId }),
        reason: handoffReason(prompt, routeId),
      });
      const cancel = () => void children.cancelTurn(childTurnId, "the parent turn was cancelled");
      ctx.signal.addEventListener("abort", cancel, { once: true });
      try {
        await started.done;
      } finally {
        ctx.signal.removeEventListener("abort", cancel);
      }
      const state = ports.log.state(childTurnId)!;
      const answer = [...state.items].reverse().find((item) => item.type === "agentMessage" && item.status === "completed");
      const fields = { child_thread_id: threadId, child_turn_id: childTurnId, actor };
      if (state.turn.status !== "Completed") {
        const message = `the sub-agent's turn ended ${state.turn.status}${state.turn.error ? `: ${state.turn.error.message}` : ""}`;
        return { ok: false, content: message, item: { ...fields, error: { message } } };
      }
      return { ok: true, content: returnedResult(answer?.type === "agentMessage" ? answer.text : "", disclosure), item: fields };
    },
  });
}

/**
 * Where a spawn_agent call would run its child, for the approval request: over a route,
 * the route's destination thread (its workspace and folder) and the agent it names; else
 * a new thread in the parent's workspace and folder. The approval's scope is bound to it,
 * so approving one destination for the turn does not approve another. Undefined when the
 * route does not exist (the call then fails when it runs, before any child starts).
 */
function destinationOf(ports: SpawnPorts, args: SpawnArguments, parentThreadId: string): ApprovalContext | undefined {
  const agentId = ports.agent.identityId;
  if (args.route_id === undefined) {
    const parent = ports.threads.thread(parentThreadId);
    return {
      summary: `Start a sub-agent (${agentId}) in a new thread of workspace ${parent.workspace_id}`,
      reason: `the sub-agent would run as ${agentId} in a new thread of workspace ${parent.workspace_id}, folder ${parent.cwd}`,
      details: { destination: { thread_id: null, workspace_id: parent.workspace_id, cwd: parent.cwd, agent_id: agentId } },
      preview: {
        title: "Destination",
        text: `a new thread in workspace ${parent.workspace_id}
folder ${parent.cwd}
agent ${agentId}`,
      },
      scopeKey: "destination=new_thread",
    };
  }
  const route = ports.routes.route(args.route_id);
  if (!route) return undefined;
  const threadId = route.destination_thread_id;
  let cwd: string | null = null;
  try {
    cwd = ports.threads.thread(threadId).cwd;
  } catch {
    // A destination thread this gateway does not hold: the route names it all the same.
  }
  // The child runs as this gateway's agent; a route may also name the identity it expects there.
  const declared =
    route.destination_identity_id !== undefined && route.destination_identity_id !== agentId
      ? ` (the route names ${route.destination_identity_id})`
      : "";
  const where = `thread ${threadId} of workspace ${route.destination_workspace_id}${cwd === null ? "" : `, folder ${cwd}`}`;
  return {
    summary: `Start a sub-agent (${agentId}) over route ${route.route_id} in thread ${threadId}`,
    reason: `over route ${route.route_id} the sub-agent would run as ${agentId}${declared} in ${where}`,
    details: {
      destination: {
        route_id: route.route_id,
        thread_id: threadId,
        workspace_id: route.destination_workspace_id,
        cwd,
        agent_id: agentId,
        ...(route.destination_identity_id === undefined ? {} : { destination_identity_id: route.destination_identity_id }),
      },
    },
    preview: {
      title: "Destination",
      text: `thread ${threadId} in workspace ${route.destination_workspace_id}${cwd === null ? "" : `\nfolder ${cwd}`}\nagent ${agentId}${declared}\nroute ${route.route_id}`,
    },
    scopeKey: `route=${route.route_id}\nthread=${threadId}`,
  };
}

/**
 * How many route hops led to `turnId`: each ancestor step (parent_cap in the security
 * snapshot) whose spawning task item names a route counts one.
 */
function routeHopsTo(ports: Pick<SpawnPorts, "log">, turnId: string): number {
  let hops = 0;
  let current = turnId;
  // Bounded walk: a chain is at most max_spawn_depth long; the bound only guards against a malformed log.
  for (let step = 0; step < 1000; step++) {
    const parentId = ports.log.state(current)?.turn.security?.parent_cap?.parent_turn_id;
    if (!parentId) return hops;
    const task = ports.log.state(parentId)?.items.find((item) => item.type === "task" && item.child_turn_id === current);
    if (task?.type === "task" && task.route_id) hops++;
    current = parentId;
  }
  return hops;
}

/** Why the turn delegates, for a surface's "delegating…" line: the task's first line, shortened. */
function handoffReason(prompt: string, routeId: string | undefined): string {
  const line = prompt.split("\n", 1)[0]!.trim();
  const task = line.length <= SUMMARY_CHARS ? line : `${line.slice(0, SUMMARY_CHARS - 1)}…`;
  return routeId === undefined ? task : `${task} (over route ${routeId})`;
}

/** The agent as the author of what it starts, with its presentation as configured now. */
function agentActor(ports: SpawnPorts, executionId: string): AgentActorRef {
  const agent = ports.agent;
  return {
    kind: "agent",
    identity_id: agent.identityId,
    execution_id: executionId,
    presentation: {
      identity_id: agent.identityId,
      execution_id: executionId,
      source: "gateway_config",
      revision: agent.revision,
      display_name: agent.displayName,
      ...(agent.nickname ? { nickname: agent.nickname } : {}),
      avatar_revision: agent.avatarRevision,
      role_presentation: agent.role ? { role: agent.role } : null,
    },
  };
}

/** The parent's conversation context: the answers of its thread's completed turns and of the current one so far. */
function threadContext(ports: SpawnPorts, threadId: string, turnId: string): string[] {
  return ports.store
    .turnsOfThread(threadId)
    .map((ref) => ports.log.state(ref.turn_id))
    .filter((state) => state !== undefined && (state.turn.id === turnId || state.turn.status === "Completed"))
    .flatMap((state) =>
      state!.items.filter((i) => i.type === "agentMessage" && i.status === "completed").map((i) => (i as { text: string }).text),
    );
}

/** What the child sees: each class of the parent's material only as the disclosure allows. */
function childInput(
  prompt: string,
  parentItems: readonly TurnItem[],
  context: readonly string[],
  disclosure: AgentDelegationDisclosurePolicy,
): UserInput[] {
  const input: UserInput[] = [
    { type: "text", text: disclosure.text ? prompt : "[The delegating agent's message is not disclosed over this route.]" },
  ];
  const userContent = parentItems.flatMap((item) => (item.type === "userMessage" ? item.content : []));
  if (disclosure.userInput) {
    const texts = userContent.filter((c) => c.type === "text").map((c) => (c as { text: string }).text);
    if (texts.length) input.push({ type: "text", text: `User input to the delegating agent:\n${texts.join("\n")}` });
  }
  if (disclosure.context && context.length) input.push({ type: "text", text: `Context from the delegating agent:\n${context.join("\n")}` });
  if (disclosure.artifacts) input.push(...userContent.filter((c) => c.type === "artifact"));
  return input;
}

/** The child's answer as the route lets it come back. */
function returnedResult(text: string, disclosure: AgentDelegationDisclosurePolicy): string {
  switch (disclosure.resultReturn) {
    case "none":
      return "The sub-agent finished; this route returns no result.";
    case "summary_only":
      return text.length <= SUMMARY_CHARS ? text : `${text.slice(0, SUMMARY_CHARS - 1)}…`;
    default:
      return text;
  }
}
