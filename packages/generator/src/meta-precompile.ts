/**
 * The build's precompilation of turnspec's own meta-schemas (META_SCHEMAS: a schemas
 * folder's, the config file's, the import map's) and of JSON Schema 2020-12's: ajv's
 * standalone code of each, as a CommonJS module the generator requires
 * (`dist/meta-validators.cjs`, written by build.mjs). Each of turnspec's is exported under
 * its file name, beside the digest of the meta-schema it was compiled from, and JSON
 * Schema's beside the ajv version that compiled it, so that none is used by other sources.
 */
import Ajv2020 from "ajv/dist/2020.js";
import standaloneCode from "ajv/dist/standalone/index.js";
import { defaultOf } from "./emit/validators.js";
import {
  META_SCHEMAS,
  JSON_SCHEMA_META_ID,
  JSON_SCHEMA_META_OPTIONS,
  META_AJV_OPTIONS,
  ajvVersion,
  metaDigest,
  metaSchema,
} from "./meta.js";

/**
 * The text of `dist/meta-validators.cjs`: `validators` and `digests`, both by meta-schema
 * file name; and `jsonSchema`, JSON Schema 2020-12's meta-schema, with the `ajvVersion`
 * that compiled it.
 */
export function metaValidatorsModule(): string {
  const Ajv = defaultOf(Ajv2020);
  const standalone = defaultOf(standaloneCode);
  const ajv = new Ajv({ ...META_AJV_OPTIONS, code: { source: true, lines: true } });
  const exported: Record<string, string> = {};
  META_SCHEMAS.forEach((name, i) => {
    ajv.addSchema(metaSchema(name), name);
    exported[`meta${i}`] = name;
  });
  const code = standalone(ajv, exported);
  const digests = Object.fromEntries(META_SCHEMAS.map((name) => [name, metaDigest(name)]));
  // Its own module scope: both standalone outputs declare their helpers at the top level.
  const jsonSchemaAjv = new Ajv({ ...JSON_SCHEMA_META_OPTIONS, code: { source: true, lines: true } });
  jsonSchemaAjv.getSchema(JSON_SCHEMA_META_ID);
  const jsonSchemaCode = standalone(jsonSchemaAjv, { jsonSchema: JSON_SCHEMA_META_ID });
  return [
    "// Written by the build of @turnspec/generator from meta/ and ajv's JSON Schema 2020-12 (meta-precompile.ts). Do not edit.",
    code.trim(),
    `module.exports.validators = { ${META_SCHEMAS.map((name, i) => `${JSON.stringify(name)}: module.exports.meta${i}`).join(", ")} };`,
    `module.exports.digests = ${JSON.stringify(digests)};`,
    `module.exports.jsonSchema = (function () {\n  const module = { exports: {} };\n  const exports = module.exports;\n${jsonSchemaCode.trim()}\n  return module.exports.jsonSchema;\n})();`,
    `module.exports.ajvVersion = ${JSON.stringify(ajvVersion())};`,
    "",
  ].join("\n");
}
