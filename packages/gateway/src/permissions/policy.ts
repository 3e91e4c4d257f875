/**
 * Permission profiles: the policy matrix of the three built-in modes, and the snapshot a
 * turn is materialized with from what turn/start asked for.
 */
import type {
  PermissionActionKind,
  PermissionBehavior,
  ToolPermissionPolicySnapshot,
  TurnPermissionMode,
  TurnPermissionProfileSelection,
  TurnPermissionProfileSnapshot,
} from "@turnspec/protocol/types";

type PolicyKind = Exclude<keyof ToolPermissionPolicySnapshot, "allowed_tools" | "denied_tools" | "allowed_paths">;

/**
 * Every behaviour field of the policy snapshot, once. Written as a record so that the
 * compiler holds it to the generated type: a field added to or dropped from the schema
 * fails the build here.
 */
const POLICY_FIELDS = {
  default_behavior: true,
  file_read: true,
  file_write: true,
  shell_command: true,
  network: true,
  mcp_read: true,
  mcp_write_or_unknown: true,
  dynamic_skill_tool: true,
  computer_use: true,
  task_subagent: true,
} as const satisfies Record<PolicyKind, true>;
const ACTION_KINDS = Object.keys(POLICY_FIELDS) as PolicyKind[];

/** What each mode allows without asking; every other action kind asks. */
const ALLOWED_BY_MODE: Record<TurnPermissionMode, ReadonlySet<PolicyKind>> = {
  full_access: new Set(ACTION_KINDS),
  auto_accept_edits: new Set(["file_read", "file_write", "mcp_read"]),
  supervised: new Set(["file_read", "mcp_read"]),
};

/** The effective policy of a built-in mode. */
export function policyForMode(mode: TurnPermissionMode): ToolPermissionPolicySnapshot {
  const allowed = ALLOWED_BY_MODE[mode];
  return Object.fromEntries(ACTION_KINDS.map((kind) => [kind, allowed.has(kind) ? "allow" : "ask"])) as Record<
    PolicyKind,
    PermissionBehavior
  >;
}

/** The snapshot a turn runs under: the requested mode (source composer) or full_access (source defaulted). */
export function materializeProfile(selection: TurnPermissionProfileSelection | undefined): TurnPermissionProfileSnapshot {
  const mode = selection?.mode ?? "full_access";
  const policy: ToolPermissionPolicySnapshot = { ...policyForMode(mode) };
  if (selection?.allowed_tools) policy.allowed_tools = selection.allowed_tools;
  if (selection?.denied_tools) policy.denied_tools = selection.denied_tools;
  if (selection?.allowed_paths) policy.allowed_paths = selection.allowed_paths;
  return { mode, source: selection?.mode ? "composer" : "defaulted", effective_policy: policy };
}

/** How the policy treats one tool call: denied_tools wins, allowed_tools limits what may run, then the action kind decides. */
export function decide(policy: ToolPermissionPolicySnapshot, toolName: string, action: PermissionActionKind): PermissionBehavior {
  if (policy.denied_tools?.includes(toolName)) return "deny";
  if (policy.allowed_tools && !policy.allowed_tools.includes(toolName)) return "deny";
  return action === "unknown" ? policy.default_behavior : policy[action];
}
