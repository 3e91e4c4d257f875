/**
 * The structural form of a named type: references inlined, annotations dropped, keys
 * sorted. Two types with the same form accept the same values whatever their files are
 * called, so a moved definition or a renamed file is not a wire change. (A quick test:
 * `equivalent` in compare.ts also sees through an allOf written out or a schema named.)
 */
import { withoutAnnotations } from "../emit/validators.js";
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { resolveRef } from "../refs.js";
import { isObject, mapSchema } from "../walk.js";

function sorted(value: Json): Json {
  if (Array.isArray(value)) return value.map(sorted);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sorted(value[k]!)]),
  );
}

/** The form of the schema a reference (naming its file: see qualify.ts) leads to. */
export function canonical(ref: string, model: ProtocolModel, open: readonly string[] = []): Json {
  const target = resolveRef(ref, "", model.byFile);
  if (!target) return { unresolved: ref };
  const key = `${target.file}#${target.pointer}`;
  // A reference back into a schema being expanded becomes its depth, the same in both versions.
  if (open.includes(key)) return { recursion: open.length - open.indexOf(key) };
  const { $schema: _s, $id: _i, $defs: _d, ...schema } = withoutAnnotations(target.node);
  const inlined = mapSchema(schema as JsonObject, (node) =>
    typeof node.$ref === "string" ? canonical(node.$ref, model, [...open, key]) : undefined,
  );
  return sorted(inlined);
}

export const structurallyEqual = (oldFile: string, oldModel: ProtocolModel, newFile: string, newModel: ProtocolModel): boolean =>
  JSON.stringify(canonical(oldFile, oldModel)) === JSON.stringify(canonical(newFile, newModel));
