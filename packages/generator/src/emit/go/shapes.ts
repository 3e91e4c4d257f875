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

/** A variant of a union without a tag: the place of its schema, which the reader checks a value against. */
export interface VariantPlace {
  readonly type: TypeModel;
  readonly pointer: string;
  readonly node: Json;
  /** Unique in the module: `file#pointer`. */
  readonly key: string;
}

export interface UnionDecl {
  readonly kind: "union";
  readonly name: string;
  readonly description: string;
  /** The tag's member name; undefined for a union without a tag, whose variant the validators decide. */
  readonly tagName: string | undefined;
  readonly variants: { readonly tag?: string; readonly decl: StructDecl | EnumDecl | AliasDecl; readonly place?: VariantPlace }[];
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

const isNullSchema = (s: Json | undefined) =>
  isObject(s) && s.type === "null" && Object.keys(s).filter((k) => k !== "description").length === 1;

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
    if (union)
      return {
        kind: "union",
        name: type.title,
        description: type.description,
        tagName: union.propertyName,
        variants: [],
        open: s["x-open"] === true,
        file: type.file,
      };
    if (isStructSchema(s) || (s.type === "object" && s.additionalProperties === false && !Array.isArray(s.oneOf)))
      return {
        kind: "struct",
        name: type.title,
        description: type.description,
        fields: [],
        extra: "unknown",
        extraName: EXTRA,
        variantOf: [],
        file: type.file,
      };
    if (Array.isArray(s.enum))
      return { kind: "enum", name: type.title, description: type.description, base: "string", values: [], file: type.file };
    if (untaggedBranches(s) !== undefined && !hasNullBranch(s))
      return {
        kind: "union",
        name: type.title,
        description: type.description,
        tagName: undefined,
        variants: [],
        open: s["x-open"] === true,
        file: type.file,
      };
    return { kind: "alias", name: type.title, description: type.description, shape: { kind: "any" }, file: type.file };
  }

  private fill(type: TypeModel): void {
    const decl = this.byTitle.get(type.title)!;
    this.current = type.title;
    const s = type.schema;
    switch (decl.kind) {
      case "union": {
        if (decl.tagName === undefined) {
          if (!this.fillUntagged(decl, s, type, "")) {
            // A variant Go cannot give methods to: the type holds any JSON value the validators accept.
            this.byTitle.set(type.title, {
              kind: "alias",
              name: type.title,
              description: type.description,
              shape: { kind: "any" },
              file: type.file,
            });
          }
          return;
        }
        const union = this.unions.get(type.title)!;
        for (const variant of union.variants) {
          const target = this.byTitle.get(variant.title);
          if (!target || target.kind !== "struct")
            this.problem(type.file, "/oneOf", `the variant ${variant.title} of ${type.title} must be an object type`);
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
    const extra: StructDecl["extra"] =
      additional === false || additional === undefined
        ? additional === false
          ? "unknown"
          : { kind: "any" }
        : additional === true
          ? { kind: "any" }
          : this.shapeOf(additional, `${decl.name}${EXTRA}Value`, type, `${pointer}/additionalProperties`, false);
    Object.assign(decl, { extra, extraName: fieldNames.take(EXTRA) });
  }

  private enumOf(name: string, s: JsonObject, type: TypeModel, pointer: string): Pick<EnumDecl, "base" | "values"> {
    const values = s.enum as Json[];
    const base = s.type === "integer" ? "int" : s.type === "number" ? "float" : "string";
    if (!values.every((v) => (base === "string" ? typeof v === "string" : typeof v === "number")))
      this.problem(type.file, `${pointer}/enum`, `an enum's values must all be of its type (${String(s.type)})`);
    const constNames = new NameSet();
    return {
      base,
      values: values.map((v) => ({
        name: this.names.take(
          `${name}${constNames.take(typeof v === "number" ? exported(String(v).replace("-", "minus ").replace(".", " point "), "Value") : exported(v as string, "Empty"))}`,
        ),
        value: v as string | number,
      })),
    };
  }

  private declare(decl: Decl): Shape {
    const list = this.nested.get(this.current!) ?? [];
    list.push(decl);
    this.nested.set(this.current!, list);
    return { kind: "decl", decl };
  }

  /** The variants of the unions without a tag, for the validators to compile a check of each. */
  readonly places: VariantPlace[] = [];

  /** Declarations of the places a $ref with a fragment names (a file's $defs), by absolute URI. */
  private readonly fragments = new Map<string, Decl>();

  /**
   * What a $ref names, read relative to its document's $id: a named type, or a place in a
   * file (a local definition), which gets a declaration of its own, named after the file's
   * type and the place (`TreeNode` for `#/$defs/node` of `tree.json`), so that a place may
   * refer to itself.
   */
  private refShape(ref: string, type: TypeModel, pointer: string): Shape {
    let url: URL;
    try {
      url = new URL(ref, type.id);
    } catch {
      this.problem(type.file, `${pointer}/$ref`, `$ref ${JSON.stringify(ref)} is not a URI reference`);
    }
    const fragment = decodeURIComponent(url.hash.replace(/^#/, ""));
    url.hash = "";
    const target = this.model.types.find((t) => new URL(t.id).href === url.href);
    if (!target) this.problem(type.file, `${pointer}/$ref`, `$ref ${JSON.stringify(ref)} names no file of the schemas folder`);
    if (fragment === "") return { kind: "decl", decl: this.byTitle.get(target.title)! };
    const uri = `${url.href}#${fragment}`;
    const known = this.fragments.get(uri);
    if (known) return { kind: "decl", decl: known };
    let node: Json | undefined = target.schema;
    for (const raw of fragment.slice(1).split("/")) {
      const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
      node = isObject(node) ? node[token] : Array.isArray(node) ? node[Number(token)] : undefined;
    }
    if (!isObject(node)) this.problem(type.file, `${pointer}/$ref`, `$ref ${JSON.stringify(ref)} names nothing in ${target.file}`);
    const name = this.names.take(
      `${target.title}${fragment
        .split("/")
        .filter((t) => t !== "" && t !== "$defs")
        .map((t) => exported(t))
        .join("")}`,
    );
    const description = typeof node.description === "string" ? node.description : "";
    const current = this.current;
    let decl: Decl;
    if (isStructSchema(node) || (node.type === "object" && node.additionalProperties === false && !Array.isArray(node.oneOf))) {
      const struct: StructDecl = { kind: "struct", name, description, fields: [], extra: "unknown", extraName: EXTRA, variantOf: [] };
      decl = struct;
      this.fragments.set(uri, decl);
      this.current = target.title;
      this.declare(decl);
      this.fillStruct(struct, node, target, fragment);
    } else if (Array.isArray(node.enum) && (node.type === "string" || node.type === "integer" || node.type === "number")) {
      const enumDecl: EnumDecl = { kind: "enum", name, description, base: "string", values: [] };
      decl = enumDecl;
      this.fragments.set(uri, decl);
      this.current = target.title;
      this.declare(decl);
      Object.assign(enumDecl, this.enumOf(name, node, target, fragment));
    } else {
      const alias: AliasDecl = { kind: "alias", name, description, shape: { kind: "any" } };
      decl = alias;
      this.fragments.set(uri, decl);
      this.current = target.title;
      this.declare(decl);
      Object.assign(alias, { shape: this.shapeOf(node, name, target, fragment, true) });
    }
    this.current = current;
    return { kind: "decl", decl };
  }

  /** A nested union without a tag, declared; undefined when a variant cannot be given methods. */
  private untaggedUnion(
    name: string,
    node: JsonObject,
    type: TypeModel,
    pointer: string,
    keyword: string,
    branches: readonly { b: Json; i: number }[],
  ): Shape | undefined {
    if (!branches.every(({ b }) => this.variantFeasible(b, type))) return undefined;
    const decl: UnionDecl = {
      kind: "union",
      name: this.names.take(name),
      description: describe(node),
      tagName: undefined,
      variants: [],
      open: false,
    };
    const shape = this.declare(decl);
    for (const { b, i } of branches) this.addVariant(decl, b, type, `${pointer}/${keyword}/${i}`);
    return shape;
  }

  /** The variants of a named union without a tag; false when one cannot be given methods. */
  private fillUntagged(decl: UnionDecl, s: JsonObject, type: TypeModel, pointer: string): boolean {
    const keyword = Array.isArray(s.oneOf) ? "oneOf" : "anyOf";
    const branches = untaggedBranches(s)!;
    if (!branches.every((b) => this.variantFeasible(b, type))) return false;
    branches.forEach((b, i) => this.addVariant(decl, b, type, `${pointer}/${keyword}/${i}`));
    return true;
  }

  /** Whether a branch becomes a Go type that can carry the union's methods (a struct, an enum or a defined type). */
  private variantFeasible(branch: Json, type: TypeModel): boolean {
    if (!isObject(branch)) return false;
    if (typeof branch.$ref === "string") {
      if (Object.keys(branch).some((k) => k !== "$ref" && k !== "description")) return false;
      const shape = this.refShape(branch.$ref, type, "");
      return (
        shape.kind === "decl" &&
        (shape.decl.kind === "struct" || shape.decl.kind === "enum" || (shape.decl.kind === "alias" && !aliasIsTypeAlias(shape.decl)))
      );
    }
    if (untaggedBranches(branch) !== undefined || isNullSchema(branch)) return false;
    const types = branch.type === undefined ? [] : Array.isArray(branch.type) ? branch.type : [branch.type];
    return types.length === 1 && ["string", "integer", "number", "boolean", "array", "object"].includes(types[0] as string);
  }

  private addVariant(decl: UnionDecl, branch: Json, type: TypeModel, pointer: string): void {
    const place: VariantPlace = { type, pointer, node: branch, key: `${type.file}#${pointer}` };
    this.places.push(place);
    const node = branch as JsonObject;
    if (typeof node.$ref === "string") {
      const shape = this.refShape(node.$ref, type, pointer) as { decl: StructDecl | EnumDecl | AliasDecl };
      decl.variants.push({ decl: shape.decl, place });
      return;
    }
    const kind = { string: "String", integer: "Int", number: "Number", boolean: "Bool", array: "Array", object: "Object" }[
      node.type as string
    ]!;
    const shape = this.shapeOf(node, `${decl.name}${kind}`, type, pointer, false);
    if (shape.kind === "decl" && (shape.decl.kind === "struct" || shape.decl.kind === "enum")) {
      decl.variants.push({ decl: shape.decl, place });
      return;
    }
    // A scalar or a list: a defined type of its own, which carries the union's methods.
    const alias: AliasDecl = {
      kind: "alias",
      name: this.names.take(`${decl.name}${kind}`),
      description: describe(node) || `${decl.name}${kind} is the ${node.type as string} variant of ${decl.name}.`,
      shape,
    };
    this.declare(alias);
    decl.variants.push({ decl: alias, place });
  }

  /**
   * The shape of a schema at `pointer` of `type`'s file. `name` is the Go name a declaration
   * of its own would get; `top` when the schema is the named type's whole schema.
   */
  shapeOf(node: Json | undefined, name: string, type: TypeModel, pointer: string, top: boolean): Shape {
    if (node === true || node === undefined) return { kind: "any" };
    if (!isObject(node)) this.problem(type.file, pointer, "a schema must be an object or a boolean");
    if (typeof node.$ref === "string") return this.refShape(node.$ref, type, pointer);
    if (Array.isArray(node.anyOf) && node.anyOf.length === 2 && (isNullSchema(node.anyOf[0]) || isNullSchema(node.anyOf[1]))) {
      const [a, b] = node.anyOf;
      const inner = isNullSchema(a) ? b! : a!;
      return { kind: "nullable", inner: this.shapeOf(inner, name, type, `${pointer}/anyOf/${isNullSchema(a) ? 1 : 0}`, false) };
    }
    const branches = untaggedBranches(node);
    if (branches !== undefined) {
      const keyword = Array.isArray(node.oneOf) ? "oneOf" : "anyOf";
      const others = branches.map((b, i) => ({ b, i })).filter(({ b }) => !isNullSchema(b));
      // A null branch makes the rest nullable: one branch left is that branch's shape, more are a union.
      if (others.length < branches.length) {
        if (others.length === 1)
          return { kind: "nullable", inner: this.shapeOf(others[0]!.b, name, type, `${pointer}/${keyword}/${others[0]!.i}`, false) };
        const inner = this.untaggedUnion(name, node, type, pointer, keyword, others);
        return inner ? { kind: "nullable", inner } : { kind: "any" };
      }
      return this.untaggedUnion(name, node, type, pointer, keyword, others) ?? { kind: "any" };
    }
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
          const decl: StructDecl = {
            kind: "struct",
            name: this.names.take(name),
            description: describe(node),
            fields: [],
            extra: "unknown",
            extraName: EXTRA,
            variantOf: [],
          };
          const shape = this.declare(decl);
          this.fillStruct(decl, node, type, pointer);
          return shape;
        }
        const additional = node.additionalProperties;
        if (additional === false) {
          // An object that may hold nothing: a struct with no fields.
          const decl: StructDecl = {
            kind: "struct",
            name: this.names.take(name),
            description: describe(node),
            fields: [],
            extra: "unknown",
            extraName: EXTRA,
            variantOf: [],
          };
          return this.declare(decl);
        }
        return {
          kind: "map",
          value:
            additional === true || additional === undefined
              ? { kind: "any" }
              : this.shapeOf(additional, `${name}Value`, type, `${pointer}/additionalProperties`, false),
        };
      }
    }
    return { kind: "any" };
  }
}

/** The branches of a union without a tag (oneOf without discriminator, or anyOf other than a nullable pair), or undefined. */
function untaggedBranches(s: JsonObject): Json[] | undefined {
  if (Array.isArray(s.oneOf) && s.discriminator === undefined && s.oneOf.length > 0) return s.oneOf;
  if (Array.isArray(s.anyOf) && s.anyOf.length > 0 && !(s.anyOf.length === 2 && (isNullSchema(s.anyOf[0]) || isNullSchema(s.anyOf[1]))))
    return s.anyOf;
  return undefined;
}

function hasNullBranch(s: JsonObject): boolean {
  return (untaggedBranches(s) ?? []).some(isNullSchema);
}

/** Whether an alias declaration is a Go type alias (=), which cannot carry methods. */
function aliasIsTypeAlias(decl: AliasDecl): boolean {
  return (
    decl.shape.kind === "nullable" ||
    decl.shape.kind === "any" ||
    decl.shape.kind === "null" ||
    (decl.shape.kind === "decl" && decl.shape.decl.kind === "union")
  );
}

/** An object schema with declared members (or closed): a struct. */
function isStructSchema(s: JsonObject): boolean {
  return (
    (s.type === "object" || s.properties !== undefined) &&
    !Array.isArray(s.oneOf) &&
    isObject(s.properties) &&
    Object.keys(s.properties).length > 0
  );
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

/** A node's description, with the value its `default` keyword gives when it has one. */
function describe(node: Json): string {
  if (!isObject(node)) return "";
  const text = typeof node.description === "string" ? node.description : "";
  if (!("default" in node)) return text;
  const line = `Default: ${JSON.stringify(node.default)}.`;
  return text ? `${text} ${line}` : line;
}

/** Whether a Go value of this shape has a nil state of its own (slices, maps, interfaces, jsonrpc.Value). */
export function nilable(shape: Shape): boolean {
  return (
    shape.kind === "array" ||
    shape.kind === "map" ||
    shape.kind === "any" ||
    (shape.kind === "decl" && (shape.decl.kind === "union" || (shape.decl.kind === "alias" && nilable(shape.decl.shape))))
  );
}
