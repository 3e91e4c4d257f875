/**
 * Rust spellings: identifiers (snake case for fields and functions, Pascal case for types
 * and variants, raw identifiers for keywords), literals, and doc comments from the schemas'
 * descriptions.
 */
import { words } from "../words.js";

/** A construct the Rust output cannot express: the schemas cannot be generated for Rust. */
export class UnsupportedForRust extends Error {
  override readonly name = "UnsupportedForRust";
}

const KEYWORDS = new Set([
  "as",
  "break",
  "const",
  "continue",
  "else",
  "enum",
  "extern",
  "false",
  "fn",
  "for",
  "if",
  "impl",
  "in",
  "let",
  "loop",
  "match",
  "mod",
  "move",
  "mut",
  "pub",
  "ref",
  "return",
  "static",
  "struct",
  "trait",
  "true",
  "type",
  "unsafe",
  "use",
  "where",
  "while",
  "async",
  "await",
  "dyn",
  "abstract",
  "become",
  "box",
  "do",
  "final",
  "macro",
  "override",
  "priv",
  "typeof",
  "unsized",
  "virtual",
  "yield",
  "try",
  "gen",
]);
/** Keywords that cannot be raw identifiers. */
const NOT_RAW = new Set(["self", "Self", "super", "crate", "_"]);

/** `snake_case`, a valid identifier (raw for a keyword, a trailing `_` where raw is not allowed). */
export function snakeIdent(name: string): string {
  let ident = words(name)
    .map((w) => w.toLowerCase())
    .join("_");
  if (ident === "") ident = "value";
  if (/^[0-9]/.test(ident)) ident = `n${ident}`;
  if (NOT_RAW.has(ident)) return `${ident}_`;
  return KEYWORDS.has(ident) ? `r#${ident}` : ident;
}

/** `PascalCase`, a valid type or variant name. */
export function pascalIdent(name: string): string {
  let ident = words(name)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("");
  if (ident === "") ident = "Empty";
  if (/^[0-9]/.test(ident)) ident = `N${ident}`;
  return NOT_RAW.has(ident) ? `${ident}_` : ident;
}

/** The name serde writes for a Rust field identifier (raw identifiers lose their `r#`). */
export function serdeName(ident: string): string {
  return ident.startsWith("r#") ? ident.slice(2) : ident;
}

/** A Rust string literal. */
export function rustString(text: string): string {
  let out = '"';
  for (const c of text) {
    const code = c.codePointAt(0)!;
    if (c === '"') out += '\\"';
    else if (c === "\\") out += "\\\\";
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f || (code >= 0xd800 && code <= 0xdfff)) out += `\\u{${code.toString(16)}}`;
    else out += c;
  }
  return `${out}"`;
}

/** A Rust `f64` literal of a JSON number. */
export function rustFloat(n: number): string {
  if (!Number.isFinite(n)) throw new UnsupportedForRust(`${n} is not a JSON number`);
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return `${BigInt(n).toString()}.0`.replace(/\B(?=(\d{3})+(?!\d)(?=\.))/g, "_");
  return String(n).replace("e+", "e");
}

/** A Rust integer literal with digit groups (`9_007_199_254_740_991`). */
export function rustInteger(n: number): string {
  const text = BigInt(n).toString();
  return Math.abs(n) >= 100_000 ? text.replace(/\B(?=(\d{3})+(?!\d))/g, "_") : text;
}

/**
 * Doc comment lines (`///` or `//!`) for a description: paragraphs kept, lines wrapped
 * at `width`, list items' continuation lines indented (rustdoc reads them as the item's),
 * and code fences marked `text` so that rustdoc does not run them as tests.
 */
export function docLines(description: string | undefined, indent: string, marker = "///", width = 100): string[] {
  const text = (description ?? "").trim();
  if (text === "") return [];
  const out: string[] = [];
  const room = Math.max(40, width - indent.length - marker.length - 1);
  let inFence = false;
  const paragraphs = text.replace(/\r\n/g, "\n").split("\n");
  let buffer: { words: string[]; hang: string } | undefined;
  const flush = () => {
    if (!buffer) return;
    let line = "";
    let first = true;
    for (const word of buffer.words) {
      const prefix = first ? "" : buffer.hang;
      if (line !== "" && prefix.length + line.length + 1 + word.length > room) {
        out.push(`${indent}${marker} ${first ? "" : buffer.hang}${line}`);
        first = false;
        line = word;
      } else line = line === "" ? word : `${line} ${word}`;
    }
    if (line !== "") out.push(`${indent}${marker} ${first ? "" : buffer.hang}${line}`);
    buffer = undefined;
  };
  for (const raw of paragraphs) {
    const line = raw.trimEnd();
    if (/^\s*```/.test(line)) {
      flush();
      const fence = line.trim();
      out.push(`${indent}${marker} ${!inFence && fence === "```" ? "```text" : fence}`);
      inFence = !inFence;
      continue;
    }
    if (inFence) {
      out.push(line === "" ? `${indent}${marker}` : `${indent}${marker} ${line}`);
      continue;
    }
    if (line.trim() === "") {
      flush();
      if (out.length && out.at(-1) !== `${indent}${marker}`) out.push(`${indent}${marker}`);
      continue;
    }
    const item = /^(\s*)([-*]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      const bullet = `${item[1]}${item[2]} `;
      buffer = { words: [`${bullet}${item[3]!.split(/\s+/)[0]}`, ...item[3]!.split(/\s+/).slice(1)], hang: " ".repeat(bullet.length) };
      continue;
    }
    if (buffer) buffer.words.push(...line.trim().split(/\s+/));
    else buffer = { words: line.trim().split(/\s+/), hang: "" };
  }
  flush();
  while (out.at(-1) === `${indent}${marker}`) out.pop();
  return out.map((l) => l.replace(/\s+$/, "")).map(escapeDoc);
}

/** Keeps rustdoc from reading text as markup it is not: bare URLs and stray brackets. */
function escapeDoc(line: string): string {
  return line.replace(/(^|[\s(])(https?:\/\/[^\s)>]+)/g, "$1<$2>");
}

/** Lines indented by `levels` × 4 spaces (empty lines stay empty). */
export function indent(lines: readonly string[], levels = 1): string[] {
  const pad = "    ".repeat(levels);
  return lines.map((l) => (l === "" ? "" : pad + l));
}
