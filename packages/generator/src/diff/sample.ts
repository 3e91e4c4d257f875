/**
 * Values generated from a schema, the raw material of counterexamples: the smallest value
 * a schema allows, and values of a given JSON type. Generation is best effort (a pattern
 * is not solved); every value is checked by the compiled validators before it is shown.
 */
import RandExp from "randexp";
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { combinesObjects, flattenedSchema, NotFlattenable } from "../compose.js";
import { resolveRef } from "../refs.js";
import { isObject } from "../walk.js";

export type JsonType = "null" | "boolean" | "integer" | "number" | "string" | "array" | "object";
export const JSON_TYPES: readonly JsonType[] = ["null", "boolean", "integer", "number", "string", "array", "object"];

/** Follows the `$ref`s of a model (each naming its file: see qualify.ts); undefined for a dangling one or a ref loop. */
export function deref(node: Json | undefined, model: ProtocolModel): JsonObject | undefined {
  let current = node;
  for (let hops = 0; isObject(current) && typeof current.$ref === "string"; hops++) {
    if (hops > 32) return undefined;
    current = resolveRef(current.$ref, "", model.byFile)?.node;
  }
  return isObject(current) ? current : undefined;
}

/** The two halves of the nullable pair `anyOf: [schema, {type: null}]`, or undefined. */
export function nullablePair(node: JsonObject): { value: Json; index: number } | undefined {
  const list = node.anyOf;
  if (!Array.isArray(list) || list.length !== 2) return undefined;
  const isNull = (s: Json) => isObject(s) && s.type === "null" && Object.keys(s).length === 1;
  if (isNull(list[1]!)) return { value: list[0]!, index: 0 };
  if (isNull(list[0]!)) return { value: list[1]!, index: 1 };
  return undefined;
}

/** The JSON types a node states (undefined: it does not restrict the type). */
export function typesOf(node: JsonObject): JsonType[] | undefined {
  if (typeof node.type === "string") return [node.type as JsonType];
  if (Array.isArray(node.type)) return node.type as JsonType[];
  return undefined;
}

/** A small deterministic generator (mulberry32) seeded from the pattern's text. */
function seeded(text: string): () => number {
  let state = 0x9e3779b9;
  for (let i = 0; i < text.length; i++) state = Math.imul(state ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const generated = new Map<string, string[]>();

/**
 * Up to `count` distinct strings that match `pattern` (ECMA-262, as ajv reads it) and
 * the node's length bounds; empty when the pattern cannot be generated from.
 */
export function patternStrings(node: JsonObject, count = 8): string[] {
  const pattern = node.pattern;
  if (typeof pattern !== "string") return [];
  const min = typeof node.minLength === "number" ? node.minLength : 0;
  const max = typeof node.maxLength === "number" ? node.maxLength : Infinity;
  const key = `${pattern}\u0000${min}\u0000${max}\u0000${count}`;
  const known = generated.get(key);
  if (known) return known;
  const out = new Set<string>();
  try {
    const regex = new RegExp(pattern, "u");
    const random = seeded(pattern);
    const generator = new RandExp(pattern);
    generator.max = 6;
    // Printable ASCII keeps counterexamples readable.
    generator.defaultRange.subtract(0, 31).subtract(127, 0x10ffff);
    generator.randInt = (a: number, b: number) => a + Math.floor(random() * (b - a + 1));
    for (let attempt = 0; attempt < count * 8 && out.size < count; attempt++) {
      const value = generator.gen();
      if (value.length >= min && value.length <= max && regex.test(value)) out.add(value);
    }
  } catch {
    // A pattern randexp cannot read: the caller falls back to fixed strings.
  }
  const list = [...out];
  generated.set(key, list);
  return list;
}

function lowerBound(node: JsonObject): number | undefined {
  const values = [node.minimum, typeof node.exclusiveMinimum === "number" ? node.exclusiveMinimum + 1 : undefined].filter(
    (v): v is number => typeof v === "number",
  );
  return values.length ? Math.max(...values) : undefined;
}

function numberSample(node: JsonObject, integer: boolean): number {
  let value = lowerBound(node) ?? 0;
  if (typeof node.maximum === "number" && value > node.maximum) value = node.maximum;
  if (integer) value = Math.ceil(value);
  if (typeof node.multipleOf === "number" && node.multipleOf > 0) value = Math.ceil(value / node.multipleOf) * node.multipleOf;
  return value;
}

/** A value of the given JSON type under the node's own keywords (its bounds, its properties). */
export function sampleOfType(node: JsonObject, type: JsonType, model: ProtocolModel, depth = 0): Json {
  switch (type) {
    case "null":
      return null;
    case "boolean":
      return false;
    case "integer":
      return numberSample(node, true);
    case "number":
      return numberSample(node, false);
    case "string":
      return patternStrings(node, 1)[0] ?? "x".repeat(typeof node.minLength === "number" ? node.minLength : 1);
    case "array": {
      const count = typeof node.minItems === "number" ? node.minItems : 0;
      if (Array.isArray(node.prefixItems)) {
        // A tuple: a value per position it requires (and the rest's, past them).
        const positions = node.prefixItems;
        return Array.from({ length: count }, (_, i) =>
          i < positions.length
            ? sample(positions[i], model, depth + 1)
            : node.items === undefined
              ? "x"
              : sample(node.items, model, depth + 1),
        );
      }
      const item = node.items === undefined ? "x" : sample(node.items, model, depth + 1);
      return Array.from({ length: count }, () => item);
    }
    case "object": {
      const out: JsonObject = {};
      const properties = isObject(node.properties) ? node.properties : {};
      for (const name of Array.isArray(node.required) ? (node.required as string[]) : []) {
        out[name] = name in properties ? sample(properties[name], model, depth + 1) : "x";
      }
      return out;
    }
  }
}

/** The smallest value the schema allows, as far as generation can tell. */
export function sample(schema: Json | undefined, model: ProtocolModel, depth = 0): Json {
  const node = deref(schema, model);
  if (!node || depth > 24) return null;
  if ("const" in node) return node.const!;
  if (Array.isArray(node.enum) && node.enum.length) return node.enum[0]!;
  const pair = nullablePair(node);
  if (pair) return null;
  if (Array.isArray(node.allOf) && combinesObjects(node, "", model.byFile)) {
    try {
      return sample(flattenedSchema(node, "", model.byFile), model, depth + 1);
    } catch (error) {
      if (!(error instanceof NotFlattenable)) throw error;
    }
  }
  if (Array.isArray(node.oneOf) && node.oneOf.length) return sample(node.oneOf[0], model, depth + 1);
  if (Array.isArray(node.anyOf) && node.anyOf.length) return sample(node.anyOf[0], model, depth + 1);
  const types = typesOf(node);
  const type = types ? (types.find((t) => t !== "null") ?? types[0]!) : isObject(node.properties) ? "object" : "string";
  return sampleOfType(node, type, model, depth);
}

/**
 * Values that a receiver's schema node rejects, tried where the sender allowed anything:
 * one of each JSON type the node does not accept, or, when it accepts them all, values
 * outside its enum.
 */
export function violators(node: JsonObject | undefined): Json[] {
  if (!node) return [];
  const allowed = typesOf(node);
  const out: Json[] = [];
  const byType: Record<JsonType, Json> = { null: null, boolean: true, integer: 7, number: 7.5, string: "x_other", array: [], object: {} };
  for (const type of JSON_TYPES) {
    const ok = allowed === undefined || allowed.includes(type) || (type === "integer" && allowed.includes("number"));
    if (!ok) out.push(byType[type]);
  }
  if (Array.isArray(node.enum) || "const" in node) out.push("x_other", 7, null);
  if (typeof node.minimum === "number") out.push(node.minimum - 1);
  if (typeof node.minLength === "number" && node.minLength > 0) out.push("");
  return out;
}
