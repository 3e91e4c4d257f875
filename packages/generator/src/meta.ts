/**
 * turnspec's own meta-schemas (`meta/` of this package): what protocol.json, errors.json,
 * turnspec.config.json and an import map must look like. Read once, when first asked for.
 */
import type { ValidateFunction } from "ajv";
import type Ajv2020 from "ajv/dist/2020.js";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { builtModule, packageVersion } from "./built.js";

/** The folder holding the meta-schemas. */
export const META_DIR = fileURLToPath(new URL("../meta/", import.meta.url));

const cache = new Map<string, object>();

export type MetaSchemaName = "protocol.schema.json" | "errors.schema.json" | "config.schema.json" | "import-map.schema.json";

/**
 * turnspec's own meta-schemas (a schemas folder's protocol.json and errors.json, the config
 * file, the import map), and the ajv options they are compiled with: by the build into
 * `dist/meta-validators.cjs` (meta-precompile.ts), so that a run does not compile them
 * again, or at run time when that module is missing (the sources run as they are) or was
 * built from other meta-schemas.
 */
export const META_SCHEMAS = [
  "protocol.schema.json",
  "errors.schema.json",
  "config.schema.json",
  "import-map.schema.json",
] as const satisfies readonly MetaSchemaName[];
/** The file name of the precompiled module, beside the compiled loader. */
export const META_VALIDATORS_MODULE = "meta-validators.cjs";
export const META_AJV_OPTIONS = { allErrors: true, strict: true, discriminator: true, verbose: true, validateSchema: false } as const;

/**
 * JSON Schema 2020-12's meta-schema, which every type schema is checked against
 * (checkMetaSchema), and the ajv options it is compiled with. ajv brings the meta-schema
 * itself: a precompiled validator of it is used only by the ajv version that compiled it.
 */
export const JSON_SCHEMA_META_ID = "https://json-schema.org/draft/2020-12/schema";
export const JSON_SCHEMA_META_OPTIONS = { strict: true, discriminator: true, allErrors: true } as const;

const require = createRequire(import.meta.url);

/** The version of ajv this package runs, which holds JSON Schema's meta-schema. */
export function ajvVersion(): string {
  return packageVersion("ajv");
}

/** What the build precompiled (`dist/meta-validators.cjs`, meta-precompile.ts). */
export interface PrecompiledMeta {
  /** By meta-schema file name, beside the digest of the meta-schema each was compiled from. */
  readonly validators: Readonly<Record<string, ValidateFunction>>;
  readonly digests: Readonly<Record<string, string>>;
  /** JSON Schema 2020-12's meta-schema, compiled by ajv `ajvVersion`. */
  readonly jsonSchema: ValidateFunction;
  readonly ajvVersion: string;
}

let precompiled: PrecompiledMeta | null | undefined;
let metaAjv: Ajv2020 | undefined;
const metaValidators = new Map<MetaSchemaName, ValidateFunction>();

/**
 * The validator of one of turnspec's own meta-schemas: the build's precompiled one when it
 * was compiled from this meta-schema, or else compiled once per process by one ajv with the
 * same options. They are not checked against JSON Schema's meta-schema on every run
 * (compiling that costs more than the check it makes): test/generator/meta-schemas.test.ts
 * checks them.
 */
export function metaValidator(name: MetaSchemaName): ValidateFunction {
  let validate = metaValidators.get(name);
  if (!validate) {
    const built = precompiledMeta();
    validate = built?.digests[name] === metaDigest(name) ? built.validators[name] : undefined;
    if (!validate) {
      // ajv is loaded only here, where nothing was precompiled. discriminator: a tagged oneOf
      // (the ordering rule kinds) reports the errors of the tagged branch only.
      const Ajv = (require("ajv/dist/2020.js") as { default: typeof Ajv2020 }).default;
      metaAjv ??= new Ajv({ ...META_AJV_OPTIONS });
      validate = metaAjv.compile(metaSchema(name));
    }
    metaValidators.set(name, validate);
  }
  return validate;
}

/** The build's precompiled meta validators, or undefined where there are none (the sources run as they are). */
export function precompiledMeta(): PrecompiledMeta | undefined {
  if (precompiled === undefined) precompiled = builtModule<PrecompiledMeta>(META_VALIDATORS_MODULE) ?? null;
  return precompiled ?? undefined;
}

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
