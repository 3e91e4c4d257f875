/**
 * What a turn runs on, decided before it starts: the execution backend turn/start names
 * (or the thread's provider) and the capabilities it selects. Nothing a client names is
 * ignored: a backend the gateway does not serve refuses the turn with
 * execution_backend_unavailable (nothing runs, no turn is created); each capability is
 * reported accepted or rejected on the turn (capabilities.ts).
 *
 * The tools and skills a start resolved are handed to the turn's first run; a later run
 * (turn/resume, possibly after a restart) resolves the accepted capabilities again, as the
 * servers and skill folders are now.
 */
import { protocolError } from "@turnspec/protocol/server";
import type { Thread, Turn, TurnCapability, TurnCapabilityResolution, TurnItem, TurnStartParams } from "@turnspec/protocol/types";
import type { ResolvedConfig } from "../config.js";
import type { PreparedTurn, TurnExtras } from "../engine/ports.js";
import { materializeProfile } from "../permissions/policy.js";
import { SkillCatalog } from "../skills/catalog.js";
import { CapabilityResolver } from "./capabilities.js";
import { codexOptionsProblem } from "./codex.js";
import { McpServers } from "./mcp.js";

const NONE: TurnExtras = { tools: [], skills: [] };

export class TurnBackends {
  readonly mcp: McpServers;
  private readonly resolver: CapabilityResolver;

  constructor(
    private readonly config: ResolvedConfig,
    /** The model providers this gateway has, by name. */
    private readonly providers: ReadonlySet<string>,
    log: (message: string) => void = () => undefined,
  ) {
    this.mcp = new McpServers(config.mcpServers, log);
    this.resolver = new CapabilityResolver(this.mcp, new SkillCatalog(config.skillFolders));
  }

  /**
   * Checks the backend a turn/start asks for and resolves its capabilities. Throws
   * execution_backend_unavailable for a backend this gateway does not serve.
   */
  async prepare(params: TurnStartParams, thread: Pick<Thread, "mode" | "model_provider">): Promise<PreparedTurn> {
    const provider = this.providerFor(params) ?? thread.model_provider;
    const backend = params.execution_backend;
    if (backend?.type === "acpAgentRuntime" || backend?.type === "cliAgentRuntime") {
      const refuse = (detail: string): never => {
        throw protocolError("execution_backend_unavailable", `The execution backend cannot be used: ${detail}`, {
          execution_backend: backend,
          detail,
          available: this.available(),
        });
      };
      const name = backend.type === "acpAgentRuntime" ? `the ACP agent ${backend.runtime_id}` : `the CLI runtime ${backend.runtime_id}`;
      // A runtime runs its own tools: a Chat-mode turn (no tools) cannot be kept to on it.
      if ((params.mode ?? thread.mode) === "Chat")
        refuse(`${name} runs its own tools, so a Chat-mode turn (which calls none) cannot run on it; use Agent mode`);
      // ACP v1 has no way to choose the agent's model.
      if (backend.type === "acpAgentRuntime" && params.model !== undefined)
        refuse(`${name} chooses its own model: ACP offers no way to request ${params.model}`);
      // A CLI runtime runs the turn's model, or else its own configured one.
      const runtimeModel =
        backend.type === "cliAgentRuntime" && params.model === undefined
          ? this.config.cliRuntimes.get(backend.runtime_id)!.model
          : undefined;
      const runtime = backend.type === "acpAgentRuntime" ? `ACP agent ${backend.runtime_id}` : `CLI runtime ${backend.runtime_id}`;
      // The runtime runs its own tools and prompt: nothing of the gateway's can be added to them.
      const capabilities = params.capabilities
        ? [...new Set(params.capabilities.map((c) => c.id))].map((capabilityId): TurnCapabilityResolution => ({
            capabilityId,
            status: "rejected",
            reason: "provider_unsupported",
            message: `the ${runtime} runs its own tools and skills; the gateway's cannot be offered to it`,
          }))
        : undefined;
      return {
        params: runtimeModel ? { ...params, model: runtimeModel } : params,
        ...(capabilities ? { capabilities } : {}),
        extras: NONE,
        ...(params.cli_runtime_options ? { cliRuntimeOptions: params.cli_runtime_options } : {}),
      };
    }
    const resolved = params.capabilities?.length
      ? await this.resolver.resolve(params.capabilities, {
          agent: (params.mode ?? thread.mode) === "Agent",
          policy: materializeProfile(params.permission_profile).effective_policy,
        })
      : undefined;
    // A provider the turn chooses itself runs the turn's model, or else its own configured
    // one: the thread's model belongs to the thread's provider.
    const chosen =
      provider !== undefined && provider !== thread.model_provider && params.model === undefined ? this.modelOf(provider) : undefined;
    return {
      params:
        provider === params.model_provider && chosen === undefined
          ? params
          : { ...params, ...(provider ? { model_provider: provider } : {}), ...(chosen ? { model: chosen } : {}) },
      ...(params.capabilities ? { capabilities: resolved?.resolutions ?? [] } : {}),
      extras: resolved ? { tools: resolved.tools, skills: resolved.skills } : NONE,
    };
  }

  /** The extras of a run that was not just prepared (a resumed run, a child turn's): the turn's accepted capabilities resolved again. */
  async extrasOf(turn: Turn, items: readonly TurnItem[]): Promise<TurnExtras> {
    const acceptedIds = new Set((turn.capabilities ?? []).filter((c) => c.status === "accepted").map((c) => c.capabilityId));
    if (acceptedIds.size === 0) return NONE;
    const user = items.find((i): i is Extract<TurnItem, { type: "userMessage" }> => i.type === "userMessage");
    const selected: TurnCapability[] = (user?.capabilities ?? []).filter((c) => acceptedIds.has(c.id));
    const resolved = await this.resolver.resolve(selected, {
      agent: turn.mode === "Agent",
      policy: turn.permission_profile.effective_policy,
    });
    return { tools: resolved.tools, skills: resolved.skills };
  }

  /** What this gateway serves, by kind of backend. */
  private available() {
    return {
      apiProvider: [...this.providers].sort(),
      cliAgentRuntime: [...this.config.cliRuntimes.keys()].sort(),
      acpAgentRuntime: [...this.config.acpAgents.keys()].sort(),
    };
  }

  /** The model a provider runs when a turn names none. */
  private modelOf(provider: string): string | undefined {
    if (provider === "openai") return this.config.openai?.model;
    if (provider === "scripted") return "scripted";
    return this.config.namedProviders.get(provider)?.model;
  }

  async close(): Promise<void> {
    await this.mcp.close();
  }

  /** The model provider the turn runs on, or the refusal of a backend this gateway does not serve. */
  private providerFor(params: TurnStartParams): string | undefined {
    const backend = params.execution_backend;
    const available = this.available();
    const refuse = (detail: string): never => {
      throw protocolError("execution_backend_unavailable", `The execution backend cannot be used: ${detail}`, {
        ...(backend ? { execution_backend: backend } : {}),
        detail,
        available,
      });
    };
    if (params.cli_runtime_options && backend?.type !== "cliAgentRuntime") {
      refuse("cli_runtime_options applies only to a turn whose execution_backend is a cliAgentRuntime");
    }
    if (!backend) {
      const named = params.model_provider;
      if (named !== undefined && !this.providers.has(named))
        refuse(`model_provider ${named} is not a provider of this gateway (it has ${available.apiProvider.join(", ")})`);
      return named;
    }
    switch (backend.type) {
      case "apiProvider":
        if (!this.providers.has(backend.provider))
          refuse(`the API provider ${backend.provider} is not configured on this gateway (it has ${available.apiProvider.join(", ")})`);
        if (params.model_provider !== undefined && params.model_provider !== backend.provider) {
          refuse(`model_provider ${params.model_provider} contradicts execution_backend.provider ${backend.provider}; name one provider`);
        }
        return backend.provider;
      case "cliAgentRuntime": {
        const runtime = this.config.cliRuntimes.get(backend.runtime_id);
        if (!runtime) {
          refuse(
            `the CLI agent runtime ${backend.runtime_id} is not configured on this gateway${available.cliAgentRuntime.length ? ` (it has ${available.cliAgentRuntime.join(", ")})` : " (no CLI agent runtime is)"}`,
          );
        } else if (runtime.kind !== backend.runtime_kind) {
          refuse(`the CLI agent runtime ${backend.runtime_id} is of kind ${runtime.kind}, not ${backend.runtime_kind}`);
        }
        if (params.model_provider !== undefined)
          refuse(`model_provider ${params.model_provider} does not apply to a turn run by the CLI runtime ${backend.runtime_id}`);
        const problem = codexOptionsProblem(params.cli_runtime_options);
        if (problem) refuse(problem);
        return undefined;
      }
      case "acpAgentRuntime":
        if (!this.config.acpAgents.has(backend.runtime_id)) {
          refuse(
            `the ACP agent runtime ${backend.runtime_id} is not configured on this gateway${available.acpAgentRuntime.length ? ` (it has ${available.acpAgentRuntime.join(", ")})` : " (no ACP agent runtime is)"}`,
          );
        }
        if (params.model_provider !== undefined)
          refuse(`model_provider ${params.model_provider} does not apply to a turn run by the ACP agent ${backend.runtime_id}`);
        return undefined;
    }
    return refuse(`execution backends of type ${(backend as { type: string }).type} are not supported`);
  }
}
