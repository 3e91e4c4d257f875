/**
 * JSON text for the vectors: the canonical text of a value, except at the places where a
 * case needs raw text the canonical form would not write (`1.0`, `-0`, `2^53 + 1`, a duplicate
 * member, a lone surrogate). Where parsing matters, a vector carries this text, not a value.
 */
import type { Json } from "../model.js";
import { escapeToken } from "../walk.js";

export interface TextEdits {
  /** Raw text written instead of the value at a pointer. */
  readonly raw?: ReadonlyMap<string, string>;
  /** Members left out of the object holding them, by the member's pointer. */
  readonly removed?: ReadonlySet<string>;
  /** Members written first in the object at a pointer, as [name, raw value text]. */
  readonly leading?: ReadonlyMap<string, readonly (readonly [string, string])[]>;
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The JSON text of `value` with `edits` applied; members sorted as in the canonical form. */
export function jsonText(value: Json, edits: TextEdits = {}, pointer = ""): string {
  const raw = edits.raw?.get(pointer);
  if (raw !== undefined) return raw;
  if (Array.isArray(value)) return `[${value.map((v, i) => jsonText(v, edits, `${pointer}/${i}`)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const members = (edits.leading?.get(pointer) ?? []).map(([name, text]) => `${JSON.stringify(name)}:${text}`);
    for (const key of Object.keys(value).sort(byCodeUnits)) {
      const at = `${pointer}/${escapeToken(key)}`;
      if (edits.removed?.has(at)) continue;
      members.push(`${JSON.stringify(key)}:${jsonText(value[key]!, edits, at)}`);
    }
    return `{${members.join(",")}}`;
  }
  return JSON.stringify(value);
}
