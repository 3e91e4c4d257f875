/**
 * The JSON Schema keywords the Python and Rust validators are generated from: the ones they
 * translate keyword by keyword, and the annotations they pass over. A schema using any other
 * keyword (but an `x-` annotation) is refused by name, never checked in part.
 */

/** Keywords that do not change what is valid. */
const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "examples",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "format",
  "contentEncoding",
  "contentMediaType",
  "$defs",
]);

/** Keywords the generated checks translate. */
const TRANSLATED = new Set([
  "$ref",
  "type",
  "enum",
  "const",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "uniqueItems",
  "properties",
  "required",
  "additionalProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "discriminator",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
]);

/** The first keyword of `schema` that is neither translated, an annotation nor an `x-` annotation. */
export function untranslatedKeyword(schema: Readonly<Record<string, unknown>>): string | undefined {
  return Object.keys(schema).find((key) => !ANNOTATIONS.has(key) && !TRANSLATED.has(key) && !key.startsWith("x-"));
}
