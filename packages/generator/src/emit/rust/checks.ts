/**
 * validators.rs: an `impl Schema` per named type, its check generated from the contract
 * schemas (the schemas as the TypeScript validators are compiled from them: each union's tag
 * check and the integer range added, annotations dropped), giving the TypeScript verdicts and
 * error pointers. Each keyword is read as ajv reads it with every error collected: the
 * keywords of an instance type apply only to values of that type, a discriminator checks only
 * the branch its tag names, a union that fails reports its branches' issues with its own.
 * Tolerant mode is the same check with `closed` false. The checks read values through
 * `JsonView`, so a `serde_json::Value` is validated as well as the exact `Json`. One function
 * per construct below, so a new keyword slots in as one more.
 */
import type { Json, JsonObject, ProtocolModel } from "../../model.js";
import { schemasFor } from "../validators.js";
import { isObject } from "../../walk.js";
import { untranslatedKeyword } from "../translated-keywords.js";
import { indent, rustFloat, rustString, UnsupportedForRust } from "./names.js";
import { patternStatic } from "./patterns.js";

const TYPE_TESTS: Record<string, string> = {
  string: "is_string(v)",
  integer: "is_int(v)",
  number: "is_number(v)",
  boolean: "v.kind() == Kind::Bool",
  null: "v.kind() == Kind::Null",
  array: "v.kind() == Kind::Array",
  object: "v.kind() == Kind::Object",
};

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** A JSON value in a message, as the TypeScript validators write it (strings bare). */
const shown = (value: Json) => (typeof value === "string" ? value : JSON.stringify(value));

class CheckWriter {
  private readonly statics: string[] = [];
  private readonly patterns = new Map<string, string>();
  private readonly literals = new Map<string, string>();
  private readonly byFile = new Map<string, string>();

  constructor(
    private readonly model: ProtocolModel,
    private readonly schemas: readonly JsonObject[],
  ) {
    model.types.forEach((t) => this.byFile.set(t.file, t.title));
  }

  module(header: string): string {
    const impls = this.model.types.map((type, i) => this.impl(type.title, this.schemas[i]!, type.file));
    const code = impls.flatMap((lines) => ["", ...lines]).join("\n");
    const helpers = [
      "closed_members",
      "fail",
      "fail_member",
      "has_duplicates",
      "is_int",
      "is_multiple_of",
      "is_number",
      "is_one_of",
      "is_one_of_number",
      "is_one_of_str",
      "is_string",
      "length",
      "literal",
      "require",
      "Issue",
      "Mode",
      "Path",
      "Schema",
      "ValidationError",
    ].filter((name) => new RegExp(`\\b${name}\\b`).test(code) || ["Issue", "Mode", "Path", "Schema", "ValidationError"].includes(name));
    const json = ["Json", "JsonView", "Kind"].filter((name) => new RegExp(`\\b${name}\\b`).test(code) || name === "JsonView");
    const lines = [
      header,
      `//! Validation of every named type of ${this.model.title} ${this.model.version}: the TypeScript`,
      "//! validators' verdicts and pointers, strict or tolerant, on a `Json` or a `serde_json::Value`.",
      "",
      ...(this.literals.size ? ["use std::sync::LazyLock;", ""] : []),
      `use crate::jsonrpc::check::{${sortNames(helpers).join(", ")}};`,
      `use crate::jsonrpc::json::{${sortNames(json).join(", ")}};`,
      ...(this.patterns.size ? ["use crate::jsonrpc::pattern::{Node, Pattern};"] : []),
      "use crate::types;",
      ...(this.statics.length ? ["", ...this.statics] : []),
      "",
      "/// Validates `value` as the named type in `mode`; `None` when the protocol has no such type.",
      "pub fn validate<V: JsonView>(type_name: &str, value: &V, mode: Mode) -> Option<Result<(), ValidationError>> {",
      "    use crate::jsonrpc::check::validate as check;",
      "    Some(match type_name {",
      ...indent(
        this.model.types.map((t) => `${rustString(t.title)} => check::<types::${t.title}, V>(value, mode),`),
        2,
      ),
      "        _ => return None,",
      "    })",
      "}",
      code,
    ];
    return lines.join("\n");
  }

  private impl(title: string, schema: JsonObject, file: string): string[] {
    const body = this.node(schema, file);
    const text = body.join("\n");
    const used = (name: string) => new RegExp(`\\b${name}\\b`).test(text);
    const param = (name: string) => (used(name) ? name : `_${name}`);
    return [
      `impl Schema for types::${title} {`,
      `    const NAME: &'static str = ${rustString(title)};`,
      "",
      `    fn check<V: JsonView>(${param("v")}: &V, ${param("p")}: &Path<'_>, ${param("e")}: &mut Vec<Issue>, ${param("closed")}: bool) {`,
      ...indent(body, 2),
      "    }",
      "}",
    ];
  }

  /** The statements checking value `v` at path `p` against `schema`, issues into `e`. */
  private node(schema: Json, where: string): string[] {
    if (schema === true) return [];
    if (schema === false) return ['fail(e, p, "false schema", "no value is allowed here");'];
    if (!isObject(schema)) throw new UnsupportedForRust(`${where}: a schema that is neither an object nor a boolean`);
    const unread = untranslatedKeyword(schema);
    if (unread !== undefined) throw new UnsupportedForRust(`${where}: the keyword ${unread} is not read by the Rust validators`);
    return [
      ...this.ref(schema, where),
      ...this.type(schema),
      ...this.numberKeywords(schema),
      ...this.stringKeywords(schema, where),
      ...this.arrayKeywords(schema, where),
      ...this.objectKeywords(schema, where),
      ...this.valueKeywords(schema),
      ...this.applicators(schema, where),
    ];
  }

  private ref(s: JsonObject, where: string): string[] {
    if (typeof s.$ref !== "string") return [];
    const target = this.byFile.get(s.$ref);
    if (!target) throw new UnsupportedForRust(`${where}: the $ref ${s.$ref}: only whole files of the schemas folder are read`);
    return [`<types::${target} as Schema>::check(v, p, e, closed);`];
  }

  private type(s: JsonObject): string[] {
    if (s.type === undefined) return [];
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    const test = types.map((t) => TYPE_TESTS[t]!).join(" || ");
    return [`if !(${test}) {`, `    fail(e, p, "type", ${rustString(`must be ${types.join(" or ")}`)});`, "}"];
  }

  private numberKeywords(s: JsonObject): string[] {
    const out: string[] = [];
    const bound = (keyword: string, op: string, message: string) => {
      const limit = s[keyword];
      if (typeof limit !== "number") return;
      out.push(
        `if n ${op} ${rustFloat(limit)} {`,
        `    fail(e, p, ${rustString(keyword)}, ${rustString(`must ${message} ${limit}`)});`,
        "}",
      );
    };
    bound("minimum", "<", "be at least");
    bound("maximum", ">", "be at most");
    bound("exclusiveMinimum", "<=", "be greater than");
    bound("exclusiveMaximum", ">=", "be less than");
    if (typeof s.multipleOf === "number") {
      out.push(
        `if !is_multiple_of(n, ${rustFloat(s.multipleOf)}) {`,
        `    fail(e, p, "multipleOf", ${rustString(`must be a multiple of ${s.multipleOf}`)});`,
        "}",
      );
    }
    return out.length ? ["if let Some(n) = v.number() {", ...indent(out), "}"] : [];
  }

  private stringKeywords(s: JsonObject, where: string): string[] {
    const out: string[] = [];
    const lengths = typeof s.minLength === "number" || typeof s.maxLength === "number";
    if (lengths) out.push("let n = length(t);");
    if (typeof s.minLength === "number") {
      out.push(
        `if n < ${s.minLength} {`,
        `    fail(e, p, "minLength", ${rustString(`must be at least ${plural(s.minLength, "character")} long`)});`,
        "}",
      );
    }
    if (typeof s.maxLength === "number") {
      out.push(
        `if n > ${s.maxLength} {`,
        `    fail(e, p, "maxLength", ${rustString(`must be at most ${plural(s.maxLength, "character")} long`)});`,
        "}",
      );
    }
    if (typeof s.pattern === "string") {
      const name = this.pattern(s.pattern, where);
      out.push(`if !${name}.is_match(t) {`, `    fail(e, p, "pattern", ${rustString(`must match the pattern ${s.pattern}`)});`, "}");
    }
    return out.length ? ["if let Some(t) = v.text() {", ...indent(out), "}"] : [];
  }

  private pattern(pattern: string, where: string): string {
    let name = this.patterns.get(pattern);
    if (name === undefined) {
      name = `PATTERN_${this.patterns.size}`;
      try {
        this.statics.push("", ...patternStatic(name, pattern));
      } catch (error) {
        throw new UnsupportedForRust(`${where}: ${(error as Error).message}`);
      }
      this.patterns.set(pattern, name);
    }
    return name;
  }

  private literal(values: readonly Json[]): string {
    const text = JSON.stringify(values);
    let name = this.literals.get(text);
    if (name === undefined) {
      name = `VALUES_${this.literals.size}`;
      this.statics.push("", `static ${name}: LazyLock<Vec<Json>> = LazyLock::new(|| literal(${rustRaw(text)}));`);
      this.literals.set(text, name);
    }
    return name;
  }

  private arrayKeywords(s: JsonObject, where: string): string[] {
    const out: string[] = [];
    if (typeof s.minItems === "number")
      out.push(
        s.minItems === 1 ? "if items.is_empty() {" : `if items.len() < ${s.minItems} {`,
        `    fail(e, p, "minItems", ${rustString(`must have at least ${plural(s.minItems, "item")}`)});`,
        "}",
      );
    if (typeof s.maxItems === "number")
      out.push(
        s.maxItems === 0 ? "if !items.is_empty() {" : `if items.len() > ${s.maxItems} {`,
        `    fail(e, p, "maxItems", ${rustString(`must have at most ${plural(s.maxItems, "item")}`)});`,
        "}",
      );
    const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : [];
    prefix.forEach((sub, i) => {
      const lines = this.node(sub, `${where}/prefixItems/${i}`);
      if (lines.length) out.push(`if let Some(v) = items.get(${i}) {`, `    let p = &p.index(${i});`, ...indent(lines), "}");
    });
    if (s.items !== undefined && s.items !== true) {
      const lines = this.node(s.items, `${where}/items`);
      if (lines.length) {
        const iterated = prefix.length ? `items.iter().enumerate().skip(${prefix.length})` : "items.iter().enumerate()";
        out.push(`for (i, v) in ${iterated} {`, "    let p = &p.index(i);", ...indent(lines), "}");
      }
    }
    if (s.uniqueItems === true) out.push("if has_duplicates(items) {", '    fail(e, p, "uniqueItems", "must not repeat an item");', "}");
    return out.length ? ["if let Some(items) = v.items() {", ...indent(out), "}"] : [];
  }

  private objectKeywords(s: JsonObject, where: string): string[] {
    const out: string[] = [];
    let closed: string[] = [];
    const required = Array.isArray(s.required) ? (s.required as string[]) : [];
    const properties = isObject(s.properties) ? s.properties : {};
    if (required.length) out.push(`require(v, p, e, &[${required.map(rustString).join(", ")}]);`);
    for (const [name, sub] of Object.entries(properties)) {
      const lines = this.node(sub, `${where}/properties/${name}`);
      if (lines.length)
        out.push(`if let Some(v) = v.member(${rustString(name)}) {`, `    let p = &p.key(${rustString(name)});`, ...indent(lines), "}");
    }
    const known = Object.keys(properties).map(rustString);
    if (s.additionalProperties === false) {
      // Written after the object's other keywords (closed_members reads only objects), as ajv reports it.
      closed = ["if closed {", `    closed_members(v, p, e, &[${known.join(", ")}]);`, "}"];
    } else if (s.additionalProperties !== undefined && s.additionalProperties !== true) {
      const lines = this.node(s.additionalProperties, `${where}/additionalProperties`);
      if (lines.length) {
        const loop = ["let p = &p.key(k);", ...lines];
        out.push(
          "for (k, v) in v.members().into_iter().flatten() {",
          ...indent(known.length ? [`if ![${known.join(", ")}].contains(&k) {`, ...indent(loop), "}"] : loop),
          "}",
        );
      }
    }
    const closedAt = out.length;
    if (s.propertyNames !== undefined && s.propertyNames !== true) {
      // ajv reports a refused key at the object, with the keyword's own issue beside it.
      const lines = this.node(s.propertyNames, `${where}/propertyNames`);
      if (lines.length) {
        out.push(
          "let before = e.len();",
          "for (k, _) in v.members().into_iter().flatten() {",
          "    let key = Json::String(k.into());",
          "    let v = &key;",
          ...indent(lines),
          "}",
          "if e.len() > before {",
          '    fail(e, p, "propertyNames", "has a field name its schema refuses");',
          "}",
        );
      }
    }
    if (typeof s.minProperties === "number")
      out.push(
        `if v.member_count() < ${s.minProperties} {`,
        `    fail(e, p, "minProperties", ${rustString(`must have at least ${plural(s.minProperties, "field")}`)});`,
        "}",
      );
    if (typeof s.maxProperties === "number")
      out.push(
        `if v.member_count() > ${s.maxProperties} {`,
        `    fail(e, p, "maxProperties", ${rustString(`must have at most ${plural(s.maxProperties, "field")}`)});`,
        "}",
      );
    if (s.discriminator !== undefined) out.push(...this.discriminator(s, where));
    if (out.length === 0) return closed;
    if (closed.length === 0) return ["if v.kind() == Kind::Object {", ...indent(out), "}"];
    return ["if v.kind() == Kind::Object {", ...indent([...out.slice(0, closedAt), ...closed, ...out.slice(closedAt)]), "}"];
  }

  /** The tag names the branch to check; only that branch is checked (the tag's own check reports a bad tag). */
  private discriminator(s: JsonObject, where: string): string[] {
    const tag = (s.discriminator as JsonObject).propertyName as string;
    const arms = (s.oneOf as JsonObject[]).map((branch) => {
      const target = this.model.byFile.get(branch.$ref as string);
      const property = target && isObject(target.schema.properties) ? target.schema.properties[tag] : undefined;
      if (!target || !isObject(property) || typeof property.const !== "string")
        throw new UnsupportedForRust(`${where}: a discriminator branch without its tag`);
      return [
        `Some(t) if t.is(${rustString(property.const)}) => {`,
        `    <types::${target.title} as Schema>::check(v, p, e, closed);`,
        "}",
      ];
    });
    return [
      `match v.member(${rustString(tag)}).and_then(JsonView::text) {`,
      ...indent(arms.flat()),
      `    _ => fail_member(e, p, "discriminator", ${rustString(tag)}, "must name a known variant"),`,
      "}",
    ];
  }

  private valueKeywords(s: JsonObject): string[] {
    const out: string[] = [];
    if (Array.isArray(s.enum)) {
      const message = rustString(`must be one of ${s.enum.map(shown).join(", ")}`);
      out.push(`if !${this.oneOf(s.enum)} {`, `    fail(e, p, "enum", ${message});`, "}");
    }
    if ("const" in s) {
      out.push(
        `if !${this.oneOf([s.const as Json])} {`,
        `    fail(e, p, "const", ${rustString(`must be ${JSON.stringify(s.const)}`)});`,
        "}",
      );
    }
    return out;
  }

  /** The test that the value is one of `values`. */
  private oneOf(values: readonly Json[]): string {
    if (values.every((v) => typeof v === "string")) return `is_one_of_str(v, &[${values.map((v) => rustString(v as string)).join(", ")}])`;
    if (values.every((v) => typeof v === "number"))
      return `is_one_of_number(v, &[${values.map((v) => rustFloat(v as number)).join(", ")}])`;
    return `is_one_of(v, &${this.literal(values)})`;
  }

  /** A branch of a union, checked into its own list of issues `into`. */
  private branch(sub: Json, into: string, where: string): string[] {
    const lines = this.node(sub, where);
    return lines.length ? ["{", `    let e = &mut ${into};`, ...indent(lines), "}"] : [];
  }

  private applicators(s: JsonObject, where: string): string[] {
    const out: string[] = [];
    if (Array.isArray(s.allOf)) s.allOf.forEach((sub, i) => out.push(...this.node(sub, `${where}/allOf/${i}`)));
    if (Array.isArray(s.anyOf)) {
      // The first branch that holds ends the search; when none holds, every branch's issues are reported with the union's.
      const lines = ["let mut found: Vec<Issue> = Vec::new();", ...this.branch(s.anyOf[0]!, "found", `${where}/anyOf/0`)];
      s.anyOf.slice(1).forEach((sub, i) => {
        lines.push(
          "if !found.is_empty() {",
          ...indent([
            "let mut branch: Vec<Issue> = Vec::new();",
            ...this.branch(sub, "branch", `${where}/anyOf/${i + 1}`),
            "if branch.is_empty() {",
            "    found.clear();",
            "} else {",
            "    found.append(&mut branch);",
            "}",
          ]),
          "}",
        );
      });
      lines.push(
        "if !found.is_empty() {",
        "    e.append(&mut found);",
        '    fail(e, p, "anyOf", "does not match any allowed shape");',
        "}",
      );
      out.push("{", ...indent(lines), "}");
    }
    if (Array.isArray(s.oneOf) && s.discriminator === undefined) {
      const lines = ["let mut passing = 0;", "let mut found = Vec::new();"];
      s.oneOf.forEach((sub, i) => {
        lines.push(`let mut branch${i}: Vec<Issue> = Vec::new();`, ...this.branch(sub, `branch${i}`, `${where}/oneOf/${i}`));
        lines.push(`if branch${i}.is_empty() {`, "    passing += 1;", "} else {", `    found.append(&mut branch${i});`, "}");
      });
      lines.push(
        "if passing != 1 {",
        "    if passing == 0 {",
        "        e.append(&mut found);",
        "    }",
        '    fail(e, p, "oneOf", "does not match exactly one allowed shape");',
        "}",
      );
      out.push("{", ...indent(lines), "}");
    }
    if (s.not !== undefined) {
      out.push(
        "{",
        ...indent([
          "let mut branch: Vec<Issue> = Vec::new();",
          ...this.branch(s.not, "branch", `${where}/not`),
          "if branch.is_empty() {",
          '    fail(e, p, "not", "must not match the schema");',
          "}",
        ]),
        "}",
      );
    }
    return out;
  }
}

function sortNames(names: readonly string[]): string[] {
  // rustfmt's order for a use list: lower-case names (functions) before upper-case ones (types), each sorted.
  const lower = names.filter((n) => /^[a-z_]/.test(n)).sort();
  const upper = names.filter((n) => /^[A-Z]/.test(n)).sort();
  return [...upper, ...lower].sort((a, b) => {
    const la = /^[a-z_]/.test(a);
    const lb = /^[a-z_]/.test(b);
    if (la !== lb) return la ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
  });
}

/** A raw string literal holding `text`. */
function rustRaw(text: string): string {
  let hashes = "#";
  while (text.includes(`"${hashes}`)) hashes += "#";
  return `r${hashes}"${text}"${hashes}`;
}

/** validators.rs of a model. */
export function emitRustChecks(model: ProtocolModel, header: string): string {
  return new CheckWriter(model, schemasFor(model, "strict")).module(header);
}
