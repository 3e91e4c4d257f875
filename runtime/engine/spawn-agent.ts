/**
 * `spawn_agent`: runs a child turn in a child thread and returns its final answer to the
 * parent as the tool result. The child runs under the parent's permission mode, and is
 * cancelled with the parent.
 */
import { randomUUID } from "node:crypto";
import type { Tool } from "../tools/tool.js";
import type { Gateway } from "./gateway.js";

export function spawnAgentTool(gateway: Gateway): Tool {
  return {
    spec: {
      name: "spawn_agent",
      description: "Start a sub-agent on a task in a child thread and wait for its final answer, which is returned as this call's result.",
      parameters: {
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
        },
      },
    },
    itemType: "task",
    describe: (args) => ({ prompt: String(args.prompt) }),
    async run(args, ctx) {
      const parent = ctx.turn;
      if (!parent) return { ok: false, content: "spawn_agent can only run inside a turn", item: { error: { message: "no parent turn" } } };
      const parentTurn = gateway.turnState(parent.turn_id)!.turn;
      const parentThread = gateway.thread(parent.thread_id);
      const child = gateway.createThread({
        workspace_id: parentThread.workspace_id,
        cwd: parentThread.cwd,
        mode: "Agent",
        ...(parentTurn.model_provider ? { model_provider: parentTurn.model_provider } : {}),
        ...(parentTurn.model ? { model: parentTurn.model } : {}),
      });
      const childTurnId = `${parent.turn_id}_child_${randomUUID().slice(0, 8)}`;
      const { done } = gateway.startTurn(
        { thread_id: child.id, turn_id: childTurnId, input: [{ type: "text", text: String(args.prompt) }] },
        {
          turn: parentTurn,
          depth: parent.depth,
          ...(typeof args.permission_mode === "string" ? { requestedMode: args.permission_mode as "supervised" | "auto_accept_edits" | "full_access" } : {}),
        },
      );
      ctx.update?.({ child_thread_id: child.id, child_turn_id: childTurnId });
      const cancel = () => void gateway.cancelTurn(childTurnId, "the parent turn was cancelled");
      ctx.signal.addEventListener("abort", cancel, { once: true });
      try {
        await done;
      } finally {
        ctx.signal.removeEventListener("abort", cancel);
      }
      const state = gateway.turnState(childTurnId)!;
      const answer = [...state.items].reverse().find((item) => item.type === "agentMessage" && item.status === "completed");
      const ids = { child_thread_id: child.id, child_turn_id: childTurnId };
      if (state.turn.status === "Completed") {
        return { ok: true, content: answer?.type === "agentMessage" ? answer.text : "", item: ids };
      }
      const message = `the sub-agent's turn ended ${state.turn.status}${state.turn.error ? `: ${state.turn.error.message}` : ""}`;
      return { ok: false, content: message, item: { ...ids, error: { message } } };
    },
  };
}
