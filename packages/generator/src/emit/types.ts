/**
 * types.ts: one TypeScript declaration per named type. json-schema-to-typescript writes
 * each body; cross-file `$ref`s are replaced by the referenced type's name first, so every
 * type is declared once and referenced by name (no inlined copies, no `Foo1`).
 */
import { compile } from "json-schema-to-typescript";
import type { Json, JsonObject, ProtocolModel, TypeModel } from "../model.js";
import { isObject, mapSchema } from "../walk.js";

/** The schema json-schema-to-typescript sees: refs replaced by names, identifiers stripped. */
/** Keywords that say what a value is; a subschema with none of them accepts any JSON value. */
const SHAPING = ["type", "$ref", "enum", "const", "oneOf", "anyOf", "allOf", "properties", "items", "not"];

/** The schema with each `default` keyword moved into its node's description, as a JSDoc @default tag. */
function defaultsDocumented(schema: Json): Json {
  return mapSchema(schema, (node) => {
    if (node.default === undefined) return undefined;
    const { default: value, ...rest } = node;
    const tag = `@default ${JSON.stringify(value)}`;
    return defaultsDocumented({ ...rest, description: typeof node.description === "string" ? `${node.description}\n${tag}` : tag });
  });
}

function prepare(type: TypeModel, model: ProtocolModel): JsonObject {
  const named = mapSchema(defaultsDocumented(type.schema), (node) => {
    // Any JSON value (`{}` or a description alone) is `unknown`, not an empty object type.
    if (node !== type.schema && !SHAPING.some((key) => key in node)) return typeof node.description === "string" ? { tsType: "unknown", description: node.description } : { tsType: "unknown" };
    if (typeof node.$ref !== "string") return undefined;
    const target = model.byFile.get(node.$ref);
    if (!target) return undefined;
    const replacement: JsonObject = { tsType: target.title };
    if (typeof node.description === "string") replacement.description = node.description;
    return replacement;
  }) as JsonObject;
  const { $schema: _s, $id: _i, discriminator: _d, ...rest } = named;
  // A tagged union's own `"type": "object"` is only there for the validator; the union of
  // its variants is the whole TypeScript type.
  if (Array.isArray(rest.oneOf)) delete rest.type;
  return stripDiscriminators(rest) as JsonObject;
}

function stripDiscriminators(schema: Json): Json {
  return mapSchema(schema, (node) => {
    if (!("discriminator" in node)) return undefined;
    const { discriminator: _d, ...rest } = node;
    return stripDiscriminators(rest);
  });
}

export async function emitTypes(model: ProtocolModel): Promise<string> {
  const parts: string[] = [];
  for (const type of model.types) {
    const code = await compile(prepare(type, model) as never, type.title, {
      bannerComment: "",
      format: false,
      declareExternallyReferenced: true,
      additionalProperties: false,
      strictIndexSignatures: true,
      unknownAny: true,
      unreachableDefinitions: false,
      ignoreMinAndMaxItems: true,
      $refOptions: { resolve: { external: false } } as never,
    });
    parts.push(code.trim());
  }
  return parts.join("\n\n") + "\n";
}

/** The name of every declared type, in output order (for the barrel and the registries). */
export function typeNames(model: ProtocolModel): string[] {
  return model.types.map((t) => t.title);
}

export const _internal = { prepare, isObject };
