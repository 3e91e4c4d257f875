/**
 * The normalized scope of an action, and its hash: what an `allow_for_turn` answer
 * remembers. A later call with the same hash runs without a new request, so two calls get
 * the same hash only when they are the same kind of action on the same target, however
 * the target was spelled.
 */
import { createHash } from "node:crypto";
import type { PermissionActionKind } from "@turnspec/protocol/types";
import { isAbsolute, resolve } from "node:path";
import { resolveRealPath } from "./paths.js";

/**
 * What an action is aimed at. Only the field its action kind is scoped by counts
 * (TARGET_OF_ACTION); the others are ignored, so a classification can be passed whole.
 */
export interface ScopeTarget {
  readonly command?: string;
  /** A shell command's working directory (absolute): part of a shell_command scope. */
  readonly cwd?: string;
  readonly path?: string;
  readonly domain?: string;
  /** The port a network action connects to: part of a network scope. */
  readonly port?: number;
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
 * no marker of which field it came from: one kind never hashes two kinds of target. Two
 * kinds take a second field along: a shell command is scoped by its command and the real
 * path of its cwd (approving `make` in the workspace does not approve it elsewhere), a
 * network action by its host and port (a grant for 127.0.0.1:9 is not one for
 * 127.0.0.1:8080).
 */
export const TARGET_OF_ACTION: Readonly<Record<PermissionActionKind, "command" | "path" | "domain" | "tool">> = {
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

const NORMALIZE: Readonly<Record<"command" | "path" | "domain" | "tool", (value: string) => string>> = {
  // Spacing between words is not part of what a command does, so `ls  -la` and ` ls -la`
  // are one scope. This also merges runs inside quotes (`echo "a  b"` and `echo "a b"`):
  // a small widening, accepted to keep the rule simple. Newlines are never folded: they
  // separate commands, so `echo cat /x` and `echo\ncat /x` are different scopes.
  command: (command) => command.trim().replace(/[ \t]+/g, " "),
  // Where the path really leads: /w/a, /w/x/../a and a link to /w/a are one scope. A path
  // that cannot be resolved (a link loop, a name too long) keeps its lexical form: the
  // tool fails on it, and that failure belongs to the call, not to the scope check.
  path: (path) => {
    if (!isAbsolute(path)) throw new Error(`scopeOf needs an absolute path, got ${JSON.stringify(path)}`);
    try {
      return resolveRealPath(path);
    } catch {
      return resolve(path);
    }
  },
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
  let normalized = value === undefined ? "" : NORMALIZE[field](value);
  // The second field travels on its own line: a command's text may hold newlines, but a
  // path or port never follows the last one, so no two targets share a normalization.
  if (field === "command" && value !== undefined && target.cwd !== undefined) normalized += `\ncwd=${NORMALIZE.path(target.cwd)}`;
  if (field === "domain" && value !== undefined && target.port !== undefined) normalized += `:${target.port}`;
  const hash = createHash("sha256").update(`${action}\n${normalized}`, "utf8").digest("hex");
  return { normalized, hash };
}
