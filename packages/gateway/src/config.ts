/**
 * The reference gateway's configuration: read from a JSON file, validated against
 * schemas/gateway_config.json (clear errors naming each wrong place), and completed with
 * the documented defaults.
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GatewayConfig, GatewayRetryPolicy, TurnExecutionWindowLimits } from "@turnspec/protocol/types";
import { validate } from "@turnspec/protocol/validators";
import { formatIssue } from "@turnspec/rpc";
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
  | { readonly transport: "stdio"; readonly command: string; readonly args: readonly string[]; readonly env: Readonly<Record<string, string>>; readonly cwd?: string }
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

export function readConfigFile(path: string): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read the config file ${path}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`the config file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  const result = validate("GatewayConfig", value);
  if (!result.ok) {
    throw new ConfigError(`the config file ${path} is invalid:\n${result.errors.map((issue) => `  ${formatIssue(issue)}`).join("\n")}`);
  }
  return result.value;
}

/** Applies the defaults; `overrides` are what command-line flags set. */
export function resolveConfig(config: GatewayConfig = {}, overrides: { providerUrl?: string; maxFrameBytes?: number; questionTimeoutMs?: number } = {}): ResolvedConfig {
  const openaiConfig = overrides.providerUrl
    ? { base_url: overrides.providerUrl, model: config.providers?.openai?.model ?? config.default_model ?? "gpt-4o-mini", api_key_env: config.providers?.openai?.api_key_env }
    : config.providers?.openai;
  const openai = openaiConfig ? { baseURL: openaiConfig.base_url, model: openaiConfig.model, apiKeyEnv: openaiConfig.api_key_env ?? "OPENAI_API_KEY" } : undefined;
  const defaultProvider = config.default_provider ?? (overrides.providerUrl ? "openai" : "scripted");
  if (defaultProvider === "openai" && !openai) throw new ConfigError('default_provider is "openai" but providers.openai is not configured');
  const namedProviders = new Map<string, OpenAIEndpoint>();
  for (const [name, endpoint] of Object.entries(config.providers?.openai_compatible ?? {})) {
    if (!endpoint) continue;
    if (name === "scripted" || name === "openai") throw new ConfigError(`providers.openai_compatible.${name}: the provider name ${name} is taken by the built-in provider; choose another`);
    namedProviders.set(name, { baseURL: endpoint.base_url, model: endpoint.model, apiKeyEnv: endpoint.api_key_env ?? "OPENAI_API_KEY" });
  }
  const providerNames = ["scripted", ...(openai ? ["openai"] : []), ...namedProviders.keys()];
  if (!providerNames.includes(defaultProvider)) throw new ConfigError(`default_provider "${defaultProvider}" is not a provider of this gateway (${providerNames.join(", ")})`);
  const windows = config.tools?.execution_windows;
  return {
    defaultProvider,
    defaultModel: config.default_model ?? (defaultProvider === "openai" ? openai!.model : (namedProviders.get(defaultProvider)?.model ?? "scripted")),
    ...(openai ? { openai } : {}),
    namedProviders,
    mcpServers: mcpServers(config.mcp_servers ?? {}),
    acpAgents: new Map(
      Object.entries(config.acp_agents ?? {}).flatMap(([runtimeId, agent]) =>
        agent ? [[runtimeId, { runtimeId, command: agent.command, args: agent.args ?? [], env: strings(agent.env), startupTimeoutMs: agent.startup_timeout_ms ?? 20_000 }] as const] : [],
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
                  command: runtime.command ?? "codex",
                  args: runtime.args ?? [],
                  baseURL: runtime.base_url,
                  model: runtime.model,
                  apiKeyEnv: runtime.api_key_env ?? "OPENAI_API_KEY",
                  codexHome: runtime.codex_home ?? join(tmpdir(), `turnspec-codex-${runtimeId}`),
                  startupTimeoutMs: runtime.startup_timeout_ms ?? 20_000,
                },
              ] as const,
            ]
          : [],
      ),
    ),
    skillFolders: (config.skills?.folders ?? []).map((f) => ({ path: f.path, sourceKind: f.source_kind ?? "workspace" })),
    defaultCwd: config.tools?.default_cwd ?? process.cwd(),
    shellTimeoutMs: config.tools?.shell_timeout_ms ?? 30_000,
    maxShellTimeoutMs: config.tools?.max_shell_timeout_ms ?? 600_000,
    restrictedMaxShellTimeoutMs: config.tools?.restricted_max_shell_timeout_ms ?? 120_000,
    webFetchTimeoutMs: config.tools?.web_fetch_timeout_ms ?? 15_000,
    maxFrameBytes: overrides.maxFrameBytes ?? config.limits?.max_frame_bytes ?? 8 * 1024 * 1024,
    maxBatchSize: config.limits?.max_batch_size ?? 1000,
    maxAgentRounds: config.limits?.max_agent_rounds ?? 200,
    maxToolCalls: config.limits?.max_tool_calls ?? 800,
    windowLimits: {
      max_agent_rounds_per_window: windows?.max_agent_rounds_per_window ?? 10,
      max_tool_calls_per_window: windows?.max_tool_calls_per_window ?? 40,
      max_wall_clock_ms_per_window: windows?.max_wall_clock_ms_per_window ?? 600_000,
      max_provider_tokens_per_window: windows?.max_provider_tokens_per_window ?? 200_000,
    },
    windowTotals: {
      max_agent_rounds: windows?.total?.max_agent_rounds ?? 40,
      max_tool_calls: windows?.total?.max_tool_calls ?? 160,
      max_wall_clock_ms: windows?.total?.max_wall_clock_ms ?? 3_600_000,
      max_provider_tokens: windows?.total?.max_provider_tokens ?? 1_000_000,
    },
    providerRetry: retryPolicy(config.providers?.retry, { max_attempts: 4, initial_delay_ms: 1000, backoff_multiplier: 2, max_delay_ms: 30_000 }),
    toolRetry: retryPolicy(config.tools?.retry, { max_attempts: 3, initial_delay_ms: 500, backoff_multiplier: 2, max_delay_ms: 10_000 }),
    context: { maxHistoryTokens: config.context?.max_history_tokens ?? 100_000, keepRecentMessages: config.context?.keep_recent_messages ?? 8 },
    maxSpawnDepth: config.limits?.max_spawn_depth ?? 2,
    permissionRequestTimeoutMs: config.permissions?.request_timeout_ms ?? 600_000,
    questionTimeoutMs: overrides.questionTimeoutMs ?? config.questions?.timeout_ms ?? 600_000,
    requireResolveToken: config.permissions?.require_resolve_token ?? true,
    allowedPaths: config.permissions?.allowed_paths ?? [],
    envPassthrough: envPassthrough(config.tools?.env_passthrough ?? [], openai?.apiKeyEnv),
    sandbox: { required: config.sandbox?.required ?? false, bwrapPath: config.sandbox?.bwrap_path ?? "bwrap" },
    network: { allowDomains: domainList("network.allow_domains", config.network?.allow_domains), denyDomains: domainList("network.deny_domains", config.network?.deny_domains) },
    ...(config.permissions?.resolve_token_secret ? { resolveTokenSecret: config.permissions.resolve_token_secret } : {}),
    gatewayId: config.gateway_id ?? "gw_local",
    maxRouteHops: config.routes?.max_hops ?? 4,
    maxRoutesPerSource: config.routes?.max_routes_per_source ?? 32,
    agent: {
      identityId: config.agent?.identity_id ?? "agent_reference",
      displayName: config.agent?.display_name ?? "Reference agent",
      ...(config.agent?.nickname ? { nickname: config.agent.nickname } : {}),
      revision: config.agent?.revision ?? 1,
      avatarRevision: config.agent?.avatar_revision ?? null,
      role: config.agent?.role ?? null,
    },
  };
}

function retryPolicy(given: GatewayRetryPolicy | undefined, defaults: RetryPolicy): RetryPolicy {
  return { ...defaults, ...given };
}

function mcpServers(given: NonNullable<GatewayConfig["mcp_servers"]>): Map<string, McpServerConfig> {
  const servers = new Map<string, McpServerConfig>();
  for (const [name, server] of Object.entries(given)) {
    if (!server) continue;
    const common = { name, scope: server.scope ?? "workspace", startupTimeoutMs: server.startup_timeout_ms ?? 20_000, toolTimeoutMs: server.tool_timeout_ms ?? 60_000, trusted: server.trusted === true };
    const at = `mcp_servers.${name}`;
    if ((server.command === undefined) === (server.url === undefined)) throw new ConfigError(`${at}: give exactly one of command (a stdio server) or url (a Streamable HTTP server)`);
    if (server.command !== undefined) {
      if (server.headers) throw new ConfigError(`${at}.headers: headers are for a url server only; this one is started with command`);
      servers.set(name, { ...common, transport: "stdio", command: server.command, args: server.args ?? [], env: strings(server.env), ...(server.cwd ? { cwd: server.cwd } : {}) });
    } else {
      for (const field of ["args", "env", "cwd"] as const) if (server[field] !== undefined) throw new ConfigError(`${at}.${field}: ${field} is for a command server only; this one is reached at url`);
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
    if (secrets.has(name)) throw new ConfigError(`tools.env_passthrough/${i}: ${name} holds a secret of the gateway itself and is never passed to tools`);
  });
  return names;
}
