/**
 * A TypeScript type expression for one schema, for the constructs json-schema-to-typescript
 * does not write as they are (a tuple, `prefixItems`, which it reads as `never[]`; an
 * `x-open` enum or union): named types by their names, unions as unions, intersections for
 * allOf, tuples with optional positions and a rest element, and objects as type literals.
 */
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { jsonTypesOf, unionKeys, variantsOf } from "../open.js";
import { splitRef } from "../refs.js";
import { isObject } from "../walk.js";

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** The TypeScript name a `$ref` written in `file` names. */
export function refName(ref: string, file: string, model: ProtocolModel): string | undefined {
  const { file: target, fragment } = splitRef(ref);
  const type = model.byFile.get(target ?? file);
  if (!type) return undefined;
  return fragment === "" ? type.title : type.defs.find((d) => d.pointer === fragment)?.title;
}

const paren = (expression: string) =>
  /^[\w$.]+(\[\])*$|^"[^"]*"$|^\[.*\]$|^\{.*\}$|^\(.*\)$/.test(expression) ? expression : `(${expression})`;

const union = (parts: readonly string[]) => {
  const distinct = [...new Set(parts)];
  return distinct.length === 0 ? "never" : distinct.length === 1 ? distinct[0]! : distinct.join(" | ");
};

/** What a value not listed by an `x-open` enum or union is typed as: any value of the listed values' types. */
function openRest(types: readonly string[]): string[] {
  return types.map((t) =>
    t === "string" ? "(string & {})" : t === "integer" || t === "number" ? "(number & {})" : t === "boolean" ? "boolean" : "null",
  );
}

export class TypeExpressions {
  constructor(
    private readonly model: ProtocolModel,
    /** Whether an object schema that does not state additionalProperties keeps other fields (protocol.json's `objects`). */
    private readonly openObjects: boolean,
  ) {}

  /** The type of `schema`, written in the file `file`. */
  of(schema: Json | undefined, file: string): string {
    if (schema === undefined || schema === true) return "unknown";
    if (schema === false) return "never";
    if (!isObject(schema)) return "unknown";
    if (typeof schema.$ref === "string") return refName(schema.$ref, file, this.model) ?? "unknown";
    if (schema["x-open"] === true) return this.open(schema, file);
    if ("const" in schema) return JSON.stringify(schema.const);
    if (Array.isArray(schema.enum)) return union(schema.enum.map((v) => JSON.stringify(v)));
    const variants = variantsOf(schema);
    if (variants) return union(variants.map((v) => this.of(v, file)));
    if (Array.isArray(schema.allOf)) return schema.allOf.map((m) => paren(this.of(m, file))).join(" & ");
    const types = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? (schema.type as string[]) : undefined;
    if (!types)
      return isObject(schema.properties)
        ? this.object(schema, file)
        : Array.isArray(schema.prefixItems)
          ? this.array(schema, file)
          : "unknown";
    return union(types.map((t) => this.ofType(t, schema, file)));
  }

  private ofType(type: string, schema: JsonObject, file: string): string {
    switch (type) {
      case "string":
        return "string";
      case "integer":
      case "number":
        return "number";
      case "boolean":
        return "boolean";
      case "null":
        return "null";
      case "array":
        return this.array(schema, file);
      case "object":
        return this.object(schema, file);
      default:
        return "unknown";
    }
  }

  private array(schema: JsonObject, file: string): string {
    if (!Array.isArray(schema.prefixItems)) return `${paren(this.of(schema.items, file))}[]`;
    const required = typeof schema.minItems === "number" ? schema.minItems : schema.prefixItems.length;
    const positions = schema.prefixItems.map((s, i) => `${this.of(s, file)}${i >= required ? "?" : ""}`);
    if (schema.items !== false) positions.push(`...${paren(this.of(schema.items, file))}[]`);
    return `[${positions.join(", ")}]`;
  }

  private object(schema: JsonObject, file: string): string {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    const members = Object.entries(properties).map(
      ([name, s]) => `${IDENTIFIER.test(name) ? name : JSON.stringify(name)}${required.has(name) ? "" : "?"}: ${this.of(s, file)}`,
    );
    const extra = schema.additionalProperties;
    if (isObject(extra)) members.push(`[k: string]: ${this.of(extra, file)}`);
    else if (extra === true || (extra === undefined && this.openObjects)) members.push("[k: string]: unknown");
    return members.length ? `{ ${members.join("; ")} }` : "{}";
  }

  /** An `x-open` enum or union: what it lists, and any other value of the listed kind. */
  private open(schema: JsonObject, file: string): string {
    const { "x-open": _open, ...listed } = schema;
    const keys = unionKeys(listed, file, this.model.byFile);
    if (!keys) return this.of(listed, file);
    if (keys.kind === "values") return union([...keys.values.map((v) => JSON.stringify(v)), ...openRest(jsonTypesOf(keys.values))]);
    const name = IDENTIFIER.test(keys.property) ? keys.property : JSON.stringify(keys.property);
    return union([...(variantsOf(listed) ?? []).map((v) => this.of(v, file)), `{ ${name}: string & {}; [k: string]: unknown }`]);
  }
}
