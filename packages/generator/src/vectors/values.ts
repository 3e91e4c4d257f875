/**
 * Values built from a named type's schema for the vectors: the smallest value it allows and
 * one with every field present, and on the way the places ("slots") where the type's own
 * schema says something about a value, so that each keyword can be tried at its place.
 * Whether a built value is valid is not decided here: the TypeScript validators decide it
 * (see cases.ts), so a value this builder gets wrong is recorded with the verdict it has.
 */
import type { Json, JsonObject, ProtocolModel, TypeModel } from "../model.js";
import { deref, nullablePair, patternStrings, typesOf, type JsonType } from "../diff/sample.js";
import { escapeToken, isObject } from "../walk.js";

/** A place in a built value where a schema node of the root type applies. */
export interface Slot {
  /** JSON pointer of the place in the built value. */
  readonly pointer: string;
  /** The schema node read there (a `$ref` node is not followed: its type has vectors of its own). */
  readonly node: JsonObject;
  /** The object holding the place and the member's name, when the place is an object member. */
  readonly member?: { readonly parent: string; readonly name: string; readonly required: boolean };
}

export type Shape = "minimal" | "maximal";

/** How deep a value is built before nested optional parts are left out. */
const DEPTH = 24;

export class ValueBuilder {
  constructor(private readonly model: ProtocolModel) {}

  /** A value of `type` in the given shape, with the slots of the type's own schema. */
  build(type: TypeModel, shape: Shape): { readonly value: Json; readonly slots: readonly Slot[] } {
    const slots: Slot[] = [];
    const value = this.value(type.schema, shape, "", slots, [type.title], 0);
    return { value, slots };
  }

  /** The value of a schema node; `slots` is undefined once the walk has left the root type. */
  private value(
    node: Json | undefined,
    shape: Shape,
    pointer: string,
    slots: Slot[] | undefined,
    stack: readonly string[],
    depth: number,
    member?: Slot["member"],
  ): Json {
    if (!isObject(node)) return null;
    if (slots) slots.push({ pointer, node, ...(member ? { member } : {}) });
    if (typeof node.$ref === "string") {
      const target = this.model.byFile.get(node.$ref);
      if (!target) return null;
      // A type met again on the way down is built smallest, so that a recursive type ends.
      const again = stack.includes(target.title);
      if (again && depth > DEPTH) return null;
      return this.value(target.schema, again ? "minimal" : shape, pointer, undefined, [...stack, target.title], depth + 1);
    }
    if ("const" in node) return node.const!;
    if (Array.isArray(node.enum) && node.enum.length) return node.enum[0]!;
    const pair = nullablePair(node);
    if (pair) return shape === "minimal" ? null : this.value(pair.value, shape, pointer, undefined, stack, depth + 1);
    if (Array.isArray(node.oneOf) && node.oneOf.length) return this.value(node.oneOf[0], shape, pointer, undefined, stack, depth + 1);
    if (Array.isArray(node.anyOf) && node.anyOf.length) return this.value(node.anyOf[0], shape, pointer, undefined, stack, depth + 1);
    const types = typesOf(node);
    const type: JsonType = types ? (types.find((t) => t !== "null") ?? types[0]!) : isObject(node.properties) ? "object" : "null";
    switch (type) {
      case "null":
        // A node that says nothing of its value takes any JSON value: the largest shape shows one.
        return shape === "minimal" || types !== undefined ? null : { any: [1, "two", null] };
      case "boolean":
        return shape === "maximal";
      case "integer":
      case "number":
        return numberIn(node, type === "integer");
      case "string":
        return stringIn(node);
      case "array": {
        const count = Math.max(typeof node.minItems === "number" ? node.minItems : 0, shape === "maximal" && depth < DEPTH ? 1 : 0);
        return Array.from({ length: count }, (_, i) =>
          this.value(node.items as Json, shape, `${pointer}/${i}`, i === 0 ? slots : undefined, stack, depth + 1),
        );
      }
      case "object": {
        const out: JsonObject = {};
        const properties = isObject(node.properties) ? node.properties : {};
        const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
        const names =
          shape === "maximal" && depth < DEPTH
            ? [...Object.keys(properties), ...[...required].filter((r) => !(r in properties))]
            : [...required];
        for (const name of names) {
          const at = `${pointer}/${escapeToken(name)}`;
          const member = { parent: pointer, name, required: required.has(name) };
          out[name] = name in properties ? this.value(properties[name], shape, at, slots, stack, depth + 1, member) : "x";
        }
        // A map (additionalProperties with a schema) gets one entry when every field is asked for.
        if (shape === "maximal" && depth < DEPTH && isObject(node.additionalProperties)) {
          const key = isObject(node.propertyNames) ? stringIn(node.propertyNames) : "key";
          if (!(key in out))
            out[key] = this.value(node.additionalProperties, shape, `${pointer}/${escapeToken(key)}`, slots, stack, depth + 1, {
              parent: pointer,
              name: key,
              required: false,
            });
        }
        return out;
      }
    }
  }
}

/** The smallest number the node allows (0 when it allows it). */
export function numberIn(node: JsonObject, integer: boolean): number {
  let value = 0;
  if (typeof node.minimum === "number") value = Math.max(value, node.minimum);
  if (typeof node.exclusiveMinimum === "number" && value <= node.exclusiveMinimum) value = node.exclusiveMinimum + (integer ? 1 : 0.5);
  if (typeof node.maximum === "number" && value > node.maximum) value = typeof node.minimum === "number" ? node.minimum : node.maximum;
  return integer ? Math.ceil(value) : value;
}

/** A short string the node allows: one its pattern matches, else "x" repeated to its minimum length. */
export function stringIn(node: JsonObject): string {
  const min = typeof node.minLength === "number" ? node.minLength : 0;
  return patternStrings(node, 1)[0] ?? "x".repeat(Math.max(min, 1));
}

/** The JSON types a node accepts, `undefined` when it does not restrict the type (`$ref`s followed). */
export function acceptedTypes(node: JsonObject, model: ProtocolModel): Set<JsonType> | undefined {
  const target = deref(node, model);
  if (!target) return undefined;
  const pair = nullablePair(target);
  if (pair) {
    const inner = isObject(pair.value) ? acceptedTypes(pair.value, model) : undefined;
    return inner === undefined ? undefined : new Set<JsonType>([...inner, "null"]);
  }
  const types = typesOf(target);
  if (types) {
    const set = new Set(types);
    if (set.has("number")) set.add("integer");
    return set;
  }
  if (Array.isArray(target.oneOf)) return new Set(["object"]);
  if ("const" in target) return new Set([jsonTypeOf(target.const!)]);
  if (Array.isArray(target.enum)) return new Set(target.enum.map(jsonTypeOf));
  return isObject(target.properties) ? new Set(["object"]) : undefined;
}

export function jsonTypeOf(value: Json): JsonType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value as JsonType;
}
