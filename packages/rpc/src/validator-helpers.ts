/**
 * The run-time helpers that ajv's precompiled validators call for a few keywords (string
 * lengths in code points, deep equality for `const`, `enum` and `uniqueItems` on objects).
 * ajv's standalone output reaches them with `require("ajv/dist/runtime/…")`; the generated
 * validator modules hand it `validatorHelper` instead, so they need neither ajv nor a
 * CommonJS loader at run time, and bundlers and tsc carry them like any other module.
 */

/** Length of a string in Unicode code points (a surrogate pair counts once), as ajv's ucs2length. */
export function ucs2length(text: string): number {
  let length = 0;
  let pos = 0;
  while (pos < text.length) {
    length++;
    const code = text.charCodeAt(pos++);
    if (code >= 0xd800 && code <= 0xdbff && pos < text.length) {
      const next = text.charCodeAt(pos);
      if ((next & 0xfc00) === 0xdc00) pos++;
    }
  }
  return length;
}

/** Structural equality of JSON values, as fast-deep-equal (which ajv uses) decides it. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return a !== a && b !== b; // NaN
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], other[i])) return false;
    return true;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  for (const key of keys) if (!Object.hasOwn(right, key) || !deepEqual(left[key], right[key])) return false;
  return true;
}

/** The helper modules a generated validator module may ask for, by the name ajv gives them. */
export const VALIDATOR_HELPERS = {
  "ajv/dist/runtime/ucs2length": { default: ucs2length },
  "ajv/dist/runtime/equal": { default: deepEqual },
} as const;

export type ValidatorHelperName = keyof typeof VALIDATOR_HELPERS;

/** Stands in for `require` inside a generated validator module; refuses any helper it does not provide. */
export function validatorHelper(name: string): unknown {
  if (!Object.hasOwn(VALIDATOR_HELPERS, name)) {
    throw new Error(`a generated validator asked for the helper "${name}", which turnspec's support module does not provide`);
  }
  return VALIDATOR_HELPERS[name as ValidatorHelperName];
}
