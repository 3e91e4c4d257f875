/**
 * `x-open: true` on an enum or a union: a value the schema does not list is kept, not
 * refused, in both validation modes (a receiver with a fallback, as LSP's enums with
 * `supportsCustomValues` or a union a newer peer may extend). What counts as "not listed"
 * needs a union whose variants are told apart by constants: either each variant is a
 * constant (`const` or `enum` of scalars) or each is an object whose tag property holds a
 * string `const`. Validators, types and the diff read that key set from here.
 */
import type { Json, JsonObject } from "./model.js";
import { followRefs } from "./refs.js";
import { isObject } from "./walk.js";

/** What tells the variants of a union (or the values of an enum) apart. */
export type UnionKeys =
  | { readonly kind: "values"; readonly values: readonly Json[] }
  | { readonly kind: "tag"; readonly property: string; readonly values: readonly string[] };

type Files = ReadonlyMap<string, { readonly schema: JsonObject }>;

const isScalar = (value: Json | undefined) => value === null || ["string", "number", "boolean"].includes(typeof value);

/** The constants a schema is (its `const`, or its `enum` of scalars), or undefined. */
function constantsOf(node: JsonObject): Json[] | undefined {
  if ("const" in node && isScalar(node.const)) return [node.const!];
  if (Array.isArray(node.enum) && node.enum.every(isScalar)) return node.enum;
  return undefined;
}

/** The variants of a union node, or undefined when it is not one. */
export function variantsOf(node: JsonObject): readonly Json[] | undefined {
  if (Array.isArray(node.oneOf)) return node.oneOf;
  if (Array.isArray(node.anyOf)) return node.anyOf;
  return undefined;
}

/** The string `const` of `property` in an object variant, or undefined. */
function tagValue(variant: JsonObject, property: string, from: string, files: Files): string | undefined {
  const schema = isObject(variant.properties) ? followRefs(variant.properties[property], from, files)?.node : undefined;
  return schema && typeof schema.const === "string" ? schema.const : undefined;
}

/**
 * The key set of an enum or a union written in file `from`: its values, or its tag property
 * and the tag of each variant. Undefined when the variants cannot be told apart by constants.
 */
export function unionKeys(node: JsonObject, from: string, files: Files): UnionKeys | undefined {
  const own = constantsOf(node);
  if (own) return { kind: "values", values: own };
  const variants = variantsOf(node);
  if (!variants || variants.length === 0) return undefined;
  const targets = variants.map((v) => followRefs(v, from, files));
  if (targets.some((t) => !t)) return undefined;
  const constants = targets.map((t) => constantsOf(t!.node));
  if (constants.every((c) => c !== undefined)) return { kind: "values", values: constants.flat() as Json[] };
  const first = targets[0]!;
  const named =
    isObject(node.discriminator) && typeof node.discriminator.propertyName === "string" ? [node.discriminator.propertyName] : undefined;
  const candidates = named ?? (isObject(first.node.properties) ? Object.keys(first.node.properties) : []);
  for (const property of candidates) {
    const values = targets.map((t) => tagValue(t!.node, property, t!.file, files));
    if (values.every((v) => v !== undefined) && new Set(values).size === values.length)
      return { kind: "tag", property, values: values as string[] };
  }
  return undefined;
}

/** The JSON Schema type names of scalar values. */
export function jsonTypesOf(values: readonly Json[]): string[] {
  const types = new Set<string>();
  for (const value of values) {
    if (value === null) types.add("null");
    else if (typeof value === "number") types.add(Number.isInteger(value) ? "integer" : "number");
    else types.add(typeof value);
  }
  if (types.has("number")) types.delete("integer");
  return [...types].sort();
}

/**
 * The schema a validator checks for an `x-open` node: the node as written, or, for a value
 * it does not list, anything of the listed values' types (a union of constants, an enum) or
 * any object whose tag is a string no variant has (a tagged union).
 */
export function openedSchema(node: JsonObject, keys: UnionKeys): JsonObject {
  // A document's own keys stay at its top, where references find them.
  const { "x-open": _open, $schema, $id, $defs, ...listed } = node;
  const document: JsonObject = {
    ...($schema === undefined ? {} : { $schema }),
    ...($id === undefined ? {} : { $id }),
    ...($defs === undefined ? {} : { $defs }),
  };
  return { ...document, ...opened(listed, keys) };
}

function opened(listed: JsonObject, keys: UnionKeys): JsonObject {
  if (keys.kind === "values") {
    if (Array.isArray(listed.enum) && variantsOf(listed) === undefined) {
      // An enum: the values of its type, whatever they are.
      const { enum: _enum, ...rest } = listed;
      return Object.keys(rest).some((k) => k === "type") ? rest : { ...rest, type: jsonTypesOf(keys.values) };
    }
    return { anyOf: [listed, { type: jsonTypesOf(keys.values) }] };
  }
  const unknown: JsonObject = {
    type: "object",
    required: [keys.property],
    properties: { [keys.property]: { type: "string", not: { enum: [...keys.values] } } },
  };
  return { anyOf: [listed, unknown] };
}
