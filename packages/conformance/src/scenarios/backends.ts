/**
 * Scenarios of what every gateway must do with the execution backend and capabilities a
 * turn/start names, whatever backends it supports: refuse a backend it does not serve,
 * and report a capability naming something it does not have. The names carry the run's
 * token, so no gateway has them configured.
 */
import { deepEqual } from "@turnspec/rpc";
import type { ExecutionBackend, TurnCapability } from "@turnspec/protocol/types";
import { Failure, shown, type Scenario } from "../scenario.js";

const backendRefused: Scenario = {
  name: "an execution backend the gateway does not serve",
  checks: ["TURN-BACKEND-UNAVAILABLE"],
  async run(ctx) {
    const script = ctx.script([]);
    const thread = await ctx.thread();
    const backends: ExecutionBackend[] = [
      { type: "cliAgentRuntime", runtime_id: ctx.id("cert_unconfigured_cli"), runtime_kind: "codex" },
      { type: "acpAgentRuntime", runtime_id: ctx.id("cert_unconfigured_acp") },
      { type: "apiProvider", provider: ctx.id("cert_unconfigured_provider") },
    ];
    await ctx.attempt("TURN-BACKEND-UNAVAILABLE", async () => {
      for (const backend of backends) {
        const turnId = ctx.id("trn");
        const error = await ctx.rejects(
          ctx.startTurn(thread.id, "Must not run", { turn_id: turnId, execution_backend: backend }),
          "execution_backend_unavailable",
          `turn/start on ${backend.type}`,
        );
        const data = error.data as { execution_backend?: unknown } | undefined;
        // The same JSON value: a gateway that writes objects in the canonical form sorts their members.
        if (!deepEqual(data?.execution_backend, backend)) {
          throw new Failure(
            `error.data.execution_backend is ${shown(data?.execution_backend)}, expected the backend as requested, ${shown(backend)}`,
            error.data,
          );
        }
        await ctx.rejects(
          ctx.client.turnGet({ thread_id: thread.id, turn_id: turnId }),
          "turn_not_found",
          `turn/get of the refused turn ${turnId}`,
        );
        const notified = ctx.ofTurn(turnId);
        if (notified.length) throw new Failure(`the refused turn ${turnId} was notified: ${notified.map((n) => n.method).join(", ")}`);
      }
      if (script.calls.length) throw new Failure(`the model was called ${script.calls.length} times for refused turns`);
    });
  },
};

const capabilityNotFound: Scenario = {
  name: "a capability naming something the gateway does not have",
  checks: ["TURN-CAPABILITY-NOT-FOUND"],
  async run(ctx) {
    const answer = `Ran without them ${ctx.token.slice(-6)}.`;
    ctx.script([{ reply: { text: answer } }]);
    const thread = await ctx.thread();
    const capabilities: TurnCapability[] = [
      {
        id: "cap_cert_skill",
        label: "missing skill",
        kind: { type: "skill", slug: `workspace/${ctx.id("cert-missing-skill")}`, sourceKind: "workspace" },
      },
      {
        id: "cap_cert_mcp",
        label: "missing server",
        kind: { type: "mcpServer", name: ctx.id("cert_missing_server"), scopeKind: "workspace" },
      },
    ];
    await ctx.attempt("TURN-CAPABILITY-NOT-FOUND", async () => {
      const turn = await ctx.startTurn(thread.id, "Answer without the missing capabilities", { capabilities });
      const expectRejected = (where: string, resolutions: unknown) => {
        const list = (resolutions ?? []) as { capabilityId: string; status: string; reason: string }[];
        for (const capability of capabilities) {
          const resolution = list.find((r) => r.capabilityId === capability.id);
          if (resolution?.status !== "rejected" || resolution.reason !== "not_found") {
            throw new Failure(
              `${where}: capability ${capability.id} (${capability.kind.type}) ${resolution ? `is resolved ${shown(resolution)}` : "has no resolution"}, expected rejected with not_found`,
              resolutions,
            );
          }
        }
      };
      expectRejected("the turn/start response", turn.capabilities);
      const end = await ctx.ended(turn.id);
      if (end.terminal?.method !== "turn/completed" && end.turn.status !== "Completed")
        throw new Failure(`the turn ended ${end.turn.status}; it should run without the missing capabilities`, end.terminal?.params);
      expectRejected("the ended turn", end.turn.capabilities);
    });
  },
};

export const backendScenarios: readonly Scenario[] = [backendRefused, capabilityNotFound];
