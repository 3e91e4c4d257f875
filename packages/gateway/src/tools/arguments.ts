/**
 * A tool's arguments: their TypeScript type is read from the tool's JSON Schema (the one
 * the model sees), and a call's arguments are checked against that schema once, where the
 * tool is called (`parseToolCall`). A call that passes is bound to its arguments, typed as
 * the schema says; one that does not is text for the model (it made the call and can
 * correct it), never a gateway error.
 */
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020.js";
import { preview, toIssues } from "@turnspec/rpc";
import type { ApprovalContext, BoundToolCall, Tool, ToolContext, ToolResult } from "./tool.js";

/** The value a JSON Schema describes, for the keywords tool schemas use (type, enum, properties, required, items). */
export type SchemaValue<S> = S extends { readonly enum: readonly (infer E)[] }
  ? E
  : S extends { readonly type: "string" }
    ? string
    : S extends { readonly type: "integer" | "number" }
      ? number
      : S extends { readonly type: "boolean" }
        ? boolean
        : S extends { readonly type: "array"; readonly items: infer I }
          ? SchemaValue<I>[]
          : S extends { readonly type: "object"; readonly properties: infer P }
            ? Fields<P, S extends { readonly required: readonly (infer R)[] } ? R : never>
            : unknown;

/** An object's fields: the required ones, then the others, optional. */
type Fields<P, R> = Flat<
  { [K in keyof P as K extends R ? K : never]: SchemaValue<P[K]> } & { [K in keyof P as K extends R ? never : K]?: SchemaValue<P[K]> }
>;

type Flat<T> = { [K in keyof T]: T[K] };

/** The arguments of a tool whose parameters are `S`: an object, as every tool's arguments are. */
export type ArgumentsOf<S> = SchemaValue<S> extends Record<string, unknown> ? SchemaValue<S> : Record<string, unknown>;

/** A tool as it is written: its schema, and what it does with arguments of the type the schema describes. */
export interface ToolDefinition<S, A = ArgumentsOf<S>> extends Omit<Tool, "spec" | "bind"> {
  readonly spec: { readonly name: string; readonly description: string; readonly parameters: S };
  /** Item fields known before the tool runs (e.g. `command`, `cwd`, `path`, `url`). */
  describe(args: A, ctx: Pick<ToolContext, "cwd">): Record<string, unknown>;
  /** What an approval of the call names beyond its arguments (see ApprovalContext). */
  approvalContext?(args: A, turn: { readonly thread_id: string; readonly turn_id: string }): ApprovalContext | undefined;
  run(args: A, ctx: ToolContext): Promise<ToolResult>;
}

/** A tool made by defineTool: the Tool the round loop holds, with its typed describe and run for direct callers. */
export type DefinedTool<S> = Tool & ToolDefinition<S>;

/** The Tool of a definition: a call's arguments are checked against the schema, and a call that conforms is bound to them. */
export function defineTool<const S extends Record<string, unknown>>(definition: ToolDefinition<S>): DefinedTool<S> {
  let validate: ValidateFunction<ArgumentsOf<S>> | Error | undefined;
  return {
    ...definition,
    spec: definition.spec,
    bind(args) {
      validate ??= compile<ArgumentsOf<S>>(definition.spec.parameters);
      if (validate instanceof Error)
        return {
          ok: false,
          error: `arguments for ${definition.spec.name} cannot be checked: the tool's schema is invalid (${validate.message})`,
        };
      if (!validate(args)) return { ok: false, error: `arguments for ${definition.spec.name}: ${problemsOf(validate, args)}` };
      const checked = args;
      const call: BoundToolCall = {
        describe: (ctx) => definition.describe(checked, ctx),
        approvalContext: (turn) => definition.approvalContext?.(checked, turn),
        run: (ctx) => definition.run(checked, ctx),
      };
      return { ok: true, call };
    },
  };
}

// Not strict: tool schemas also come from elsewhere (MCP servers, skills), and a keyword
// this instance does not know must not make a tool unusable. Formats are annotations.
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });

/** The validator of a tool's parameters; a schema that does not compile is its error. */
function compile<A>(parameters: Record<string, unknown>): ValidateFunction<A> | Error {
  // MCP servers declare various drafts in `$schema`; the keywords tools use mean the same
  // in all of them, and this instance only knows 2020-12.
  const { $schema: _draft, ...schema } = parameters;
  try {
    return ajv.compile<A>(schema);
  } catch (error) {
    return error as Error;
  }
}

function problemsOf(validate: ValidateFunction, args: unknown): string {
  return toIssues(validate.errors ?? [], args)
    .map((issue) => {
      const got = issue.received === undefined ? "" : `, got ${preview(issue.received)}`;
      return `${fieldPath(issue.pointer)} ${issue.message}${got}`;
    })
    .join("; ");
}

/** A tool call's JSON arguments, parsed and checked once: bound to the tool when they conform. */
export type ParsedToolCall =
  | { readonly ok: true; readonly args: Record<string, unknown>; readonly call: BoundToolCall }
  | { readonly ok: false; readonly error: string };

/** Parses a tool call's JSON arguments and binds the call to them (Tool.bind checks them against the tool's schema). */
export function parseToolCall(tool: Pick<Tool, "spec" | "bind">, jsonText: string): ParsedToolCall {
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
  if (!isObject(args)) return { ok: false, error: `arguments for ${name} must be a JSON object, got ${preview(args)}` };
  const bound = tool.bind(args);
  return bound.ok ? { ok: true, args, call: bound.call } : bound;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
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
