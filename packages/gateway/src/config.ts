/**
 * The reference gateway's configuration: read from a JSON file, validated against
 * schemas/gateway_config.json (clear errors naming each wrong place), and completed with
 * the documented defaults.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GatewayConfig, GatewayRetryPolicy, TurnExecutionWindowLimits } from "@turnspec/protocol/types";
import { validate } from "@turnspec/protocol/validators";
import { formatIssue } from "@turnspec/rpc";
import { JsonFileError, readJsonFile } from "@turnspec/rpc/json-file";
import { defaultBoolean, defaultNumber, defaultRetryPolicy, defaultString, defaultStrings } from "./config-defaults.js";
import { parseDomainPattern } from "./permissions/domains.js";

/** A retry policy with every field set. */
export type RetryPolicy = Required<GatewayRetryPolicy>;

/** Totals over the windows of a turn since it started or was last resumed. */
export interface WindowTotals {
  readonly max_agent_rounds: number;
  readonly max_tool_calls: number;
  readonly max_wall_clock_ms: number;
  readonly max_provider_tokens: number;
}

export interface ResolvedConfig {
  readonly defaultProvider: string;
  readonly defaultModel: string;
  readonly openai?: OpenAIEndpoint;
  /** More OpenAI-compatible endpoints, by provider name. */
  readonly namedProviders: ReadonlyMap<string, OpenAIEndpoint>;
  /** MCP servers turns may select, by name. */
  readonly mcpServers: ReadonlyMap<string, McpServerConfig>;
  /** ACP agents turns may run on, by runtime id. */
  readonly acpAgents: ReadonlyMap<string, AcpAgentConfig>;
  /** CLI agent runtimes turns may run on, by runtime id. */
  readonly cliRuntimes: ReadonlyMap<string, CliRuntimeConfig>;
  /** Skill folders turns may select skills from. */
  readonly skillFolders: readonly { readonly path: string; readonly sourceKind: string }[];
  readonly defaultCwd: string;
  readonly shellTimeoutMs: number;
  readonly maxShellTimeoutMs: number;
  readonly restrictedMaxShellTimeoutMs: number;
  readonly webFetchTimeoutMs: number;
  readonly maxFrameBytes: number;
  readonly maxBatchSize: number;
  readonly maxAgentRounds: number;
  readonly maxToolCalls: number;
  /** Limits of each execution window, as turn/execution_window/started carries them. */
  readonly windowLimits: TurnExecutionWindowLimits;
  readonly windowTotals: WindowTotals;
  readonly providerRetry: RetryPolicy;
  readonly toolRetry: RetryPolicy;
  /** History compression: the estimated-token budget and how many recent messages stay whole. */
  readonly context: { readonly maxHistoryTokens: number; readonly keepRecentMessages: number };
  readonly maxSpawnDepth: number;
  readonly permissionRequestTimeoutMs: number;
  /** How long an ask_question question stays open before it expires (questions.timeout_ms). */
  readonly questionTimeoutMs: number;
  /** The caller's wallet as the wallet tools see it, and its ceremonies' URLs (wallet). */
  readonly wallet: WalletConfig;
  readonly requireResolveToken: boolean;
  readonly allowedPaths: readonly string[];
  /** Environment variables tools get in every mode besides the built-in allow-lists (tools.env_passthrough). */
  readonly envPassthrough: readonly string[];
  /** The OS sandbox of restricted turns (sandbox/turn.ts). */
  readonly sandbox: { readonly required: boolean; readonly bwrapPath: string };
  /** Hosts the restricted modes may reach (network.allow_domains / deny_domains), each entry checked (permissions/domains.ts). */
  readonly network: { readonly allowDomains: readonly string[]; readonly denyDomains: readonly string[] };
  readonly resolveTokenSecret?: string;
  readonly gatewayId: string;
  readonly maxRouteHops: number;
  readonly maxRoutesPerSource: number;
  /** On a store several instances share: how long a running turn's lease lasts unrenewed, in ms. */
  readonly leaseTimeoutMs: number;
  /** How the gateway's agent presents itself on what it authors. */
  readonly agent: {
    readonly identityId: string;
    readonly displayName: string;
    readonly nickname?: string;
    readonly revision: number;
    readonly avatarRevision: number | null;
    readonly role: string | null;
  };
}

/** An OpenAI-compatible Chat Completions endpoint. */
export interface OpenAIEndpoint {
  readonly baseURL: string;
  readonly model: string;
  readonly apiKeyEnv: string;
}

/** How one MCP server is reached: a stdio command or a Streamable HTTP URL. */
export type McpServerConfig = {
  readonly name: string;
  readonly scope: string;
  readonly startupTimeoutMs: number;
  readonly toolTimeoutMs: number;
  /** Whether the server's annotations are believed (a readOnlyHint lowers a tool to mcp_read only then). */
  readonly trusted: boolean;
} & (
  | {
      readonly transport: "stdio";
      readonly command: string;
      readonly args: readonly string[];
      readonly env: Readonly<Record<string, string>>;
      readonly cwd?: string;
    }
  | { readonly transport: "http"; readonly url: string; readonly headers: Readonly<Record<string, string>> }
);

/** An agent the gateway starts and speaks the Agent Client Protocol with. */
export interface AcpAgentConfig {
  readonly runtimeId: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly startupTimeoutMs: number;
}

/** A CLI agent runtime the gateway starts and drives (the Codex app-server). */
export interface CliRuntimeConfig {
  readonly runtimeId: string;
  readonly kind: "codex";
  readonly command: string;
  readonly args: readonly string[];
  readonly baseURL: string;
  readonly model: string;
  readonly apiKeyEnv: string;
  readonly codexHome: string;
  readonly startupTimeoutMs: number;
}

/** A configuration file that cannot be used; the message says which file and where. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** The configuration file at `path`, checked against gateway_config.json. Throws ConfigError naming the file and where. */
export function readConfigFile(path: string): GatewayConfig {
  let value: unknown;
  try {
    value = readJsonFile(path, "the config file");
  } catch (error) {
    throw error instanceof JsonFileError ? new ConfigError(error.message) : error;
  }
  const result = validate("GatewayConfig", value);
  if (!result.ok) {
    throw new ConfigError(`the config file ${path} is invalid:\n${result.errors.map((issue) => `  ${formatIssue(issue)}`).join("\n")}`);
  }
  return result.value;
}

/** Applies the defaults; `overrides` are what command-line flags set. */
/** The wallet section, resolved: the URLs that are configured, and the wallet's state. */
export interface WalletConfig {
  readonly state: "none" | "usable" | "unusable";
  readonly linkUrl?: string;
  readonly updateUrl?: string;
  readonly revokeUrl?: string;
}

export function resolveConfig(
  config: GatewayConfig = {},
  overrides: { providerUrl?: string; maxFrameBytes?: number; questionTimeoutMs?: number } = {},
): ResolvedConfig {
  const openaiConfig = overrides.providerUrl
    ? {
        base_url: overrides.providerUrl,
        model: config.providers?.openai?.model ?? config.default_model ?? "gpt-4o-mini",
        api_key_env: config.providers?.openai?.api_key_env,
      }
    : config.providers?.openai;
  const openai = openaiConfig
    ? {
        baseURL: openaiConfig.base_url,
        model: openaiConfig.model,
        apiKeyEnv: openaiConfig.api_key_env ?? defaultString("/providers/openai/api_key_env"),
      }
    : undefined;
  const defaultProvider = config.default_provider ?? (overrides.providerUrl ? "openai" : "scripted");
  if (defaultProvider === "openai" && !openai) throw new ConfigError('default_provider is "openai" but providers.openai is not configured');
  const namedProviders = new Map<string, OpenAIEndpoint>();
  for (const [name, endpoint] of Object.entries(config.providers?.openai_compatible ?? {})) {
    if (!endpoint) continue;
    if (name === "scripted" || name === "openai")
      throw new ConfigError(
        `providers.openai_compatible.${name}: the provider name ${name} is taken by the built-in provider; choose another`,
      );
    namedProviders.set(name, {
      baseURL: endpoint.base_url,
      model: endpoint.model,
      apiKeyEnv: endpoint.api_key_env ?? defaultString("/providers/openai_compatible/*/api_key_env"),
    });
  }
  const providerNames = ["scripted", ...(openai ? ["openai"] : []), ...namedProviders.keys()];
  if (!providerNames.includes(defaultProvider))
    throw new ConfigError(`default_provider "${defaultProvider}" is not a provider of this gateway (${providerNames.join(", ")})`);
  const windows = config.tools?.execution_windows;
  return {
    defaultProvider,
    defaultModel:
      config.default_model ?? (defaultProvider === "openai" ? openai!.model : (namedProviders.get(defaultProvider)?.model ?? "scripted")),
    ...(openai ? { openai } : {}),
    namedProviders,
    mcpServers: mcpServers(config.mcp_servers ?? {}),
    acpAgents: new Map(
      Object.entries(config.acp_agents ?? {}).flatMap(([runtimeId, agent]) =>
        agent
          ? [
              [
                runtimeId,
                {
                  runtimeId,
                  command: agent.command,
                  args: agent.args ?? [],
                  env: strings(agent.env),
                  startupTimeoutMs: agent.startup_timeout_ms ?? defaultNumber("/acp_agents/*/startup_timeout_ms"),
                },
              ] as const,
            ]
          : [],
      ),
    ),
    cliRuntimes: new Map(
      Object.entries(config.cli_runtimes ?? {}).flatMap(([runtimeId, runtime]) =>
        runtime
          ? [
              [
                runtimeId,
                {
                  runtimeId,
                  kind: runtime.kind,
                  command: runtime.command ?? defaultString("/cli_runtimes/*/command"),
                  args: runtime.args ?? defaultStrings("/cli_runtimes/*/args"),
                  baseURL: runtime.base_url,
                  model: runtime.model,
                  apiKeyEnv: runtime.api_key_env ?? defaultString("/cli_runtimes/*/api_key_env"),
                  codexHome: runtime.codex_home ?? join(tmpdir(), `turnspec-codex-${runtimeId}`),
                  startupTimeoutMs: runtime.startup_timeout_ms ?? defaultNumber("/cli_runtimes/*/startup_timeout_ms"),
                },
              ] as const,
            ]
          : [],
      ),
    ),
    skillFolders: (config.skills?.folders ?? []).map((f) => ({
      path: f.path,
      sourceKind: f.source_kind ?? defaultString("/skills/folders/*/source_kind"),
    })),
    defaultCwd: config.tools?.default_cwd ?? process.cwd(),
    shellTimeoutMs: config.tools?.shell_timeout_ms ?? defaultNumber("/tools/shell_timeout_ms"),
    maxShellTimeoutMs: config.tools?.max_shell_timeout_ms ?? defaultNumber("/tools/max_shell_timeout_ms"),
    restrictedMaxShellTimeoutMs: config.tools?.restricted_max_shell_timeout_ms ?? defaultNumber("/tools/restricted_max_shell_timeout_ms"),
    webFetchTimeoutMs: config.tools?.web_fetch_timeout_ms ?? defaultNumber("/tools/web_fetch_timeout_ms"),
    maxFrameBytes: overrides.maxFrameBytes ?? config.limits?.max_frame_bytes ?? defaultNumber("/limits/max_frame_bytes"),
    maxBatchSize: config.limits?.max_batch_size ?? defaultNumber("/limits/max_batch_size"),
    maxAgentRounds: config.limits?.max_agent_rounds ?? defaultNumber("/limits/max_agent_rounds"),
    maxToolCalls: config.limits?.max_tool_calls ?? defaultNumber("/limits/max_tool_calls"),
    windowLimits: {
      max_agent_rounds_per_window:
        windows?.max_agent_rounds_per_window ?? defaultNumber("/tools/execution_windows/max_agent_rounds_per_window"),
      max_tool_calls_per_window: windows?.max_tool_calls_per_window ?? defaultNumber("/tools/execution_windows/max_tool_calls_per_window"),
      max_wall_clock_ms_per_window:
        windows?.max_wall_clock_ms_per_window ?? defaultNumber("/tools/execution_windows/max_wall_clock_ms_per_window"),
      max_provider_tokens_per_window:
        windows?.max_provider_tokens_per_window ?? defaultNumber("/tools/execution_windows/max_provider_tokens_per_window"),
    },
    windowTotals: {
      max_agent_rounds: windows?.total?.max_agent_rounds ?? defaultNumber("/tools/execution_windows/total/max_agent_rounds"),
      max_tool_calls: windows?.total?.max_tool_calls ?? defaultNumber("/tools/execution_windows/total/max_tool_calls"),
      max_wall_clock_ms: windows?.total?.max_wall_clock_ms ?? defaultNumber("/tools/execution_windows/total/max_wall_clock_ms"),
      max_provider_tokens: windows?.total?.max_provider_tokens ?? defaultNumber("/tools/execution_windows/total/max_provider_tokens"),
    },
    providerRetry: { ...defaultRetryPolicy("/providers/retry"), ...config.providers?.retry },
    toolRetry: { ...defaultRetryPolicy("/tools/retry"), ...config.tools?.retry },
    context: {
      maxHistoryTokens: config.context?.max_history_tokens ?? defaultNumber("/context/max_history_tokens"),
      keepRecentMessages: config.context?.keep_recent_messages ?? defaultNumber("/context/keep_recent_messages"),
    },
    maxSpawnDepth: config.limits?.max_spawn_depth ?? defaultNumber("/limits/max_spawn_depth"),
    permissionRequestTimeoutMs: config.permissions?.request_timeout_ms ?? defaultNumber("/permissions/request_timeout_ms"),
    questionTimeoutMs: overrides.questionTimeoutMs ?? config.questions?.timeout_ms ?? defaultNumber("/questions/timeout_ms"),
    wallet: {
      state: config.wallet?.state ?? (defaultString("/wallet/state") as WalletConfig["state"]),
      ...(config.wallet?.link_url ? { linkUrl: config.wallet.link_url } : {}),
      ...(config.wallet?.update_url ? { updateUrl: config.wallet.update_url } : {}),
      ...(config.wallet?.revoke_url ? { revokeUrl: config.wallet.revoke_url } : {}),
    },
    requireResolveToken: config.permissions?.require_resolve_token ?? defaultBoolean("/permissions/require_resolve_token"),
    allowedPaths: config.permissions?.allowed_paths ?? [],
    envPassthrough: envPassthrough(config.tools?.env_passthrough ?? defaultStrings("/tools/env_passthrough"), openai?.apiKeyEnv),
    sandbox: {
      required: config.sandbox?.required ?? defaultBoolean("/sandbox/required"),
      bwrapPath: config.sandbox?.bwrap_path ?? defaultString("/sandbox/bwrap_path"),
    },
    network: {
      allowDomains: domainList("network.allow_domains", config.network?.allow_domains),
      denyDomains: domainList("network.deny_domains", config.network?.deny_domains),
    },
    ...(config.permissions?.resolve_token_secret ? { resolveTokenSecret: config.permissions.resolve_token_secret } : {}),
    gatewayId: config.gateway_id ?? defaultString("/gateway_id"),
    maxRouteHops: config.routes?.max_hops ?? defaultNumber("/routes/max_hops"),
    maxRoutesPerSource: config.routes?.max_routes_per_source ?? defaultNumber("/routes/max_routes_per_source"),
    leaseTimeoutMs: config.lease_timeout_ms ?? defaultNumber("/lease_timeout_ms"),
    agent: {
      identityId: config.agent?.identity_id ?? defaultString("/agent/identity_id"),
      displayName: config.agent?.display_name ?? defaultString("/agent/display_name"),
      ...(config.agent?.nickname ? { nickname: config.agent.nickname } : {}),
      revision: config.agent?.revision ?? defaultNumber("/agent/revision"),
      avatarRevision: config.agent?.avatar_revision ?? null,
      role: config.agent?.role ?? null,
    },
  };
}

function mcpServers(given: NonNullable<GatewayConfig["mcp_servers"]>): Map<string, McpServerConfig> {
  const servers = new Map<string, McpServerConfig>();
  for (const [name, server] of Object.entries(given)) {
    if (!server) continue;
    const common = {
      name,
      scope: server.scope ?? defaultString("/mcp_servers/*/scope"),
      startupTimeoutMs: server.startup_timeout_ms ?? defaultNumber("/mcp_servers/*/startup_timeout_ms"),
      toolTimeoutMs: server.tool_timeout_ms ?? defaultNumber("/mcp_servers/*/tool_timeout_ms"),
      trusted: server.trusted ?? defaultBoolean("/mcp_servers/*/trusted"),
    };
    const at = `mcp_servers.${name}`;
    if ((server.command === undefined) === (server.url === undefined))
      throw new ConfigError(`${at}: give exactly one of command (a stdio server) or url (a Streamable HTTP server)`);
    if (server.command !== undefined) {
      if (server.headers) throw new ConfigError(`${at}.headers: headers are for a url server only; this one is started with command`);
      servers.set(name, {
        ...common,
        transport: "stdio",
        command: server.command,
        args: server.args ?? [],
        env: strings(server.env),
        ...(server.cwd ? { cwd: server.cwd } : {}),
      });
    } else {
      for (const field of ["args", "env", "cwd"] as const)
        if (server[field] !== undefined)
          throw new ConfigError(`${at}.${field}: ${field} is for a command server only; this one is reached at url`);
      try {
        new URL(server.url!);
      } catch {
        throw new ConfigError(`${at}.url: ${JSON.stringify(server.url)} is not a URL`);
      }
      servers.set(name, { ...common, transport: "http", url: server.url!, headers: strings(server.headers) });
    }
  }
  return servers;
}

/** A string map without the absent entries its generated type allows. */
function strings(map: Readonly<Record<string, string | undefined>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(map ?? {}).filter((e): e is [string, string] => e[1] !== undefined));
}

/** A domain list of the configuration, every entry parsed once here so a bad one is named when the file is read. */
function domainList(at: string, entries: readonly string[] | undefined): readonly string[] {
  (entries ?? []).forEach((entry, i) => {
    try {
      parseDomainPattern(entry);
    } catch (error) {
      throw new ConfigError(`${at}/${i}: ${(error as Error).message}`);
    }
  });
  return entries ?? [];
}

/** The operator's extra tool variables, refusing the gateway's own secrets by name. */
function envPassthrough(names: readonly string[], providerKeyEnv: string | undefined): readonly string[] {
  const secrets = new Set(["TURNSPEC_TOKEN", "OPENAI_API_KEY", ...(providerKeyEnv ? [providerKeyEnv] : [])]);
  names.forEach((name, i) => {
    if (secrets.has(name))
      throw new ConfigError(`tools.env_passthrough/${i}: ${name} holds a secret of the gateway itself and is never passed to tools`);
  });
  return names;
}
