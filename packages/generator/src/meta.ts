/**
 * The meta-schemas of a schemas folder (`meta/` of this package): what protocol.json,
 * errors.json and turnspec.config.json must look like. Read once, when first asked for.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The folder holding the meta-schemas. */
export const META_DIR = fileURLToPath(new URL("../meta/", import.meta.url));

const cache = new Map<string, object>();

/** A meta-schema by file name, e.g. `protocol.schema.json`. */
export function metaSchema(name: "protocol.schema.json" | "errors.schema.json" | "config.schema.json" | "import-map.schema.json"): object {
  let schema = cache.get(name);
  if (!schema) {
    schema = JSON.parse(readFileSync(`${META_DIR}${name}`, "utf8")) as object;
    cache.set(name, schema);
  }
  return schema;
}
