/**
 * The canonical JSON form every generated language emits when asked for canonical bytes
 * (docs/languages.md): RFC 8785's JSON Canonicalization Scheme, extended to the strings
 * JSON text can carry and JCS cannot (a lone surrogate is written as its `\u` escape).
 *
 * - no whitespace; members of an object sorted by their names' UTF-16 code units;
 * - strings as ECMAScript's JSON.stringify writes them: `\"`, `\\`, `\b \f \n \r \t`, other
 *   characters below U+0020 and lone surrogates as `\u00xx` (lower-case hex), everything
 *   else (U+2028 and U+2029 included) as itself;
 * - numbers as ECMAScript's Number.prototype.toString writes the double they denote (`1.0`
 *   and `-0` become `1` and `0`, 2^53 + 1 becomes 9007199254740992, 1e21 stays 1e+21).
 */

/** Whether `a` sorts before `b` by UTF-16 code units (JavaScript's own string order). */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The canonical JSON text of a JSON value; throws on what JSON cannot carry (undefined, NaN, Infinity, a function). */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case "string":
      // JSON.stringify escapes exactly the characters the canonical form escapes, the same way.
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} is not a JSON number`);
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record)
        .filter((key) => record[key] !== undefined)
        .sort(byCodeUnits);
      return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`;
    }
    default:
      throw new TypeError(`canonicalJson: a ${typeof value} is not a JSON value`);
  }
}
