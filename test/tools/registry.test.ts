/** The built-in tool set, and argument checking with messages the model can act on. */
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { defineTool, parseToolCall } from "../../packages/gateway/src/tools/arguments.js";
import { builtinTools } from "../../packages/gateway/src/tools/registry.js";
import { shellTool } from "../../packages/gateway/src/tools/shell.js";
import type { Tool } from "../../packages/gateway/src/tools/tool.js";

function toolWith(name: string, parameters: Record<string, unknown>): Tool {
  return defineTool({
    spec: { name, description: "test", parameters },
    itemType: "dynamicToolCall",
    describe: () => ({}),
    run: async () => ({ ok: true, content: "", item: {} }),
  });
}

/** What parseToolCall made of a call: its arguments when the tool accepted them, else the error. */
function parsed(tool: Tool, json: string) {
  const call = parseToolCall(tool, json);
  return call.ok ? { ok: true, args: call.args } : call;
}

describe("builtinTools", () => {
  it("lists shell, read_file, write_file and web_fetch, without spawn_agent", () => {
    expect(builtinTools().map((t) => t.spec.name)).toEqual(["shell", "read_file", "write_file", "web_fetch"]);
  });

  it("passes the configured timeouts to the tools that use them", { timeout: 10_000 }, async () => {
    const shell = builtinTools({ shellTimeoutMs: 100 }).find((t) => t.spec.name === "shell")!;
    const ctx = {
      cwd: "/",
      signal: new AbortController().signal,
      emit: () => undefined,
      env: { PATH: process.env.PATH },
      maxTimeoutMs: 60_000,
    };
    const bound = shell.bind({ command: "sleep 30" });
    if (!bound.ok) throw new Error(bound.error);
    expect((await bound.call.run(ctx)).content).toBe("timed out after 100 ms: the command was killed\n(no output)");
  });

  it("declares schemas that compile under strict rules and close their objects", () => {
    for (const tool of builtinTools()) {
      expect(() => new Ajv2020({ strict: true }).compile(tool.spec.parameters), tool.spec.name).not.toThrow();
      expect(tool.spec.parameters).toMatchObject({ type: "object", additionalProperties: false });
      expect(tool.spec.description.length).toBeGreaterThan(20);
    }
  });
});

describe("parseToolCall", () => {
  it("returns valid arguments", () => {
    expect(parsed(shellTool, '{"command":"ls","timeout_ms":500}')).toEqual({ ok: true, args: { command: "ls", timeout_ms: 500 } });
  });

  it.each([
    ["a missing field", "{}", "arguments for shell: command is required"],
    ["an empty string as no arguments", "", "arguments for shell: command is required"],
    ["a wrong type", '{"command":"ls","timeout_ms":"5"}', 'arguments for shell: timeout_ms must be integer, got "5"'],
    ["an unknown field", '{"command":"ls","dir":"/"}', 'arguments for shell: dir is not a known field, got "/"'],
    ["a value below the minimum", '{"command":"ls","timeout_ms":0}', "arguments for shell: timeout_ms must be at least 1, got 0"],
    ["several problems at once", '{"cwd":7}', "arguments for shell: command is required; cwd must be string, got 7"],
    ["text that is not JSON", '{"command": ls}', "arguments for shell are not valid JSON ("],
    ["JSON that is not an object", '["ls"]', 'arguments for shell must be a JSON object, got ["ls"]'],
  ])("explains %s", (_name, json, message) => {
    const result = parseToolCall(shellTool, json);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.startsWith(message)).toBe(true);
  });

  it("names nested fields the way the arguments are written", () => {
    const tool = toolWith("batch", {
      type: "object",
      properties: { items: { type: "array", items: { type: "object", properties: { name: { type: "string" } } } } },
    });
    expect(parsed(tool, '{"items":[{"name":"a"},{"name":2}]}')).toEqual({
      ok: false,
      error: "arguments for batch: items[1].name must be string, got 2",
    });
  });

  it("accepts schemas that declare another draft, and reports one that does not compile", () => {
    const draft7 = toolWith("mcp_tool", {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      required: ["q"],
      properties: { q: { type: "string" } },
    });
    expect(parsed(draft7, '{"q":"x"}')).toEqual({ ok: true, args: { q: "x" } });
    expect(parsed(draft7, "{}")).toEqual({ ok: false, error: "arguments for mcp_tool: q is required" });
    const broken = toolWith("broken", { type: "object", properties: { q: { type: "no-such-type" } } });
    const result = parseToolCall(broken, "{}");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(/^arguments for broken cannot be checked: the tool's schema is invalid \(.+\)$/);
  });
});
