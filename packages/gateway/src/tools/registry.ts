/**
 * The built-in tools, and the check of a tool call's arguments against the tool's JSON
 * Schema before it runs. A failed check is text for the model (it made the call and can
 * correct it), never a gateway error.
 */
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020.js";
import { toIssues, preview } from "@turnspec/rpc";
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

export type ParsedArguments = { readonly ok: true; readonly args: Record<string, unknown> } | { readonly ok: false; readonly error: string };

// Not strict: tool schemas also come from elsewhere (MCP servers, skills), and a keyword
// this instance does not know must not make a tool unusable. Formats are annotations.
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });
const compiled = new WeakMap<Tool, ValidateFunction | Error>();

/** Parses a tool call's JSON arguments and checks them against the tool's schema. */
export function parseToolArguments(tool: Tool, jsonText: string): ParsedArguments {
  const name = tool.spec.name;
  let args: unknown;
  // Some models send an empty string for a call without arguments.
  if (jsonText.trim() === "") args = {};
  else {
    try {
      args = JSON.parse(jsonText);
    } catch (error) {
      return { ok: false, error: `arguments for ${name} are not valid JSON (${(error as Error).message}): ${preview(jsonText)}` };
    }
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return { ok: false, error: `arguments for ${name} must be a JSON object, got ${preview(args)}` };
  }
  const validate = validatorFor(tool);
  if (validate instanceof Error) return { ok: false, error: `arguments for ${name} cannot be checked: the tool's schema is invalid (${validate.message})` };
  if (validate(args)) return { ok: true, args: args as Record<string, unknown> };
  const problems = toIssues(validate.errors ?? [], args).map((issue) => {
    const got = issue.received === undefined ? "" : `, got ${preview(issue.received)}`;
    return `${fieldPath(issue.pointer)} ${issue.message}${got}`;
  });
  return { ok: false, error: `arguments for ${name}: ${problems.join("; ")}` };
}

/** Compiled once per tool; a schema that does not compile is remembered as its error. */
function validatorFor(tool: Tool): ValidateFunction | Error {
  let validate = compiled.get(tool);
  if (!validate) {
    // MCP servers declare various drafts in `$schema`; the keywords tools use mean the same
    // in all of them, and this instance only knows 2020-12.
    const { $schema: _draft, ...schema } = tool.spec.parameters;
    try {
      validate = ajv.compile(schema);
    } catch (error) {
      validate = error as Error;
    }
    compiled.set(tool, validate);
  }
  return validate;
}

/** `/items/0/name` → `items[0].name`: how a model writes a path into its arguments. */
function fieldPath(pointer: string): string {
  if (pointer === "") return "the arguments";
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((path, token, i) => (/^\d+$/.test(token) ? `${path}[${token}]` : i === 0 ? token : `${path}.${token}`), "");
}
