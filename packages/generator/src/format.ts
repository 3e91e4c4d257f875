/**
 * Formatting of the declarations json-schema-to-typescript writes with `format: false`
 * (one member per line, nothing indented, no semicolons): each line indented two spaces
 * per open bracket, and a semicolon ending every member and statement. The input is only
 * ever that output, type declarations and their doc comments, so a line scanner that skips
 * strings and comments is enough; no parser, no formatter library.
 */

/** The brackets still open after a line, innermost last; `interface` marks an interface body. */
type Open = "{" | "interface" | "(" | "[";

const CLOSER: Record<string, Open> = { "}": "{", ")": "(", "]": "[" };

/** Ends of a line after which the declaration goes on (no semicolon). */
const CONTINUES = /[{([,|&=]$|=>$/;

/**
 * Scans one line of code (not a comment) and updates `stack` with the brackets it opens
 * and closes. Returns how many of the line's leading brackets close ones opened before it.
 */
function scanLine(line: string, stack: Open[], where: () => string): number {
  let leadingClosers = 0;
  let leading = true;
  const interfaceLine = /^(export\s+)?(declare\s+)?interface\b/.test(line);
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"' || c === "'" || c === "`") {
      leading = false;
      // A string literal type: skip to its closing quote, past escapes.
      for (i++; i < line.length && line[i] !== c; i++) if (line[i] === "\\") i++;
      continue;
    }
    if (c === "/" && line[i + 1] === "/") break;
    if (c === "/" && line[i + 1] === "*") {
      const end = line.indexOf("*/", i + 2);
      if (end < 0) throw new Error(`formatDeclarations: a comment opens inside ${where()} and does not close on that line`);
      i = end + 1;
      continue;
    }
    if (c === "{" || c === "(" || c === "[") {
      stack.push(c === "{" && interfaceLine ? "interface" : c);
      leading = false;
    } else if (c === "}" || c === ")" || c === "]") {
      const open = stack.pop();
      const expected = CLOSER[c];
      if (open === undefined || (open === "interface" ? "{" : open) !== expected)
        throw new Error(`formatDeclarations: unbalanced "${c}" in ${where()}`);
      if (leading) leadingClosers++;
    } else if (c !== " " && c !== "\t") {
      leading = false;
    }
  }
  return leadingClosers;
}

/** The next line of code from `from` on, trimmed, past blank and comment lines ("" at the end). */
function nextCode(lines: readonly string[], from: number): string {
  for (let i = from; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line !== "" && !line.startsWith("*") && !line.startsWith("/*") && !line.startsWith("//")) return line;
  }
  return "";
}

/**
 * Indents json-schema-to-typescript's unformatted output and ends its members and
 * statements with semicolons, as the TypeScript formatter would: two spaces per level, doc
 * comments moved with the member they describe, blank lines kept.
 */
export function formatDeclarations(code: string): string {
  const lines = code.split("\n");
  const out: string[] = [];
  const stack: Open[] = [];
  let inComment = false;
  for (let n = 0; n < lines.length; n++) {
    const raw = lines[n]!;
    const indent = "  ".repeat(stack.length);
    if (inComment) {
      // Continuation lines of a doc comment keep their own leading space (" * …").
      out.push(raw === "" ? raw : indent + raw);
      if (raw.includes("*/")) inComment = false;
      continue;
    }
    const line = raw.trim();
    if (line === "") {
      out.push("");
      continue;
    }
    if (line.startsWith("/*")) {
      out.push(indent + line);
      inComment = !line.includes("*/", 2);
      continue;
    }
    if (line.startsWith("//")) {
      out.push(indent + line);
      continue;
    }
    const before = stack.length;
    const closedInterface = line.startsWith("}") && stack[stack.length - 1] === "interface";
    const leadingClosers = scanLine(line, stack, () => `line ${n + 1} ("${line}")`);
    const level = Math.min(before - leadingClosers, stack.length);
    const next = nextCode(lines, n + 1);
    const innermost = stack[stack.length - 1];
    const ends =
      !line.endsWith(";") &&
      !CONTINUES.test(line) &&
      !(closedInterface && stack.length === before - 1) &&
      innermost !== "(" &&
      innermost !== "[" &&
      !/^[|&]/.test(next);
    out.push("  ".repeat(level) + line + (ends ? ";" : ""));
  }
  if (stack.length) throw new Error(`formatDeclarations: ${stack.length} bracket(s) left open at the end`);
  return out.join("\n");
}
