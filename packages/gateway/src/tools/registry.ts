/** The built-in tools: what every turn with tools gets. */
import { readFileTool } from "./read-file.js";
import { createShellTool } from "./shell.js";
import type { Tool } from "./tool.js";
import { createWebFetchTool } from "./web-fetch.js";
import { writeFileTool } from "./write-file.js";

export interface BuiltinToolOptions {
  /** Timeout of a shell call that names none (the gateway config's shell timeout). */
  readonly shellTimeoutMs?: number;
  /** Timeout of one web_fetch. */
  readonly webFetchTimeoutMs?: number;
}

/**
 * The tools every turn with tools gets. `spawn_agent` is not here: the engine adds it, as
 * it needs the engine. Each call makes new shell and web_fetch tools with the timeouts given.
 */
export function builtinTools(options: BuiltinToolOptions = {}): Tool[] {
  return [
    createShellTool(options.shellTimeoutMs === undefined ? {} : { defaultTimeoutMs: options.shellTimeoutMs }),
    readFileTool,
    writeFileTool,
    createWebFetchTool(options.webFetchTimeoutMs === undefined ? {} : { timeoutMs: options.webFetchTimeoutMs }),
  ];
}
