/**
 * The normalized scope of an action, and its hash: what an `allow_for_turn` answer
 * remembers. A later call with the same hash runs without a new request, so two calls get
 * the same hash only when they are the same kind of action on the same target, however
 * the target was spelled.
 */
import { createHash } from "node:crypto";
import type { PermissionActionKind } from "../../generated/types.js";
import { resolveRealPath } from "./paths.js";

/**
 * What an action is aimed at. Only the field its action kind is scoped by counts
 * (TARGET_OF_ACTION); the others are ignored, so a classification can be passed whole.
 */
export interface ScopeTarget {
  readonly command?: string;
  readonly path?: string;
  readonly domain?: string;
  /**
   * The tool name, for kinds with no finer target (task_subagent, MCP, skill, computer
   * use, unknown). Pass it: without it every tool of such a kind shares one scope, and
   * allowing one of them for the turn allows them all.
   */
  readonly tool?: string;
}

export interface Scope {
  readonly normalized: string;
  /** Hex SHA-256 of `${action}\n${normalized}`. */
  readonly hash: string;
}

/**
 * The one target field each action kind is scoped by. Fixed per kind, so the hash needs
 * no marker of which field it came from: one kind never hashes two kinds of target. A
 * shell call is scoped by its command alone, not its cwd: approving `npm test` for the
 * turn approves it in any directory (a directory outside the roots is asked about anyway).
 */
export const TARGET_OF_ACTION: Readonly<Record<PermissionActionKind, keyof ScopeTarget>> = {
  shell_command: "command",
  file_read: "path",
  file_write: "path",
  network: "domain",
  mcp_read: "tool",
  mcp_write_or_unknown: "tool",
  dynamic_skill_tool: "tool",
  computer_use: "tool",
  task_subagent: "tool",
  unknown: "tool",
};

const NORMALIZE: Readonly<Record<keyof ScopeTarget, (value: string) => string>> = {
  // Spacing is not part of what a command does, so `ls  -la` and ` ls -la` are one scope.
  // This also merges runs inside quotes (`echo "a  b"` and `echo "a b"`): a small
  // widening, accepted to keep the rule simple.
  command: (command) => command.trim().replace(/\s+/g, " "),
  // Where the path really leads: /w/a, /w/x/../a and a link to /w/a are one scope.
  path: resolveRealPath,
  // DNS names are case-insensitive, and a trailing dot names the same (fully qualified) host.
  domain: (domain) => domain.trim().toLowerCase().replace(/\.$/, ""),
  tool: (tool) => tool,
};

/**
 * The normalized scope of `action` on `target`, and its hash.
 *
 * When the action's target field is absent (a web_fetch whose URL has no host, a tool
 * name not passed), the scope is the empty string: the action kind with no target, which
 * no call with a target ever matches.
 *
 * @throws when a path is relative (see resolveRealPath), or the action kind is not one.
 */
export function scopeOf(action: PermissionActionKind, target: ScopeTarget): Scope {
  const field = TARGET_OF_ACTION[action];
  if (field === undefined) throw new Error(`scopeOf: ${JSON.stringify(action)} is not a permission action kind`);
  const value = target[field];
  const normalized = value === undefined ? "" : NORMALIZE[field](value);
  const hash = createHash("sha256").update(`${action}\n${normalized}`, "utf8").digest("hex");
  return { normalized, hash };
}
