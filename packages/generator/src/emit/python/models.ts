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
 * - an object nested in a type gets a class of its own, named after its place.
 *
 * Descriptions become docstrings.
 */
import type { Json, JsonObject, ProtocolModel, TypeModel } from "../../model.js";
import { nullablePair } from "../../diff/sample.js";
import { isObject } from "../../walk.js";
import { docstring, fieldName, pascalCase, pyLiteral, pyString, usedImport } from "./names.js";

interface ClassDef {
  readonly name: string;
  readonly lines: string[];
}

interface AliasDef {
  readonly name: string;
  readonly expression: string;
  readonly description: string;
  /** Names the expression reads at run time (aliases must be defined after them). */
  readonly uses: readonly string[];
}

/** The Python type of each named type, and what models.py declares for it. */
export class PythonModels {
  private readonly classes: ClassDef[] = [];
  private readonly aliases: AliasDef[] = [];
  private readonly used = new Set<string>();
  private readonly unions: Map<string, { propertyName: string }>;

  constructor(private readonly model: ProtocolModel) {
    for (const type of model.types) this.used.add(type.title);
    this.unions = new Map(model.unions.map((u) => [u.title, { propertyName: u.propertyName }]));
  }

  /** Whether a named type is a class (an object schema), as opposed to an alias. */
  isClass(type: TypeModel): boolean {
    return !this.unions.has(type.title) && isObjectSchema(type.schema);
  }

  /** The whole module. */
  emit(header: string): string {
    for (const type of this.model.types) this.namedType(type);
    const body: string[] = [];
    for (const c of this.classes) body.push("", ...c.lines, "");
    for (const a of orderAliases(this.aliases)) {
      body.push("", `${a.name}: TypeAlias = ${a.expression}`, ...docstring(a.description, ""));
    }
    body.push("", "");
    for (const c of this.classes) body.push(`${c.name}.model_rebuild()`);
    body.push("", `__all__ = [${[...this.classes.map((c) => c.name), ...this.aliases.map((a) => a.name)].sort().map(pyString).join(", ")}]`);
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
      "",
      "from ._wire import WireModel",
      "",
      code,
    ];
    return `${lines.join("\n").replace(/\n{4,}/g, "\n\n\n")}\n`;
  }

  private namedType(type: TypeModel): void {
    const union = this.unions.get(type.title);
    if (union) {
      const variants = (type.schema.oneOf as JsonObject[]).map((v) => this.model.byFile.get(v.$ref as string)!.title);
      const tag = fieldName(union.propertyName, new Set());
      this.aliases.push({ name: type.title, expression: `Annotated[Union[${variants.join(", ")}], Field(discriminator=${pyString(tag)})]`, description: type.description, uses: variants });
      return;
    }
    if (isObjectSchema(type.schema)) {
      this.objectClass(type.title, type.schema, type.description);
      return;
    }
    const uses: string[] = [];
    this.aliases.push({ name: type.title, expression: this.typeOf(type.schema, type.title, uses), description: type.description, uses });
  }

  /** A class for an object schema; returns its name. */
  private objectClass(name: string, schema: JsonObject, description: string): string {
    const lines: string[] = [`class ${name}(WireModel):`];
    lines.push(...(docstring(description || `${name}.`, "    ")));
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
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
      const doc = typeof node.description === "string" ? node.description : "";
      fields.push(...docstring(doc, "    "));
    }
    if (absentWhenNone.length) lines.push("", `    __absent_when_none__: ClassVar[frozenset[str]] = frozenset({${absentWhenNone.map(pyString).join(", ")}})`);
    if (fields.length) lines.push("", ...fields);
    this.classes.push({ name, lines });
    return name;
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
      const target = this.model.byFile.get(node.$ref);
      if (!target) return "JsonValue";
      uses.push(target.title);
      return target.title;
    }
    const pair = nullablePair(node);
    if (pair) return `${this.typeOf(pair.value, place, uses)} | None`;
    if ("const" in node) return `Literal[${pyLiteral(node.const)}]`;
    if (Array.isArray(node.enum)) return literalUnion(node.enum);
    if (Array.isArray(node.oneOf) || Array.isArray(node.anyOf)) {
      const branches = ((node.oneOf ?? node.anyOf) as Json[]).map((b, i) => this.typeOf(b, `${place}${i + 1}`, uses));
      return `Union[${branches.join(", ")}]`;
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

function isObjectSchema(schema: JsonObject): boolean {
  return (schema.type === "object" || (schema.type === undefined && isObject(schema.properties))) && isObject(schema.properties) && !Array.isArray(schema.oneOf);
}

function literalUnion(values: readonly Json[]): string {
  const literal = values.filter((v) => v !== null);
  const text = literal.length ? `Literal[${literal.map(pyLiteral).join(", ")}]` : "None";
  return values.includes(null) && literal.length ? `${text} | None` : text;
}

/** Whether null is a valid value of the node (a nullable pair, a type list with null, an enum with null). */
function allowsNull(node: JsonObject, model: ProtocolModel): boolean {
  if (nullablePair(node)) return true;
  if (Array.isArray(node.type) && node.type.includes("null")) return true;
  if (node.type === "null") return true;
  if (Array.isArray(node.enum) && node.enum.includes(null)) return true;
  if (typeof node.$ref === "string") {
    const target = model.byFile.get(node.$ref);
    return target !== undefined && !Array.isArray(target.schema.oneOf) && target.schema.type !== "object" && allowsNull(target.schema, model);
  }
  return false;
}

/** Aliases ordered so that each comes after the aliases it reads (classes are all defined before them). */
function orderAliases(aliases: readonly AliasDef[]): AliasDef[] {
  const byName = new Map(aliases.map((a) => [a.name, a]));
  const out: AliasDef[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (a: AliasDef) => {
    if (state.get(a.name) === "done" || state.get(a.name) === "visiting") return;
    state.set(a.name, "visiting");
    for (const use of a.uses) {
      const dep = byName.get(use);
      if (dep) visit(dep);
    }
    state.set(a.name, "done");
    out.push(a);
  };
  for (const a of aliases) visit(a);
  return out;
}
