/**
 * validators.py: a check per named type, generated from the contract schemas (the schemas as
 * the TypeScript validators are compiled from them: each union's tag check and the integer
 * range added, annotations dropped), giving the TypeScript verdicts and error pointers. Each
 * keyword is read as ajv reads it with every error collected: the keywords of an instance type
 * apply only to values of that type, a discriminator checks only the branch its tag names, a
 * union that fails reports its branches' issues with its own. Tolerant mode is the same check
 * with `closed` false (additionalProperties: false not enforced). One function per construct
 * below, so a new keyword slots in as one more.
 */
import type { Json, JsonObject, ProtocolModel } from "../../model.js";
import { schemasFor } from "../validators.js";
import { isObject } from "../../walk.js";
import { untranslatedKeyword } from "../translated-keywords.js";
import { splitRef } from "../../refs.js";
import { pyLiteral, pyString, usedImport } from "./names.js";
import { pythonPattern } from "./patterns.js";

/** A keyword the Python checks do not read: the schemas cannot be generated for Python. */
export class UnsupportedForPython extends Error {}

const TYPE_TESTS: Record<string, (v: string) => string> = {
  string: (v) => `isinstance(${v}, str)`,
  integer: (v) => `is_integer(${v})`,
  number: (v) => `is_number(${v})`,
  boolean: (v) => `isinstance(${v}, bool)`,
  null: (v) => `${v} is None`,
  array: (v) => `isinstance(${v}, list)`,
  object: (v) => `isinstance(${v}, dict)`,
};

class CheckWriter {
  private readonly functions: string[] = [];
  private readonly constants: string[] = [];
  private count = 0;
  /** Locals of the function being written: each a fresh name, so that nested checks never overwrite one. */
  private locals = 0;
  private readonly byFile = new Map<string, string>();

  constructor(
    private readonly model: ProtocolModel,
    private readonly schemas: readonly JsonObject[],
  ) {
    model.types.forEach((t) => {
      this.byFile.set(t.file, checkName(t.title));
      for (const def of t.defs) this.byFile.set(`${t.file}#${def.pointer}`, checkName(def.title));
    });
  }

  module(header: string): string {
    this.model.types.forEach((type, i) => {
      const schema = this.schemas[i]!;
      this.functions.push(this.fn(checkName(type.title), schema, `${type.title}`));
      // A local definition is checked as the file's validation schema holds it (closed or opened as the type is).
      const defs = isObject(schema.$defs) ? schema.$defs : {};
      for (const def of type.defs)
        this.functions.push(this.fn(checkName(def.title), defs[def.key] ?? def.schema, `${type.title}${def.pointer}`));
    });
    const names = this.model.types.map((t) => t.title);
    const body = [
      `TypeName = Literal[${names.map(pyString).join(", ")}]`,
      '"""The name of every named type."""',
      "",
      ...this.constants,
      "",
      ...this.functions.flatMap((f) => ["", f]),
      "",
      `CHECKS: Final[dict[str, Check]] = {`,
      ...this.model.types.map((t) => `    ${pyString(t.title)}: ${checkName(t.title)},`),
      "}",
      '"""The check of each named type."""',
      "",
      "",
      'def validate(type_name: TypeName | str, value: object, mode: Mode = "strict") -> list[ValidationIssue]:',
      '    """Every issue of ``value`` as the named type (empty when it is valid)."""',
      "    check = CHECKS.get(type_name)",
      "    if check is None:",
      '        raise KeyError(f"{type_name!r} is not a type of this protocol")',
      "    return run_check(check, value, mode)",
      "",
      "",
      'def is_valid(type_name: TypeName | str, value: object, mode: Mode = "strict") -> bool:',
      '    """Whether ``value`` is a valid value of the named type."""',
      "    found: list[Issue] = []",
      '    CHECKS[type_name](value, "", found, mode == "strict")',
      "    return not found",
      "",
      "",
      'def assert_valid(type_name: TypeName | str, value: object, mode: Mode = "strict") -> None:',
      '    """Raises ValidationFailed, naming every failing place, unless ``value`` is valid."""',
      "    issues = validate(type_name, value, mode)",
      "    if issues:",
      "        raise ValidationFailed(type_name, issues)",
      "",
    ];
    const code = body.join("\n");
    return [
      header,
      `"""Validation of every named type of ${this.model.title} ${this.model.version}: the TypeScript validators' verdicts and pointers, strict or tolerant."""`,
      "",
      "from __future__ import annotations",
      "",
      ...(/\bre\.compile\(/.test(code) ? ["import re"] : []),
      ...usedImport("typing", ["Final", "Literal", "cast"], code),
      "",
      ...usedImport(
        "._wire",
        [
          "ABSENT",
          "Check",
          "Issue",
          "Mode",
          "ValidationFailed",
          "ValidationIssue",
          "esc",
          "is_integer",
          "is_number",
          "json_equal",
          "run_check",
          "type_name",
        ],
        code.replace(/\btype_name: TypeName/g, ""),
      ),
      "",
      code,
    ].join("\n");
  }

  private local(prefix: string): string {
    return `${prefix}${this.locals++}`;
  }

  private fn(name: string, schema: Json, where: string): string {
    const saved = this.locals;
    this.locals = 0;
    const body = this.node(schema, "v", "p", where);
    this.locals = saved;
    return [
      `def ${name}(v: object, p: str, e: list[Issue], closed: bool) -> None:`,
      ...(body.length ? body.map((l) => `    ${l}`) : ["    pass"]),
    ].join("\n");
  }

  private helper(schema: Json, where: string): string {
    const name = `_check_${this.count++}`;
    this.functions.push(this.fn(name, schema, where));
    return name;
  }

  private constant(expression: string): string {
    const name = `_C${this.count++}`;
    this.constants.push(`${name}: Final = ${expression}`);
    return name;
  }

  /** The statements checking value `v` at path `p` against `schema`. */
  private node(schema: Json, v: string, p: string, where: string): string[] {
    if (schema === true) return [];
    if (schema === false) return [`e.append(Issue(${p}, "false schema", ${p}, "no value is allowed here"))`];
    if (!isObject(schema)) throw new UnsupportedForPython(`${where}: a schema that is neither an object nor a boolean`);
    const unread = untranslatedKeyword(schema);
    if (unread !== undefined) throw new UnsupportedForPython(`${where}: the keyword ${unread} is not read by the Python validators`);
    const out: string[] = [];
    out.push(...this.ref(schema, v, p));
    out.push(...this.type(schema, v, p));
    out.push(...this.guarded(`is_number(${v})`, this.numberKeywords(schema, v, p)));
    out.push(...this.guarded(`isinstance(${v}, str)`, this.stringKeywords(schema, v, p, where)));
    const a = this.local("a");
    out.push(...this.guarded(`isinstance(${v}, list)`, this.arrayKeywords(schema, a, p, where), `${a} = cast("list[object]", ${v})`));
    const o = this.local("o");
    out.push(...this.guarded(`isinstance(${v}, dict)`, this.objectKeywords(schema, o, p, where), `${o} = cast("dict[str, object]", ${v})`));
    out.push(...this.valueKeywords(schema, v, p));
    out.push(...this.applicators(schema, v, p, where));
    return out;
  }

  private guarded(test: string, lines: string[], first?: string): string[] {
    return lines.length ? [`if ${test}:`, ...indent(first === undefined ? lines : [first, ...lines])] : [];
  }

  private ref(s: JsonObject, v: string, p: string): string[] {
    if (typeof s.$ref !== "string") return [];
    const { file, fragment } = splitRef(s.$ref);
    const target = file === undefined ? undefined : this.byFile.get(fragment === "" ? file : `${file}#${fragment}`);
    if (!target)
      throw new UnsupportedForPython(`the $ref ${s.$ref}: only a file of the schemas folder or one of its local definitions is read`);
    return [`${target}(${v}, ${p}, e, closed)`];
  }

  private type(s: JsonObject, v: string, p: string): string[] {
    if (s.type === undefined) return [];
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    const test = types.map((t) => TYPE_TESTS[t]!(v)).join(" or ");
    return [
      `if not (${test}):`,
      `    e.append(Issue(${p}, "type", ${p}, ${pyString(`must be ${types.join(" or ")}`)} + f", got {type_name(${v})}"))`,
    ];
  }

  private numberKeywords(s: JsonObject, v: string, p: string): string[] {
    const out: string[] = [];
    const bound = (keyword: string, op: string, message: string) => {
      const limit = s[keyword];
      if (typeof limit !== "number") return;
      out.push(
        `if ${v} ${op} ${pyLiteral(limit)}:`,
        `    e.append(Issue(${p}, ${pyString(keyword)}, ${p}, ${pyString(`must ${message} ${limit}`)}))`,
      );
    };
    bound("minimum", "<", "be at least");
    bound("maximum", ">", "be at most");
    bound("exclusiveMinimum", "<=", "be greater than");
    bound("exclusiveMaximum", ">=", "be less than");
    if (typeof s.multipleOf === "number") {
      out.push(
        `if (${v} / ${pyLiteral(s.multipleOf)}) % 1 != 0:`,
        `    e.append(Issue(${p}, "multipleOf", ${p}, ${pyString(`must be a multiple of ${s.multipleOf}`)}))`,
      );
    }
    return out;
  }

  private stringKeywords(s: JsonObject, v: string, p: string, where: string): string[] {
    const out: string[] = [];
    // Python's len counts code points, as JSON Schema does.
    if (typeof s.minLength === "number")
      out.push(
        `if len(${v}) < ${s.minLength}:`,
        `    e.append(Issue(${p}, "minLength", ${p}, ${pyString(`must be at least ${s.minLength} characters long`)}))`,
      );
    if (typeof s.maxLength === "number")
      out.push(
        `if len(${v}) > ${s.maxLength}:`,
        `    e.append(Issue(${p}, "maxLength", ${p}, ${pyString(`must be at most ${s.maxLength} characters long`)}))`,
      );
    if (typeof s.pattern === "string") {
      let translated: string;
      try {
        translated = pythonPattern(s.pattern);
      } catch (error) {
        throw new UnsupportedForPython(`${where}: ${(error as Error).message}`);
      }
      const regex = this.constant(`re.compile(${pyString(translated)})`);
      out.push(
        `if not ${regex}.search(${v}):`,
        `    e.append(Issue(${p}, "pattern", ${p}, ${pyString(`must match the pattern ${s.pattern}`)}))`,
      );
    }
    return out;
  }

  private arrayKeywords(s: JsonObject, v: string, p: string, where: string): string[] {
    const out: string[] = [];
    if (typeof s.minItems === "number")
      out.push(
        `if len(${v}) < ${s.minItems}:`,
        `    e.append(Issue(${p}, "minItems", ${p}, ${pyString(`must have at least ${s.minItems} items`)}))`,
      );
    if (typeof s.maxItems === "number")
      out.push(
        `if len(${v}) > ${s.maxItems}:`,
        `    e.append(Issue(${p}, "maxItems", ${p}, ${pyString(`must have at most ${s.maxItems} items`)}))`,
      );
    const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : [];
    prefix.forEach((sub, i) => {
      const x = this.local("x");
      const lines = this.node(sub, x, `${p} + "/${i}"`, `${where}/prefixItems/${i}`);
      if (lines.length) out.push(`if len(${v}) > ${i}:`, `    ${x} = ${v}[${i}]`, ...indent(lines));
    });
    if (s.items === false) {
      // No item may follow the positions.
      const i = this.local("i");
      out.push(
        `for ${i} in range(${prefix.length}, len(${v})):`,
        `    e.append(Issue(${p} + f"/{${i}}", "false schema", ${p} + f"/{${i}}", "no value is allowed here"))`,
      );
    } else if (s.items !== undefined && s.items !== true) {
      const [i, x] = [this.local("i"), this.local("x")];
      const lines = this.node(s.items, x, `${p} + f"/{${i}}"`, `${where}/items`);
      if (lines.length)
        out.push(`for ${i}, ${x} in enumerate(${v}${prefix.length ? `[${prefix.length}:], ${prefix.length}` : ""}):`, ...indent(lines));
    }
    if (s.uniqueItems === true) {
      const [j, a, b] = [this.local("j"), this.local("a"), this.local("b")];
      out.push(
        `for ${j}, ${a} in enumerate(${v}):`,
        `    if any(json_equal(${a}, ${b}) for ${b} in ${v}[${j} + 1 :]):`,
        `        e.append(Issue(${p}, "uniqueItems", ${p}, "must not repeat an item"))`,
        "        break",
      );
    }
    return out;
  }

  private objectKeywords(s: JsonObject, v: string, p: string, where: string): string[] {
    const out: string[] = [];
    const required = Array.isArray(s.required) ? (s.required as string[]) : [];
    const properties = isObject(s.properties) ? s.properties : {};
    if (required.length) {
      const names = this.constant(`(${required.map(pyString).join(", ")}${required.length === 1 ? "," : ""})`);
      const n = this.local("n");
      out.push(
        `for ${n} in ${names}:`,
        `    if ${n} not in ${v}:`,
        `        e.append(Issue(${p}, "required", ${p} + "/" + esc(${n}), "is required"))`,
      );
    }
    for (const [name, sub] of Object.entries(properties)) {
      const x = this.local("x");
      const lines = this.node(
        sub,
        x,
        `${p} + ${pyString(`/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`)}`,
        `${where}/properties/${name}`,
      );
      if (lines.length) out.push(`${x} = ${v}.get(${pyString(name)}, ABSENT)`, `if ${x} is not ABSENT:`, ...indent(lines));
    }
    const known = Object.keys(properties);
    const k = this.local("k");
    const isKnown = known.length ? `${k} not in ${this.constant(`frozenset({${known.map(pyString).join(", ")}})`)}` : "True";
    if (s.additionalProperties === false) {
      out.push(
        "if closed:",
        `    for ${k} in ${v}:`,
        `        if ${isKnown}:`,
        `            e.append(Issue(${p}, "additionalProperties", ${p} + "/" + esc(${k}), "is not a known field"))`,
      );
    } else if (s.additionalProperties !== undefined && s.additionalProperties !== true) {
      const x = this.local("x");
      const lines = this.node(s.additionalProperties, x, `${p} + "/" + esc(${k})`, `${where}/additionalProperties`);
      if (lines.length)
        out.push(`for ${k}, ${x} in ${v}.items():`, ...(known.length ? [`    if ${isKnown}:`, ...indent(indent(lines))] : indent(lines)));
    }
    if (s.propertyNames !== undefined && s.propertyNames !== true) {
      // ajv reports a refused key at the object, with the keyword's own issue beside it.
      const [name, before] = [this.local("k"), this.local("n")];
      const lines = this.node(s.propertyNames, name, p, `${where}/propertyNames`);
      if (lines.length)
        out.push(
          `${before} = len(e)`,
          `for ${name} in cast("list[object]", list(${v})):`,
          ...indent(lines),
          `if len(e) > ${before}:`,
          `    e.append(Issue(${p}, "propertyNames", ${p}, "has a field name its schema refuses"))`,
        );
    }
    if (typeof s.minProperties === "number")
      out.push(
        `if len(${v}) < ${s.minProperties}:`,
        `    e.append(Issue(${p}, "minProperties", ${p}, ${pyString(`must have at least ${s.minProperties} fields`)}))`,
      );
    if (typeof s.maxProperties === "number")
      out.push(
        `if len(${v}) > ${s.maxProperties}:`,
        `    e.append(Issue(${p}, "maxProperties", ${p}, ${pyString(`must have at most ${s.maxProperties} fields`)}))`,
      );
    if (s.discriminator !== undefined) out.push(...this.discriminator(s, v, p, where));
    return out;
  }

  /** The tag names the branch to check; only that branch is checked (the tag's own check reports a bad tag). */
  private discriminator(s: JsonObject, v: string, p: string, where: string): string[] {
    const tag = (s.discriminator as JsonObject).propertyName as string;
    const branches = (s.oneOf as JsonObject[]).map((branch) => {
      const file = (branch.$ref as string).replace(/^.*\//, "");
      const target = this.model.byFile.get(file);
      const property = target && isObject(target.schema.properties) ? target.schema.properties[tag] : undefined;
      if (!target || !isObject(property) || typeof property.const !== "string")
        throw new UnsupportedForPython(`${where}: a discriminator branch without its tag`);
      return { tag: property.const, check: this.byFile.get(file)! };
    });
    const pointer = `${p} + ${pyString(`/${tag.replace(/~/g, "~0").replace(/\//g, "~1")}`)}`;
    const t = this.local("t");
    return [
      `${t} = ${v}.get(${pyString(tag)})`,
      ...branches.flatMap((b, i) => [`${i ? "elif" : "if"} ${t} == ${pyString(b.tag)}:`, `    ${b.check}(${v}, ${p}, e, closed)`]),
      "else:",
      `    e.append(Issue(${p}, "discriminator", ${pointer}, "must name a known variant"))`,
    ];
  }

  private valueKeywords(s: JsonObject, v: string, p: string): string[] {
    const out: string[] = [];
    if (Array.isArray(s.enum)) {
      const values = this.constant(`(${s.enum.map(pyLiteral).join(", ")}${s.enum.length === 1 ? "," : ""})`);
      const a = this.local("a");
      out.push(
        `if not any(json_equal(${v}, ${a}) for ${a} in ${values}):`,
        `    e.append(Issue(${p}, "enum", ${p}, ${pyString(`must be one of ${s.enum.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(", ")}`)}))`,
      );
    }
    if ("const" in s)
      out.push(
        `if not json_equal(${v}, ${pyLiteral(s.const)}):`,
        `    e.append(Issue(${p}, "const", ${p}, ${pyString(`must be ${JSON.stringify(s.const)}`)}))`,
      );
    return out;
  }

  private applicators(s: JsonObject, v: string, p: string, where: string): string[] {
    const out: string[] = [];
    if (Array.isArray(s.allOf)) s.allOf.forEach((sub, i) => out.push(...this.node(sub, v, p, `${where}/allOf/${i}`)));
    if (Array.isArray(s.anyOf)) {
      // The first branch that holds ends the search; when none holds, every branch's issues are reported with the union's.
      const branches = s.anyOf.map((sub, i) => this.helper(sub, `${where}/anyOf/${i}`));
      const found = this.local("b");
      out.push(`${found}: list[Issue] = []`, `${branches[0]}(${v}, ${p}, ${found}, closed)`);
      for (const fn of branches.slice(1)) {
        const more = this.local("c");
        out.push(
          `if ${found}:`,
          `    ${more}: list[Issue] = []`,
          `    ${fn}(${v}, ${p}, ${more}, closed)`,
          `    ${found} = ${found} + ${more} if ${more} else []`,
        );
      }
      out.push(`if ${found}:`, `    e.extend(${found})`, `    e.append(Issue(${p}, "anyOf", ${p}, "does not match any allowed shape"))`);
    }
    if (Array.isArray(s.oneOf) && s.discriminator === undefined) {
      const branches = s.oneOf.map((sub, i) => this.helper(sub, `${where}/oneOf/${i}`));
      const [passing, found] = [this.local("n"), this.local("b")];
      out.push(`${passing} = 0`, `${found}: list[Issue] = []`);
      for (const fn of branches) {
        const more = this.local("c");
        out.push(
          `${more}: list[Issue] = []`,
          `${fn}(${v}, ${p}, ${more}, closed)`,
          `if ${more}:`,
          `    ${found}.extend(${more})`,
          "else:",
          `    ${passing} += 1`,
        );
      }
      out.push(
        `if ${passing} != 1:`,
        `    if ${passing} == 0:`,
        `        e.extend(${found})`,
        `    e.append(Issue(${p}, "oneOf", ${p}, "does not match exactly one allowed shape"))`,
      );
    }
    if (s.not !== undefined) {
      const fn = this.helper(s.not, `${where}/not`);
      const found = this.local("b");
      out.push(
        `${found}: list[Issue] = []`,
        `${fn}(${v}, ${p}, ${found}, closed)`,
        `if not ${found}:`,
        `    e.append(Issue(${p}, "not", ${p}, "must not match the schema"))`,
      );
    }
    return out;
  }
}

function indent(lines: readonly string[]): string[] {
  return lines.map((l) => `    ${l}`);
}

export function checkName(title: string): string {
  return `check_${title}`;
}

/** validators.py of a model. */
export function emitPythonChecks(model: ProtocolModel, header: string): string {
  return new CheckWriter(model, schemasFor(model, "strict")).module(header);
}
