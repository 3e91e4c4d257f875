/**
 * types.ts: one TypeScript declaration per named type. json-schema-to-typescript writes
 * each body; cross-file `$ref`s are replaced by the referenced type's name first, so every
 * type is declared once and referenced by name (no inlined copies, no `Foo1`).
 */
import { compile } from "json-schema-to-typescript";
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { refName, TypeExpressions } from "./type-expression.js";
import { isObject, mapSchema } from "../walk.js";

/** The schema json-schema-to-typescript sees: refs replaced by names, identifiers stripped. */
/** Keywords that say what a value is; a subschema with none of them accepts any JSON value. */
const SHAPING = ["type", "$ref", "enum", "const", "oneOf", "anyOf", "allOf", "properties", "items", "not", "prefixItems"];

/** The schema with each `default` keyword moved into its node's description, as a JSDoc @default tag. */
function defaultsDocumented(schema: Json): Json {
  return mapSchema(schema, (node) => {
    if (node.default === undefined) return undefined;
    const { default: value, ...rest } = node;
    const tag = `@default ${JSON.stringify(value)}`;
    return defaultsDocumented({ ...rest, description: typeof node.description === "string" ? `${node.description}\n${tag}` : tag });
  });
}

/**
 * One declaration's schema as json-schema-to-typescript reads it: references (to another
 * file, to the file's own type, to a local definition) replaced by the name they declare,
 * and the constructs it does not write as they are (tuples, `x-open` enums and unions)
 * replaced by their TypeScript expression. `source` is the declaration's own schema (its `default` keywords become @default tags), `file`
 * the file it is written in.
 */
function prepare(source: JsonObject, file: string, model: ProtocolModel, expressions: TypeExpressions): JsonObject {
  const root = defaultsDocumented(source) as JsonObject;
  const named = mapSchema(root, (node) => {
    // Any JSON value (`{}` or a description alone) is `unknown`, not an empty object type.
    if (node !== root && !SHAPING.some((key) => key in node))
      return typeof node.description === "string" ? { tsType: "unknown", description: node.description } : { tsType: "unknown" };
    const written =
      typeof node.$ref === "string"
        ? refName(node.$ref, file, model)
        : node["x-open"] === true || Array.isArray(node.prefixItems)
          ? expressions.of(node, file)
          : openEnumIdiom(node);
    if (written === undefined) {
      // A union's own `"type": "object"` is only there for the validator; the union of its variants is the type.
      if (node !== root && (Array.isArray(node.oneOf) || Array.isArray(node.anyOf)) && node.type === "object" && !("properties" in node)) {
        const { type: _type, ...rest } = node;
        return prepare(rest as JsonObject, file, model, expressions);
      }
      return undefined;
    }
    const replacement: JsonObject = { tsType: written };
    if (typeof node.description === "string") replacement.description = node.description;
    return replacement;
  }) as JsonObject;
  const { $schema: _s, $id: _i, $defs: _defs, discriminator: _d, title: _t, ...rest } = named;
  // A tagged union's own `"type": "object"` is only there for the validator; the union of
  // its variants is the whole TypeScript type.
  if (Array.isArray(rest.oneOf) || (Array.isArray(rest.anyOf) && !("properties" in rest))) delete rest.type;
  return stripDiscriminators(rest) as JsonObject;
}

/**
 * An enum left open the way JSON Schema writes it, `anyOf: [{type: string, enum: […]}, {type:
 * string}]`: its values and any other string, written so that editors still offer the values.
 */
function openEnumIdiom(node: JsonObject): string | undefined {
  if (!Array.isArray(node.anyOf) || node.anyOf.length !== 2) return undefined;
  const listed = node.anyOf.find((s) => isObject(s) && Array.isArray(s.enum) && s.enum.every((v) => typeof v === "string"));
  const other = node.anyOf.find(
    (s) => s !== listed && isObject(s) && s.type === "string" && Object.keys(s).every((k) => k === "type" || k === "description"),
  );
  if (!isObject(listed) || !other) return undefined;
  return [...(listed.enum as string[]).map((v) => JSON.stringify(v)), "(string & {})"].join(" | ");
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
  const expressions = new TypeExpressions(model, model.objects === "open");
  const declarations = model.types
    .flatMap((t) => [
      { title: t.title, file: t.file, schema: t.schema },
      ...t.defs.map((d) => ({ title: d.title, file: t.file, schema: d.schema })),
    ])
    .sort((a, b) => (a.title < b.title ? -1 : a.title > b.title ? 1 : 0));
  for (const declaration of declarations) {
    const code = await compile(prepare(declaration.schema, declaration.file, model, expressions) as never, declaration.title, {
      bannerComment: "",
      format: false,
      declareExternallyReferenced: true,
      // An object that does not state additionalProperties keeps other fields in a protocol whose objects are open.
      additionalProperties: model.objects === "open",
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
  return model.types.flatMap((t) => [t.title, ...t.defs.map((d) => d.title)]).sort();
}

export const _internal = { prepare, isObject };
