/**
 * The build's precompilation of the meta-schemas a schemas folder is checked against
 * (FOLDER_META_SCHEMAS): ajv's standalone code of each, compiled with META_AJV_OPTIONS, as
 * a CommonJS module the loader requires (`dist/meta-validators.cjs`, written by build.mjs).
 * Each validator is exported under its file name, beside the digest of the meta-schema it
 * was compiled from, so that a module built from other meta-schemas is never used.
 */
import Ajv2020 from "ajv/dist/2020.js";
import standaloneCode from "ajv/dist/standalone/index.js";
import { defaultOf } from "./emit/validators.js";
import { FOLDER_META_SCHEMAS, META_AJV_OPTIONS, metaDigest, metaSchema } from "./meta.js";

/** The text of `dist/meta-validators.cjs`: `validators` and `digests`, both by meta-schema file name. */
export function metaValidatorsModule(): string {
  const Ajv = defaultOf(Ajv2020);
  const ajv = new Ajv({ ...META_AJV_OPTIONS, code: { source: true, lines: true } });
  const exported: Record<string, string> = {};
  FOLDER_META_SCHEMAS.forEach((name, i) => {
    ajv.addSchema(metaSchema(name), name);
    exported[`meta${i}`] = name;
  });
  const code = defaultOf(standaloneCode)(ajv, exported);
  const digests = Object.fromEntries(FOLDER_META_SCHEMAS.map((name) => [name, metaDigest(name)]));
  return [
    "// Written by the build of @turnspec/generator from meta/ (meta-precompile.ts). Do not edit.",
    code.trim(),
    `module.exports.validators = { ${FOLDER_META_SCHEMAS.map((name, i) => `${JSON.stringify(name)}: module.exports.meta${i}`).join(", ")} };`,
    `module.exports.digests = ${JSON.stringify(digests)};`,
    "",
  ].join("\n");
}
