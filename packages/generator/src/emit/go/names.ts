/**
 * Go names for what the schemas name: exported identifiers from member names and enum
 * values (Go's initialisms kept upper case: `turn_id` → `TurnID`, `threadId` → `ThreadID`),
 * package names from module paths, and doc comments from descriptions.
 */
import { words } from "../words.js";

/** The initialisms Go code writes in one case (the list golint and staticcheck use). */
const INITIALISMS = new Set([
  "ACL",
  "API",
  "ASCII",
  "CPU",
  "CSS",
  "DNS",
  "EOF",
  "GUID",
  "HTML",
  "HTTP",
  "HTTPS",
  "ID",
  "IP",
  "JSON",
  "LHS",
  "QPS",
  "RAM",
  "RHS",
  "RPC",
  "SLA",
  "SMTP",
  "SQL",
  "SSH",
  "TCP",
  "TLS",
  "TTL",
  "UDP",
  "UI",
  "UID",
  "UUID",
  "URI",
  "URL",
  "UTF8",
  "VM",
  "XML",
  "XMPP",
  "XSRF",
  "XSS",
]);

/** Go's keywords and predeclared identifiers: never a package-level name of their own. */
export const GO_RESERVED = new Set([
  "break",
  "case",
  "chan",
  "const",
  "continue",
  "default",
  "defer",
  "else",
  "fallthrough",
  "for",
  "func",
  "go",
  "goto",
  "if",
  "import",
  "interface",
  "map",
  "package",
  "range",
  "return",
  "select",
  "struct",
  "switch",
  "type",
  "var",
  "any",
  "bool",
  "byte",
  "comparable",
  "complex64",
  "complex128",
  "error",
  "float32",
  "float64",
  "int",
  "int8",
  "int16",
  "int32",
  "int64",
  "rune",
  "string",
  "uint",
  "uint8",
  "uint16",
  "uint32",
  "uint64",
  "uintptr",
  "true",
  "false",
  "iota",
  "nil",
  "append",
  "cap",
  "clear",
  "close",
  "complex",
  "copy",
  "delete",
  "imag",
  "len",
  "make",
  "max",
  "min",
  "new",
  "panic",
  "print",
  "println",
  "real",
  "recover",
]);

/** One word as an exported Go identifier writes it. */
function titleWord(word: string): string {
  const upper = word.toUpperCase();
  if (INITIALISMS.has(upper)) return upper;
  // A plural initialism keeps its s in lower case: ids → IDs, urls → URLs.
  if (upper.length > 2 && upper.endsWith("S") && INITIALISMS.has(upper.slice(0, -1))) return `${upper.slice(0, -1)}s`;
  return word[0]!.toUpperCase() + word.slice(1);
}

/** An exported Go identifier for a member name, an enum value or a method name; `fallback` when the name has no letters or digits. */
export function exported(name: string, fallback = "Value"): string {
  const parts = words(name);
  if (parts.length === 0) return fallback;
  const id = parts.map(titleWord).join("");
  return /^[0-9]/.test(id) ? `N${id}` : id;
}

/** An unexported Go identifier (for locals and helpers): the exported one with its first word in lower case. */
export function unexported(name: string): string {
  const id = exported(name);
  const first = words(id)[0] ?? id;
  const rest = id.slice(first.length);
  const head = INITIALISMS.has(first.toUpperCase()) ? first.toLowerCase() : first[0]!.toLowerCase() + first.slice(1);
  const out = head + rest;
  return GO_RESERVED.has(out) ? `${out}Value` : out;
}

/** The package name a module path gives: its last element, lower case letters and digits only. */
export function packageNameOf(modulePath: string): string {
  const last = modulePath.split("/").filter(Boolean).at(-1) ?? "";
  // A major-version suffix (example.com/agp/v2) names no package.
  const element = /^v[0-9]+$/.test(last) ? (modulePath.split("/").filter(Boolean).at(-2) ?? last) : last;
  const name = element.toLowerCase().replace(/[^a-z0-9]/g, "");
  if (!/^[a-z]/.test(name) || GO_RESERVED.has(name)) return `proto${name}`;
  return name;
}

/** Hands out unique names: a second `Foo` becomes `Foo2`. */
export class NameSet {
  private readonly used = new Set<string>();
  constructor(taken: Iterable<string> = []) {
    for (const name of taken) this.used.add(name);
  }
  has(name: string): boolean {
    return this.used.has(name);
  }
  take(wanted: string): string {
    let name = wanted;
    for (let n = 2; this.used.has(name); n++) name = `${wanted}${n}`;
    this.used.add(name);
    return name;
  }
}

/** Text as `//` comment lines, wrapped at about `width` columns; `indent` is written before each. */
export function comment(text: string, indent = "", width = 100): string[] {
  const out: string[] = [];
  for (const paragraph of text.trim().split(/\n\s*\n/)) {
    if (out.length) out.push(`${indent}//`);
    let line = "";
    for (const word of paragraph.split(/\s+/).filter(Boolean)) {
      if (line && indent.length * 4 + 3 + line.length + 1 + word.length > width) {
        out.push(`${indent}// ${line}`);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    if (line) out.push(`${indent}// ${line}`);
  }
  return out;
}

/**
 * A doc comment that begins with the name it documents, as Go's doc comments do: "Turn is
 * the gateway's model …" for a description that begins with an article, "TurnStartParams —
 * Params of turn/start …" for any other (the schema's words are not rewritten).
 */
export function docComment(name: string, description: string, indent = ""): string[] {
  const text = description.trim();
  if (text === "") return [];
  const article = /^(The|A|An|One)\s/.exec(text);
  const body = text.startsWith(`${name} `) ? text : article ? `${name} is ${text[0]!.toLowerCase()}${text.slice(1)}` : `${name} — ${text}`;
  return comment(body, indent);
}

/** A Go string literal for a string (interpreted, escaped as Go reads it). */
export function goString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else if (code >= 0xd800 && code <= 0xdfff)
      out += `\\x${(0xe0 | (code >> 12)).toString(16)}\\x${(0x80 | ((code >> 6) & 0x3f)).toString(16)}\\x${(0x80 | (code & 0x3f)).toString(16)}`;
    else if (code === 0x2028 || code === 0x2029 || code === 0xfeff) out += `\\u${code.toString(16)}`;
    else out += ch;
  }
  return `${out}"`;
}

/** A Go float64 literal for a number, exactly. */
export function goNumber(value: number): string {
  if (Object.is(value, -0)) return "0";
  if (Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) return String(value);
  return String(value).replace("e+", "e");
}
