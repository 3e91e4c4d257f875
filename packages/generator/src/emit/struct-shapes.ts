/**
 * How the Python and Rust emitters read a schema's shape: whether a node becomes a class or
 * struct of its own, and whether null is one of its values.
 */
import { nullablePair } from "../diff/sample.js";
import type { JsonObject, ProtocolModel } from "../model.js";
import { isObject } from "../walk.js";

/** Whether the node is an object with named properties (not a union): a class, a struct. */
export function isStructSchema(schema: JsonObject): boolean {
  return (
    (schema.type === "object" || (schema.type === undefined && isObject(schema.properties))) &&
    isObject(schema.properties) &&
    !Array.isArray(schema.oneOf)
  );
}

/** Whether null is a valid value of the node (a nullable pair, a type list with null, an enum with null). */
export function allowsNull(node: JsonObject, model: ProtocolModel): boolean {
  if (nullablePair(node)) return true;
  if (Array.isArray(node.type) && node.type.includes("null")) return true;
  if (node.type === "null") return true;
  if (Array.isArray(node.enum) && node.enum.includes(null)) return true;
  if (typeof node.$ref === "string") {
    const target = model.byFile.get(node.$ref);
    return (
      target !== undefined && !Array.isArray(target.schema.oneOf) && target.schema.type !== "object" && allowsNull(target.schema, model)
    );
  }
  return false;
}
