/**
 * `allOf` of object schemas (an object built from others, as MCP's `GetTaskResult` is
 * `Result` and `Task`): the one object it describes. JSON Schema applies each member on
 * its own, so a member that is closed refuses the other members' fields; in a protocol
 * whose objects are closed (protocol.json's `objects`) the members are closed by default,
 * and the combination is validated as one object with every member's properties, closed
 * as a whole. Types read the same members as an intersection of interfaces.
 */
import type { Json, JsonObject } from "./model.js";
import { followRefs } from "./refs.js";
import { isExtensionKeyword, isObject, mapSchema } from "./walk.js";

type Files = ReadonlyMap<string, { readonly schema: JsonObject }>;

const NOTES = new Set(["title", "description", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly"]);
/** Keywords a member of a flattened allOf may have: an object's properties and what is only said about it. */
const FLATTENABLE = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "allOf",
  "$ref",
  "$schema",
  "$id",
  "$defs",
  ...NOTES,
]);

/** Whether a schema describes objects (it has properties or says type object). */
export function isObjectSchema(node: JsonObject): boolean {
  return isObject(node.properties) || node.type === "object";
}

export interface Flattened {
  readonly properties: JsonObject;
  readonly required: readonly string[];
  /** Members (or the node itself) that state additionalProperties: false: where they are, and the properties beside it. */
  readonly closedBy: readonly { readonly where: string; readonly declared: readonly string[] }[];
}

/** Why an allOf cannot be read as one object: the member and the keyword. */
export class NotFlattenable extends Error {}

/**
 * The properties and required names an object schema declares, through its `allOf`
 * members and `$ref`s (whose targets are read in their own files). Throws NotFlattenable
 * for a member that says more than an object's properties.
 */
export function flattenObject(node: JsonObject, from: string, files: Files, where = "", seen: ReadonlySet<string> = new Set()): Flattened {
  const properties: JsonObject = {};
  const required = new Set<string>();
  const closedBy: { where: string; declared: string[] }[] = [];
  const add = (part: Flattened): void => {
    for (const [name, schema] of Object.entries(part.properties)) {
      const known = properties[name];
      properties[name] = known === undefined || JSON.stringify(known) === JSON.stringify(schema) ? schema : { allOf: [known, schema] };
    }
    part.required.forEach((r) => required.add(r));
    closedBy.push(...part.closedBy.map((c) => ({ where: c.where, declared: [...c.declared] })));
  };
  for (const key of Object.keys(node)) {
    if (!FLATTENABLE.has(key) && !isExtensionKeyword(key))
      throw new NotFlattenable(`${where || "(the schema)"} has ${key}, which an object built with allOf cannot take apart`);
  }
  if (node.type !== undefined && node.type !== "object")
    throw new NotFlattenable(`${where || "(the schema)"} is not an object schema (type ${JSON.stringify(node.type)})`);
  if (isObject(node.additionalProperties))
    throw new NotFlattenable(
      `${where || "(the schema)"} has an additionalProperties schema, which an object built with allOf cannot take apart`,
    );
  if (node.additionalProperties === false)
    closedBy.push({ where: where || "(the schema)", declared: isObject(node.properties) ? Object.keys(node.properties) : [] });
  if (typeof node.$ref === "string") {
    const target = followRefs({ $ref: node.$ref }, from, files);
    if (!target) throw new NotFlattenable(`${where}/$ref leads nowhere`);
    const key = `${target.file}#${target.pointer}`;
    if (seen.has(key)) throw new NotFlattenable(`${where}/$ref builds an object from itself`);
    const part = flattenObject(target.node, target.file, files, node.$ref, new Set([...seen, key]));
    // Properties brought from another file keep meaning what they meant there.
    add(
      target.file === from
        ? part
        : {
            ...part,
            properties: Object.fromEntries(
              Object.entries(part.properties).map(([name, schema]) => [name, qualifyLocalRefs(schema, target.file)]),
            ),
          },
    );
  }
  if (Array.isArray(node.allOf))
    node.allOf.forEach((member, i) => isObject(member) && add(flattenObject(member, from, files, `${where}/allOf/${i}`, seen)));
  if (isObject(node.properties)) add({ properties: node.properties, required: [], closedBy: [] });
  if (Array.isArray(node.required)) for (const r of node.required) if (typeof r === "string") required.add(r);
  return { properties, required: [...required], closedBy };
}

/** A schema of file `file` with its local references (`#`, `#/$defs/…`) naming the file: `file.json#/$defs/…`. */
export function qualifyLocalRefs<T extends Json>(schema: T, file: string): T {
  return mapSchema(schema, (node) => {
    if (typeof node.$ref !== "string" || !node.$ref.startsWith("#")) return undefined;
    return qualifyLocalRefs({ ...node, $ref: node.$ref === "#" ? file : `${file}${node.$ref}` } as JsonObject, file);
  }) as T;
}

/** Whether an allOf node combines object schemas (one member at least describes objects). */
export function combinesObjects(node: JsonObject, from: string, files: Files): boolean {
  if (!Array.isArray(node.allOf)) return false;
  return node.allOf.some((member) => {
    const target = followRefs(member, from, files);
    return target !== undefined && (isObjectSchema(target.node) || Array.isArray(target.node.allOf));
  });
}

/**
 * A closed member whose combination adds fields it does not declare: no value satisfies
 * such an allOf under JSON Schema. Undefined when there is none.
 */
export function unsatisfiableClosure(node: JsonObject, from: string, files: Files): string | undefined {
  let flat: Flattened;
  try {
    flat = flattenObject(node, from, files);
  } catch (error) {
    if (error instanceof NotFlattenable) return undefined;
    throw error;
  }
  for (const closer of flat.closedBy) {
    const extra = Object.keys(flat.properties).filter((name) => !closer.declared.includes(name));
    if (extra.length)
      return `${closer.where} is closed (additionalProperties: false) but the allOf adds ${extra.map((e) => `"${e}"`).join(", ")}: no value can satisfy both`;
  }
  return undefined;
}

/** The flattened form of an allOf of object schemas, as the one object schema validators check. */
export function flattenedSchema(node: JsonObject, from: string, files: Files): JsonObject {
  const flat = flattenObject(node, from, files);
  const out: JsonObject = {};
  // A document's own keys stay: its $id (the validators find it by it) and its local definitions.
  for (const [key, value] of Object.entries(node))
    if (NOTES.has(key) || key === "$schema" || key === "$id" || key === "$defs") out[key] = value as Json;
  out.type = "object";
  out.properties = flat.properties;
  if (flat.required.length) out.required = [...flat.required];
  if (node.additionalProperties !== undefined) out.additionalProperties = node.additionalProperties;
  return out;
}

/** The names of an object's params in the order of their positions, or undefined for params that are not an object of named params. */
export function namedParams(schema: JsonObject, file: string, model: { readonly byFile: Files }): string[] | undefined {
  try {
    return Object.keys(flattenObject(schema, file, model.byFile).properties);
  } catch (error) {
    if (error instanceof NotFlattenable) return undefined;
    throw error;
  }
}
