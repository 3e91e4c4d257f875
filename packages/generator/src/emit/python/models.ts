/**
 * models.py: one pydantic v2 model (or type alias) per named type, read from the model's
 * schemas through small functions, one per construct:
 *
 * - an object is a `WireModel` class: unknown fields kept, absent and `null` kept apart (an
 *   optional field that may be null distinguishes the two by `model_fields_set`; one that may
 *   not reads `None` when absent), wire names as aliases where Python needs another name;
 * - a tagged union is a discriminated union of its named variant classes, by their tag;
 * - an enum or const is a `Literal`, a nullable pair `T | None`, an array `list[T]`, a map
 *   `dict[str, T]`, a value the schema says nothing about `JsonValue`;
 * - an object nested in a type gets a class of its own, named after its place;
 * - a file's local definitions (`$defs`) are named types of their own, `#` the file's own type;
 * - an `allOf` of named objects is a class with those classes as bases (and the fields of any
 *   inline member);
 * - a tuple (`prefixItems`) is a `tuple[...]`, one per allowed length, or a list when more
 *   items may follow;
 * - an `x-open` enum adds its values' type (`Literal["a", "b"] | str`), an `x-open` union a
 *   class of its own for a variant it does not list;
 * - aliases that refer to each other (a recursive type) are `TypeAliasType`s.
 *
 * Descriptions become docstrings, a schema's `default` a line of the docstring.
 */
import type { Json, JsonObject, ProtocolModel, TypeModel } from "../../model.js";
import { nullablePair } from "../../diff/sample.js";
import { refName } from "../type-expression.js";
import { jsonTypesOf } from "../../open.js";
import { isObject } from "../../walk.js";
import { allowsNull, isStructSchema } from "../struct-shapes.js";
import { docstring, fieldName, pascalCase, pyLiteral, pyString, usedImport } from "./names.js";

interface ClassDef {
  readonly name: string;
  readonly lines: string[];
  /** The generated classes it derives from (defined before it). */
  readonly bases: readonly string[];
}

interface AliasDef {
  readonly name: string;
  readonly expression: string;
  readonly description: string;
  /** Names the expression reads at run time (aliases must be defined after them). */
  readonly uses: readonly string[];
  /** Part of a cycle of aliases: declared as a TypeAliasType, its expression read lazily. */
  recursive?: boolean;
}

/** The Python type of each named type, and what models.py declares for it. */
export class PythonModels {
  private readonly classes: ClassDef[] = [];
  private readonly aliases: AliasDef[] = [];
  private readonly used = new Set<string>();
  private readonly unions: Map<string, { propertyName: string }>;
  /** The file whose schema is being read: local `$ref`s are resolved in it. */
  private file = "";

  constructor(private readonly model: ProtocolModel) {
    for (const type of model.types) {
      this.used.add(type.title);
      for (const def of type.defs) this.used.add(def.title);
    }
    this.unions = new Map(model.unions.map((u) => [u.title, { propertyName: u.propertyName }]));
  }

  /** Whether a named type is a class (an object schema), as opposed to an alias. */
  isClass(type: TypeModel): boolean {
    return !this.unions.has(type.title) && isStructSchema(type.schema);
  }

  /** The whole module. */
  emit(header: string): string {
    for (const type of this.model.types) {
      this.file = type.file;
      this.namedType(type.title, type.schema, type.description);
      for (const def of type.defs)
        this.namedType(
          def.title,
          def.schema,
          typeof def.schema.description === "string" ? def.schema.description : `${def.title}, a local definition of ${type.title}.`,
        );
    }
    const body: string[] = [];
    for (const c of orderClasses(this.classes)) body.push("", ...c.lines, "");
    for (const a of orderAliases(this.aliases)) {
      const line = a.recursive
        ? `${a.name} = TypeAliasType(${pyString(a.name)}, ${pyString(a.expression)})`
        : `${a.name}: TypeAlias = ${a.expression}`;
      body.push("", line, ...docstring(a.description, ""));
    }
    body.push("", "");
    for (const c of this.classes) body.push(`${c.name}.model_rebuild()`);
    body.push(
      "",
      `__all__ = [${[...this.classes.map((c) => c.name), ...this.aliases.map((a) => a.name)].sort().map(pyString).join(", ")}]`,
    );
    const code = body.join("\n");
    const lines = [
      header,
      `"""Every named type of ${this.model.title} ${this.model.version}, as pydantic models."""`,
      "",
      "from __future__ import annotations",
      "",
      ...usedImport("typing", ["Annotated", "ClassVar", "Literal", "TypeAlias", "Union"], code),
      "",
      ...usedImport("pydantic", ["Field", "JsonValue"], code),
      ...usedImport("typing_extensions", ["TypeAliasType"], code),
      "",
      "from ._wire import WireModel",
      "",
      code,
    ];
    return `${lines.join("\n").replace(/\n{4,}/g, "\n\n\n")}\n`;
  }

  private namedType(title: string, schema: JsonObject, description: string): void {
    const union = this.unions.get(title);
    if (union && schema["x-open"] !== true) {
      const variants = (schema.oneOf as JsonObject[]).map((v) => this.refTitle(v.$ref as string)!);
      const tag = fieldName(union.propertyName, new Set());
      this.aliases.push({
        name: title,
        expression: `Annotated[Union[${variants.join(", ")}], Field(discriminator=${pyString(tag)})]`,
        description,
        uses: variants,
      });
      return;
    }
    if (isStructSchema(schema) || this.namedBases(schema) !== undefined) {
      this.objectClass(title, schema, withDefault(description, schema));
      return;
    }
    const uses: string[] = [];
    this.aliases.push({ name: title, expression: this.typeOf(schema, title, uses), description: withDefault(description, schema), uses });
  }

  /** The title a `$ref` written in the current file names. */
  private refTitle(ref: string): string | undefined {
    return refName(ref, this.file, this.model);
  }

  /** The classes an allOf of object schemas builds on: its named object members (undefined when a member is neither one nor an inline object). */
  private namedBases(schema: JsonObject): string[] | undefined {
    if (!Array.isArray(schema.allOf) || Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf)) return undefined;
    const bases: string[] = [];
    for (const member of schema.allOf) {
      if (!isObject(member)) return undefined;
      if (typeof member.$ref === "string") {
        const target = this.refSchema(member.$ref);
        const title = this.refTitle(member.$ref);
        if (!target || !title || !(isStructSchema(target) || this.namedBases(target) !== undefined) || this.unions.has(title))
          return undefined;
        bases.push(title);
      } else if (!isStructSchema(member)) return undefined;
    }
    return bases;
  }

  /** The schema a `$ref` written in the current file leads to. */
  private refSchema(ref: string): JsonObject | undefined {
    const hash = ref.indexOf("#");
    const file = hash === -1 ? ref : ref.slice(0, hash);
    const type = this.model.byFile.get(file === "" ? this.file : file);
    if (!type) return undefined;
    const fragment = hash === -1 ? "" : ref.slice(hash + 1);
    return fragment === "" ? type.schema : type.defs.find((d) => d.pointer === fragment)?.schema;
  }

  /** A class for an object schema; returns its name. */
  private objectClass(name: string, schema: JsonObject, description: string): string {
    const bases = this.namedBases(schema) ?? [];
    const lines: string[] = [`class ${name}(${bases.length ? bases.join(", ") : "WireModel"}):`];
    lines.push(...docstring(description || `${name}.`, "    "));
    // The fields of inline allOf members join the class's own.
    const inline = Array.isArray(schema.allOf)
      ? schema.allOf.filter((m): m is JsonObject => isObject(m) && typeof m.$ref !== "string")
      : [];
    const properties: JsonObject = {};
    const required = new Set<string>();
    for (const part of [...inline, schema]) {
      if (isObject(part.properties)) Object.assign(properties, part.properties);
      if (Array.isArray(part.required)) for (const r of part.required) required.add(r as string);
    }
    const taken = new Set<string>();
    const absentWhenNone: string[] = [];
    const fields: string[] = [];
    for (const [wire, sub] of Object.entries(properties)) {
      const attribute = fieldName(wire, taken);
      taken.add(attribute);
      const node = isObject(sub) ? sub : {};
      const nullable = allowsNull(node, this.model);
      const type = this.typeOf(node, `${name}${pascalCase(wire)}`, []);
      const args: string[] = [];
      let annotation = type;
      if (!required.has(wire)) {
        annotation = nullable ? type : `${type} | None`;
        args.push("default=None");
        if (!nullable) absentWhenNone.push(wire);
      }
      if (attribute !== wire) args.push(`alias=${pyString(wire)}`);
      const value = args.length === 0 ? "" : args.length === 1 && args[0] === "default=None" ? " = None" : ` = Field(${args.join(", ")})`;
      fields.push(`    ${attribute}: ${annotation}${value}`);
      fields.push(...docstring(withDefault(typeof node.description === "string" ? node.description : "", node), "    "));
    }
    // The optional fields of the bases stay absent when None here too.
    if (absentWhenNone.length || bases.length > 1) {
      const own = absentWhenNone.length ? [`frozenset({${absentWhenNone.map(pyString).join(", ")}})`] : [];
      lines.push(
        "",
        `    __absent_when_none__: ClassVar[frozenset[str]] = ${[...own, ...bases.map((b) => `${b}.__absent_when_none__`)].join(" | ")}`,
      );
    }
    if (fields.length) lines.push("", ...fields);
    this.classes.push({ name, lines, bases });
    return name;
  }

  /**
   * A tuple: one `tuple[...]` per length its bounds allow, or, when more items may follow the
   * positions, a list of what any position may hold.
   */
  private tupleOf(node: JsonObject, place: string, uses: string[]): string {
    const prefix = (node.prefixItems as Json[]).map((item, i) => this.typeOf(item, `${place}${i + 1}`, uses));
    if (node.items !== false) {
      const rest = node.items === undefined || node.items === true ? "JsonValue" : this.typeOf(node.items, `${place}Item`, uses);
      return `list[${[...new Set([...prefix, rest])].join(" | ")}]`;
    }
    const least = Math.min(typeof node.minItems === "number" ? node.minItems : 0, prefix.length);
    const shapes: string[] = [];
    for (let n = least; n <= prefix.length; n++) shapes.push(n === 0 ? "tuple[()]" : `tuple[${prefix.slice(0, n).join(", ")}]`);
    return shapes.join(" | ");
  }

  /** The class of a variant an `x-open` union of tagged objects does not list: its tag a string, its other fields kept. */
  private openVariant(node: JsonObject, place: string, uses: string[]): string {
    const tag = this.openTag(node);
    if (tag === undefined) return "JsonValue";
    const name = this.nestedName(`${place}Other`);
    uses.push(name);
    return this.objectClass(
      name,
      { type: "object", required: [tag], properties: { [tag]: { type: "string", description: "A tag this version does not list." } } },
      `A variant of ${place} this version does not list, kept as it came.`,
    );
  }

  /** The tag property of a union of tagged object variants: a property each variant holds a string const in. */
  private openTag(node: JsonObject): string | undefined {
    const variants = ((node.oneOf ?? node.anyOf) as Json[]).map((v) =>
      isObject(v) && typeof v.$ref === "string" ? this.refSchema(v.$ref) : isObject(v) ? v : undefined,
    );
    const first = variants[0];
    if (!first || !isObject(first.properties)) return undefined;
    return Object.keys(first.properties).find((key) =>
      variants.every((v) => v && isObject(v.properties) && isObject(v.properties[key]) && typeof v.properties[key].const === "string"),
    );
  }

  /** A name for a class nested in a type, unique in the module. */
  private nestedName(base: string): string {
    let name = base;
    for (let i = 2; this.used.has(name); i++) name = `${base}${i}`;
    this.used.add(name);
    return name;
  }

  /** The Python type of a schema node; `place` names a class made for a nested object. */
  typeOf(node: Json | undefined, place: string, uses: string[]): string {
    if (!isObject(node)) return node === false ? "None" : "JsonValue";
    if (typeof node.$ref === "string") {
      const title = this.refTitle(node.$ref);
      if (title === undefined) return "JsonValue";
      uses.push(title);
      return title;
    }
    const pair = nullablePair(node);
    if (pair) return `${this.typeOf(pair.value, place, uses)} | None`;
    if ("const" in node) return `Literal[${pyLiteral(node.const)}]`;
    if (Array.isArray(node.enum)) {
      const listed = literalUnion(node.enum);
      if (node["x-open"] !== true) return listed;
      // An open enum keeps values it does not list: any value of the listed values' types.
      return [listed, ...jsonTypesOf(node.enum.filter((v) => v !== null)).map((t) => this.typeOf({ type: t }, place, uses))].join(" | ");
    }
    if (Array.isArray(node.oneOf) || Array.isArray(node.anyOf)) {
      const branches = ((node.oneOf ?? node.anyOf) as Json[]).map((b, i) => this.typeOf(b, `${place}${i + 1}`, uses));
      if (node["x-open"] === true) branches.push(this.openVariant(node, place, uses));
      return `Union[${[...new Set(branches)].join(", ")}]`;
    }
    if (Array.isArray(node.allOf)) {
      if (this.namedBases(node) !== undefined) {
        const name = this.nestedName(place);
        uses.push(name);
        return this.objectClass(name, node, typeof node.description === "string" ? node.description : "");
      }
      // Other intersections: the first member says what the value is; the checks hold the rest.
      if (node.allOf.length > 0 && node.type === undefined) return this.typeOf(node.allOf[0], place, uses);
    }
    const types = Array.isArray(node.type) ? (node.type as string[]) : typeof node.type === "string" ? [node.type] : undefined;
    if (types && types.length > 1) return [...new Set(types.map((t) => this.typeOf({ ...node, type: t }, place, uses)))].join(" | ");
    const type = types?.[0] ?? (isObject(node.properties) ? "object" : undefined);
    switch (type) {
      case "string":
        return "str";
      case "integer":
        return "int";
      case "number":
        return "float";
      case "boolean":
        return "bool";
      case "null":
        return "None";
      case "array":
        if (Array.isArray(node.prefixItems)) return this.tupleOf(node, place, uses);
        return `list[${node.items === undefined ? "JsonValue" : this.typeOf(node.items, `${place}Item`, uses)}]`;
      case "object": {
        if (isObject(node.properties) && Object.keys(node.properties).length > 0) {
          const name = this.nestedName(place);
          uses.push(name);
          return this.objectClass(name, node, typeof node.description === "string" ? node.description : "");
        }
        if (isObject(node.additionalProperties)) return `dict[str, ${this.typeOf(node.additionalProperties, `${place}Value`, uses)}]`;
        return "dict[str, JsonValue]";
      }
      default:
        return "JsonValue";
    }
  }
}

/** A schema's `default`, as a line of the docstring. */
function withDefault(description: string, schema: JsonObject): string {
  if (!("default" in schema)) return description;
  const line = `Default: \`\`${JSON.stringify(schema.default)}\`\`.`;
  return description ? `${description}\n\n${line}` : line;
}

function literalUnion(values: readonly Json[]): string {
  const literal = values.filter((v) => v !== null);
  const text = literal.length ? `Literal[${literal.map(pyLiteral).join(", ")}]` : "None";
  return values.includes(null) && literal.length ? `${text} | None` : text;
}

/** Classes ordered so that each comes after its bases, otherwise as they were made. */
function orderClasses(classes: readonly ClassDef[]): ClassDef[] {
  const byName = new Map(classes.map((c) => [c.name, c]));
  const out: ClassDef[] = [];
  const done = new Set<string>();
  const visit = (c: ClassDef) => {
    if (done.has(c.name)) return;
    done.add(c.name);
    for (const base of c.bases) {
      const dep = byName.get(base);
      if (dep) visit(dep);
    }
    out.push(c);
  };
  for (const c of classes) visit(c);
  return out;
}

/**
 * Aliases ordered so that each comes after the aliases it reads (classes are all defined
 * before them). An alias a cycle comes back to is marked recursive: its expression is read
 * lazily, so it comes first, and the cycle's other aliases read it by name.
 */
function orderAliases(aliases: readonly AliasDef[]): AliasDef[] {
  const byName = new Map(aliases.map((a) => [a.name, a]));
  // The aliases in order, their uses followed except out of a recursive one; returns whether a cycle was left to mark.
  const order = (out: AliasDef[]): boolean => {
    const state = new Map<string, "visiting" | "done">();
    let marked = false;
    const visit = (a: AliasDef) => {
      if (state.get(a.name) === "visiting" && !marked) {
        // One alias per cycle is read lazily: marked one at a time, so that a cycle gets one.
        a.recursive = marked = true;
      }
      if (state.has(a.name)) return;
      state.set(a.name, "visiting");
      for (const use of a.recursive ? [] : a.uses) {
        const dep = byName.get(use);
        if (dep) visit(dep);
      }
      state.set(a.name, "done");
      out.push(a);
    };
    for (const a of aliases) visit(a);
    return marked;
  };
  let out: AliasDef[] = [];
  for (let more = true; more;) {
    out = [];
    more = order(out);
  }
  return [...out.filter((a) => a.recursive), ...out.filter((a) => !a.recursive)];
}
