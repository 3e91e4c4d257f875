/**
 * The Go declarations a schemas folder gives: each named type as a struct, a string or
 * integer enum, a sealed interface for a tagged union, or a named slice, map or scalar; each
 * place inside a type as a Go type (nested objects and enums get declarations of their own,
 * named after where they are: `TurnStartParamsInputItem`). Read from the schemas as written;
 * what a place allows is the validators' business, what it holds is decided here.
 */
import type { Json, JsonObject, ProtocolModel, TypeModel, UnionModel } from "../../model.js";
import { SchemaError, SchemaErrors } from "../../schema-error.js";
import { escapeToken, isObject } from "../../walk.js";
import { exported, NameSet } from "./names.js";

/** What a place holds, as Go sees it. */
export type Shape =
  | { readonly kind: "string" | "int" | "float" | "bool" | "any" | "null" }
  | { readonly kind: "decl"; readonly decl: Decl }
  | { readonly kind: "array"; readonly item: Shape }
  | { readonly kind: "map"; readonly value: Shape }
  | { readonly kind: "nullable"; readonly inner: Shape }
  | { readonly kind: "const"; readonly value: Json; readonly base: Shape };

export interface Field {
  /** The member name on the wire. */
  readonly json: string;
  /** The Go field name. */
  readonly name: string;
  readonly shape: Shape;
  readonly required: boolean;
  readonly description: string;
}

export interface StructDecl {
  readonly kind: "struct";
  readonly name: string;
  readonly description: string;
  readonly fields: Field[];
  /**
   * Members beyond the declared ones: "unknown" for a closed object (kept from a tolerant
   * read), a shape for an open one (`additionalProperties` true or a schema).
   */
  readonly extra: "unknown" | Shape;
  /** The Go name of the field holding them. */
  readonly extraName: string;
  /** The unions this struct is a variant of, with its tag in each. */
  readonly variantOf: { union: UnionDecl; tag: string }[];
  readonly file?: string;
}

export interface EnumDecl {
  readonly kind: "enum";
  readonly name: string;
  readonly description: string;
  readonly base: "string" | "int" | "float";
  readonly values: readonly { readonly name: string; readonly value: string | number }[];
  readonly file?: string;
}

export interface UnionDecl {
  readonly kind: "union";
  readonly name: string;
  readonly description: string;
  readonly tagName: string;
  readonly variants: { readonly tag: string; readonly decl: StructDecl }[];
  /** `x-open`: a tag the schemas do not list is kept as an unknown variant. */
  readonly open: boolean;
  readonly file?: string;
}

/** A named type that is another Go type (a slice, a map, a scalar, a nullable value). */
export interface AliasDecl {
  readonly kind: "alias";
  readonly name: string;
  readonly description: string;
  readonly shape: Shape;
  readonly file?: string;
}

export type Decl = StructDecl | EnumDecl | UnionDecl | AliasDecl;

const isNullSchema = (s: Json | undefined) => isObject(s) && s.type === "null" && Object.keys(s).filter((k) => k !== "description").length === 1;

/** The member that a field named `Extra` would collide with gets this name instead. */
const EXTRA = "Extra";

export class GoShapes {
  /** Every declaration in output order: named types by title, each followed by what it nests. */
  readonly decls: Decl[] = [];
  readonly byTitle = new Map<string, Decl>();
  private readonly names: NameSet;
  private readonly unions: Map<string, UnionModel>;

  constructor(
    private readonly model: ProtocolModel,
    taken: Iterable<string>,
  ) {
    this.names = new NameSet([...taken, ...model.types.map((t) => t.title)]);
    this.unions = new Map(model.unions.map((u) => [u.title, u]));
    // Unions and structs are declared first, so that references between them resolve in any order.
    for (const type of model.types) this.byTitle.set(type.title, this.placeholder(type));
    for (const type of model.types) this.fill(type);
    for (const type of model.types) {
      this.decls.push(this.byTitle.get(type.title)!);
      this.decls.push(...(this.nested.get(type.title) ?? []));
    }
  }

  private readonly nested = new Map<string, Decl[]>();
  private current: string | undefined;

  private problem(file: string, pointer: string, message: string): never {
    throw new SchemaErrors([new SchemaError(file, pointer, message)]);
  }

  private placeholder(type: TypeModel): Decl {
    const s = type.schema;
    const union = this.unions.get(type.title);
    if (union) return { kind: "union", name: type.title, description: type.description, tagName: union.propertyName, variants: [], open: s["x-open"] === true, file: type.file };
    if (isStructSchema(s) || (s.type === "object" && s.additionalProperties === false && !Array.isArray(s.oneOf))) return { kind: "struct", name: type.title, description: type.description, fields: [], extra: "unknown", extraName: EXTRA, variantOf: [], file: type.file };
    if (Array.isArray(s.enum)) return { kind: "enum", name: type.title, description: type.description, base: "string", values: [], file: type.file };
    return { kind: "alias", name: type.title, description: type.description, shape: { kind: "any" }, file: type.file };
  }

  private fill(type: TypeModel): void {
    const decl = this.byTitle.get(type.title)!;
    this.current = type.title;
    const s = type.schema;
    switch (decl.kind) {
      case "union": {
        const union = this.unions.get(type.title)!;
        for (const variant of union.variants) {
          const target = this.byTitle.get(variant.title);
          if (!target || target.kind !== "struct") this.problem(type.file, "/oneOf", `the variant ${variant.title} of ${type.title} must be an object type`);
          decl.variants.push({ tag: variant.tag, decl: target });
          target.variantOf.push({ union: decl, tag: variant.tag });
        }
        return;
      }
      case "struct":
        this.fillStruct(decl, s, type, "");
        return;
      case "enum":
        Object.assign(decl, this.enumOf(decl.name, s, type, ""));
        return;
      case "alias":
        Object.assign(decl, { shape: this.shapeOf(s, type.title, type, "", true) });
        return;
    }
  }

  private fillStruct(decl: StructDecl, s: JsonObject, type: TypeModel, pointer: string): void {
    const properties = isObject(s.properties) ? s.properties : {};
    const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const fieldNames = new NameSet();
    // Declared members first; the field that holds the others is named after them.
    const names = Object.keys(properties).map((json) => {
      let name = exported(json, "Value");
      if (name === EXTRA) name = `${EXTRA}Field`;
      return { json, name: fieldNames.take(name) };
    });
    for (const { json, name } of names) {
      const sub = properties[json]!;
      const at = `${pointer}/properties/${escapeToken(json)}`;
      const shape = this.shapeOf(sub, `${decl.name}${name}`, type, at, false);
      decl.fields.push({ json, name, shape, required: required.has(json), description: describe(sub) });
    }
    const additional = s.additionalProperties;
    const extra: StructDecl["extra"] = additional === false || additional === undefined ? (additional === false ? "unknown" : { kind: "any" }) : additional === true ? { kind: "any" } : this.shapeOf(additional, `${decl.name}${EXTRA}Value`, type, `${pointer}/additionalProperties`, false);
    Object.assign(decl, { extra, extraName: fieldNames.take(EXTRA) });
  }

  private enumOf(name: string, s: JsonObject, type: TypeModel, pointer: string): Pick<EnumDecl, "base" | "values"> {
    const values = s.enum as Json[];
    const base = s.type === "integer" ? "int" : s.type === "number" ? "float" : "string";
    if (!values.every((v) => (base === "string" ? typeof v === "string" : typeof v === "number"))) this.problem(type.file, `${pointer}/enum`, `an enum's values must all be of its type (${String(s.type)})`);
    const constNames = new NameSet();
    return {
      base,
      values: values.map((v) => ({ name: this.names.take(`${name}${constNames.take(typeof v === "number" ? exported(String(v).replace("-", "minus ").replace(".", " point "), "Value") : exported(v as string, "Empty"))}`), value: v as string | number })),
    };
  }

  private declare(decl: Decl): Shape {
    const list = this.nested.get(this.current!) ?? [];
    list.push(decl);
    this.nested.set(this.current!, list);
    return { kind: "decl", decl };
  }

  /**
   * The shape of a schema at `pointer` of `type`'s file. `name` is the Go name a declaration
   * of its own would get; `top` when the schema is the named type's whole schema.
   */
  shapeOf(node: Json | undefined, name: string, type: TypeModel, pointer: string, top: boolean): Shape {
    if (node === true || node === undefined) return { kind: "any" };
    if (!isObject(node)) this.problem(type.file, pointer, "a schema must be an object or a boolean");
    if (typeof node.$ref === "string") {
      const target = this.model.byFile.get(node.$ref);
      if (!target) this.problem(type.file, `${pointer}/$ref`, `$ref ${JSON.stringify(node.$ref)} names no file of the schemas folder`);
      return { kind: "decl", decl: this.byTitle.get(target.title)! };
    }
    if (Array.isArray(node.anyOf)) {
      const [a, b] = node.anyOf;
      if (node.anyOf.length === 2 && (isNullSchema(a) || isNullSchema(b))) {
        const inner = isNullSchema(a) ? b! : a!;
        return { kind: "nullable", inner: this.shapeOf(inner, name, type, `${pointer}/anyOf/${isNullSchema(a) ? 1 : 0}`, false) };
      }
      return { kind: "any" };
    }
    if (Array.isArray(node.oneOf)) return { kind: "any" };
    const types = node.type === undefined ? [] : Array.isArray(node.type) ? (node.type as string[]) : [node.type as string];
    if (types.length === 2 && types.includes("null")) {
      const { type: _t, ...rest } = node;
      const other = types.find((t) => t !== "null")!;
      return { kind: "nullable", inner: this.shapeOf({ ...rest, type: other }, name, type, pointer, false) };
    }
    if (types.length > 1) return { kind: "any" };
    const t = types[0];
    if (node.const !== undefined) return { kind: "const", value: node.const, base: scalar(t) ?? { kind: "any" } };
    if (Array.isArray(node.enum) && (t === "string" || t === "integer" || t === "number")) {
      if (top) return { kind: "any" };
      const decl: EnumDecl = { kind: "enum", name: this.names.take(name), description: describe(node), base: "string", values: [] };
      Object.assign(decl, this.enumOf(decl.name, node, type, pointer));
      return this.declare(decl);
    }
    switch (t) {
      case "string":
      case "integer":
      case "number":
      case "boolean":
        return scalar(t)!;
      case "null":
        return { kind: "null" };
      case "array": {
        if (Array.isArray(node.prefixItems)) return { kind: "any" };
        return { kind: "array", item: this.shapeOf(node.items, `${name}Item`, type, `${pointer}/items`, false) };
      }
      case "object": {
        if (isStructSchema(node)) {
          if (top) return { kind: "any" };
          const decl: StructDecl = { kind: "struct", name: this.names.take(name), description: describe(node), fields: [], extra: "unknown", extraName: EXTRA, variantOf: [] };
          const shape = this.declare(decl);
          this.fillStruct(decl, node, type, pointer);
          return shape;
        }
        const additional = node.additionalProperties;
        if (additional === false) {
          // An object that may hold nothing: a struct with no fields.
          const decl: StructDecl = { kind: "struct", name: this.names.take(name), description: describe(node), fields: [], extra: "unknown", extraName: EXTRA, variantOf: [] };
          return this.declare(decl);
        }
        return { kind: "map", value: additional === true || additional === undefined ? { kind: "any" } : this.shapeOf(additional, `${name}Value`, type, `${pointer}/additionalProperties`, false) };
      }
    }
    return { kind: "any" };
  }
}

/** An object schema with declared members (or closed): a struct. */
function isStructSchema(s: JsonObject): boolean {
  return (s.type === "object" || s.properties !== undefined) && !Array.isArray(s.oneOf) && (isObject(s.properties) && Object.keys(s.properties).length > 0);
}

function scalar(t: string | undefined): Shape | undefined {
  switch (t) {
    case "string":
      return { kind: "string" };
    case "integer":
      return { kind: "int" };
    case "number":
      return { kind: "float" };
    case "boolean":
      return { kind: "bool" };
  }
  return undefined;
}

function describe(node: Json): string {
  return isObject(node) && typeof node.description === "string" ? node.description : "";
}

/** Whether a Go value of this shape has a nil state of its own (slices, maps, interfaces, jsonrpc.Value). */
export function nilable(shape: Shape): boolean {
  return shape.kind === "array" || shape.kind === "map" || shape.kind === "any" || (shape.kind === "decl" && (shape.decl.kind === "union" || (shape.decl.kind === "alias" && nilable(shape.decl.shape))));
}
