/**
 * types.rs: one Rust type per named type of the schemas, serde's derives wherever they read
 * the wire exactly, one function per construct:
 *
 * - an object is a struct: a field per property (snake case, serde's rename for the wire
 *   name), `Option<T>` for an optional or a nullable field, `Nullable<T>` (absent, null or a
 *   value) for one both optional and nullable, and `extra`, flattened, for the members the
 *   schema does not name (kept in tolerant mode, written back);
 * - a tagged union is an enum of newtype variants over the named variant structs, internally
 *   tagged (`#[serde(tag = "…")]`): each variant struct leaves its tag to the union;
 * - an enum of strings is a Rust enum; of integers, a Rust enum with its values as
 *   discriminants; `x-open` adds `#[non_exhaustive]` and a variant keeping any other value;
 * - any other named type is a newtype (`#[serde(transparent)]`), so that every named type is
 *   a type of its own that the validators can be implemented for;
 * - an object, enum or union nested in a type gets a type of its own, named after its place.
 *
 * Descriptions become doc comments. Every type's JSON is validated before it is decoded (see
 * validators.rs), so serde never has to decide what the schema decides.
 */
import type { Json, JsonObject, ProtocolModel, TypeModel } from "../../model.js";
import { nullablePair } from "../../diff/sample.js";
import { isObject } from "../../walk.js";
import { allowsNull, isStructSchema } from "../struct-shapes.js";
import { docLines, indent, pascalIdent, rustString, serdeName, snakeIdent, UnsupportedForRust } from "./names.js";

/** A Rust type as a field holds it, with what decides whether it has a `Default`. */
interface RustType {
  readonly text: string;
  /** Named types whose `Default` this type's needs; undefined when it has none at all. */
  readonly defaultNeeds: readonly string[] | undefined;
  /** Named types held by value (not behind a Vec, a map or a Box): a cycle of these needs a Box. */
  readonly byValue: readonly string[];
}

interface Field {
  readonly ident: string;
  readonly wire: string;
  readonly type: RustType;
  readonly attributes: string[];
  readonly doc: string;
}

type Declaration =
  | {
      readonly kind: "struct";
      readonly name: string;
      readonly doc: string;
      readonly fields: Field[];
      readonly extra: RustType | undefined;
      readonly note?: string;
    }
  | { readonly kind: "newtype"; readonly name: string; readonly doc: string; readonly inner: RustType }
  | { readonly kind: "unit"; readonly name: string; readonly doc: string }
  | {
      readonly kind: "string-enum";
      readonly name: string;
      readonly doc: string;
      readonly variants: { ident: string; value: string }[];
      readonly open: boolean;
    }
  | { readonly kind: "integer-enum"; readonly name: string; readonly doc: string; readonly variants: { ident: string; value: number }[] }
  | {
      readonly kind: "union";
      readonly name: string;
      readonly doc: string;
      readonly tag: string;
      readonly variants: { ident: string; tag: string; type: string; doc: string }[];
      readonly open: boolean;
    };

const OWNED: RustType = { text: "String", defaultNeeds: [], byValue: [] };
const VALUE: RustType = { text: "serde_json::Value", defaultNeeds: [], byValue: [] };
const MAP: RustType = { text: "serde_json::Map<String, serde_json::Value>", defaultNeeds: [], byValue: [] };

const scalar = (text: string): RustType => ({ text, defaultNeeds: [], byValue: [] });

/** Where a union variant's tag lives: the variant structs leave it to the union. */
interface VariantOf {
  readonly union: string;
  readonly tag: string;
}

/** The Rust types of a model; `names` maps each named type's title to its Rust name. */
export class RustTypes {
  private readonly declarations: Declaration[] = [];
  private readonly used = new Set<string>();
  private readonly variants = new Map<string, VariantOf>();
  private readonly unionTitles: Set<string>;

  constructor(private readonly model: ProtocolModel) {
    for (const type of model.types) this.used.add(type.title);
    this.unionTitles = new Set(model.unions.map((u) => u.title));
    for (const union of model.unions) {
      for (const variant of union.variants) {
        const known = this.variants.get(variant.title);
        if (known && known.tag !== union.propertyName) {
          throw new UnsupportedForRust(
            `${variant.title} is a variant of ${known.union} (tag "${known.tag}") and of ${union.title} (tag "${union.propertyName}"); a Rust variant struct leaves one tag to its unions`,
          );
        }
        this.variants.set(variant.title, { union: union.title, tag: union.propertyName });
      }
    }
    this.checkVariantUse();
  }

  /**
   * A variant struct has no field for its tag (the union writes it), so it can only be
   * used inside its unions: a field or message typed by the variant alone is refused.
   */
  private checkVariantUse(): void {
    const where = (title: string) => this.model.types.find((t) => t.title === title)?.file ?? title;
    for (const m of this.model.methods) {
      for (const [role, title] of [
        ["params", m.params],
        ["result", m.result],
      ] as const) {
        if (title !== undefined && this.variants.has(title))
          throw new UnsupportedForRust(
            `${m.name} has the union variant ${title} as its ${role}; give it a type of its own (a variant's tag is written by its union)`,
          );
      }
    }
    for (const n of this.model.notifications) {
      if (n.params !== undefined && this.variants.has(n.params))
        throw new UnsupportedForRust(`${n.name} has the union variant ${n.params} as its params; give it a type of its own`);
    }
    for (const type of this.model.types) {
      const isUnion = this.unionTitles.has(type.title);
      visitRefs(type.schema, "", (ref, pointer) => {
        const target = this.model.byFile.get(ref);
        if (!target || !this.variants.has(target.title)) return;
        if (isUnion && /^\/oneOf\/\d+$/.test(pointer)) return;
        throw new UnsupportedForRust(
          `${where(type.title)} at ${pointer || "/"} refers to ${target.title}, a variant of the union ${this.variants.get(target.title)!.union}; refer to the union (a variant's tag is written by its union)`,
        );
      });
    }
  }

  /** types.rs. */
  emit(header: string): string {
    for (const type of this.model.types) this.namedType(type);
    const defaults = this.defaultable();
    const boxed = this.boxed();
    const body: string[] = [];
    for (const d of this.declarations) body.push("", ...this.render(d, defaults, boxed));
    const code = body.join("\n");
    const uses = [
      ...(/\bBTreeMap\b/.test(code) ? ["use std::collections::BTreeMap;"] : []),
      "",
      ...(/\b(Deserializer|Serializer)\b/.test(code)
        ? ["use serde::{Deserialize, Deserializer, Serialize, Serializer};"]
        : ["use serde::{Deserialize, Serialize};"]),
      "",
      ...(/\bNullable\b/.test(code) ? ["use crate::jsonrpc::Nullable;"] : []),
    ];
    return [
      header,
      `//! Every named type of ${this.model.title} ${this.model.version}, as serde types.`,
      "//!",
      "//! Decode them with `crate::decode` (or the endpoints), which validates the JSON first:",
      "//! serde alone would not apply the schemas' bounds, patterns and closed objects.",
      "",
      ...uses.filter((l, i, all) => !(l === "" && (i === 0 || all[i - 1] === ""))),
      code,
    ].join("\n");
  }

  private push(d: Declaration): void {
    this.declarations.push(d);
  }

  /** A name for a type nested in a named type, unique in the crate. */
  private nestedName(base: string): string {
    let name = pascalIdent(base);
    for (let i = 2; this.used.has(name); i++) name = `${pascalIdent(base)}${i}`;
    this.used.add(name);
    return name;
  }

  private namedType(type: TypeModel): void {
    const schema = type.schema;
    const union = this.model.unions.find((u) => u.title === type.title);
    const open = schema["x-open"] === true;
    if (union) {
      const idents = new Set<string>();
      this.push({
        kind: "union",
        name: type.title,
        doc: type.description,
        tag: union.propertyName,
        open,
        variants: union.variants.map((v) => {
          let ident = pascalIdent(v.tag);
          if (idents.has(ident) || (open && ident === "Other")) ident = v.title;
          idents.add(ident);
          const target = this.model.types.find((t) => t.title === v.title)!;
          return { ident, tag: v.tag, type: v.title, doc: target.description };
        }),
      });
      return;
    }
    if (isStructSchema(schema)) {
      this.struct(type.title, schema, type.description, this.variants.get(type.title));
      return;
    }
    const enumDecl = this.enumeration(type.title, schema, type.description, open);
    if (enumDecl) {
      this.push(enumDecl);
      return;
    }
    if (open) throw new UnsupportedForRust(`${type.file}: x-open on a type that is neither an enum nor a tagged union`);
    if (schema.type === "null" && nullablePair(schema) === undefined) {
      this.push({ kind: "unit", name: type.title, doc: type.description });
      return;
    }
    this.push({ kind: "newtype", name: type.title, doc: type.description, inner: this.typeOf(schema, type.title, `${type.file}`) });
  }

  /** A Rust enum for an enum (or a const) of strings or of integers; undefined for any other schema. */
  private enumeration(name: string, schema: JsonObject, doc: string, open: boolean): Declaration | undefined {
    const values = Array.isArray(schema.enum) ? schema.enum : "const" in schema ? [schema.const as Json] : undefined;
    if (!values || values.length === 0) return undefined;
    if (values.every((v) => typeof v === "string")) {
      const idents = new Set<string>();
      const variants = (values as string[]).map((value) => {
        let ident = pascalIdent(value);
        for (let i = 2; idents.has(ident) || (open && ident === "Other"); i++) ident = `${pascalIdent(value)}${i}`;
        idents.add(ident);
        return { ident, value };
      });
      return { kind: "string-enum", name, doc, variants, open };
    }
    if (!open && values.every((v) => typeof v === "number" && Number.isInteger(v))) {
      return {
        kind: "integer-enum",
        name,
        doc,
        variants: (values as number[]).map((value) => ({ ident: value < 0 ? `Minus${-value}` : `N${value}`, value })),
      };
    }
    return undefined;
  }

  private struct(name: string, schema: JsonObject, doc: string, variantOf?: VariantOf): string {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
    const taken = new Set<string>();
    const fields: Field[] = [];
    for (const [wire, sub] of Object.entries(properties)) {
      if (variantOf && wire === variantOf.tag) continue;
      let ident = snakeIdent(wire);
      for (let i = 2; taken.has(ident) || ident === "extra"; i++) ident = `${snakeIdent(wire)}_${i}`;
      taken.add(ident);
      const node = isObject(sub) ? sub : {};
      // A named type that takes null holds it itself (its newtype is over an Option).
      const nullable = typeof node.$ref !== "string" && allowsNull(node, this.model);
      const inner = this.typeOf(nullable ? withoutNull(node) : node, `${name}${pascalIdent(wire)}`, `${name}/properties/${wire}`);
      const attributes: string[] = [];
      const serde: string[] = [];
      if (serdeName(ident) !== wire) serde.push(`rename = ${rustString(wire)}`);
      let type: RustType;
      if (required.has(wire)) {
        type = nullable ? wrap("Option", inner) : inner;
      } else if (nullable) {
        type = wrap("Nullable", inner);
        serde.push('default, skip_serializing_if = "Nullable::is_absent"');
      } else {
        type = wrap("Option", inner);
        serde.push('default, skip_serializing_if = "Option::is_none"');
      }
      if (serde.length) attributes.push(`#[serde(${serde.join(", ")})]`);
      fields.push({ ident, wire, type, attributes, doc: typeof node.description === "string" ? node.description : "" });
    }
    const additional = schema.additionalProperties;
    const extra =
      isObject(additional) && Object.keys(additional).length > 0
        ? wrapMap(this.typeOf(additional, `${name}Value`, `${name}/additionalProperties`))
        : MAP;
    const note = variantOf ? `Its \`${variantOf.tag}\` is written by the union that holds it (${variantOf.union}).` : undefined;
    this.push({ kind: "struct", name, doc, fields, extra, ...(note === undefined ? {} : { note }) });
    return name;
  }

  /** The Rust type of a schema node; `place` names a type made for a nested object, enum or union. */
  private typeOf(node: Json | undefined, place: string, where: string): RustType {
    if (!isObject(node)) return node === false ? scalar("()") : VALUE;
    if (typeof node.$ref === "string") {
      const target = this.model.byFile.get(node.$ref);
      if (!target) throw new UnsupportedForRust(`${where}: $ref ${node.$ref} names no type of the schemas folder`);
      return { text: target.title, defaultNeeds: [target.title], byValue: [target.title] };
    }
    const pair = nullablePair(node);
    if (pair) return wrap("Option", this.typeOf(pair.value, place, where));
    const types = Array.isArray(node.type) ? (node.type as string[]) : typeof node.type === "string" ? [node.type] : undefined;
    if (types && types.includes("null") && types.length > 1)
      return wrap("Option", this.typeOf({ ...node, type: types.filter((t) => t !== "null") }, place, where));
    if (types && types.length > 1) return VALUE;
    if (Array.isArray(node.enum) || "const" in node) {
      const values = Array.isArray(node.enum) ? node.enum : [node.const as Json];
      if (values.length === 1 && typeof values[0] === "string") return OWNED;
      const declaration = this.enumeration(
        this.nestedName(place),
        node,
        typeof node.description === "string" ? node.description : "",
        false,
      );
      if (declaration) {
        this.push(declaration);
        return { text: declaration.name, defaultNeeds: undefined, byValue: [] };
      }
      return VALUE;
    }
    if (Array.isArray(node.oneOf) || Array.isArray(node.anyOf) || Array.isArray(node.allOf) || node.not !== undefined) {
      throw new UnsupportedForRust(
        `${where}: a union that is not a named tagged union (oneOf with a discriminator, in a file of its own) or a nullable pair`,
      );
    }
    const type = types?.[0] ?? (isObject(node.properties) ? "object" : undefined);
    switch (type) {
      case "string":
        return OWNED;
      case "integer":
        return scalar(typeof node.minimum === "number" && node.minimum >= 0 ? "u64" : "i64");
      case "number":
        return scalar("f64");
      case "boolean":
        return scalar("bool");
      case "null":
        return scalar("()");
      case "array": {
        const items = node.items === undefined || node.items === true ? VALUE : this.typeOf(node.items, `${place}Item`, `${where}/items`);
        return { text: `Vec<${items.text}>`, defaultNeeds: [], byValue: [] };
      }
      case "object": {
        if (isObject(node.properties) && Object.keys(node.properties).length > 0) {
          const name = this.struct(this.nestedName(place), node, typeof node.description === "string" ? node.description : "");
          return { text: name, defaultNeeds: [name], byValue: [name] };
        }
        if (isObject(node.additionalProperties) && Object.keys(node.additionalProperties).length > 0) {
          return wrapMap(this.typeOf(node.additionalProperties, `${place}Value`, `${where}/additionalProperties`));
        }
        return MAP;
      }
      default:
        return VALUE;
    }
  }

  /** The types that can derive `Default`: every field's type has one. */
  private defaultable(): Set<string> {
    const needs = new Map<string, readonly string[] | undefined>();
    for (const d of this.declarations) {
      if (d.kind === "struct") {
        const all: string[] = [];
        let possible = true;
        for (const f of [...d.fields.map((f) => f.type), ...(d.extra ? [d.extra] : [])]) {
          if (f.defaultNeeds === undefined) possible = false;
          else all.push(...f.defaultNeeds);
        }
        needs.set(d.name, possible ? all : undefined);
      } else if (d.kind === "newtype") needs.set(d.name, d.inner.defaultNeeds);
      else if (d.kind === "unit") needs.set(d.name, []);
      else needs.set(d.name, undefined);
    }
    const yes = new Set<string>();
    for (let changed = true; changed;) {
      changed = false;
      for (const [name, list] of needs) {
        if (yes.has(name) || list === undefined) continue;
        if (list.every((n) => yes.has(n))) {
          yes.add(name);
          changed = true;
        }
      }
    }
    return yes;
  }

  /** Struct fields (`Struct.field`) that must be boxed: they hold, by value, a type that holds the struct. */
  private boxed(): Set<string> {
    const edges = new Map<string, string[]>();
    for (const d of this.declarations) {
      if (d.kind === "struct")
        edges.set(
          d.name,
          d.fields.flatMap((f) => f.type.byValue),
        );
      else if (d.kind === "newtype") edges.set(d.name, [...d.inner.byValue]);
      else if (d.kind === "union")
        edges.set(
          d.name,
          d.variants.map((v) => v.type),
        );
    }
    const reaches = (from: string, to: string): boolean => {
      const seen = new Set<string>();
      const stack = [from];
      while (stack.length) {
        const at = stack.pop()!;
        if (at === to) return true;
        if (seen.has(at)) continue;
        seen.add(at);
        stack.push(...(edges.get(at) ?? []));
      }
      return false;
    };
    const out = new Set<string>();
    for (const d of this.declarations) {
      if (d.kind !== "struct") continue;
      for (const f of d.fields) if (f.type.byValue.some((n) => reaches(n, d.name))) out.add(`${d.name}.${f.ident}`);
    }
    return out;
  }

  private render(d: Declaration, defaults: Set<string>, boxed: Set<string>): string[] {
    const doc = docLines(d.doc || `${d.name}.`, "");
    switch (d.kind) {
      case "struct": {
        const derive = `#[derive(Clone, Debug, ${defaults.has(d.name) ? "Default, " : ""}PartialEq, Serialize, Deserialize)]`;
        const lines = [...doc, ...(d.note ? ["///", ...docLines(d.note, "")] : []), derive, `pub struct ${d.name} {`];
        for (const f of d.fields) {
          const type = boxed.has(`${d.name}.${f.ident}`) ? boxType(f.type.text) : f.type.text;
          lines.push(...indent([...docLines(f.doc, ""), ...f.attributes, `pub ${f.ident}: ${type},`]));
        }
        if (d.extra) {
          lines.push(
            ...indent([
              "/// Members the schema does not name, kept as they came (tolerant mode) and written back.",
              "#[serde(flatten)]",
              `pub extra: ${d.extra.text},`,
            ]),
          );
        }
        lines.push("}");
        if (!defaults.has(d.name)) lines.push("", ...constructor(d, boxed));
        return lines;
      }
      case "newtype":
        return [
          ...doc,
          `#[derive(Clone, Debug, ${defaults.has(d.name) ? "Default, " : ""}PartialEq, Serialize, Deserialize)]`,
          "#[serde(transparent)]",
          `pub struct ${d.name}(pub ${d.inner.text});`,
        ];
      case "unit":
        return [...doc, "#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]", `pub struct ${d.name};`];
      case "string-enum":
        return d.open ? openStringEnum(d, doc) : closedStringEnum(d, doc);
      case "integer-enum":
        return integerEnum(d, doc);
      case "union":
        return d.open ? openUnion(d, doc) : closedUnion(d, doc);
    }
  }
}

/**
 * `new` for a struct that has no `Default`: its required fields as arguments, in the schema's
 * order, every optional field absent; the others are set with struct update syntax
 * (`Turn { mode: Some(TurnMode::Agent), ..Turn::new(…) }`).
 */
function constructor(d: Extract<Declaration, { kind: "struct" }>, boxed: Set<string>): string[] {
  const typeOf = (f: Field) => (boxed.has(`${d.name}.${f.ident}`) ? boxType(f.type.text) : f.type.text);
  const required = d.fields.filter((f) => !f.attributes.some((a) => a.includes("default")));
  const optional = d.fields.filter((f) => f.attributes.some((a) => a.includes("default")));
  const params = required.map((f) => `${f.ident}: ${typeOf(f)}`);
  const one = `    pub fn new(${params.join(", ")}) -> ${d.name} {`;
  const signature = one.length <= 100 ? [one] : ["    pub fn new(", ...params.map((p) => `        ${p},`), `    ) -> ${d.name} {`];
  const absent = (f: Field) => (f.type.text.startsWith("Nullable<") ? "Nullable::Absent" : "None");
  return [
    `impl ${d.name} {`,
    `    /// A \`${d.name}\` of its required fields; every optional one is absent.`,
    ...(required.length > 7 ? ["    #[allow(clippy::too_many_arguments)]"] : []),
    ...signature,
    `        ${d.name} {`,
    ...required.map((f) => `            ${f.ident},`),
    ...optional.map((f) => `            ${f.ident}: ${absent(f)},`),
    ...(d.extra ? ["            extra: Default::default(),"] : []),
    "        }",
    "    }",
    "}",
  ];
}

function closedStringEnum(d: Extract<Declaration, { kind: "string-enum" }>, doc: string[]): string[] {
  const lines = [...doc, "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]", `pub enum ${d.name} {`];
  for (const v of d.variants) {
    const variant = [`/// \`${v.value.replace(/`/g, "'")}\``];
    if (v.ident !== v.value) variant.push(`#[serde(rename = ${rustString(v.value)})]`);
    variant.push(`${v.ident},`);
    lines.push(...indent(variant));
  }
  lines.push("}");
  return lines;
}

/** An `x-open` enum of strings: the values it lists, and any other kept as it came. */
function openStringEnum(d: Extract<Declaration, { kind: "string-enum" }>, doc: string[]): string[] {
  const name = d.name;
  return [
    ...doc,
    "///",
    "/// Open: a value not listed here is kept as `Other`, not refused.",
    "#[derive(Clone, Debug, PartialEq, Eq, Hash)]",
    "#[non_exhaustive]",
    `pub enum ${name} {`,
    ...indent(d.variants.flatMap((v) => [`/// \`${v.value.replace(/`/g, "'")}\``, `${v.ident},`])),
    "    /// A value this version does not list, kept as it came.",
    "    Other(String),",
    "}",
    "",
    `impl ${name} {`,
    "    /// The value as the wire writes it.",
    "    pub fn as_str(&self) -> &str {",
    "        match self {",
    ...indent(
      d.variants.map((v) => `${name}::${v.ident} => ${rustString(v.value)},`),
      3,
    ),
    `            ${name}::Other(value) => value,`,
    "        }",
    "    }",
    "}",
    "",
    `impl Serialize for ${name} {`,
    "    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {",
    "        serializer.serialize_str(self.as_str())",
    "    }",
    "}",
    "",
    `impl<'de> Deserialize<'de> for ${name} {`,
    "    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {",
    "        let value = String::deserialize(deserializer)?;",
    "        Ok(match value.as_str() {",
    ...indent(
      d.variants.map((v) => `${rustString(v.value)} => ${name}::${v.ident},`),
      3,
    ),
    `            _ => ${name}::Other(value),`,
    "        })",
    "    }",
    "}",
  ];
}

function integerEnum(d: Extract<Declaration, { kind: "integer-enum" }>, doc: string[]): string[] {
  const name = d.name;
  return [
    ...doc,
    "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]",
    `pub enum ${name} {`,
    ...indent(d.variants.flatMap((v) => [`/// \`${v.value}\``, `${v.ident} = ${v.value},`])),
    "}",
    "",
    `impl Serialize for ${name} {`,
    "    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {",
    "        serializer.serialize_i64(*self as i64)",
    "    }",
    "}",
    "",
    `impl<'de> Deserialize<'de> for ${name} {`,
    "    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {",
    "        match i64::deserialize(deserializer)? {",
    ...indent(
      d.variants.map((v) => `${v.value} => Ok(${name}::${v.ident}),`),
      3,
    ),
    `            other => Err(serde::de::Error::custom(format!("{other} is not a ${name}"))),`,
    "        }",
    "    }",
    "}",
  ];
}

function closedUnion(d: Extract<Declaration, { kind: "union" }>, doc: string[]): string[] {
  const lines = [
    ...doc,
    "#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]",
    `#[serde(tag = ${rustString(d.tag)})]`,
    `pub enum ${d.name} {`,
  ];
  for (const v of d.variants) {
    const variant = [...docLines(firstSentence(v.doc), "")];
    if (v.ident !== v.tag) variant.push(`#[serde(rename = ${rustString(v.tag)})]`);
    variant.push(`${v.ident}(${v.type}),`);
    lines.push(...indent(variant));
  }
  lines.push("}");
  return lines;
}

/**
 * An `x-open` union: the variants it lists, and any other object kept whole. serde's
 * `#[serde(other)]` keeps no data, so the impls read the tag themselves.
 */
function openUnion(d: Extract<Declaration, { kind: "union" }>, doc: string[]): string[] {
  const name = d.name;
  const tag = rustString(d.tag);
  return [
    ...doc,
    "///",
    "/// Open: an object with a tag not listed here is kept whole as `Other`, not refused.",
    "#[derive(Clone, Debug, PartialEq)]",
    "#[non_exhaustive]",
    `pub enum ${name} {`,
    ...indent(d.variants.flatMap((v) => [...docLines(firstSentence(v.doc), ""), `${v.ident}(${v.type}),`])),
    "    /// A variant this version does not list, kept as it came.",
    "    Other(serde_json::Map<String, serde_json::Value>),",
    "}",
    "",
    `impl Serialize for ${name} {`,
    "    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {",
    "        use serde::ser::Error;",
    "        let (tag, value) = match self {",
    ...indent(
      d.variants.map((v) => `${name}::${v.ident}(variant) => (${rustString(v.tag)}, serde_json::to_value(variant)),`),
      3,
    ),
    `            ${name}::Other(members) => return members.serialize(serializer),`,
    "        };",
    "        let mut members = match value.map_err(S::Error::custom)? {",
    "            serde_json::Value::Object(members) => members,",
    `            _ => return Err(S::Error::custom("a variant of ${name} is not an object")),`,
    "        };",
    `        members.insert(${tag}.to_owned(), tag.into());`,
    "        members.serialize(serializer)",
    "    }",
    "}",
    "",
    `impl<'de> Deserialize<'de> for ${name} {`,
    "    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {",
    "        use serde::de::Error;",
    "        let mut members = serde_json::Map::deserialize(deserializer)?;",
    `        let tag = match members.get(${tag}) {`,
    "            Some(serde_json::Value::String(tag)) => tag.clone(),",
    `            _ => return Ok(${name}::Other(members)),`,
    "        };",
    "        let known = match tag.as_str() {",
    ...indent(
      d.variants.map((v) => `${rustString(v.tag)} => true,`),
      3,
    ),
    "            _ => false,",
    "        };",
    "        if !known {",
    `            return Ok(${name}::Other(members));`,
    "        }",
    `        members.remove(${tag});`,
    "        let value = serde_json::Value::Object(members);",
    "        let variant = match tag.as_str() {",
    ...indent(
      d.variants.map((v) => `${rustString(v.tag)} => serde_json::from_value(value).map(${name}::${v.ident}),`),
      3,
    ),
    '            _ => unreachable!("a known tag"),',
    "        };",
    "        variant.map_err(D::Error::custom)",
    "    }",
    "}",
  ];
}

function firstSentence(text: string): string {
  const match = /^(.+?[.!?])(\s|$)/s.exec(text.trim());
  return (match ? match[1]! : text).replace(/\s+/g, " ");
}

function wrap(outer: "Option" | "Nullable", inner: RustType): RustType {
  return { text: `${outer}<${inner.text}>`, defaultNeeds: [], byValue: inner.byValue };
}

function wrapMap(value: RustType): RustType {
  return { text: `BTreeMap<String, ${value.text}>`, defaultNeeds: [], byValue: [] };
}

function boxType(text: string): string {
  const generic = /^(Option|Nullable)<(.+)>$/.exec(text);
  return generic ? `${generic[1]}<Box<${generic[2]}>>` : `Box<${text}>`;
}

/** The node without its null: the value half of a nullable pair, a type list without null. */
function withoutNull(node: JsonObject): JsonObject {
  const pair = nullablePair(node);
  if (pair) {
    const value = pair.value;
    return isObject(value) ? { ...(typeof node.description === "string" ? { description: node.description } : {}), ...value } : {};
  }
  if (Array.isArray(node.type)) {
    const rest = (node.type as string[]).filter((t) => t !== "null");
    return { ...node, type: rest.length === 1 ? rest[0]! : rest };
  }
  if (Array.isArray(node.enum)) return { ...node, enum: node.enum.filter((v) => v !== null) };
  return node;
}

/** Calls `visit` with each `$ref` of a schema and its pointer. */
function visitRefs(schema: Json, pointer: string, visit: (ref: string, pointer: string) => void): void {
  if (Array.isArray(schema)) {
    schema.forEach((item, i) => visitRefs(item, `${pointer}/${i}`, visit));
    return;
  }
  if (!isObject(schema)) return;
  if (typeof schema.$ref === "string") visit(schema.$ref, pointer);
  for (const [key, value] of Object.entries(schema)) {
    if (key === "enum" || key === "const" || key === "examples" || key === "default") continue;
    if (typeof value === "object" && value !== null) visitRefs(value, `${pointer}/${key}`, visit);
  }
}
