/**
 * validators.go: one check function per named type, compiled from exactly the schemas the
 * TypeScript validators are compiled from (`schemasFor`: the integer range, the tag checks
 * of tagged unions, strict and tolerant readings), keyword by keyword in the order and with
 * the reading ajv gives them, so that a value gets the same verdict and the same error
 * pointers in Go as in TypeScript. A keyword or form the Go output cannot check exactly is
 * refused here, naming where it is, rather than checked approximately.
 */
import type { Json, JsonObject, ProtocolModel, TypeModel } from "../../model.js";
import { SchemaError, SchemaErrors } from "../../schema-error.js";
import { escapeToken, isObject } from "../../walk.js";
import { schemasFor, tolerantSchema } from "../validators.js";
import { exported, goNumber, goString, NameSet } from "./names.js";
import { translatePattern, type PatternTranslation } from "./regexp.js";
import type { UnionDecl, VariantPlace } from "./shapes.js";

/** Keywords that check something (ajv's rules); a schema with none of them accepts every value. */
const RULES = new Set([
  "type",
  "$ref",
  "const",
  "enum",
  "not",
  "anyOf",
  "oneOf",
  "allOf",
  "if",
  "then",
  "else",
  "maximum",
  "minimum",
  "exclusiveMaximum",
  "exclusiveMinimum",
  "multipleOf",
  "maxLength",
  "minLength",
  "pattern",
  "format",
  "maxProperties",
  "minProperties",
  "required",
  "propertyNames",
  "additionalProperties",
  "dependencies",
  "properties",
  "patternProperties",
  "dependentRequired",
  "dependentSchemas",
  "discriminator",
  "maxItems",
  "minItems",
  "prefixItems",
  "items",
  "contains",
  "uniqueItems",
  "maxContains",
  "minContains",
  "$comment",
  "nullable",
  "unevaluatedProperties",
  "unevaluatedItems",
  "$dynamicRef",
  "$recursiveRef",
]);

/** Keywords that say nothing about validity here (the schemas' own bookkeeping). */
const INERT = new Set(["$schema", "$id", "$comment", "$defs", "format"]);

/** The keywords of each instance type's group, in the order ajv applies them. */
const GROUPS: readonly { readonly type: "number" | "string" | "array" | "object"; readonly keywords: readonly string[] }[] = [
  { type: "number", keywords: ["maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf"] },
  { type: "string", keywords: ["maxLength", "minLength", "pattern"] },
  { type: "array", keywords: ["maxItems", "minItems", "prefixItems", "items"] },
  {
    type: "object",
    keywords: ["maxProperties", "minProperties", "required", "propertyNames", "additionalProperties", "properties", "discriminator"],
  },
];

/** The keywords of the group that applies to every type, in ajv's order. */
const ANY_TYPE = ["$ref", "const", "enum", "not", "anyOf", "oneOf", "allOf"];

const SUPPORTED = new Set([...INERT, "type", ...ANY_TYPE, ...GROUPS.flatMap((g) => g.keywords)]);

/** Why a keyword is refused, when it has a reason of its own. */
const REFUSED: Record<string, string> = {
  if: "if/then/else is not checked by the Go output",
  then: "if/then/else is not checked by the Go output",
  else: "if/then/else is not checked by the Go output",
  patternProperties: "patternProperties is not checked by the Go output",
  contains: "contains is not checked by the Go output",
  uniqueItems: "uniqueItems is not checked by the Go output",
};

/** Names an object's prototype gives every JavaScript object: a schema property of that name reads differently there. */
const PROTOTYPE_NAMES = new Set([
  "constructor",
  "__proto__",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "__lookupSetter__",
  "hasOwnProperty",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "toString",
  "toLocaleString",
  "valueOf",
]);

const TYPE_TESTS: Record<string, (v: string) => string> = {
  string: (v) => `${v}.Kind() == jsonrpc.String`,
  number: (v) => `${v}.IsFinite()`,
  integer: (v) => `${v}.IsInteger()`,
  boolean: (v) => `${v}.Kind() == jsonrpc.Bool`,
  null: (v) => `${v}.Kind() == jsonrpc.Null`,
  array: (v) => `${v}.Kind() == jsonrpc.Array`,
  object: (v) => `${v}.Kind() == jsonrpc.Object`,
};

const GROUP_TESTS: Record<string, (v: string) => string> = {
  number: (v) => `${v}.IsFinite()`,
  string: (v) => `${v}.Kind() == jsonrpc.String`,
  array: (v) => `${v}.Kind() == jsonrpc.Array`,
  object: (v) => `${v}.Kind() == jsonrpc.Object`,
};

/** Whether a schema accepts every value: `true`, or an object with no keyword that checks. */
function alwaysValid(schema: Json | undefined): boolean {
  if (schema === true || schema === undefined) return true;
  if (!isObject(schema)) return false;
  return !Object.keys(schema).some((k) => RULES.has(k) && k !== "$comment");
}

const same = (a: Json | undefined, b: Json | undefined): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The strict and the tolerant reading of one place of a schema; `tolerant` is undefined where the two are the same. */
interface Pair {
  readonly strict: Json;
  readonly tolerant: Json;
}

/** The Go code of the validators: check functions, pattern and value tables. */
export interface GoValidators {
  /** The check function of each named type, by title. */
  readonly checkOf: ReadonlyMap<string, string>;
  /** The check function of each variant of a union without a tag, by its place's key. */
  readonly variantChecks: ReadonlyMap<string, string>;
  readonly code: string;
  /** Whether the code uses package regexp. */
  readonly usesRegexp: boolean;
}

class Writer {
  readonly functions: string[] = [];
  readonly vars: string[] = [];
  private readonly names: NameSet;
  private readonly patterns = new Map<string, string>();
  private readonly values = new Map<string, string>();
  readonly checkOf = new Map<string, string>();
  /** Each type's index in model.types, by its $id. */
  private readonly byId = new Map<string, number>();
  /** The functions of places that a $ref with a fragment names, by the absolute URI. */
  private readonly fragments = new Map<string, string>();

  constructor(
    readonly model: ProtocolModel,
    taken: Iterable<string>,
    private readonly strict: readonly JsonObject[],
    private readonly tolerant: readonly JsonObject[],
  ) {
    this.names = new NameSet(taken);
    model.types.forEach((type, i) => {
      this.checkOf.set(type.title, this.names.take(`check${type.title}`));
      this.byId.set(new URL(type.id).href, i);
    });
  }

  /**
   * What a $ref written in \`type\`'s document names, read as JSON Schema reads it: relative to
   * the document's $id, a whole document or a place in one (a JSON pointer fragment).
   */
  private resolve(
    ref: string,
    type: TypeModel,
    pointer: string,
  ): { readonly index: number; readonly fragment: string; readonly uri: string } {
    let url: URL;
    try {
      url = new URL(ref, type.id);
    } catch {
      this.problem(type.file, `${pointer}/$ref`, `$ref ${JSON.stringify(ref)} is not a URI reference`);
    }
    const fragment = decodeURIComponent(url.hash.replace(/^#/, ""));
    url.hash = "";
    const index = this.byId.get(url.href);
    if (index === undefined) this.problem(type.file, `${pointer}/$ref`, `$ref ${JSON.stringify(ref)} names no file of the schemas folder`);
    if (fragment !== "" && !fragment.startsWith("/"))
      this.problem(
        type.file,
        `${pointer}/$ref`,
        `$ref ${JSON.stringify(ref)} names an anchor; the Go output reads JSON pointer fragments only`,
      );
    return { index, fragment, uri: `${url.href}#${fragment}` };
  }

  /** The node at a JSON pointer fragment of a schema, or undefined. */
  private static at(schema: Json, fragment: string): Json | undefined {
    let node: Json | undefined = schema;
    for (const raw of fragment === "" ? [] : fragment.slice(1).split("/")) {
      const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
      node = isObject(node) ? node[token] : Array.isArray(node) ? node[Number(token)] : undefined;
      if (node === undefined) return undefined;
    }
    return node;
  }

  private problem(file: string, pointer: string, message: string): never {
    throw new SchemaErrors([new SchemaError(file, pointer, message)]);
  }

  /** A package-level table of JSON values (enum and const values that are not strings). */
  private valueTable(values: readonly Json[]): string {
    const key = JSON.stringify(values);
    let name = this.values.get(key);
    if (!name) {
      name = this.names.take(`allowed${this.values.size + 1}`);
      this.values.set(key, name);
      this.vars.push(`var ${name} = []jsonrpc.Value{${values.map(goValue).join(", ")}}`);
    }
    return name;
  }

  private pattern(source: string, file: string, pointer: string): string {
    let name = this.patterns.get(source);
    if (!name) {
      const translation: PatternTranslation = translatePattern(source);
      if (!translation.ok)
        this.problem(file, pointer, `the pattern ${JSON.stringify(source)} cannot be checked exactly in Go: ${translation.reason}`);
      name = this.names.take(`pattern${this.patterns.size + 1}`);
      this.patterns.set(source, name);
      this.vars.push(
        "",
        `// ${name} is the ECMAScript pattern ${JSON.stringify(source)}, in Go's syntax.`,
        `var ${name} = regexp.MustCompile(${goRaw(translation.go)})`,
        "",
      );
    }
    return name;
  }

  get usesRegexp(): boolean {
    return this.patterns.size > 0;
  }

  /**
   * The check of a union's variant, from its schema as written (tolerant and strict), by which
   * the reader tells a value's variant: `check<Union>Variant<n>`, or the named type's own check.
   */
  variant(place: VariantPlace, union: string, n: number): string {
    const node = place.node;
    const ref = bareRef(node);
    if (ref !== undefined) return this.refCheck(ref, place.type, place.pointer);
    const name = this.names.take(`check${union}Variant${n}`);
    this.emit(
      name,
      { strict: node, tolerant: isObject(node) ? tolerantSchema(node) : node },
      place.type,
      place.pointer,
      `a value as the variant ${n} of ${union}`,
    );
    return name;
  }

  /** The check function of a named type. */
  type(type: TypeModel, pair: Pair): void {
    this.emit(this.checkOf.get(type.title)!, pair, type, "", `${type.title} (${type.file})`);
  }

  /**
   * The function that checks `pair` (read at `pointer` of `type`'s file): a named type's
   * own check for a bare `$ref`, otherwise a new function named after the place.
   */
  private sub(base: string, pair: Pair, type: TypeModel, pointer: string): string | undefined {
    const s = pair.strict;
    const t = pair.tolerant;
    if (alwaysValid(s) && alwaysValid(t)) return undefined;
    const ref = bareRef(s);
    if (ref !== undefined && same(s, t)) return this.refCheck(ref, type, pointer);
    const name = this.names.take(base);
    this.emit(name, pair, type, pointer, `${type.title} at ${pointer}`);
    return name;
  }

  private refCheck(ref: string, type: TypeModel, pointer: string): string {
    const { index, fragment, uri } = this.resolve(ref, type, pointer);
    const target = this.model.types[index]!;
    if (fragment === "") return this.checkOf.get(target.title)!;
    const known = this.fragments.get(uri);
    if (known) return known;
    const strict = Writer.at(this.strict[index]!, fragment);
    const tolerant = Writer.at(this.tolerant[index]!, fragment);
    if (strict === undefined || tolerant === undefined)
      this.problem(type.file, `${pointer}/$ref`, `$ref ${JSON.stringify(ref)} names nothing in ${target.file}`);
    // Named before it is written, so that a place that refers to itself calls its own function.
    const name = this.names.take(
      `check${target.title}${fragment
        .split("/")
        .filter((t) => t !== "$defs" && t !== "")
        .map((t) => exported(t))
        .join("")}`,
    );
    this.fragments.set(uri, name);
    this.emit(name, { strict, tolerant }, target, fragment, `${target.title} at ${fragment}`);
    return name;
  }

  private emit(name: string, pair: Pair, type: TypeModel, pointer: string, what: string): void {
    const body = this.body(name, pair, type, pointer);
    this.functions.push(
      [`// ${name} checks ${what}.`, `func ${name}(c *jsonrpc.Checker, v *jsonrpc.Value) bool {`, ...indent(body), "}"].join("\n"),
    );
  }

  private body(name: string, pair: Pair, type: TypeModel, pointer: string): string[] {
    const { strict: s, tolerant: t } = pair;
    if (s === false && t === false) return ["c.Never()", "return false"];
    if (!isObject(s) || !isObject(t)) {
      if (typeof s === "boolean" && typeof t === "boolean")
        return [`if c.Tolerant() {`, `\treturn ${t} || !c.Never()`, "}", `return ${s} || !c.Never()`];
      this.problem(type.file, pointer, "a schema must be an object or a boolean");
    }
    for (const node of [s, t]) {
      for (const key of Object.keys(node)) {
        if (SUPPORTED.has(key) || !RULES.has(key)) continue;
        this.problem(type.file, `${pointer}/${key}`, REFUSED[key] ?? `the keyword ${key} is not checked by the Go output`);
      }
    }
    // A bare $ref, the same in both readings: that type's check, as ajv reads it.
    const ref = bareRef(s);
    if (ref !== undefined && same(s, t)) return [`return ${this.refCheck(ref, type, pointer)}(c, v)`];

    const keys = new Set([...Object.keys(s), ...Object.keys(t)]);
    const types = typesOf(s, type, pointer);
    const tolerantTypes = typesOf(t, type, pointer);
    if (!same(types, tolerantTypes)) this.problem(type.file, `${pointer}/type`, "the strict and tolerant readings differ in type");
    const groupUsed = (group: string) => GROUPS.find((g) => g.type === group)!.keywords.some((k) => keys.has(k));
    // ajv checks the type first unless the schema has one type whose own keywords it has.
    const typeFirst = types.length > 0 && !(types.length === 1 && GROUPS.some((g) => g.type === types[0]) && groupUsed(types[0]!));
    const out: string[] = ["start := c.Mark()"];
    if (typeFirst) {
      out.push(
        `if !(${types.map((tp) => TYPE_TESTS[tp]!("v")).join(" || ")}) {`,
        `\tif c.Type(${types.map((tp) => goString(tp)).join(", ")}) {`,
        "\t\treturn false",
        "\t}",
        "}",
      );
    }
    const groups: string[][] = [];
    const anyType = ANY_TYPE.filter((k) => keys.has(k));
    if (anyType.length) {
      const lines: string[] = [];
      for (const keyword of anyType) lines.push(...this.keyword(name, keyword, pair, type, pointer));
      if (lines.length) groups.push(lines);
    }
    for (const group of GROUPS) {
      const used = group.keywords.filter((k) => keys.has(k));
      if (used.length === 0) continue;
      const lines: string[] = [];
      for (const keyword of used) lines.push(...this.keyword(name, keyword, pair, type, pointer));
      const inGroupType = types.length === 1 && types[0] === group.type && !typeFirst;
      if (lines.length === 0 && !inGroupType) continue;
      const wrapped = [`if ${GROUP_TESTS[group.type]!("v")} {`, ...indent(lines)];
      if (inGroupType) wrapped.push("} else if c.Type(" + goString(group.type) + ") {", "\treturn false");
      wrapped.push("}");
      groups.push(wrapped);
    }
    groups.forEach((lines, i) => {
      out.push(...lines);
      // Stopping at the first error, a group that reported one ends the check.
      if (i < groups.length - 1) out.push("if c.Since(start) {", "\treturn false", "}");
    });
    out.push("return c.Mark() == start");
    return out;
  }

  /** The code of one keyword; branches on the reading when the two readings differ in it. */
  private keyword(fn: string, keyword: string, pair: Pair, type: TypeModel, pointer: string): string[] {
    const s = pair.strict as JsonObject;
    const t = pair.tolerant as JsonObject;
    const at = `${pointer}/${keyword}`;
    // Keywords holding subschemas are read pairwise, so that a difference deep inside stays there.
    const structural =
      ["properties", "items", "prefixItems", "anyOf", "oneOf", "allOf", "not", "propertyNames"].includes(keyword) ||
      (keyword === "additionalProperties" && isObject(s[keyword]) && isObject(t[keyword]));
    if (
      same(s[keyword], t[keyword]) ||
      (structural && s[keyword] !== undefined && t[keyword] !== undefined && sameShape(s[keyword], t[keyword]))
    ) {
      return this.keywordCode(fn, keyword, s, t, type, at, pointer);
    }
    const strictCode = s[keyword] === undefined ? [] : this.keywordCode(fn, keyword, s, s, type, at, pointer);
    const tolerantCode = t[keyword] === undefined ? [] : this.keywordCode(`${fn}Tolerant`, keyword, t, t, type, at, pointer);
    if (tolerantCode.length === 0) return strictCode.length ? ["if !c.Tolerant() {", ...indent(strictCode), "}"] : [];
    if (strictCode.length === 0) return ["if c.Tolerant() {", ...indent(tolerantCode), "}"];
    return ["if c.Tolerant() {", ...indent(tolerantCode), "} else {", ...indent(strictCode), "}"];
  }

  private keywordCode(fn: string, keyword: string, s: JsonObject, t: JsonObject, type: TypeModel, at: string, pointer: string): string[] {
    const value = s[keyword]!;
    const fail = (call: string) => [`\tif ${call} {`, "\t\treturn false", "\t}"];
    const limit = (): string => {
      if (typeof value !== "number" || !Number.isFinite(value)) this.problem(type.file, at, `${keyword} must be a number`);
      return goNumber(value);
    };
    switch (keyword) {
      case "$ref": {
        const check = this.refCheck(value as string, type, pointer);
        return [`if !${check}(c, v) && !c.All() {`, "\treturn false", "}"];
      }
      case "const":
        return [`if !${valueTest("v", value)} {`, ...fail(`c.NotConst(${goValue(value)})`), "}"];
      case "enum": {
        if (!Array.isArray(value) || value.length === 0) this.problem(type.file, at, "enum must be a non-empty list");
        const table = this.valueTable(value);
        return [`if !jsonrpc.In(v, ${table}) {`, ...fail(`c.NotIn(${table})`), "}"];
      }
      case "not": {
        if (alwaysValid(value)) return [`if c.Matched() {`, "\treturn false", "}"];
        const check = this.sub(`${fn}Not`, { strict: value, tolerant: t.not! }, type, at)!;
        return [`if c.Quietly(v, ${check}) {`, ...fail("c.Matched()"), "}"];
      }
      case "anyOf":
      case "oneOf": {
        if (keyword === "oneOf" && s.discriminator !== undefined) return [];
        const branches = value as Json[];
        const tolerant = t[keyword] as Json[];
        if (!Array.isArray(branches) || branches.length === 0)
          this.problem(type.file, at, `${keyword} must be a non-empty list of schemas`);
        if (keyword === "anyOf" && branches.some((b, i) => alwaysValid(b) && alwaysValid(tolerant[i]))) return [];
        const checks = branches.map((b, i) =>
          alwaysValid(b) && alwaysValid(tolerant[i])
            ? undefined
            : this.sub(`${fn}Branch${i + 1}`, { strict: b, tolerant: tolerant[i]! }, type, `${at}/${i}`),
        );
        const lines = ["mark := c.Mark()", "c.BeginBranch()"];
        if (keyword === "anyOf") {
          lines.push(`ok := ${checks.map((check) => `${check}(c, v)`).join(" || ")}`, "c.EndBranch()", "if ok {");
        } else {
          lines.push("passing := 0");
          for (const check of checks) lines.push(check === undefined ? "passing++" : `if ${check}(c, v) {\n\tpassing++\n}`);
          lines.push("c.EndBranch()", "if passing == 1 {");
        }
        lines.push("\tc.Reset(mark)", `} else if c.NoBranch(${goString(keyword)}) {`, "\treturn false", "}");
        return ["{", ...indent(lines.flatMap((l) => l.split("\n"))), "}"];
      }
      case "allOf": {
        // Every member applies to the value as it is; a failing member stops the check unless every error is collected.
        const members = value as Json[];
        const tolerant = t.allOf as Json[];
        if (!Array.isArray(members) || members.length === 0) this.problem(type.file, at, "allOf must be a non-empty list of schemas");
        const lines: string[] = [];
        members.forEach((member, i) => {
          const check = this.sub(`${fn}Part${i + 1}`, { strict: member, tolerant: tolerant[i]! }, type, `${at}/${i}`);
          if (check !== undefined) lines.push(`if !${check}(c, v) && !c.All() {`, "\treturn false", "}");
        });
        return lines;
      }
      case "maximum":
      case "minimum":
      case "exclusiveMaximum":
      case "exclusiveMinimum": {
        const op = { maximum: ">", minimum: "<", exclusiveMaximum: ">=", exclusiveMinimum: "<=" }[keyword];
        return [`if v.Float() ${op} ${limit()} {`, ...fail(`c.Bound(${goString(keyword)}, ${limit()})`), "}"];
      }
      case "multipleOf":
        return [`if !jsonrpc.MultipleOf(v.Float(), ${limit()}) {`, ...fail(`c.Bound("multipleOf", ${limit()})`), "}"];
      case "maxLength":
        return [`if jsonrpc.Length(v.Str()) > ${limit()} {`, ...fail(`c.Bound("maxLength", ${limit()})`), "}"];
      case "minLength":
        return [`if jsonrpc.Length(v.Str()) < ${limit()} {`, ...fail(`c.Bound("minLength", ${limit()})`), "}"];
      case "pattern": {
        if (typeof value !== "string") this.problem(type.file, at, "pattern must be a string");
        const re = this.pattern(value, type.file, at);
        return [`if !${re}.MatchString(jsonrpc.ForPattern(v.Str())) {`, ...fail(`c.NoMatch(${goString(value)})`), "}"];
      }
      case "maxItems":
        return [`if float64(v.Len()) > ${limit()} {`, ...fail(`c.Bound("maxItems", ${limit()})`), "}"];
      case "minItems":
        return [`if float64(v.Len()) < ${limit()} {`, ...fail(`c.Bound("minItems", ${limit()})`), "}"];
      case "maxProperties":
        return [`if float64(v.Len()) > ${limit()} {`, ...fail(`c.Bound("maxProperties", ${limit()})`), "}"];
      case "minProperties":
        return [`if float64(v.Len()) < ${limit()} {`, ...fail(`c.Bound("minProperties", ${limit()})`), "}"];
      case "prefixItems": {
        const list = value as Json[];
        const tolerant = t.prefixItems as Json[];
        const lines: string[] = [];
        list.forEach((item, i) => {
          const check = this.sub(`${fn}Item${i + 1}`, { strict: item, tolerant: tolerant[i]! }, type, `${at}/${i}`);
          if (check === undefined) return;
          lines.push(
            `if v.Len() > ${i} {`,
            `\tc.EnterIndex(${i})`,
            `\tok := ${check}(c, &v.Items()[${i}])`,
            "\tc.Leave()",
            "\tif !ok && !c.All() {",
            "\t\treturn false",
            "\t}",
            "}",
          );
        });
        return lines;
      }
      case "items": {
        const prefix = Array.isArray(s.prefixItems) ? s.prefixItems.length : 0;
        if (Array.isArray(value)) this.problem(type.file, at, "items as a list is draft 2019 and older; use prefixItems");
        if (prefix > 0 && value === false) return [`if v.Len() > ${prefix} {`, ...fail(`c.TooManyItems(${prefix})`), "}"];
        const check = this.sub(`${fn}Item`, { strict: value, tolerant: t.items! }, type, at);
        if (check === undefined) return [];
        return [
          `for i := ${prefix}; i < v.Len(); i++ {`,
          "\tc.EnterIndex(i)",
          `\tok := ${check}(c, &v.Items()[i])`,
          "\tc.Leave()",
          "\tif !ok && !c.All() {",
          "\t\treturn false",
          "\t}",
          "}",
        ];
      }
      case "required": {
        if (!Array.isArray(value) || !value.every((r) => typeof r === "string"))
          this.problem(type.file, at, "required must be a list of names");
        const lines: string[] = [];
        for (const name of value as string[]) {
          if (PROTOTYPE_NAMES.has(name))
            this.problem(
              type.file,
              at,
              `a member named ${JSON.stringify(name)} reads as present in every object in the TypeScript validators (JavaScript's Object.prototype); rename it`,
            );
          lines.push(`if v.Lookup(${goString(name)}) == nil {`, ...fail(`c.Missing(${goString(name)})`), "}");
        }
        return lines;
      }
      case "propertyNames": {
        const check = this.sub(`${fn}Name`, { strict: value, tolerant: t.propertyNames! }, type, at);
        if (check === undefined) return [];
        return [
          "for _, m := range v.Members() {",
          "\tname := jsonrpc.StringValue(m.Key)",
          "\tc.BeginBranch()",
          `\tok := ${check}(c, &name)`,
          "\tc.EndBranch()",
          "\tif !ok && c.BadName(m.Key) {",
          "\t\treturn false",
          "\t}",
          "}",
        ];
      }
      case "additionalProperties": {
        const declared = isObject(s.properties) ? Object.keys(s.properties).filter((p) => p !== "__proto__") : [];
        if (value === true || alwaysValid(value)) return [];
        const members = ["ms := v.Members()", "for i := range ms {", "\tm := &ms[i]"];
        const close = ["}"];
        if (declared.length) members.push(`\tif ${declared.map((p) => `m.Key == ${goString(p)}`).join(" || ")} {`, "\t\tcontinue", "\t}");
        if (value === false) return [...members, ...fail("c.Unknown(m.Key)").map((l) => l), ...close];
        const check = this.sub(`${fn}Additional`, { strict: value, tolerant: t.additionalProperties! }, type, at)!;
        return [
          ...members,
          "\tc.Enter(m.Key)",
          `\tok := ${check}(c, &m.Value)`,
          "\tc.Leave()",
          "\tif !ok && !c.All() {",
          "\t\treturn false",
          "\t}",
          ...close,
        ];
      }
      case "properties": {
        if (!isObject(value)) this.problem(type.file, at, "properties must be an object");
        const tolerant = t.properties as JsonObject;
        const lines: string[] = [];
        for (const [name, sub] of Object.entries(value)) {
          if (name === "__proto__") continue;
          const check = this.sub(`${fn}${exported(name)}`, { strict: sub, tolerant: tolerant[name]! }, type, `${at}/${escapeToken(name)}`);
          if (check === undefined) continue;
          if (PROTOTYPE_NAMES.has(name))
            this.problem(
              type.file,
              `${at}/${escapeToken(name)}`,
              `a member named ${JSON.stringify(name)} reads as present in every object in the TypeScript validators (JavaScript's Object.prototype); rename it`,
            );
          lines.push(
            `if p := v.Lookup(${goString(name)}); p != nil {`,
            `\tc.Enter(${goString(name)})`,
            `\tok := ${check}(c, p)`,
            "\tc.Leave()",
            "\tif !ok && !c.All() {",
            "\t\treturn false",
            "\t}",
            "}",
          );
        }
        return lines;
      }
      case "discriminator": {
        const d = value as JsonObject;
        const tagName = d.propertyName;
        if (typeof tagName !== "string" || d.mapping !== undefined)
          this.problem(type.file, at, "a discriminator names its propertyName and has no mapping");
        const branches = s.oneOf as Json[];
        if (!Array.isArray(branches)) this.problem(type.file, at, "a discriminator needs oneOf");
        const tolerant = t.oneOf as Json[];
        const lines = [
          `tag := v.Lookup(${goString(tagName)})`,
          "switch {",
          "case tag == nil || tag.Kind() != jsonrpc.String:",
          `\tif c.BadTag(${goString(tagName)}, jsonrpc.ValueOrAbsent(tag)) {`,
          "\t\treturn false",
          "\t}",
        ];
        branches.forEach((branch, i) => {
          const tags = this.branchTags(branch, tagName, type, `${pointer}/oneOf/${i}`);
          const check = this.sub(`${fn}Variant${i + 1}`, { strict: branch, tolerant: tolerant[i]! }, type, `${pointer}/oneOf/${i}`);
          lines.push(`case ${tags.map((tag) => `tag.Str() == ${goString(tag)}`).join(" || ")}:`);
          if (check !== undefined) lines.push(`\tif !${check}(c, v) && !c.All() {`, "\t\treturn false", "\t}");
        });
        lines.push("default:", `\tif c.BadTag(${goString(tagName)}, *tag) {`, "\t\treturn false", "\t}", "}");
        return lines;
      }
    }
    this.problem(type.file, at, `the keyword ${keyword} is not checked by the Go output`);
  }

  /** The tags a discriminator's branch stands for, read as ajv reads them (through a bare $ref). */
  private branchTags(branch: Json, tagName: string, type: TypeModel, pointer: string): string[] {
    let node = branch;
    const ref = bareRef(branch);
    if (ref !== undefined) {
      const { index, fragment } = this.resolve(ref, type, pointer);
      node = Writer.at(this.strict[index]!, fragment) ?? branch;
    }
    const tag = isObject(node) && isObject(node.properties) ? node.properties[tagName] : undefined;
    const values = isObject(tag) ? (tag.const !== undefined ? [tag.const] : Array.isArray(tag.enum) ? tag.enum : []) : [];
    if (values.length === 0 || !values.every((v) => typeof v === "string"))
      this.problem(type.file, pointer, `a variant of a tagged union has a string const or enum at properties/${tagName}`);
    return values as string[];
  }
}

/** The $ref of a schema that is nothing but one (annotations aside), else undefined. */
function bareRef(schema: Json): string | undefined {
  if (!isObject(schema) || typeof schema.$ref !== "string") return undefined;
  return Object.keys(schema).every((k) => k === "$ref" || !RULES.has(k)) ? schema.$ref : undefined;
}

/** Whether two schemas have the same keywords holding subschemas (so that they can be read pairwise). */
function sameShape(a: Json, b: Json): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length;
  if (isObject(a) && isObject(b)) return same(Object.keys(a).sort(), Object.keys(b).sort());
  return typeof a === typeof b;
}

function typesOf(schema: Json, type: TypeModel, pointer: string): string[] {
  if (!isObject(schema) || schema.type === undefined) return [];
  const list = Array.isArray(schema.type) ? schema.type : [schema.type];
  for (const t of list) {
    if (typeof t !== "string" || !(t in TYPE_TESTS))
      throw new SchemaErrors([new SchemaError(type.file, `${pointer}/type`, `unknown type ${JSON.stringify(t)}`)]);
  }
  return list as string[];
}

function indent(lines: readonly string[]): string[] {
  return lines.map((l) => (l === "" ? "" : `\t${l}`));
}

/** A Go raw string literal when the text allows one, else an interpreted one. */
function goRaw(text: string): string {
  return text.includes("`") || /[\u0000-\u0008\u000b-\u001f\u007f]/.test(text) ? goString(text) : `\`${text}\``;
}

/** A Go expression of a jsonrpc.Value holding a JSON value. */
export function goValue(value: Json): string {
  if (value === null) return "jsonrpc.NullValue()";
  if (typeof value === "boolean") return `jsonrpc.BoolValue(${value})`;
  if (typeof value === "number") return `jsonrpc.NumberValue(${goNumber(value)})`;
  if (typeof value === "string") return `jsonrpc.StringValue(${goString(value)})`;
  if (Array.isArray(value)) return `jsonrpc.ArrayValue(${value.map(goValue).join(", ")})`;
  return `jsonrpc.ObjectValue(${Object.entries(value)
    .map(([k, v]) => `jsonrpc.Member{Key: ${goString(k)}, Value: ${goValue(v)}}`)
    .join(", ")})`;
}

/** A Go condition that a *jsonrpc.Value `v` equals a JSON value. */
function valueTest(v: string, value: Json): string {
  if (typeof value === "string") return `(${v}.Kind() == jsonrpc.String && ${v}.Str() == ${goString(value)})`;
  if (typeof value === "number") return `(${v}.Kind() == jsonrpc.Number && ${v}.Float() == ${goNumber(value)})`;
  if (typeof value === "boolean") return `(${v}.Kind() == jsonrpc.Bool && ${v}.Bool() == ${value})`;
  if (value === null) return `${v}.IsNull()`;
  return `${v}.Equal(${goValue(value)})`;
}

/**
 * The check functions of every named type, from the schemas the TypeScript validators are
 * compiled from. `taken` are names already used in the package.
 */
export function goValidators(model: ProtocolModel, taken: Iterable<string>, unions: readonly UnionDecl[] = []): GoValidators {
  const strict = schemasFor(model, "strict");
  const tolerant = schemasFor(model, "tolerant");
  const writer = new Writer(model, taken, strict, tolerant);
  model.types.forEach((type, i) => writer.type(type, { strict: strict[i]!, tolerant: tolerant[i]! }));
  const variantChecks = new Map<string, string>();
  for (const union of unions) {
    union.variants.forEach((v, i) => {
      if (v.place) variantChecks.set(v.place.key, writer.variant(v.place, union.name, i + 1));
    });
  }
  const code = [...writer.vars, "", ...writer.functions.flatMap((f) => [f, ""])].join("\n");
  return { checkOf: writer.checkOf, variantChecks, code, usesRegexp: writer.usesRegexp };
}
