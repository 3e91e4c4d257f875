/**
 * Accept-only checks: for each named type, a JavaScript predicate that gives the answer
 * ajv's precompiled validator gives (valid or not) without building an error, emitted into
 * the fast validator modules beside ajv's code. The exported validator runs the check
 * first; only a value the check refuses goes to ajv's validator, which decides again and
 * writes the error. So what is accepted, refused and reported stays ajv's, and the success
 * path costs what the schema asks for: each property read once into a local, one-argument
 * calls between types (no context object, no instance path built for nothing), `integer`
 * as `Number.isInteger`, a tagged union as one dispatch on its tag, a closed object as one
 * loop over its keys.
 *
 * Each check follows ajv's reading of a keyword exactly (the keywords of an instance type
 * apply only to values of that type, `number` means a finite number, lengths count code
 * points, a discriminator tries only the branch its tag names). A schema with a keyword
 * outside the subset below gets no check: its type's validator is ajv's alone, and the
 * types referring to it call ajv's validator for it, so no check ever answers on a guess.
 */
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { isObject } from "../walk.js";

/** A keyword (or form of one) the accept-only compiler does not translate; the type keeps ajv's validator alone. */
class Unsupported extends Error {}

/** Keywords that do not change what is valid: annotations (and `format`, while ajv's validateFormats is off: see AcceptOptions). */
const IGNORED = new Set([
  "$schema",
  "$comment",
  "$defs",
  "title",
  "description",
  "examples",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "format",
  "contentEncoding",
  "contentMediaType",
]);

const TRANSLATED = new Set([
  "$ref",
  "type",
  "enum",
  "const",
  "properties",
  "required",
  "additionalProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "discriminator",
  "items",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
]);

/**
 * Closed objects with more known keys than this, and enums with more values, test against a
 * hoisted Set instead of a chain of comparisons. Object keys are internalized strings, so each
 * comparison is one pointer test; on the bench/validation.ts corpus the chain was measured
 * about 10% faster overall than Set.has (a hash lookup per key), with up to 28 keys per object.
 */
const CHAIN_LIMIT = 32;

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `x.key` or `x["key"]`, as ajv reads a property (so `__proto__` and friends mean what they mean there). */
function property(x: string, key: string): string {
  return IDENTIFIER.test(key) ? `${x}.${key}` : `${x}[${JSON.stringify(key)}]`;
}

const isPrimitive = (value: Json): boolean => value === null || ["string", "number", "boolean"].includes(typeof value);

/** The JavaScript test of one JSON Schema type, as ajv writes it with strict numbers. */
function typeTest(type: Json, x: string): string {
  switch (type) {
    case "string":
      return `typeof ${x} === "string"`;
    case "number":
      return `Number.isFinite(${x})`;
    case "integer":
      return `Number.isInteger(${x})`;
    case "boolean":
      return `typeof ${x} === "boolean"`;
    case "null":
      return `${x} === null`;
    case "array":
      return `Array.isArray(${x})`;
    case "object":
      return `(typeof ${x} === "object" && ${x} !== null && !Array.isArray(${x}))`;
    default:
      throw new Unsupported(`type ${JSON.stringify(type)}`);
  }
}

/** The negation of typeTest, written as such. */
function typeRefusal(type: Json, x: string): string {
  switch (type) {
    case "string":
      return `typeof ${x} !== "string"`;
    case "boolean":
      return `typeof ${x} !== "boolean"`;
    case "null":
      return `${x} !== null`;
    case "object":
      return `typeof ${x} !== "object" || ${x} === null || Array.isArray(${x})`;
    default:
      return `!${typeTest(type, x)}`;
  }
}

/** The code of one type: its functions and hoisted constants, discarded whole if a keyword is unsupported. */
class TypeUnit {
  readonly functions: string[] = [];
  readonly constants: string[] = [];
  private readonly byUri = new Map<string, string>();
  /** The `$ref`-only fragments being followed, so that a loop of them is refused rather than followed forever. */
  private readonly following = new Set<string>();
  private count = 0;

  constructor(
    readonly compiler: AcceptCompiler,
    readonly index: number,
  ) {}

  name(kind: string): string {
    return `accept${kind}${this.index}_${this.count++}`;
  }

  /** A function checking `schema` (read with `base` as its document), for branches and `$ref` fragments. */
  fn(schema: Json, base: string, uri?: string): string {
    if (uri !== undefined) {
      const known = this.byUri.get(uri);
      if (known) return known;
    }
    if (isObject(schema) && Object.keys(schema).length === 1 && typeof schema.$ref === "string") {
      const key = uri ?? `${base} ${schema.$ref}`;
      if (this.following.has(key)) throw new Unsupported(`a loop of $refs through ${schema.$ref}`);
      this.following.add(key);
      try {
        return this.ref(schema.$ref, base);
      } finally {
        this.following.delete(key);
      }
    }
    const name = this.name("");
    if (uri !== undefined) this.byUri.set(uri, name);
    this.functions.push(this.body(name, schema, base));
    return name;
  }

  /** `function name(data)`; `root` when `schema` is a whole document, whose own `$id` is its base. */
  body(name: string, schema: Json, base: string, root = false): string {
    const locals = new Locals();
    const lines = new SchemaReader(this, base, locals, root ? schema : undefined).check(schema, "data");
    return [`function ${name}(data) {`, ...lines.map((l) => `  ${l}`), "  return true;", "}"].join("\n");
  }

  /** The function a `$ref` calls: another type's check, or a fragment compiled into this unit. */
  ref(ref: string, base: string): string {
    const target = this.locate(ref, base);
    if (target.fragment === "") return this.compiler.acceptName(target.index);
    return this.fn(target.node, target.document, `${target.document}#${target.fragment}`);
  }

  /** The schema a `$ref` names: its type's index, the document's URI and the JSON pointer inside it. */
  locate(ref: string, base: string): { readonly index: number; readonly document: string; readonly fragment: string; readonly node: Json } {
    let url: URL;
    try {
      url = new URL(ref, base);
    } catch {
      throw new Unsupported(`$ref ${ref}`);
    }
    const fragment = decodeURIComponent(url.hash.replace(/^#/, ""));
    url.hash = "";
    const index = this.compiler.typeIndex(url.href);
    if (index === undefined) throw new Unsupported(`$ref ${ref} outside the schemas`);
    if (fragment !== "" && !fragment.startsWith("/")) throw new Unsupported(`$ref ${ref} to an anchor`);
    let node: Json | undefined = this.compiler.schemas[index];
    for (const raw of fragment === "" ? [] : fragment.slice(1).split("/")) {
      const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
      node = isObject(node) ? node[token] : Array.isArray(node) ? node[Number(token)] : undefined;
      if (node === undefined) throw new Unsupported(`$ref ${ref} to nothing`);
    }
    return { index, document: url.href, fragment, node: node! };
  }
}

/** Local variable names of one function. */
class Locals {
  private count = 0;
  next(prefix: string): string {
    return `${prefix}${this.count++}`;
  }
}

/** Translates the keywords of one schema node into statements that `return false` when the value is not valid. */
class SchemaReader {
  constructor(
    private readonly unit: TypeUnit,
    private readonly base: string,
    private readonly locals: Locals,
    private readonly document: Json | undefined,
  ) {}

  check(schema: Json, x: string): string[] {
    if (schema === true) return [];
    if (schema === false) return ["return false;"];
    if (!isObject(schema)) throw new Unsupported("a schema that is neither an object nor a boolean");
    for (const key of Object.keys(schema)) {
      if (key === "$id" && schema === this.document) continue; // a document's own $id; a nested one would move the base of its $refs
      if (!TRANSLATED.has(key) && !IGNORED.has(key)) throw new Unsupported(key);
      if (key === "format" && this.unit.compiler.options.validateFormats) throw new Unsupported("format, checked by ajv");
    }
    const s = schema;
    const out: string[] = [];
    if (typeof s.$ref === "string") out.push(`if (!${this.unit.ref(s.$ref, this.base)}(${x})) return false;`);
    else if (s.$ref !== undefined) throw new Unsupported("$ref that is not a string");

    let types: Json[] | undefined;
    if (s.type !== undefined) {
      types = Array.isArray(s.type) ? s.type : [s.type];
      if (types.length === 0) throw new Unsupported("an empty list of types");
      out.push(
        types.length === 1
          ? `if (${typeRefusal(types[0]!, x)}) return false;`
          : `if (!(${types.map((t) => typeTest(t, x)).join(" || ")})) return false;`,
      );
    }
    // The keywords of an instance type apply only to values of that type: guarded unless the
    // type keyword already left only that type, and left out when it rules the type out.
    const applies = (...kinds: string[]): boolean => types === undefined || types.some((t) => kinds.includes(t as string));
    const only = (...kinds: string[]): boolean => types !== undefined && types.every((t) => kinds.includes(t as string));
    const guarded = (test: string, onlyThis: boolean, lines: string[]): string[] =>
      lines.length === 0 ? [] : onlyThis ? lines : [`if (${test}) {`, ...indent(lines), "}"];

    if (s.enum !== undefined) {
      if (!Array.isArray(s.enum) || !s.enum.every(isPrimitive)) throw new Unsupported("enum of objects or arrays");
      out.push(`if (!(${s.enum.length ? this.oneOfValues(s.enum, x) : "false"})) return false;`);
    }
    if (s.const !== undefined) {
      if (!isPrimitive(s.const)) throw new Unsupported("const of an object or array");
      out.push(`if (${x} !== ${JSON.stringify(s.const)}) return false;`);
    }
    if (applies("object")) out.push(...guarded(typeTest("object", x), only("object"), this.objectKeywords(s, x)));
    if (applies("array")) out.push(...guarded(`Array.isArray(${x})`, only("array"), this.arrayKeywords(s, x)));
    if (applies("string")) out.push(...guarded(`typeof ${x} === "string"`, only("string"), this.stringKeywords(s, x)));
    if (applies("number", "integer")) out.push(...guarded(`Number.isFinite(${x})`, only("number", "integer"), this.numberKeywords(s, x)));

    if (s.allOf !== undefined) for (const sub of this.list(s, "allOf")) out.push(...this.check(sub, x));
    if (s.anyOf !== undefined)
      out.push(
        `if (!(${this.branches(s, "anyOf")
          .map((f) => `${f}(${x})`)
          .join(" || ")})) return false;`,
      );
    if (s.discriminator !== undefined && !this.unit.compiler.options.discriminator)
      throw new Unsupported("discriminator without ajv's discriminator option");
    if (s.oneOf !== undefined && s.discriminator === undefined) {
      const n = this.locals.next("n");
      out.push(
        `let ${n} = 0;`,
        ...this.branches(s, "oneOf").map((f) => `if (${f}(${x}) && ++${n} > 1) return false;`),
        `if (${n} !== 1) return false;`,
      );
    }
    if (s.not !== undefined) out.push(`if (${this.unit.fn(s.not, this.base)}(${x})) return false;`);
    return out;
  }

  private list(s: JsonObject, key: string): Json[] {
    const list = s[key];
    if (!Array.isArray(list) || list.length === 0) throw new Unsupported(`${key} that is not a list of schemas`);
    return list;
  }

  private branches(s: JsonObject, key: string): string[] {
    return this.list(s, key).map((sub) => this.unit.fn(sub, this.base));
  }

  private oneOfValues(values: readonly Json[], x: string): string {
    if (values.length > CHAIN_LIMIT) return `${this.hoistSet(values)}.has(${x})`;
    return values.map((v) => `${x} === ${JSON.stringify(v)}`).join(" || ");
  }

  private hoistSet(values: readonly Json[]): string {
    const name = this.unit.name("Set");
    this.unit.constants.push(`const ${name} = new Set(${JSON.stringify(values)});`);
    return name;
  }

  private objectKeywords(s: JsonObject, x: string): string[] {
    const out: string[] = [];
    const properties = s.properties === undefined ? {} : s.properties;
    if (!isObject(properties)) throw new Unsupported("properties that is not an object");
    const required = s.required === undefined ? [] : s.required;
    if (!Array.isArray(required) || !required.every((r) => typeof r === "string"))
      throw new Unsupported("required that is not a list of names");
    const requiredSet = new Set(required as string[]);
    const known = Object.keys(properties);
    const dispatch = s.discriminator === undefined ? undefined : this.dispatch(s);
    let tagLocal: string | undefined;
    // Every property read once; a required one must be there, any one present must match its schema.
    for (const key of [...known, ...(required as string[]).filter((r) => !Object.hasOwn(properties, r))]) {
      const v = this.locals.next("v");
      const schema = properties[key];
      // The tag's own enum (see withTagCheck) names exactly the branches: the dispatch below refuses every other value.
      const impliedByDispatch =
        dispatch?.tagName === key &&
        isObject(schema) &&
        Object.keys(schema).length === 1 &&
        Array.isArray(schema.enum) &&
        sameStrings(schema.enum, dispatch.tags);
      const sub = schema === undefined || impliedByDispatch ? [] : this.check(schema, v);
      if (dispatch?.tagName === key) tagLocal = v;
      else if (!requiredSet.has(key) && sub.length === 0) continue;
      out.push(`const ${v} = ${property(x, key)};`);
      if (requiredSet.has(key)) out.push(`if (${v} === undefined) return false;`, ...sub);
      else if (sub.length) out.push(`if (${v} !== undefined) {`, ...indent(sub), "}");
    }
    if (dispatch) out.push(...this.discriminator(dispatch, x, tagLocal));

    const additional = s.additionalProperties;
    const names = s.propertyNames;
    const keyLines: string[] = [];
    const k = this.locals.next("k");
    if (names !== undefined && names !== true) keyLines.push(...this.check(names, k));
    if (additional !== undefined && additional !== true) {
      const isKnown =
        known.length > CHAIN_LIMIT ? `${this.hoistSet(known)}.has(${k})` : known.map((p) => `${k} === ${JSON.stringify(p)}`).join(" || ");
      if (additional === false) keyLines.push(known.length ? `if (!(${isKnown})) return false;` : "return false;");
      else {
        const a = this.locals.next("a");
        const sub = this.check(additional, a);
        const lines = [`const ${a} = ${x}[${k}];`, ...sub];
        if (sub.length) keyLines.push(...(known.length ? [`if (!(${isKnown})) {`, ...indent(lines), "}"] : lines));
      }
    }
    if (keyLines.length) out.push(`for (const ${k} in ${x}) {`, ...indent(keyLines), "}");

    for (const [keyword, op] of [
      ["minProperties", "<"],
      ["maxProperties", ">"],
    ] as const) {
      const limit = s[keyword];
      if (limit === undefined) continue;
      if (typeof limit !== "number") throw new Unsupported(keyword);
      out.push(`if (Object.keys(${x}).length ${op} ${limit}) return false;`);
    }
    return out;
  }

  /** A discriminator's tag name and, per branch, its tags and check; as ajv reads them (the branch's `properties/<tag>`, `const` or `enum`). */
  private dispatch(s: JsonObject): {
    readonly tagName: string;
    readonly tags: readonly string[];
    readonly branches: readonly { readonly tags: readonly string[]; readonly check: string }[];
  } {
    const d = s.discriminator;
    if (!isObject(d) || typeof d.propertyName !== "string" || d.mapping !== undefined) throw new Unsupported("discriminator form");
    const tagName = d.propertyName;
    const seen = new Set<string>();
    const branches = this.list(s, "oneOf").map((branch) => {
      // As ajv: a branch that is only a $ref is read through it; any other branch is read as written.
      const onlyRef =
        isObject(branch) && typeof branch.$ref === "string" && Object.keys(branch).every((k) => k === "$ref" || IGNORED.has(k));
      const read = onlyRef ? this.unit.locate((branch as JsonObject).$ref as string, this.base).node : branch;
      const tag = isObject(read) && isObject(read.properties) ? read.properties[tagName] : undefined;
      if (!isObject(tag)) throw new Unsupported("discriminator branch without its tag");
      const values = tag.const !== undefined ? [tag.const] : Array.isArray(tag.enum) ? tag.enum : [];
      if (values.length === 0 || !values.every((v) => typeof v === "string" && !seen.has(v))) throw new Unsupported("discriminator tags");
      for (const v of values as string[]) seen.add(v);
      return { tags: values as string[], check: this.unit.fn(branch, this.base) };
    });
    return { tagName, tags: [...seen], branches };
  }

  /** ajv's discriminator: the tag must be a string naming a branch, and only that branch is checked (`oneOf` is not counted). */
  private discriminator(dispatch: ReturnType<SchemaReader["dispatch"]>, x: string, loaded: string | undefined): string[] {
    const t = loaded ?? this.locals.next("t");
    const cases = dispatch.branches.flatMap((b, i) => [
      `${i ? "} else if" : "if"} (${b.tags.map((v) => `${t} === ${JSON.stringify(v)}`).join(" || ")}) {`,
      `  if (!${b.check}(${x})) return false;`,
    ]);
    return [
      ...(loaded ? [] : [`const ${t} = ${property(x, dispatch.tagName)};`]),
      `if (typeof ${t} !== "string") return false;`,
      ...cases,
      "} else return false;",
    ];
  }

  private arrayKeywords(s: JsonObject, x: string): string[] {
    const out: string[] = [];
    if (s.prefixItems !== undefined || s.contains !== undefined) throw new Unsupported("prefixItems or contains");
    if (s.uniqueItems !== undefined && s.uniqueItems !== false) throw new Unsupported("uniqueItems");
    if (s.minItems !== undefined) out.push(`if (${x}.length < ${this.limit(s, "minItems")}) return false;`);
    if (s.maxItems !== undefined) out.push(`if (${x}.length > ${this.limit(s, "maxItems")}) return false;`);
    if (s.items !== undefined && s.items !== true) {
      if (Array.isArray(s.items)) throw new Unsupported("items as a list");
      const i = this.locals.next("i");
      const e = this.locals.next("e");
      const sub = this.check(s.items, e);
      if (sub.length) out.push(`for (let ${i} = 0; ${i} < ${x}.length; ${i}++) {`, `  const ${e} = ${x}[${i}];`, ...indent(sub), "}");
    }
    return out;
  }

  private stringKeywords(s: JsonObject, x: string): string[] {
    const out: string[] = [];
    if (this.unit.compiler.options.unicode === false) {
      if (s.minLength !== undefined) out.push(`if (${x}.length < ${this.limit(s, "minLength")}) return false;`);
      if (s.maxLength !== undefined) out.push(`if (${x}.length > ${this.limit(s, "maxLength")}) return false;`);
    } else {
      // Lengths in code points, counted only when the UTF-16 length cannot decide: a string has
      // at most as many code points as code units, and at least half as many.
      if (s.minLength !== undefined) {
        const min = this.limit(s, "minLength");
        out.push(`if (${x}.length < ${2 * min} && (${x}.length < ${min} || ${CODE_POINTS}(${x}) < ${min})) return false;`);
      }
      if (s.maxLength !== undefined) {
        const max = this.limit(s, "maxLength");
        out.push(`if (${x}.length > ${max} && (${x}.length > ${2 * max} || ${CODE_POINTS}(${x}) > ${max})) return false;`);
      }
      if (s.minLength !== undefined || s.maxLength !== undefined) this.unit.compiler.usesCodePoints = true;
    }
    if (s.pattern !== undefined) {
      if (typeof s.pattern !== "string") throw new Unsupported("pattern");
      const name = this.unit.name("Pattern");
      // The flags ajv gives a pattern (unicodeRegExp, on by default).
      this.unit.constants.push(`const ${name} = new RegExp(${JSON.stringify(s.pattern)}, "u");`);
      out.push(`if (!${name}.test(${x})) return false;`);
    }
    return out;
  }

  private numberKeywords(s: JsonObject, x: string): string[] {
    const out: string[] = [];
    if (s.multipleOf !== undefined) throw new Unsupported("multipleOf");
    for (const [keyword, op] of [
      ["minimum", "<"],
      ["maximum", ">"],
      ["exclusiveMinimum", "<="],
      ["exclusiveMaximum", ">="],
    ] as const) {
      if (s[keyword] !== undefined) out.push(`if (${x} ${op} ${this.limit(s, keyword)}) return false;`);
    }
    return out;
  }

  private limit(s: JsonObject, keyword: string): number {
    const value = s[keyword];
    if (typeof value !== "number" || !Number.isFinite(value)) throw new Unsupported(keyword);
    return value;
  }
}

function sameStrings(a: readonly Json[], b: readonly string[]): boolean {
  const set = new Set(b);
  return a.length === set.size && a.every((v) => typeof v === "string" && set.has(v));
}

function indent(lines: readonly string[]): string[] {
  return lines.map((l) => `  ${l}`);
}

/** The ajv options the checks must read keywords by, as the validators beside them were compiled. */
export interface AcceptOptions {
  /** Lengths in code points (ajv's `unicode`, on unless false). */
  readonly unicode?: boolean;
  /** Whether `discriminator` dispatches on the tag (ajv's `discriminator`); the checks need it on. */
  readonly discriminator: boolean;
  /** Whether ajv checks `format` (ajv's `validateFormats`); the checks read it as an annotation only while it is off. */
  readonly validateFormats: boolean;
}

/** The name of the code point counter the checks call, defined once in the module when a check needs it. */
const CODE_POINTS = "acceptCodePoints";

/** The code point counter, as ajv's ucs2length counts (a lone surrogate is one code point). */
const CODE_POINTS_FUNCTION = [
  `function ${CODE_POINTS}(text) {`,
  "  let length = 0;",
  "  for (let pos = 0; pos < text.length; length++) {",
  "    const code = text.charCodeAt(pos++);",
  "    if (code >= 0xd800 && code <= 0xdbff && pos < text.length && (text.charCodeAt(pos) & 0xfc00) === 0xdc00) pos++;",
  "  }",
  "  return length;",
  "}",
].join("\n");

class AcceptCompiler {
  private readonly byId = new Map<string, number>();
  /** Whether some check counts code points (and the module needs CODE_POINTS_FUNCTION). */
  usesCodePoints = false;
  constructor(
    readonly model: ProtocolModel,
    readonly schemas: readonly JsonObject[],
    readonly options: AcceptOptions,
  ) {
    model.types.forEach((t, i) => this.byId.set(new URL(t.id).href.replace(/#$/, ""), i));
  }
  typeIndex(href: string): number | undefined {
    return this.byId.get(href);
  }
  acceptName(index: number): string {
    return `accept${index}`;
  }
}

/** What acceptChecks emits: the code, and the titles whose validator is ajv's alone, with the reason. */
export interface AcceptChecks {
  readonly code: string;
  readonly uncovered: ReadonlyMap<string, string>;
}

/**
 * The accept-only checks of every type, as JavaScript for the scope of ajv's standalone code:
 * `accept<i>` for the type at index i of `model.types`, compiled from `schemas` (the schemas
 * that scope's validators were compiled from, in the same order). `full(title)` is the
 * expression of ajv's validator for a title, which a type without a check uses instead.
 */
export function acceptChecks(
  model: ProtocolModel,
  schemas: readonly JsonObject[],
  options: AcceptOptions,
  full: (title: string) => string,
): AcceptChecks {
  const compiler = new AcceptCompiler(model, schemas, options);
  const constants: string[] = [];
  const functions: string[] = [];
  const uncovered = new Map<string, string>();
  model.types.forEach((type, i) => {
    const unit = new TypeUnit(compiler, i);
    try {
      unit.functions.unshift(unit.body(compiler.acceptName(i), schemas[i]!, new URL(type.id).href, true));
      constants.push(...unit.constants);
      functions.push(...unit.functions);
    } catch (error) {
      if (!(error instanceof Unsupported)) throw error;
      uncovered.set(type.title, error.message);
      functions.push(
        `// ${type.title}: no accept-only check (${error.message}); ajv's validator answers.`,
        `const ${compiler.acceptName(i)} = ${full(type.title)};`,
      );
    }
  });
  if (compiler.usesCodePoints) constants.push(CODE_POINTS_FUNCTION);
  return { code: [...constants, ...functions].join("\n"), uncovered };
}
