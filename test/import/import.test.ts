/**
 * `turnspec import` on the real files: every published MCP version, ACP's schema.json (the
 * one committed here), LSP 3.17's meta model and Ethereum's execution-apis OpenRPC document
 * (both builds). Each imports to a folder the loader takes, byte-identical when repeated,
 * with the report it should have (nothing inexpressible but what these sources say beyond
 * JSON-RPC), and generates code that type-checks under strict settings. A file that is not
 * here is skipped with one line (see published.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { emitAll } from "../../packages/generator/src/generate.js";
import { importSource, recognise, runImport } from "../../packages/generator/src/import/command.js";
import { ImportMap, readMap } from "../../packages/generator/src/import/map.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import type { JsonObject, ProtocolModel } from "../../packages/generator/src/model.js";
import { typeCheck } from "../../packages/generator/src/typecheck.js";
import { repoRoot, sayMissing, SOURCES, type PublishedSource } from "./published.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

function imported(s: PublishedSource) {
  const root = JSON.parse(readFileSync(s.file, "utf8")) as JsonObject;
  return importSource(root, recognise(root)!, new ImportMap(readMap(s.map)), s.file.split("/").at(-1)!);
}

function load(files: ReadonlyMap<string, string>): ProtocolModel {
  const dir = temp("turnspec-imported-");
  for (const [name, text] of files) writeFileSync(join(dir, name), text);
  return loadSchemas(dir);
}

/** What each source says that a schemas folder cannot, by its report: what these protocols do beyond JSON-RPC and turnspec's format. */
const NOT_EXPRESSIBLE: Record<string, (entries: readonly { subject: string; detail: string }[]) => void> = {
  // ACP's envelopes let params be null, which JSON-RPC 2.0 does not: said, once per envelope.
  "ACP v1": (entries) =>
    expect(entries.map((e) => e.subject)).toEqual(["AgentNotification", "AgentRequest", "ClientNotification", "ClientRequest"]),
};

describe.each(SOURCES)("importing $name", (s) => {
  it.skipIf(!s.present)("gives a folder the loader takes, the same bytes every time, and the report it should", () => {
    const first = imported(s);
    const again = imported(s);
    expect([...again.files.keys()]).toEqual([...first.files.keys()]);
    for (const [name, text] of first.files) expect(again.files.get(name), name).toBe(text);
    const model = load(first.files);
    expect(model.methods.length + model.notifications.length).toBe(first.report.counts.methods + first.report.counts.notifications);
    (NOT_EXPRESSIBLE[s.name] ?? ((entries) => expect(entries).toEqual([])))(first.report.notExpressible);
    expect(first.report.unusedMap).toEqual([]);
    // Every name the importer made up is reported with its rule.
    for (const entry of first.report.madeUp) expect(entry.detail.length).toBeGreaterThan(10);
  });

  it.skipIf(!s.present)(
    "generates code that type-checks under strict settings",
    async () => {
      const model = load(imported(s).files);
      const files = await emitAll(model, {});
      expect(typeCheck(files, { outDir: temp("turnspec-imported-out-") })).toEqual([]);
    },
    600_000,
  );

  if (!s.present) sayMissing(s);
});

describe("what the imports hold", () => {
  const byName = (name: string) => SOURCES.find((s) => s.name === name)!;
  const modelOf = (name: string) => load(imported(byName(name)).files);

  it.skipIf(!byName("MCP 2025-11-25").present)(
    "MCP 2025-11-25: every message, 8 of them both ways, the results that are unions, the URL elicitation error with its data, open objects",
    () => {
      const model = modelOf("MCP 2025-11-25");
      expect(model.methods.length).toBe(20);
      expect(model.notifications.length).toBe(11);
      const both = [...model.methods, ...model.notifications]
        .filter((m) => m.direction === "both")
        .map((m) => m.name)
        .sort();
      expect(both).toEqual([
        "notifications/cancelled",
        "notifications/progress",
        "notifications/tasks/status",
        "ping",
        "tasks/cancel",
        "tasks/get",
        "tasks/list",
        "tasks/result",
      ]);
      const optional = [...model.methods, ...model.notifications].filter((m) => m.paramsOptional).map((m) => m.name);
      expect(optional.length).toBe(12);
      expect(model.methods.find((m) => m.name === "tools/call")?.result).toBe("ToolsCallResult");
      expect(model.types.find((t) => t.title === "ToolsCallResult")?.schema.anyOf).toEqual([
        { $ref: "call_tool_result.json" },
        { $ref: "create_task_result.json" },
      ]);
      expect(model.errors.find((e) => e.code === -32042)).toMatchObject({
        reason: "url_elicitation_required",
        data: "URLElicitationRequiredErrorData",
        anyMethod: true,
      });
      expect(model.objects).toBe("open");
      // The JSON-RPC envelopes are not types of the protocol.
      expect(model.types.map((t) => t.title)).not.toContain("JSONRPCRequest");
      expect(model.types.map((t) => t.title)).not.toContain("ClientRequest");
    },
  );

  it.skipIf(!byName("MCP 2025-03-26").present)("MCP 2025-03-26 takes batches; 2024-11-05 and 2025-06-18 do not", () => {
    expect(modelOf("MCP 2025-03-26").batches).toBe(true);
    if (byName("MCP 2024-11-05").present) expect(modelOf("MCP 2024-11-05").batches).toBe(false);
    if (byName("MCP 2025-06-18").present) expect(modelOf("MCP 2025-06-18").batches).toBe(false);
  });

  it("ACP v1: 25 messages, the request/response pairs from x-method, sides from x-side, $/cancel_request both ways, the error codes", () => {
    const model = modelOf("ACP v1");
    expect(model.methods.length + model.notifications.length).toBe(25);
    expect(model.methods.filter((m) => m.direction === "client_to_server").length).toBe(12);
    expect(model.methods.filter((m) => m.direction === "server_to_client").length).toBe(9);
    expect(model.notifications.map((n) => `${n.name} ${n.direction}`).sort()).toEqual([
      "$/cancel_request both",
      "elicitation/complete server_to_client",
      "session/cancel client_to_server",
      "session/update server_to_client",
    ]);
    expect(model.methods.find((m) => m.name === "session/prompt")).toMatchObject({
      params: "PromptRequest",
      result: "PromptResponse",
      paramsOptional: false,
    });
    expect(model.errors.find((e) => e.code === -32000)?.reason).toBe("authentication_required");
  });

  it.skipIf(!byName("LSP 3.17").present)(
    "LSP 3.17: every request and notification, both ways included, partial results, error data, open enums",
    () => {
      const model = modelOf("LSP 3.17");
      expect(model.methods.length).toBe(67);
      expect(model.notifications.length).toBe(26);
      expect(
        [...model.methods, ...model.notifications]
          .filter((m) => m.direction === "both")
          .map((m) => m.name)
          .sort(),
      ).toEqual(["$/cancelRequest", "$/progress"]);
      expect(model.methods.find((m) => m.name === "textDocument/implementation")).toMatchObject({
        partialResult: "TextDocumentImplementationPartialResult",
        result: "TextDocumentImplementationResult",
      });
      expect(model.methods.find((m) => m.name === "initialize")?.errorData).toBe("InitializeError");
      expect(model.methods.find((m) => m.name === "shutdown")?.params).toBeUndefined();
      expect(model.types.find((t) => t.title === "CodeActionKind")?.schema["x-open"]).toBe(true);
      expect(model.notifications.find((n) => n.name === "telemetry/event")).toMatchObject({ params: "LSPAny", paramStructure: "either" });
    },
  );

  it.skipIf(!byName("Ethereum execution APIs").present)(
    "Ethereum: every method, params by position or by name (OpenRPC's either), the errors once per code with their data",
    () => {
      const model = modelOf("Ethereum execution APIs");
      expect(model.methods.length).toBe(86);
      expect(model.methods.every((m) => m.paramStructure === "either")).toBe(true);
      expect(model.methods.find((m) => m.name === "eth_getBalance")?.params).toBe("EthGetBalanceParams");
      expect(model.types.find((t) => t.title === "EthGetBalanceParams")?.schema.required).toEqual(["Address"]);
      expect(model.errors.find((e) => e.code === 3)?.data).toBe("ExecutionRevertedData");
      expect(model.batches).toBe(true);
    },
  );
});

describe("turnspec import (command)", () => {
  const acp = join(repoRoot, "test/fixtures/published/acp/schema.json");
  const map = join(repoRoot, "test/fixtures/import/acp.map.json");
  const run = async (args: Parameters<typeof runImport>[0]) => {
    let out = "";
    let err = "";
    const code = await runImport(args, { write: (t: string) => (out += t) }, { write: (t: string) => (err += t) });
    return { code, out, err };
  };

  it("writes the folder and the report, and --check passes on it and fails on a changed file", async () => {
    const dir = temp("turnspec-import-cmd-");
    const written = await run({ source: acp, out: dir, map, check: false, json: false });
    expect(written.code).toBe(0);
    expect(written.out).toMatch(/^turnspec import: ACP \(x-method and x-side\) from .* 21 methods, 4 notifications, \d+ types, 8 errors\n/);
    expect(written.out).toContain("not expressible (4):");
    expect((await run({ source: acp, out: dir, map, check: true, json: false })).code).toBe(0);
    writeFileSync(join(dir, "session_id.json"), "{}\n");
    const stale = await run({ source: acp, out: dir, map, check: true, json: false });
    expect(stale.code).toBe(1);
    expect(stale.err).toContain("session_id.json (differs)");
    expect(stale.err).toContain("run: turnspec import test/fixtures/published/acp/schema.json --out");
  });

  it("exits 2 for a source it cannot read, a format it does not know, and a request the source and the map leave unpaired", async () => {
    const dir = temp("turnspec-import-bad-");
    expect((await run({ source: join(dir, "none.json"), out: dir, check: false, json: false })).err).toContain("no such file");
    writeFileSync(join(dir, "other.json"), JSON.stringify({ hello: "world" }));
    const unknown = await run({ source: join(dir, "other.json"), out: dir, check: false, json: false });
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain("cannot tell the format");
    writeFileSync(
      join(dir, "mini-mcp.json"),
      JSON.stringify({
        $defs: {
          ClientRequest: { anyOf: [{ $ref: "#/$defs/EchoRequest" }] },
          EchoRequest: {
            type: "object",
            properties: { method: { const: "echo", type: "string" }, params: { type: "object" } },
            required: ["method"],
          },
          EchoResult: { type: "object" },
        },
      }),
    );
    const unpaired = await run({ source: join(dir, "mini-mcp.json"), out: dir, check: false, json: false });
    expect(unpaired.code).toBe(2);
    expect(unpaired.err).toContain('the source does not say which result answers these requests; give each in the map\'s "results"');
    expect(unpaired.err).toContain("echo (EchoRequest; EchoResult?)");
  });
});

describe("the map file", () => {
  it("is read when it matches the map's schema, and refused with every problem and where it is when not", () => {
    const good = join(repoRoot, "test/fixtures/import/acp.map.json");
    expect(readMap(good)).toEqual(JSON.parse(readFileSync(good, "utf8")));
    const dir = temp("turnspec-map-");
    const bad = join(dir, "bad.map.json");
    writeFileSync(bad, JSON.stringify({ title: "", batches: "yes", colour: "blue", methods: { "session/new": {} } }));
    let message = "";
    try {
      readMap(bad);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe(
      [
        `${bad} does not match the import map's schema (meta/import-map.schema.json of @turnspec/generator):`,
        '  (top level): must NOT have additional properties "colour"',
        "  /title: must NOT have fewer than 1 characters",
        "  /batches: must be boolean",
        "  /methods/session~1new: must NOT have fewer than 1 properties",
      ].join("\n"),
    );
  });
});
