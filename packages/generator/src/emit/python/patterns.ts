/**
 * A JSON Schema `pattern` (ECMA-262 with the `u` flag) rewritten for Python's `re`, to match
 * exactly the same strings with `re.search`:
 *
 * - `$` matches only at the very end (`\Z`), never before a final newline as Python's does;
 * - `.` matches anything but the four line terminators ECMA-262 names (\n, \r, U+2028, U+2029);
 * - `\d`, `\w`, `\b` are ASCII, `\s` is ECMA-262's set of white space and line terminators;
 * - `\u{…}`, named groups `(?<n>…)` and `\k<n>` are written in Python's syntax.
 *
 * What has no such rewrite (`\p{…}`, a class escape inside a negated class) is refused with a
 * message naming the pattern, never approximated.
 */

/** A pattern Python's `re` cannot be made to read as ECMA-262 does. */
export class UntranslatablePattern extends Error {}

const WORD = "A-Za-z0-9_";
/** ECMA-262 WhiteSpace and LineTerminator. */
const SPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff";

const CLASS_ESCAPES: Record<string, { inside: string; outside: string } | undefined> = {
  d: { inside: "0-9", outside: "[0-9]" },
  D: { inside: "", outside: "[^0-9]" },
  w: { inside: WORD, outside: `[${WORD}]` },
  W: { inside: "", outside: `[^${WORD}]` },
  s: { inside: SPACE, outside: `[${SPACE}]` },
  S: { inside: "", outside: `[^${SPACE}]` },
};

export function pythonPattern(pattern: string): string {
  let out = "";
  let i = 0;
  let inClass = false;
  let classNegated = false;
  const fail = (what: string) => {
    throw new UntranslatablePattern(`the pattern ${JSON.stringify(pattern)} uses ${what}, which Python's re cannot read as ECMA-262 does`);
  };
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[i + 1];
      if (next === undefined) fail("a trailing backslash");
      if (next === "u" && pattern[i + 2] === "{") {
        const end = pattern.indexOf("}", i + 3);
        if (end === -1) fail("an unterminated \\u{");
        out += `\\U${pattern.slice(i + 3, end).padStart(8, "0")}`;
        i = end + 1;
        continue;
      }
      if (next === "p" || next === "P") fail("a Unicode property escape");
      if (next === "k" && pattern[i + 2] === "<") {
        const end = pattern.indexOf(">", i + 3);
        out += `(?P=${pattern.slice(i + 3, end)})`;
        i = end + 1;
        continue;
      }
      const escape = CLASS_ESCAPES[next!];
      if (escape) {
        if (inClass) {
          if (escape.inside === "" || classNegated) fail(`\\${next} inside a character class`);
          out += escape.inside;
        } else out += escape.outside;
        i += 2;
        continue;
      }
      if (!inClass && (next === "b" || next === "B")) {
        const word = `[${WORD}]`;
        out += next === "b" ? `(?:(?<=${word})(?!${word})|(?<!${word})(?=${word}))` : `(?:(?<=${word})(?=${word})|(?<!${word})(?!${word}))`;
        i += 2;
        continue;
      }
      if (next === "c" || next === "0") {
        if (next === "0") {
          out += "\\x00";
          i += 2;
          continue;
        }
        fail("a control escape \\c");
      }
      out += c + next;
      i += 2;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      // `[` inside a class is a literal in ECMA-262 and a warning (future set syntax) in Python.
      out += c === "[" ? "\\[" : c;
      i++;
      continue;
    }
    if (c === "[") {
      if (pattern.startsWith("[^]", i)) {
        out += "[\\s\\S]";
        i += 3;
        continue;
      }
      if (pattern.startsWith("[]", i)) {
        out += "(?!)";
        i += 2;
        continue;
      }
      inClass = true;
      classNegated = pattern[i + 1] === "^";
      out += classNegated ? "[^" : "[";
      i += classNegated ? 2 : 1;
      // A `]` first in a Python class is a literal; in ECMA-262 it ends an empty class (handled above).
      continue;
    }
    if (c === "$") {
      out += "\\Z";
      i++;
      continue;
    }
    if (c === ".") {
      out += "[^\\n\\r\\u2028\\u2029]";
      i++;
      continue;
    }
    if (c === "(" && pattern.startsWith("(?<", i) && pattern[i + 3] !== "=" && pattern[i + 3] !== "!") {
      out += "(?P<";
      i += 3;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}
