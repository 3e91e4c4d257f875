/**
 * The execution security snapshot of a turn: what the runtime enforces, resolved from the
 * permission mode (turns-api.md, "Permission profiles and approval requests"), and an
 * honest account of what it cannot enforce.
 *
 * With an OS sandbox (bubblewrap, sandbox/) the restricted modes are `active`:
 * shell commands run with the file system read-only but for the writable roots and a
 * per-turn temp folder, in their own PID namespace, and with no network namespace when the
 * network is disabled. Without one the gateway can still hold its own tools to the policy
 * (read_file, write_file and web_fetch are checked before they run, a shell's working
 * directory and environment are chosen by the gateway), but once a shell command runs,
 * whatever it opens or connects to is beyond its reach: the restricted modes are then
 * `partially_active` and say where they fall short.
 */
import { isAbsolute, resolve } from "node:path";
import type {
  TurnExecutionSecuritySnapshot,
  TurnFilesystemSandboxEntry,
  TurnPermissionMode,
  TurnPermissionProfileSnapshot,
  TurnSandboxMode,
  TurnSecurityDegradation,
  TurnSecurityParentCapSnapshot,
} from "@turnspec/protocol/types";
import { resolveRealPath } from "./paths.js";
import { decide } from "./policy.js";

/**
 * Variables a shell sees in the restricted modes: enough for programs to find their
 * binaries, home, locale, terminal and temp directory, and nothing that tends to carry
 * credentials (API keys, tokens, cloud and SSH agent settings all stay behind).
 */
export const RESTRICTED_ENV_ALLOWLIST: readonly string[] = [
  "PATH",
  "HOME",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "TERM",
  "TMPDIR",
  "TZ",
  "USER",
  "LOGNAME",
  "SHELL",
];

/**
 * Variables a shell sees under full_access: the restricted list plus what toolchains and
 * proxies are configured by. Still an allow-list: the gateway's own secrets (its bearer
 * token, provider API keys) and whatever credentials the gateway's user exported stay
 * behind in every mode; an operator passes more names with tools.env_passthrough.
 */
export const FULL_ACCESS_ENV_ALLOWLIST: readonly string[] = [
  ...RESTRICTED_ENV_ALLOWLIST,
  "COLORTERM",
  "EDITOR",
  "PAGER",
  "VISUAL",
  "LC_COLLATE",
  "LC_MESSAGES",
  "LC_NUMERIC",
  "LC_TIME",
  "XDG_CACHE_HOME",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_RUNTIME_DIR",
  "NODE_PATH",
  "NPM_CONFIG_PREFIX",
  "GOPATH",
  "GOROOT",
  "CARGO_HOME",
  "RUSTUP_HOME",
  "JAVA_HOME",
  "PYTHONPATH",
  "VIRTUAL_ENV",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
];

/** The gateway's own secret: never passed to a tool, whatever a list says. */
export const GATEWAY_TOKEN_VARIABLE = "TURNSPEC_TOKEN";

/** The name the shell tool registers under (tools/shell.ts): the process policy is the policy's answer for it. */
const SHELL_TOOL = "shell";

/**
 * What the native backend enforces by itself, without an OS sandbox. These hold once the
 * engine routes every call through the permission modules: the policy decides each call,
 * paths are resolved through links before the root check, and the shell is started with
 * processEnvironment() and the timeout cap.
 */
export const NATIVE_BACKEND_CAPABILITIES: readonly string[] = [
  "tool_policy",
  "file_tool_path_confinement",
  "shell_cwd_confinement",
  "web_fetch_network_policy",
  "process_environment_filtering",
  "process_timeout_cap",
];

/** What the OS sandbox adds to the native capabilities, for shell commands. */
export const SANDBOX_CAPABILITIES: readonly string[] = [
  "filesystem_confinement",
  "per_turn_temp_directory",
  "network_blocking",
  "pid_namespace",
  "process_tree_kill",
];

/**
 * What the OS sandbox adds when the network is `restricted` (network.allow_domains set): a
 * shell command's only way out is the gateway's filtering proxy (sandbox/network-proxy.ts).
 */
export const NETWORK_FILTERING_CAPABILITY = "network_domain_filtering";

/** Where the restricted modes fall short without an OS sandbox. */
const RESTRICTED_DEGRADATIONS: readonly TurnSecurityDegradation[] = [
  {
    capability: "filesystem_confinement",
    reason: "no_os_sandbox",
    detail:
      "Roots and their access levels are enforced for the gateway's own file tools (read_file, write_file) and for the shell's working directory; " +
      "a shell command itself can read, write or delete any path the gateway's user can reach.",
  },
  {
    capability: "network_blocking",
    reason: "no_os_sandbox",
    detail:
      "The network policy is enforced for web_fetch only; a shell command (curl, git, a package manager) reaches the network unchecked.",
  },
  {
    capability: "process_confinement",
    reason: "no_os_sandbox",
    detail:
      "Shell commands run as ordinary child processes with the gateway's user rights; nothing confines them beyond the working directory, environment and timeout the gateway picks. " +
      "A call that sets escape_sandbox is still put to a human, once, but once approved it runs just as any other shell call does.",
  },
];

/** The parts of the snapshot fixed by the mode alone. */
interface ModeMapping {
  readonly sandbox: TurnSandboxMode;
  readonly rootAccess: TurnFilesystemSandboxEntry["access"];
  readonly network: TurnExecutionSecuritySnapshot["network"]["mode"];
}

const MODE_MAPPING: Readonly<Record<TurnPermissionMode, ModeMapping>> = {
  // The environment is an allow-list in every mode (FULL_ACCESS_ENV_ALLOWLIST here): "process
  // unrestricted" does not extend to handing the gateway's secrets to the model's commands.
  full_access: { sandbox: "unrestricted", rootAccess: "read_write", network: "enabled" },
  // "Network disabled until granted": disabled here, and an approved network request opens it for that request (or scope).
  auto_accept_edits: { sandbox: "workspace_write", rootAccess: "read_write", network: "disabled" },
  supervised: { sandbox: "read_only", rootAccess: "read_only", network: "disabled" },
};

export interface SecuritySnapshotInput {
  /** The turn's materialized permission profile (policy.ts materializeProfile). */
  readonly profile: TurnPermissionProfileSnapshot;
  /** Absolute working directory the turn's tools run in. */
  readonly cwd: string;
  /** The thread's roots, absolute: the first is the workspace root (the thread's cwd), any further ones project roots. */
  readonly roots: readonly string[];
  /**
   * Absolute paths beyond the roots that file actions may reach without asking, listed as
   * `allowed_path` entries. Default: the profile's effective_policy.allowed_paths, which
   * is where the list normally lives; pass it only to list something else.
   */
  readonly allowedPaths?: readonly string[];
  /** The cap a parent turn or task put on this child turn, if any; recorded as given. */
  readonly parentCap?: TurnSecurityParentCapSnapshot;
  /** Upper bound in ms on one shell run, whatever the call asks for (the gateway's max shell timeout); null for none. */
  readonly shellTimeoutCapMs: number | null;
  /**
   * The OS sandbox the turn's shell commands run in (sandbox/), with the turn's
   * private temp folder (absolute); absent when the host has none. Used only by the
   * restricted modes: full_access confines nothing.
   */
  readonly sandbox?: { readonly backend: string; readonly tempDir: string };
  /** Variables the operator lets through in every mode besides the built-in lists (config tools.env_passthrough). */
  readonly envPassthrough?: readonly string[];
  /** The gateway refuses restricted turns without an OS sandbox (config sandbox.required): recorded as backend_requirement "required". */
  readonly sandboxRequired?: boolean;
  /**
   * The hosts the restricted modes may reach (config network.allow_domains, deny_domains).
   * With an allow list their network is `restricted` rather than `disabled`; full_access
   * is not affected.
   */
  readonly network?: { readonly allowDomains: readonly string[]; readonly denyDomains: readonly string[] };
  /**
   * The gateway's secrets its process still shows in /proc/<pid>/environ or cmdline (a
   * variable's name, or `--token`; serve-secrets.ts): listed as the
   * gateway_secret_isolation degradation, since a command that runs unconfined can read them.
   */
  readonly exposedSecrets?: readonly string[];
}

/** The security snapshot of a turn. Throws when a path is not absolute, there is no root, or the timeout cap is not a positive integer. */
export function securitySnapshot(input: SecuritySnapshotInput): TurnExecutionSecuritySnapshot {
  const { profile, parentCap, shellTimeoutCapMs } = input;
  if (!isAbsolute(input.cwd)) throw new Error(`securitySnapshot: cwd must be absolute, got ${JSON.stringify(input.cwd)}`);
  if (input.roots.length === 0) throw new Error("securitySnapshot: a thread has at least one root (its working directory), got none");
  if (shellTimeoutCapMs !== null && !(Number.isInteger(shellTimeoutCapMs) && shellTimeoutCapMs >= 1)) {
    throw new Error(`securitySnapshot: shellTimeoutCapMs must be a positive integer or null, got ${String(shellTimeoutCapMs)}`);
  }
  const mapping = MODE_MAPPING[profile.mode];
  if (!mapping) throw new Error(`securitySnapshot: unknown permission mode ${JSON.stringify(profile.mode)}`);
  const unrestricted = mapping.sandbox === "unrestricted";
  const restrictedNetwork = !unrestricted && mapping.network === "disabled" && (input.network?.allowDomains.length ?? 0) > 0;
  const network: TurnExecutionSecuritySnapshot["network"] = restrictedNetwork
    ? { mode: "restricted", allow_domains: [...input.network!.allowDomains], deny_domains: [...input.network!.denyDomains] }
    : { mode: mapping.network, allow_domains: [], deny_domains: [] };
  const networkEnabled = network.mode !== "disabled";
  const sandbox = unrestricted ? undefined : input.sandbox;
  if (sandbox && !isAbsolute(sandbox.tempDir))
    throw new Error(`securitySnapshot: the sandbox temp folder must be absolute, got ${JSON.stringify(sandbox.tempDir)}`);
  const entries = filesystemEntries(input.roots, input.allowedPaths ?? profile.effective_policy.allowed_paths ?? [], mapping.rootAccess);
  if (sandbox) entries.push({ path: resolve(sandbox.tempDir), access: "read_write", kind: "temp" });

  return {
    permission_profile: profile,
    sandbox: {
      mode: mapping.sandbox,
      cwd: resolve(input.cwd),
      filesystem: {
        unrestricted,
        entries,
        // turn-lifecycle-types.md: a path outside the roots becomes an approval request
        // (for that one call), not a refusal.
        outside_roots: unrestricted ? "allow" : "ask",
      },
      // Under the sandbox, a private folder made for the turn (TMPDIR inside); without it
      // processes get the host's TMPDIR.
      temp_policy: sandbox ? "per_turn" : "host",
      network_enabled: networkEnabled,
      // With no confinement there is nothing to leave; under one, leaving is always put to a human.
      // A sandbox escape is put to a human in every mode, full_access included.
      sandbox_escape: "review",
      // required: the gateway refuses the turn without a sandbox (it got one, or it would not
      // be running); best_effort: it runs without one, with the gaps listed under enforcement.
      backend_requirement: unrestricted ? "none" : input.sandboxRequired ? "required" : "best_effort",
      backend_preference: null,
    },
    process: {
      // The policy's own answer for the shell tool, so denied_tools and allowed_tools count here too.
      shell: decide(profile.effective_policy, SHELL_TOOL, "shell_command"),
      environment: {
        mode: "allow_list",
        allowed_variables: [
          ...new Set([...(unrestricted ? FULL_ACCESS_ENV_ALLOWLIST : RESTRICTED_ENV_ALLOWLIST), ...(input.envPassthrough ?? [])]),
        ].filter((name) => name !== GATEWAY_TOKEN_VARIABLE),
      },
      timeout_cap_ms: shellTimeoutCapMs,
      command_risk_rules: [],
    },
    network,
    // Both scopes in every mode: they are the answers a client may give, which does not
    // depend on how often the mode asks (under full_access its own policy never does).
    approval: { scopes: ["allow_once", "allow_for_turn"] },
    backend: {
      kind: "native",
      sandbox_backend: sandbox ? sandbox.backend : null,
      capabilities: [
        ...NATIVE_BACKEND_CAPABILITIES,
        ...(sandbox ? SANDBOX_CAPABILITIES : []),
        ...(sandbox && restrictedNetwork ? [NETWORK_FILTERING_CAPABILITY] : []),
      ],
    },
    // full_access is `active` with nothing degraded: it asks for no confinement (filesystem
    // unrestricted, network enabled, a wide environment allow-list, no escape to review), so every
    // limit it states is one the gateway does hold: the tool policy and the timeout cap.
    // `unavailable` would claim the snapshot is not enforced, which would be false.
    // A restricted mode under the sandbox is `active` too: what it states, the sandbox holds.
    enforcement: enforcementOf(unrestricted, sandbox !== undefined, input.exposedSecrets ?? []),
    ...(parentCap ? { parent_cap: parentCap } : {}),
  };
}

/**
 * Whether the snapshot is enforced. full_access, and a restricted mode under the sandbox,
 * are `active` unless the gateway's own secrets are readable from its process: the
 * environment allow-list keeps them out of a command's environment, but not out of
 * /proc/<gateway pid>/environ, which an unconfined command can read.
 */
function enforcementOf(
  unrestricted: boolean,
  sandboxed: boolean,
  exposed: readonly string[],
): TurnExecutionSecuritySnapshot["enforcement"] {
  const degradations = unrestricted || sandboxed ? [] : RESTRICTED_DEGRADATIONS.map((d) => ({ ...d }));
  if (exposed.length > 0) {
    const who =
      unrestricted || !sandboxed
        ? "any shell command of this turn"
        : "a shell call approved with escape_sandbox (it runs outside the sandbox's PID namespace)";
    const named = exposed.map((name) => (name === "--token" ? "the --token argument" : name)).join(", ");
    degradations.push({
      capability: "gateway_secret_isolation",
      reason: "gateway_start_environment_readable",
      detail:
        `The gateway was started with ${named} in its environment or command line, which /proc/<gateway pid>/environ and /proc/<gateway pid>/cmdline keep for the process's life; ` +
        `${who} can read them. Start the gateway with --token-file and without provider keys in its environment to close this.`,
    });
  }
  return degradations.length === 0 ? { status: "active", degradations } : { status: "partially_active", degradations };
}

/**
 * The environment a shell gets under `snapshot`: only the allowed variables under
 * allow_list; everything under inherit_all (a snapshot this gateway no longer writes, kept
 * readable). Unset (undefined) variables are left out, and the gateway's token always.
 */
export function processEnvironment(
  snapshot: Pick<TurnExecutionSecuritySnapshot, "process">,
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const policy = snapshot.process.environment;
  const defined = Object.entries(env).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && entry[0] !== GATEWAY_TOKEN_VARIABLE,
  );
  if (policy.mode === "inherit_all") return Object.fromEntries(defined);
  const allowed = new Set(policy.allowed_variables ?? []);
  return Object.fromEntries(defined.filter(([name]) => allowed.has(name)));
}

/**
 * The roots as sandbox entries, each resolved through links (the path checks compare real
 * paths) and listed once: a root named twice keeps its first, most specific kind.
 */
function filesystemEntries(
  roots: readonly string[],
  allowedPaths: readonly string[],
  access: TurnFilesystemSandboxEntry["access"],
): TurnFilesystemSandboxEntry[] {
  const named: [string, TurnFilesystemSandboxEntry["kind"]][] = [
    ...roots.map((path, i): [string, TurnFilesystemSandboxEntry["kind"]] => [path, i === 0 ? "workspace" : "project"]),
    ...allowedPaths.map((path): [string, TurnFilesystemSandboxEntry["kind"]] => [path, "allowed_path"]),
  ];
  const entries = new Map<string, TurnFilesystemSandboxEntry>();
  for (const [path, kind] of named) {
    if (!isAbsolute(path))
      throw new Error(
        `securitySnapshot: the ${kind === "allowed_path" ? "allowed path" : `${kind} root`} ${JSON.stringify(path)} is not absolute`,
      );
    const real = resolveRealPath(path);
    if (!entries.has(real)) entries.set(real, { path: real, access, kind });
  }
  return [...entries.values()];
}
