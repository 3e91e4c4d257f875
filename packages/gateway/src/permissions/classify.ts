/**
 * What a tool call is, for the permission system: its action kind (which the effective
 * policy looks up), the paths it touches (checked against the turn's roots), the command
 * or domain its approval scope is made of, and whether it asks to leave the sandbox. Read
 * from the parsed arguments, before the call runs.
 */
import { isAbsolute, resolve } from "node:path";
import type { PermissionActionKind } from "@turnspec/protocol/types";
import type { ScopeTarget } from "./scope.js";

/** The action kind of each built-in tool; any other tool is an unknown action (the policy's default_behavior). */
export const ACTION_OF_TOOL: Readonly<Record<string, PermissionActionKind>> = {
  shell: "shell_command",
  read_file: "file_read",
  write_file: "file_write",
  web_fetch: "network",
  spawn_agent: "task_subagent",
};

export interface ToolCallClassification {
  readonly action: PermissionActionKind;
  /** Absolute paths the call touches, resolved against the cwd lexically (not through links: see paths.ts). */
  readonly paths: string[];
  /** The command line of a shell call, as given. */
  readonly command?: string;
  /** The lowercased host name of a web_fetch URL; absent when the URL does not parse. */
  readonly domain?: string;
  /** The port a web_fetch URL connects to (the scheme's default when it names none). */
  readonly port?: number;
  /** The call asks to run outside the sandbox: never granted by a mode or a remembered grant. */
  readonly escapeSandbox: boolean;
  /** The call creates or changes the files in `paths`. */
  readonly write: boolean;
}

/**
 * Classifies one tool call from its parsed arguments. `cwd` is the directory relative
 * paths resolve against (the thread's), and must be absolute.
 *
 * Arguments of the wrong type add nothing (no path, no command) rather than throwing: the
 * engine checks arguments against the tool's schema first, and a call that fails that
 * check never runs.
 */
export function classifyToolCall(toolName: string, args: Readonly<Record<string, unknown>>, cwd: string): ToolCallClassification {
  // Relative to what? The gateway's own working directory would be an accident.
  if (!isAbsolute(cwd)) throw new Error(`classifyToolCall needs an absolute cwd, got ${JSON.stringify(cwd)}`);
  const action = ACTION_OF_TOOL[toolName] ?? "unknown";
  const at = (path: unknown): string[] => (typeof path === "string" && path !== "" ? [resolve(cwd, path)] : []);
  switch (toolName) {
    case "shell": {
      // The working directory is a place the command reaches. What the command line itself
      // opens is not known before it runs; that is why shell_command is its own action kind.
      // `write` stays false for the same reason: nothing here says it writes.
      // Resolved as the tool resolves it (an absent or empty cwd is the thread's).
      const paths = [resolve(cwd, typeof args.cwd === "string" ? args.cwd : ".")];
      const command = typeof args.command === "string" ? args.command : undefined;
      return { action, paths, ...(command === undefined ? {} : { command }), escapeSandbox: args.escape_sandbox === true, write: false };
    }
    case "read_file":
      return { action, paths: at(args.path), escapeSandbox: false, write: false };
    case "write_file":
      return { action, paths: at(args.path), escapeSandbox: false, write: true };
    case "web_fetch": {
      const target = hostOf(args.url);
      return { action, paths: [], ...(target === undefined ? {} : target), escapeSandbox: false, write: false };
    }
    default:
      // spawn_agent and unknown tools touch nothing this layer can name.
      return { action, paths: [], escapeSandbox: false, write: false };
  }
}

/** Ports a URL connects to when it names none. */
const DEFAULT_PORT: Readonly<Record<string, number>> = { "http:": 80, "https:": 443 };

/** The host name of a URL, lowercased, and its port; undefined when it does not parse or has no host. */
function hostOf(url: unknown): { domain: string; port?: number } | undefined {
  if (typeof url !== "string") return undefined;
  try {
    const parsed = new URL(url);
    // URL lowercases the host of http(s) URLs already; other schemes keep their case.
    const domain = parsed.hostname.toLowerCase();
    if (domain === "") return undefined;
    const port = parsed.port === "" ? DEFAULT_PORT[parsed.protocol] : Number(parsed.port);
    return port === undefined ? { domain } : { domain, port };
  } catch {
    return undefined;
  }
}

/**
 * What a call's approval scope is made of (scope.ts): its command and cwd, its path, or
 * its host and port; the tool name for kinds with no finer target.
 */
export function scopeTargetOf(toolName: string, call: ToolCallClassification): ScopeTarget {
  return {
    tool: toolName,
    ...(call.command === undefined ? {} : { command: call.command, ...(call.paths[0] === undefined ? {} : { cwd: call.paths[0] }) }),
    ...(call.paths[0] === undefined ? {} : { path: call.paths[0] }),
    ...(call.domain === undefined ? {} : { domain: call.domain }),
    ...(call.port === undefined ? {} : { port: call.port }),
  };
}
