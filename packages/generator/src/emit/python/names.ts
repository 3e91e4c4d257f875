/** Python names for the protocol's types, fields and methods, and Python literals. */

const KEYWORDS = new Set([
  "False",
  "None",
  "True",
  "and",
  "as",
  "assert",
  "async",
  "await",
  "break",
  "class",
  "continue",
  "def",
  "del",
  "elif",
  "else",
  "except",
  "finally",
  "for",
  "from",
  "global",
  "if",
  "import",
  "in",
  "is",
  "lambda",
  "nonlocal",
  "not",
  "or",
  "pass",
  "raise",
  "return",
  "try",
  "while",
  "with",
  "yield",
]);

/** Names a pydantic model cannot use for a field: BaseModel's own attributes. */
const MODEL_ATTRIBUTES = new Set([
  "construct",
  "copy",
  "dict",
  "fields",
  "from_orm",
  "json",
  "parse_file",
  "parse_obj",
  "parse_raw",
  "schema",
  "schema_json",
  "update_forward_refs",
  "validate",
  "model_config",
  "model_fields",
  "model_computed_fields",
  "model_extra",
  "model_fields_set",
  "model_construct",
  "model_copy",
  "model_json_schema",
  "model_parametrized_name",
  "model_post_init",
  "model_rebuild",
]);

/** pydantic's protected namespaces: a field may not start with them. */
const PROTECTED = ["model_validate", "model_dump"];

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `protocolVersion` → `protocol_version`, `_meta` → `meta`. */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9_]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toLowerCase();
}

/** `tool_call` → `ToolCall`. */
export function pascalCase(name: string): string {
  return snakeCase(name)
    .split("_")
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("");
}

/**
 * The attribute name of a field: its wire name when Python and pydantic allow it as it is (so
 * `thread_id` and `protocolVersion` read as on the wire), else a snake-case name with the wire
 * name as its alias. `taken` holds the names used already in the class.
 */
export function fieldName(wire: string, taken: ReadonlySet<string>): string {
  const isProtected = (name: string) => PROTECTED.some((prefix) => name.startsWith(prefix));
  const usable = (name: string) =>
    IDENTIFIER.test(name) && !name.startsWith("_") && !isProtected(name) && !KEYWORDS.has(name) && !MODEL_ATTRIBUTES.has(name);
  let name = usable(wire) ? wire : snakeCase(wire) || "field";
  if (/^[0-9]/.test(name) || isProtected(name)) name = `field_${name}`;
  if (KEYWORDS.has(name) || MODEL_ATTRIBUTES.has(name)) name = `${name}_`;
  while (taken.has(name)) name = `${name}_`;
  return name;
}

/** A method or notification name as a Python function name: `turn/start` → `turn_start`. */
export function functionName(method: string): string {
  const name = snakeCase(method.replace(/\//g, "_")) || "call";
  return KEYWORDS.has(name) ? `${name}_` : name;
}

/** A JSON value as a Python literal. */
export function pyLiteral(value: unknown): string {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : JSON.stringify(value);
  if (typeof value === "string") return pyString(value);
  if (Array.isArray(value)) return `[${value.map(pyLiteral).join(", ")}]`;
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${pyString(k)}: ${pyLiteral(v)}`)
    .join(", ")}}`;
}

/** A Python string literal (double-quoted, escapes for what is not printable ASCII). */
export function pyString(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === '"' || char === "\\") out += `\\${char}`;
    else if (char === "\n") out += "\\n";
    else if (char === "\r") out += "\\r";
    else if (char === "\t") out += "\\t";
    else if (
      code < 0x20 ||
      code === 0x7f ||
      (code >= 0x80 && code < 0xa0) ||
      code === 0x2028 ||
      code === 0x2029 ||
      (code >= 0xd800 && code <= 0xdfff)
    )
      out += code > 0xff ? `\\u${code.toString(16).padStart(4, "0")}` : `\\x${code.toString(16).padStart(2, "0")}`;
    else out += char;
  }
  return `${out}"`;
}

/** A docstring body from a schema description: triple quotes and backslashes escaped, indented. */
export function docstring(text: string, indent: string): string[] {
  const body = text.trim().replace(/\\/g, "\\\\").replace(/"""/g, '\\"\\"\\"');
  if (body === "") return [];
  const lines = body.split("\n");
  if (lines.length === 1 && !body.endsWith('"')) return [`${indent}"""${body}"""`];
  return [`${indent}"""${lines[0]}`, ...lines.slice(1).map((l) => (l.trim() === "" ? "" : `${indent}${l}`)), `${indent}"""`];
}

/**
 * `from <module> import a, b` naming only the candidates the code uses (as whole words), or
 * nothing when it uses none: generated modules import exactly what they read.
 */
export function usedImport(module: string, candidates: readonly string[], code: string): string[] {
  const used = candidates.filter((name) => new RegExp(`\\b${name}\\b`).test(code));
  return used.length ? [`from ${module} import ${used.join(", ")}`] : [];
}
