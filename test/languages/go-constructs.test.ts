/**
 * JSON Schema constructs beyond this protocol's own schemas, in the Go output: a file's local
 * definitions (`$defs`) referred to by `#/$defs/…`, one of them recursive; `allOf`; unions
 * without a tag (`oneOf` of a pattern string, a bounded integer and a named object; `anyOf` of
 * two scalars) read into typed variants by their checks; a tuple (`prefixItems`); a union with a
 * `null` branch. The model is built here, as a loader that reads those constructs hands it over,
 * and each value gets the verdicts of the TypeScript validators compiled at run time from the
 * same schemas; the Go module's testee must give the same verdicts and pointers in both modes
 * and the canonical bytes out of a round trip through its Go types.
 */
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "@turnspec/rpc";
import { emitGo, GO_OUTPUT_KINDS } from "../../packages/generator/src/emit/go/index.js";
import { STANDARD_ERRORS } from "../../packages/generator/src/load.js";
import type { JsonObject, ProtocolModel, TypeModel } from "../../packages/generator/src/model.js";
import { compileProtocol } from "../../packages/generator/src/runtime-protocol.js";
import type { TypeCase, Vectors } from "../../packages/generator/src/vectors/index.js";
import { buildGo, GO_AVAILABLE, NO_GO } from "./go-toolchain.js";
import { describeMismatch, runHarness } from "./harness.js";

const BASE = "https://example.test/constructs/";

function type(file: string, title: string, schema: JsonObject): TypeModel {
  return { file, id: BASE + file, title, description: `${title}, a construct.`, defs: [], schema: { $schema: "https://json-schema.org/draft/2020-12/schema", $id: BASE + file, title, description: `${title}, a construct.`, ...schema } };
}

const types: TypeModel[] = [
  type("base.json", "Base", { type: "object", properties: { id: { type: "string", minLength: 1 } }, required: ["id"], additionalProperties: false }),
  type("combined.json", "Combined", { allOf: [{ $ref: "base.json" }, { type: "object", properties: { id: { type: "string", maxLength: 4 } } }] }),
  type("tree.json", "Tree", {
    type: "object",
    properties: { root: { $ref: "#/$defs/node" } },
    required: ["root"],
    additionalProperties: false,
    $defs: { node: { type: "object", properties: { name: { type: "string", maxLength: 3 }, kids: { type: "array", items: { $ref: "#/$defs/node" } } }, required: ["name"], additionalProperties: false } },
  }),
  type("choice.json", "Choice", { oneOf: [{ type: "string", pattern: "^a" }, { type: "integer", minimum: 0 }, { $ref: "base.json" }] }),
  type("scalar.json", "Scalar", { anyOf: [{ type: "string", maxLength: 2 }, { type: "number" }] }),
  type("pair.json", "Pair", { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: false, minItems: 2 }),
  type("maybe.json", "Maybe", { type: "object", properties: { value: { oneOf: [{ type: "string" }, { type: "integer" }, { type: "null" }] } }, required: ["value"], additionalProperties: false }),
];

const model: ProtocolModel = {
  title: "constructs",
  version: "0.0.1",
  description: "Schema constructs for the Go output.",
  baseUri: BASE,
  digest: "0".repeat(64),
  types,
  unions: [],
  methods: [],
  notifications: [],
  errors: STANDARD_ERRORS,
  ordering: [],
  batches: false,
  objects: "open",
  byFile: new Map(types.map((t) => [t.file, t])),
};

const VALUES: Record<string, string[]> = {
  Base: ['{"id":"x"}', '{"id":""}', '{"id":"x","more":1}', "{}"],
  Combined: ['{"id":"abc"}', '{"id":"abcde"}', '{"id":""}', '{"id":"ab","more":true}', "[]"],
  Tree: ['{"root":{"name":"a"}}', '{"root":{"name":"a","kids":[{"name":"b","kids":[{"name":"c"}]}]}}', '{"root":{"name":"a","kids":[{"name":"long"}]}}', '{"root":{"kids":[]}}', '{"root":{"name":"a","kids":[{"name":"b","x":1}]}}'],
  Choice: ['"abc"', '"bcd"', "7", "-1", "1.0", '{"id":"q"}', '{"id":""}', "true", "null"],
  Scalar: ['"ab"', '"abc"', "2.5", "-0", "false"],
  Pair: ['["a",1]', '["a"]', '["a",1,2]', '[1,"a"]', '["a",1.0]'],
  Maybe: ['{"value":null}', '{"value":"s"}', '{"value":3}', '{"value":true}', "{}"],
};

if (!GO_AVAILABLE) console.log(NO_GO);

describe.skipIf(!GO_AVAILABLE)("constructs in the Go output", () => {
  it("give the TypeScript verdicts and round-trip through typed variants", async () => {
    const files = emitGo(model, { module: "example.com/constructs", outputs: new Set(GO_OUTPUT_KINDS) });
    const dir = mkdtempSync(join(tmpdir(), "turnspec-go-constructs-"));
    for (const file of files) {
      mkdirSync(dirname(join(dir, file.path)), { recursive: true });
      writeFileSync(join(dir, file.path), file.content);
    }
    const typesGo = files.find((f) => f.path === "types.go")!.content;
    // The union without a tag is a sealed interface of typed variants, read by their checks.
    expect(typesGo).toContain("type Choice interface {");
    expect(typesGo).toContain("func (ChoiceString) isChoice() {}");
    expect(typesGo).toContain("func (ChoiceInt) isChoice() {}");
    expect(typesGo).toContain("func (Base) isChoice() {}");
    expect(typesGo).toMatch(/case jsonrpc\.Valid\(checkChoiceVariant1, v, jsonrpc\.Tolerant\):\n\t\treturn readChoiceString\(v\)/);
    // The recursive local definition is a struct of its own that refers to itself.
    expect(typesGo).toMatch(/type TreeNode struct \{[\s\S]*?Kids \[\]TreeNode/);

    const protocol = compileProtocol(model);
    const verdict = (title: string, json: string, mode: "strict" | "tolerant") => {
      const result = protocol.validate(title, JSON.parse(json), mode);
      return result.ok ? { valid: true, pointers: [] } : { valid: false, pointers: [...new Set(result.errors.map((e) => e.pointer))].sort() };
    };
    const cases: TypeCase[] = Object.entries(VALUES).flatMap(([title, texts]) =>
      texts.map((json, i) => ({ id: `${title}/${i}`, group: "type" as const, type: title, json, note: "", strict: verdict(title, json, "strict"), tolerant: verdict(title, json, "tolerant"), canonical: canonicalJson(JSON.parse(json)) })),
    );
    // Both verdicts occur, in each mode: the cases try both sides of every construct.
    expect(cases.filter((c) => c.strict.valid).length).toBeGreaterThan(10);
    expect(cases.filter((c) => !c.strict.valid).length).toBeGreaterThan(10);
    const vectors = { format: "turnspec-vectors/1", protocol: { title: model.title, version: model.version, digest: model.digest }, types: cases, messages: [], transcripts: [], hazardsWithoutPlace: [] } as unknown as Vectors;
    const testee = buildGo(dir, "./cmd/testee", "testee");
    const report = await runHarness({ command: testee, args: [] }, vectors);
    expect(report.mismatches.map(describeMismatch)).toEqual([]);
    expect(report.counts["roundtrip/strict"].compared).toBeGreaterThan(10);
  }, 300_000);
});
