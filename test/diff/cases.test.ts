/**
 * The diff's judgement of message changes, one row per case: the schema of a field `v` of
 * thing/put's params (client to server) before and after, the receivers' mode, and the
 * expected verdict for each deployment: old clients sending to a new server
 * (old_to_new) and new clients sending to an old server (new_to_old). Every
 * counterexample the diff prints is re-checked with the validators the generator emits:
 * the sender's strict validator accepts it, the receiver's validator (in the mode) rejects it.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { ValidationMode } from "../../packages/generator/src/emit/validators.js";
import { diffSchemas, type Change } from "../../packages/generator/src/diff/index.js";
import type { Json, JsonObject } from "../../packages/generator/src/model.js";
import { emittedValidator, loadProtocol, removeAll, type ProtocolSpec } from "./protocol.js";

type Outcome = "ok" | "breaking" | "undetermined";

interface Case {
  readonly old: ProtocolSpec;
  readonly new: ProtocolSpec;
  readonly mode?: ValidationMode;
  /** Expected verdicts: [old clients → new server, new clients → old server]. */
  readonly want: readonly [Outcome, Outcome];
  /** A fragment the breaking or undetermined change's text must contain. */
  readonly change?: string;
}

const obj = (properties: JsonObject, required: string[] = Object.keys(properties), additionalProperties: Json = false): JsonObject => ({
  type: "object",
  additionalProperties,
  required,
  properties,
});
const str = { type: "string" };
const int = { type: "integer" };
const v = (schema: Json): ProtocolSpec => ({ v: schema });
const nullable = (schema: Json) => ({ anyOf: [schema, { type: "null" }] });

/** A union of variants tagged by `kind`, each variant a file; `extra` adds fields to a variant. */
function union(tags: string[], extra: Record<string, JsonObject> = {}, required: Record<string, string[]> = {}): ProtocolSpec {
  const files: Record<string, JsonObject> = {
    "shape.json": { type: "object", discriminator: { propertyName: "kind" }, oneOf: tags.map((t) => ({ $ref: `shape_${t}.json` })) },
  };
  for (const tag of tags) {
    const properties = { kind: { const: tag }, size: int, ...extra[tag] };
    files[`shape_${tag}.json`] = obj(properties, ["kind", "size", ...(required[tag] ?? [])]);
  }
  return { v: { $ref: "shape.json" }, files };
}

/** A chain of references: v → link_a → link_b → leaf (the leaf's schema given). */
function chain(leaf: JsonObject, moved = false): ProtocolSpec {
  return {
    v: { $ref: "link_a.json" },
    files: {
      "link_a.json": obj({ b: { $ref: "link_b.json" } }),
      "link_b.json": moved ? obj({ leaf: { $ref: "leaf_moved.json" } }) : obj({ leaf: { $ref: "leaf.json" } }),
      [moved ? "leaf_moved.json" : "leaf.json"]: leaf,
    },
  };
}

const CASES: Record<string, Case> = {
  // Closed objects
  "optional field added to a closed object (strict)": {
    old: v(obj({ a: str })),
    new: v(obj({ a: str, b: str }, ["a"])),
    want: ["ok", "breaking"],
    change: 'v: field "b" added, optional',
  },
  "optional field added to a closed object (tolerant)": {
    old: v(obj({ a: str })),
    new: v(obj({ a: str, b: str }, ["a"])),
    mode: "tolerant",
    want: ["ok", "ok"],
  },
  "required field added (strict)": {
    old: v(obj({ a: str })),
    new: v(obj({ a: str, b: str })),
    want: ["breaking", "breaking"],
    change: 'v: field "b" added, required',
  },
  "required field added (tolerant)": {
    old: v(obj({ a: str })),
    new: v(obj({ a: str, b: str })),
    mode: "tolerant",
    want: ["breaking", "ok"],
  },
  "optional field removed from a closed object (strict)": {
    old: v(obj({ a: str, b: str }, ["a"])),
    new: v(obj({ a: str })),
    want: ["breaking", "ok"],
    change: 'v: field "b" removed (it was optional)',
  },
  "optional field removed from a closed object (tolerant)": {
    old: v(obj({ a: str, b: str }, ["a"])),
    new: v(obj({ a: str })),
    mode: "tolerant",
    want: ["ok", "ok"],
  },
  "required field made optional (strict)": {
    old: v(obj({ a: str, b: str })),
    new: v(obj({ a: str, b: str }, ["a"])),
    want: ["ok", "breaking"],
    change: 'v: field "b" required → optional',
  },
  "required field made optional (tolerant)": {
    old: v(obj({ a: str, b: str })),
    new: v(obj({ a: str, b: str }, ["a"])),
    mode: "tolerant",
    want: ["ok", "breaking"],
  },
  "optional field made required": {
    old: v(obj({ a: str, b: str }, ["a"])),
    new: v(obj({ a: str, b: str })),
    want: ["breaking", "ok"],
    change: 'v: field "b" optional → required',
  },
  "open object closed (strict)": {
    old: v(obj({ a: str }, ["a"], true)),
    new: v(obj({ a: str })),
    want: ["breaking", "ok"],
    change: "v: additionalProperties true → false",
  },
  "closed object opened (strict)": {
    old: v(obj({ a: str })),
    new: v(obj({ a: str }, ["a"], true)),
    want: ["ok", "breaking"],
    change: "v: additionalProperties false → true",
  },
  "closed object opened (tolerant)": {
    old: v(obj({ a: str })),
    new: v(obj({ a: str }, ["a"], true)),
    mode: "tolerant",
    want: ["ok", "ok"],
  },
  // A deployed sender has no reason to put "b" in a free-form object with another shape: shown, not judged breaking.
  "typed field added to an open object": {
    old: v(obj({ a: str }, ["a"], true)),
    new: v(obj({ a: str, b: int }, ["a"], true)),
    want: ["undetermined", "ok"],
    change: 'v: field "b": any value (open object) → constrained',
  },
  // Types
  "field type string → integer": { old: v(str), new: v(int), want: ["breaking", "breaking"], change: 'v: type "string" → "integer"' },
  "type widened string → [string, null]": { old: v(str), new: v({ type: ["string", "null"] }), want: ["ok", "breaking"] },
  "integer → number": { old: v(int), new: v({ type: "number" }), want: ["ok", "breaking"], change: 'v: type "integer" → "number"' },
  "number → integer": { old: v({ type: "number" }), new: v(int), want: ["breaking", "ok"] },
  // Nullable
  "string made nullable (anyOf pair)": { old: v(str), new: v(nullable(str)), want: ["ok", "breaking"], change: "v: null allowed" },
  "nullable made non-null": { old: v(nullable(str)), new: v(str), want: ["breaking", "ok"], change: "v: null no longer allowed" },
  "type [string, null] → string": { old: v({ type: ["string", "null"] }), new: v(str), want: ["breaking", "ok"] },
  "nullable $ref to a closed object gains an optional field (strict)": {
    old: { v: nullable({ $ref: "box.json" }), files: { "box.json": obj({ a: str }) } },
    new: { v: nullable({ $ref: "box.json" }), files: { "box.json": obj({ a: str, b: str }, ["a"]) } },
    want: ["ok", "breaking"],
  },
  // Enums
  "enum value added (strict)": {
    old: v({ type: "string", enum: ["a", "b"] }),
    new: v({ type: "string", enum: ["a", "b", "c"] }),
    want: ["ok", "breaking"],
    change: 'v: enum value "c" added',
  },
  "enum value added (tolerant: enums stay exact)": {
    old: v({ type: "string", enum: ["a", "b"] }),
    new: v({ type: "string", enum: ["a", "b", "c"] }),
    mode: "tolerant",
    want: ["ok", "breaking"],
  },
  "enum value removed": {
    old: v({ type: "string", enum: ["a", "b"] }),
    new: v({ type: "string", enum: ["a"] }),
    want: ["breaking", "ok"],
    change: 'v: enum value "b" removed',
  },
  "string narrowed to an enum": {
    old: v(str),
    new: v({ type: "string", enum: ["a"] }),
    want: ["breaking", "ok"],
    change: 'v: any value → only "a"',
  },
  "const changed": { old: v({ const: "a" }), new: v({ const: "b" }), want: ["breaking", "breaking"], change: 'v: const "a" → "b"' },
  "enum reordered": { old: v({ type: "string", enum: ["a", "b"] }), new: v({ type: "string", enum: ["b", "a"] }), want: ["ok", "ok"] },
  // Tagged unions
  "union variant added (strict)": {
    old: union(["circle", "square"]),
    new: union(["circle", "square", "star"]),
    want: ["ok", "breaking"],
    change: 'variant "star" added',
  },
  "union variant added (tolerant: tags stay exact)": {
    old: union(["circle", "square"]),
    new: union(["circle", "square", "star"]),
    mode: "tolerant",
    want: ["ok", "breaking"],
  },
  "union variant removed": {
    old: union(["circle", "square"]),
    new: union(["circle"]),
    want: ["breaking", "ok"],
    change: 'variant "square" removed',
  },
  "union variant gains an optional field (strict)": {
    old: union(["circle", "square"]),
    new: union(["circle", "square"], { square: { corner: str } }),
    want: ["ok", "breaking"],
  },
  "union variant gains an optional field (tolerant)": {
    old: union(["circle", "square"]),
    new: union(["circle", "square"], { square: { corner: str } }),
    mode: "tolerant",
    want: ["ok", "ok"],
  },
  "union variant gains a required field": {
    old: union(["circle", "square"]),
    new: union(["circle", "square"], { square: { corner: str } }, { square: ["corner"] }),
    mode: "tolerant",
    want: ["breaking", "ok"],
  },
  // $ref chains and moves
  "bound raised three references deep": {
    old: chain({ type: "integer", minimum: 0 }),
    new: chain({ type: "integer", minimum: 1 }),
    want: ["breaking", "ok"],
    change: "minimum 0 → 1",
  },
  "definition moved to another file with equal content": {
    old: chain({ type: "integer", minimum: 0 }),
    new: chain({ type: "integer", minimum: 0 }, true),
    want: ["ok", "ok"],
  },
  "inline schema moved into its own file": {
    old: v(obj({ a: str })),
    new: { v: { $ref: "moved.json" }, files: { "moved.json": obj({ a: str }) } },
    want: ["ok", "ok"],
  },
  "descriptions, $comment and examples changed": {
    old: v({ type: "string", description: "old words" }),
    new: v({ type: "string", description: "new words", $comment: "why", examples: ["x"] }),
    want: ["ok", "ok"],
  },
  "format changed (an annotation)": {
    old: v({ type: "string", format: "date-time" }),
    new: v({ type: "string", format: "uri" }),
    want: ["ok", "ok"],
  },
  "recursive type: a field added at every depth (strict)": {
    old: {
      v: { $ref: "tree.json" },
      files: { "tree.json": obj({ name: str, children: { type: "array", items: { $ref: "tree.json" } } }) },
    },
    new: {
      v: { $ref: "tree.json" },
      files: {
        "tree.json": obj({ name: str, size: int, children: { type: "array", items: { $ref: "tree.json" } } }, ["name", "children"]),
      },
    },
    want: ["ok", "breaking"],
    change: 'field "size" added, optional',
  },
  "recursive type unchanged": {
    old: {
      v: { $ref: "tree.json" },
      files: { "tree.json": obj({ name: str, children: { type: "array", items: { $ref: "tree.json" } } }) },
    },
    new: {
      v: { $ref: "tree.json" },
      files: { "tree.json": obj({ name: str, children: { type: "array", items: { $ref: "tree.json" } } }) },
    },
    want: ["ok", "ok"],
  },
  // Numeric bounds
  "minimum raised": { old: v({ type: "integer", minimum: 0 }), new: v({ type: "integer", minimum: 1 }), want: ["breaking", "ok"] },
  "minimum lowered": {
    old: v({ type: "integer", minimum: 1 }),
    new: v({ type: "integer", minimum: 0 }),
    want: ["ok", "breaking"],
    change: "v: minimum 1 → 0",
  },
  "maximum raised": {
    old: v({ type: "integer", maximum: 9 }),
    new: v({ type: "integer", maximum: 19 }),
    want: ["ok", "breaking"],
    change: "v: maximum 9 → 19",
  },
  "maximum added": { old: v(int), new: v({ type: "integer", maximum: 10 }), want: ["breaking", "ok"], change: "v: maximum (none) → 10" },
  "minimum 0 → exclusiveMinimum 0": {
    old: v({ type: "number", minimum: 0 }),
    new: v({ type: "number", exclusiveMinimum: 0 }),
    want: ["breaking", "ok"],
    change: "v: minimum 0 → exclusiveMinimum 0",
  },
  "multipleOf added (judged by a generated value)": {
    old: v({ type: "integer", minimum: 0 }),
    new: v({ type: "integer", minimum: 0, multipleOf: 2 }),
    want: ["breaking", "ok"],
  },
  // String bounds and patterns
  "minLength raised": {
    old: v({ type: "string", minLength: 1 }),
    new: v({ type: "string", minLength: 3 }),
    want: ["breaking", "ok"],
    change: "v: minLength 1 → 3",
  },
  "maxLength added": { old: v(str), new: v({ type: "string", maxLength: 8 }), want: ["breaking", "ok"], change: "v: maxLength (none) → 8" },
  "maxLength raised": {
    old: v({ type: "string", maxLength: 4 }),
    new: v({ type: "string", maxLength: 8 }),
    want: ["ok", "breaking"],
    change: "v: maxLength 4 → 8",
  },
  "pattern added (a generated string breaks it)": {
    old: v(str),
    new: v({ type: "string", pattern: "^[a-z]+$" }),
    want: ["breaking", "ok"],
  },
  "pattern widened (not decided one way)": {
    old: v({ type: "string", pattern: "^[a-z]+$" }),
    new: v({ type: "string", pattern: "^[a-z0-9]+$" }),
    want: ["undetermined", "breaking"],
    change: 'v: pattern "^[a-z]+$" → "^[a-z0-9]+$"',
  },
  // The other way, inclusion of the new pattern in the old is not decided: undetermined, not guessed compatible.
  "pattern narrowed (a string generated from the old pattern breaks it)": {
    old: v({ type: "string", pattern: "^[a-z0-9]+$" }),
    new: v({ type: "string", pattern: "^[a-z]+$" }),
    want: ["breaking", "undetermined"],
  },
  "a change beside a patterned id (the message is generated to match the pattern)": {
    old: { params: obj({ id: { type: "string", pattern: "^thr_[0-9a-f]{8}$" }, v: { type: "integer", minimum: 0 } }) },
    new: { params: obj({ id: { type: "string", pattern: "^thr_[0-9a-f]{8}$" }, v: { type: "integer", minimum: 5 } }) },
    want: ["breaking", "ok"],
  },
  "unchanged pattern": {
    old: v({ type: "string", pattern: "^[a-z]+$" }),
    new: v({ type: "string", pattern: "^[a-z]+$" }),
    want: ["ok", "ok"],
  },
  // Arrays
  "array item type narrowed": {
    old: v({ type: "array", items: str }),
    new: v({ type: "array", items: int }),
    want: ["breaking", "breaking"],
  },
  "minItems raised": {
    old: v({ type: "array", items: str }),
    new: v({ type: "array", items: str, minItems: 1 }),
    want: ["breaking", "ok"],
    change: "v: minItems (none) → 1",
  },
  "maxItems lowered": {
    old: v({ type: "array", items: str, maxItems: 5 }),
    new: v({ type: "array", items: str, maxItems: 2 }),
    want: ["breaking", "ok"],
    change: "v: maxItems 5 → 2",
  },
  "array items gain an optional field (strict)": {
    old: v({ type: "array", items: obj({ a: str }) }),
    new: v({ type: "array", items: obj({ a: str, b: str }, ["a"]) }),
    want: ["ok", "breaking"],
  },
  "array items true → typed (a boolean schema)": {
    old: v({ type: "array", items: true }),
    new: v({ type: "array", items: str }),
    want: ["breaking", "ok"],
  },
  // Keywords outside the compared subset
  "minProperties added (a generated value breaks it)": {
    old: v(obj({ a: str }, [], true)),
    new: v({ ...obj({ a: str }, [], true), minProperties: 1 }),
    want: ["breaking", "ok"],
    change: "v: minProperties (none) → 1",
  },
  "patternProperties unchanged but a field added (undetermined: they interact)": {
    old: v({ ...obj({ a: str }), patternProperties: { "^x_": str } }),
    new: v({ ...obj({ a: str, b: str }, ["a"]), patternProperties: { "^x_": str } }),
    want: ["undetermined", "undetermined"],
    change: "v: a schema with patternProperties changed",
  },
  "patternProperties and nothing else the same": {
    old: v({ ...obj({ a: str }), patternProperties: { "^x_": str } }),
    new: v({ ...obj({ a: str }), patternProperties: { "^x_": str }, description: "now described" }),
    want: ["ok", "ok"],
  },
  "not added (undetermined)": {
    old: v(int),
    new: v({ type: "integer", not: { const: 1234567 } }),
    want: ["undetermined", "ok"],
    change: 'v: not (none) → {"const":1234567}',
  },
};

const dirs: string[] = [];
afterAll(() => removeAll(dirs));

function outcome(changes: readonly Change[], flow: string): Outcome {
  const mine = changes.filter((c) => c.messages?.includes("thing/put params") && c.flow === flow);
  if (mine.some((c) => c.verdict === "breaking")) return "breaking";
  if (mine.some((c) => c.verdict === "undetermined")) return "undetermined";
  return "ok";
}

describe("turnspec diff: message changes", () => {
  it("has at least 40 cases", () => expect(Object.keys(CASES).length).toBeGreaterThanOrEqual(40));

  it.each(Object.entries(CASES))("%s", (_name, c) => {
    const oldModel = loadProtocol(c.old, dirs);
    const newModel = loadProtocol(c.new, dirs);
    const mode = c.mode ?? "strict";
    const report = diffSchemas(oldModel, newModel, { mode });
    expect([outcome(report.changes, "old_to_new"), outcome(report.changes, "new_to_old")]).toEqual(c.want);
    const judged = report.changes.filter((ch) => ch.verdict !== "compatible" && ch.messages?.includes("thing/put params"));
    // Said old → new, whichever deployment it breaks: every entry of the case names the same change.
    if (c.change)
      for (const ch of judged.filter((j) => j.verdict === "breaking" || !judged.some((b) => b.verdict === "breaking")))
        expect(ch.change).toBe(c.change);
    for (const change of judged) {
      expect(change.old).not.toBeNull();
      expect(change.new).not.toBeNull();
      if (change.verdict !== "breaking") {
        expect(change.counterexample).toBeUndefined();
        continue;
      }
      // The counterexample, re-checked with the generator's own validators.
      const [senderModel, receiverModel] = change.flow === "old_to_new" ? [oldModel, newModel] : [newModel, oldModel];
      const value = change.counterexample!.value;
      expect(emittedValidator(senderModel, "strict", "thing_put_params.json")(value), `sender accepts ${JSON.stringify(value)}`).toBe(true);
      expect(emittedValidator(receiverModel, mode, "thing_put_params.json")(value), `receiver rejects ${JSON.stringify(value)}`).toBe(
        false,
      );
      expect(change.sender).toEqual({ version: change.flow === "old_to_new" ? "old" : "new", role: "client" });
      expect(change.receiver?.role).toBe("server");
    }
    // Nothing else changed in these protocols.
    expect(report.changes.filter((ch) => !ch.messages?.includes("thing/put params"))).toEqual([]);
  });
});
