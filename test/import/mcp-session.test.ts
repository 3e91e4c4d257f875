/**
 * The import of MCP 2025-11-25 against what real peers send and what the published schema
 * says:
 *
 * - the recorded live session (test/fixtures/published/mcp/everything-session.jsonl, 156
 *   frames of the official SDK client and @modelcontextprotocol/server-everything, each with
 *   its sender) validates with the one refusal the published schema itself makes (a decimal
 *   in a form answer, where ElicitResult's content allows only string, integer and boolean);
 * - crafted frames that are wrong are refused: resource contents with neither text nor blob,
 *   an object as a progress token, a tools/call sent by the server, a response to an id the
 *   other side never sent, a batch (2025-11-25 has none);
 * - no type loses validation: for every type of the source, values drawn from the session
 *   and generated from the schema get the same verdict from the published schema (compiled
 *   as it is) and from the imported folder's validators.
 */
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sample, violators } from "../../packages/generator/src/diff/sample.js";
import { qualifiedModel } from "../../packages/generator/src/diff/qualify.js";
import { importSource } from "../../packages/generator/src/import/command.js";
import { ImportMap, readMap } from "../../packages/generator/src/import/map.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import type { Json, JsonObject, ProtocolModel } from "../../packages/generator/src/model.js";
import { compileProtocol } from "../../packages/generator/src/runtime-protocol.js";
import { MessageChecker, type ProtocolView } from "../../packages/rpc/src/index.js";
import { repoRoot, sayMissing, SOURCES } from "./published.js";

const source = SOURCES.find((s) => s.name === "MCP 2025-11-25")!;
const session = readFileSync(join(repoRoot, "test/fixtures/published/mcp/everything-session.jsonl"), "utf8")
  .trim()
  .split("\n")
  .map((line) => JSON.parse(line) as { from: "client" | "server"; message: JsonObject });

let dir: string;
let model: ProtocolModel;
let view: ProtocolView;
let root: JsonObject;

beforeAll(() => {
  if (!source.present) return;
  root = JSON.parse(readFileSync(source.file, "utf8")) as JsonObject;
  const { files } = importSource(root, "jsonschema", new ImportMap(readMap(source.map)), "schema.json");
  dir = mkdtempSync(join(tmpdir(), "turnspec-mcp-"));
  for (const [name, text] of files) writeFileSync(join(dir, name), text);
  model = loadSchemas(dir);
  view = compileProtocol(model);
});
afterAll(() => dir && rmSync(dir, { recursive: true, force: true }));

/** Every finding of a transcript, as `line method pointer: message`. */
function findings(frames: readonly { from?: "client" | "server"; message: unknown }[]): string[] {
  const checker = new MessageChecker("strict", { protocol: view });
  const found = frames.flatMap((f, i) => checker.check(f.message, i, f.from));
  found.push(...checker.end());
  return found.map((f) => `${f.index + 1} ${f.method ?? ""} ${f.part}${f.issue.pointer}: ${f.issue.message}`);
}

describe.skipIf(!source.present)("MCP 2025-11-25, imported, on real traffic", () => {
  it("validates the recorded session: 156 frames, the one refusal being the published schema's own", () => {
    expect(session).toHaveLength(156);
    const lines = findings(session);
    // Frame 108 answers elicitation/create with a number field of 3.14: the form asked for a
    // NumberSchema (type number), but ElicitResult's content, as published, takes only
    // ["string", "integer", "boolean"] or a list of strings. The refusal is the source's.
    expect(session[107]!.message).toMatchObject({ result: { action: "accept", content: { number: 3.14 } } });
    expect(lines).toEqual([
      "108 elicitation/create result/content/number: does not match any allowed shape",
      "108 elicitation/create result/task: is required",
      "108 elicitation/create result: does not match any allowed shape",
    ]);
  });

  it("validates every frame of the session but that one in tolerant mode too, and knows each frame's sender", () => {
    const checker = new MessageChecker("tolerant", { protocol: view });
    const lines = session.flatMap((f, i) => checker.check(f.message, i, f.from)).map((f) => f.index + 1);
    expect([...new Set(lines)]).toEqual([108]);
    expect(checker.notes).toEqual([]);
  });

  it("refuses crafted frames a looser description accepted", () => {
    const init = session.slice(0, 2);
    const request = (id: number, method: string, params: unknown) => ({ jsonrpc: "2.0", id, method, params });
    const answer = (id: number, result: unknown) => ({ jsonrpc: "2.0", id, result });
    // Resource contents with neither text nor blob.
    const contents = findings([
      ...init,
      { from: "client", message: request(90, "resources/read", { uri: "test://x" }) },
      { from: "server", message: answer(90, { contents: [{ uri: "test://x", mimeType: "text/plain" }] }) },
    ]);
    expect(contents.length).toBeGreaterThan(0);
    expect(contents.every((l) => l.startsWith("4 resources/read result/contents/0"))).toBe(true);
    // An object as a progress token.
    expect(
      findings([...init, { from: "client", message: request(91, "tools/list", { _meta: { progressToken: { id: 1 } } }) }]).join("\n"),
    ).toMatch(/^3 tools\/list params\/_meta\/progressToken: /);
    // A tools/call sent by the server.
    expect(findings([...init, { from: "server", message: request(0, "tools/call", { name: "echo" }) }])).toEqual([
      expect.stringContaining("3 tools/call /method: is a method only the client sends"),
    ]);
    // A response to an id the other side never sent: the server answers the client's own request id twice.
    expect(findings([...init, { from: "server", message: answer(0, {}) }])).toEqual(["3  /id: answers no request the client sent"]);
    // 2025-11-25 has no batches.
    expect(findings([...init, { from: "client", message: [request(92, "ping", {}), request(93, "ping", {})] }])).toEqual([
      "3  : is a batch, and the protocol does not allow JSON-RPC batches",
    ]);
  });
});

describe.skipIf(!source.present)("MCP 2025-11-25, imported: no type loses validation", () => {
  it("gives every value the verdict the published schema gives it, for every type of the source", () => {
    const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
    ajv.addSchema({ ...root, $id: "urn:mcp:source" });
    const defs = root.$defs as Record<string, JsonObject>;
    const qualified = qualifiedModel(model);
    // Values per type: from the session (each message's params and results), and generated from the schema (a sample, and its fields broken one at a time).
    const values = new Map<string, Json[]>();
    const add = (type: string | undefined, value: Json) => type && values.set(type, [...(values.get(type) ?? []), value]);
    const pending = new Map<string, string>();
    for (const { from, message } of session) {
      const m = message as JsonObject;
      if (typeof m.method === "string") {
        const entry = model.methods.find((x) => x.name === m.method) ?? model.notifications.find((x) => x.name === m.method);
        if (m.params !== undefined) add(entry?.params, m.params);
        if (m.id !== undefined) pending.set(`${from}:${String(m.id)}`, m.method);
      } else if ("result" in m) {
        const method = pending.get(`${from === "client" ? "server" : "client"}:${String(m.id)}`);
        add(model.methods.find((x) => x.name === method)?.result, m.result as Json);
      }
    }
    for (const type of model.types) {
      const base = sample({ $ref: type.file }, qualified);
      add(type.title, base);
      const properties = type.schema.properties;
      if (
        base !== null &&
        typeof base === "object" &&
        !Array.isArray(base) &&
        properties &&
        typeof properties === "object" &&
        !Array.isArray(properties)
      ) {
        for (const [name, schema] of Object.entries(properties))
          for (const bad of violators(schema as JsonObject)) add(type.title, { ...base, [name]: bad });
        add(type.title, { ...base, unknown_field: 1 });
      }
    }
    const losing: string[] = [];
    let compared = 0;
    for (const type of model.types) {
      if (!(type.title in defs)) continue; // made up by the import (params inline in the source)
      const published = ajv.getSchema(`urn:mcp:source#/$defs/${type.title}`)!;
      for (const value of values.get(type.title) ?? []) {
        compared++;
        const want = published(value) as boolean;
        if (view.validate(type.title, value, "strict").ok !== want) {
          losing.push(`${type.title}: ${JSON.stringify(value).slice(0, 100)} is ${want ? "valid" : "invalid"} by the published schema`);
          break;
        }
      }
    }
    console.log(
      `MCP 2025-11-25: ${model.types.filter((t) => t.title in defs).length} types of the source compared on ${compared} values; ${losing.length} lose validation`,
    );
    expect(losing).toEqual([]);
  });
});

if (!source.present) sayMissing(source);
