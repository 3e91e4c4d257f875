/**
 * The structural form of a named type: references inlined, annotations dropped, keys
 * sorted. Two types with the same form accept the same values whatever their files are
 * called, so a moved definition or a renamed file is not a wire change.
 */
import { withoutAnnotations } from "../emit/validators.js";
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { isObject, mapSchema } from "../walk.js";

function sorted(value: Json): Json {
  if (Array.isArray(value)) return value.map(sorted);
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sorted(value[k]!)]));
}

export function canonical(file: string, model: ProtocolModel, open: readonly string[] = []): Json {
  const type = model.byFile.get(file);
  if (!type) return { unresolved: file };
  // A reference back into a type being expanded becomes its depth, the same in both versions.
  if (open.includes(file)) return { recursion: open.length - open.indexOf(file) };
  const { $schema: _s, $id: _i, ...schema } = withoutAnnotations(type.schema);
  const inlined = mapSchema(schema as JsonObject, (node) => (typeof node.$ref === "string" ? canonical(node.$ref, model, [...open, file]) : undefined));
  return sorted(inlined);
}

export const structurallyEqual = (oldFile: string, oldModel: ProtocolModel, newFile: string, newModel: ProtocolModel): boolean =>
  JSON.stringify(canonical(oldFile, oldModel)) === JSON.stringify(canonical(newFile, newModel));
