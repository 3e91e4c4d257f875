/** Visits every subschema of a JSON Schema (draft 2020-12) with its JSON pointer. */
import type { Json, JsonObject } from "./model.js";

const SINGLE = [
  "items",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "contentSchema",
];
const LISTS = ["oneOf", "anyOf", "allOf", "prefixItems"];
const MAPS = ["properties", "patternProperties", "$defs", "dependentSchemas"];

export const isObject = (value: Json | undefined): value is JsonObject =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * An extension keyword (`x-…`): a fact about a named type that JSON Schema has no keyword
 * for. Validators ignore it; the registry emits it as a typed constant (`extensions`).
 */
export const isExtensionKeyword = (key: string): boolean => key.startsWith("x-");

export function escapeToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

export type Visitor = (schema: JsonObject, pointer: string) => void;

export function walkSchema(schema: Json, visit: Visitor, pointer = ""): void {
  if (!isObject(schema)) return;
  visit(schema, pointer);
  for (const key of SINGLE) {
    const sub = schema[key];
    if (isObject(sub)) walkSchema(sub, visit, `${pointer}/${key}`);
  }
  for (const key of LISTS) {
    const list = schema[key];
    if (Array.isArray(list)) list.forEach((sub, i) => walkSchema(sub, visit, `${pointer}/${key}/${i}`));
  }
  for (const key of MAPS) {
    const map = schema[key];
    if (isObject(map)) for (const [name, sub] of Object.entries(map)) walkSchema(sub, visit, `${pointer}/${key}/${escapeToken(name)}`);
  }
}

/** A deep copy in which `replace` may substitute any subschema (returning undefined keeps it and descends). */
export function mapSchema(schema: Json, replace: (schema: JsonObject) => Json | undefined): Json {
  if (!isObject(schema)) return schema;
  const replaced = replace(schema);
  if (replaced !== undefined) return replaced;
  const out: JsonObject = { ...schema };
  for (const key of SINGLE) if (isObject(out[key])) out[key] = mapSchema(out[key], replace);
  for (const key of LISTS) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map((sub) => mapSchema(sub, replace));
  }
  for (const key of MAPS) {
    const map = out[key];
    if (isObject(map)) out[key] = Object.fromEntries(Object.entries(map).map(([k, sub]) => [k, mapSchema(sub, replace)]));
  }
  return out;
}
