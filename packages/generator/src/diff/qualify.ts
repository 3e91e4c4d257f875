/**
 * The models a diff compares: each type file's local references (`#`, `#/$defs/…`) written
 * with their file (`tree.json#/$defs/Node`), so that a schema followed into any place of
 * either version still says where it is, and values can be generated from it anywhere.
 */
import { qualifyLocalRefs } from "../compose.js";
import type { ProtocolModel, TypeModel } from "../model.js";

const qualified = new WeakMap<ProtocolModel, ProtocolModel>();

export function qualifiedModel(model: ProtocolModel): ProtocolModel {
  let out = qualified.get(model);
  if (out) return out;
  const types: TypeModel[] = model.types.map((t) => ({
    ...t,
    schema: qualifyLocalRefs(t.schema, t.file),
    defs: t.defs.map((d) => ({ ...d, schema: qualifyLocalRefs(d.schema, t.file) })),
  }));
  out = { ...model, types, byFile: new Map(types.map((t) => [t.file, t])) };
  qualified.set(model, out);
  qualified.set(out, out);
  return out;
}
