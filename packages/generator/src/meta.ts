/**
 * The meta-schemas of a schemas folder (`meta/` of this package): what protocol.json,
 * errors.json and turnspec.config.json must look like. Read once, when first asked for.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The folder holding the meta-schemas. */
export const META_DIR = fileURLToPath(new URL("../meta/", import.meta.url));

const cache = new Map<string, object>();

export type MetaSchemaName = "protocol.schema.json" | "errors.schema.json" | "config.schema.json" | "import-map.schema.json";

/**
 * The meta-schemas every `turnspec generate` checks a schemas folder against, and the ajv
 * options they are compiled with: by the build into `dist/meta-validators.cjs`
 * (meta-precompile.ts), so that a run does not compile them again, or at run time when that
 * module is missing (the sources run as they are) or was built from other meta-schemas.
 */
export const FOLDER_META_SCHEMAS = ["protocol.schema.json", "errors.schema.json"] as const satisfies readonly MetaSchemaName[];
/** The file name of the precompiled module, beside the compiled loader. */
export const META_VALIDATORS_MODULE = "meta-validators.cjs";
export const META_AJV_OPTIONS = { allErrors: true, strict: true, discriminator: true, verbose: true, validateSchema: false } as const;

/** What a precompiled meta validator was compiled from: a digest of the meta-schema. */
export function metaDigest(name: MetaSchemaName): string {
  return createHash("sha256")
    .update(JSON.stringify(metaSchema(name)))
    .digest("hex");
}

/** A meta-schema by file name, e.g. `protocol.schema.json`. */
export function metaSchema(name: MetaSchemaName): object {
  let schema = cache.get(name);
  if (!schema) {
    schema = JSON.parse(readFileSync(`${META_DIR}${name}`, "utf8")) as object;
    cache.set(name, schema);
  }
  return schema;
}
