/**
 * A tool's arguments are typed from its JSON Schema (the type-level half of this file is
 * checked by `tsc`), and a call is checked against that schema once, when it is bound: the
 * tool's run only ever sees arguments the schema accepted.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { defineTool, parseToolCall, type ArgumentsOf } from "../../packages/gateway/src/tools/arguments.js";
import { shellTool } from "../../packages/gateway/src/tools/shell.js";
import { testContext } from "./context.js";

const SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["name", "items"],
  properties: {
    name: { type: "string" },
    mode: { type: "string", enum: ["fast", "slow"] },
    count: { type: "integer", minimum: 1 },
    dry_run: { type: "boolean" },
    items: { type: "array", items: { type: "object", required: ["id"], properties: { id: { type: "string" }, note: { type: "string" } } } },
  },
} as const;

describe("ArgumentsOf", () => {
  it("reads the arguments' type from the schema: required fields, optional ones, enums, arrays of objects", () => {
    expectTypeOf<ArgumentsOf<typeof SCHEMA>>().toEqualTypeOf<{
      readonly name: string;
      readonly items: { readonly id: string; readonly note?: string }[];
      readonly mode?: "fast" | "slow";
      readonly count?: number;
      readonly dry_run?: boolean;
    }>();
    // A schema known only at run time (an MCP server's) gives an open object.
    expectTypeOf<ArgumentsOf<Record<string, unknown>>>().toEqualTypeOf<Record<string, unknown>>();
    // The built-in tools are typed from their own schemas.
    expectTypeOf<Parameters<typeof shellTool.run>[0]>().toEqualTypeOf<{
      readonly command: string;
      readonly cwd?: string;
      readonly timeout_ms?: number;
      readonly escape_sandbox?: boolean;
    }>();
  });
});

describe("a defined tool", () => {
  const seen: unknown[] = [];
  const tool = defineTool({
    spec: { name: "probe", description: "records what it is run with", parameters: SCHEMA },
    itemType: "dynamicToolCall",
    describe: (args) => ({ tool_name: `probe ${args.name}` }),
    run: async (args) => {
      seen.push(args);
      return { ok: true, content: args.items.map((i) => i.id).join(","), item: {} };
    },
  });

  it("binds a call whose arguments the schema accepts, and runs with them", async () => {
    const parsed = parseToolCall(tool, '{"name":"n","items":[{"id":"a"},{"id":"b"}]}');
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.call.describe({ cwd: "/" })).toEqual({ tool_name: "probe n" });
    expect((await parsed.call.run(testContext("/"))).content).toBe("a,b");
  });

  it("refuses arguments the schema refuses, before anything of the tool runs", () => {
    seen.length = 0;
    expect(parseToolCall(tool, '{"name":"n","items":[{"note":"no id"}],"mode":"medium"}')).toEqual({
      ok: false,
      error: 'arguments for probe: mode must be one of fast, slow, got "medium"; items[0].id is required',
    });
    expect(tool.bind({ name: 3, items: [] })).toEqual({ ok: false, error: "arguments for probe: name must be string, got 3" });
    expect(seen).toEqual([]);
  });
});
