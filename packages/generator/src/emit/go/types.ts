/**
 * types.go: the Go declaration of every named type (and of the objects and enums nested in
 * them), with exact-key decoding (members are matched by their exact names: encoding/json
 * would match them case-insensitively), canonical encoding, sealed interfaces for tagged
 * unions and Optional for a member both optional and nullable. Decoding here reads shapes
 * only; what the schemas allow is checked by validators.go.
 */
import type { Json } from "../../model.js";
import { CELL } from "./gofmt.js";
import { comment, docComment, goString } from "./names.js";
import { nilable, type AliasDecl, type Decl, type EnumDecl, type Field, type Shape, type StructDecl, type UnionDecl } from "./shapes.js";
import { goValue } from "./validators.js";

/** The Go type of a shape. */
export function goType(shape: Shape): string {
  switch (shape.kind) {
    case "string":
      return "string";
    case "int":
      return "int64";
    case "float":
      return "float64";
    case "bool":
      return "bool";
    case "any":
      return "jsonrpc.Value";
    case "null":
      return "jsonrpc.NullType";
    case "decl":
      return shape.decl.name;
    case "array":
      return `[]${goType(shape.item)}`;
    case "map":
      return `map[string]${goType(shape.value)}`;
    case "nullable":
      return nilable(shape.inner) ? goType(shape.inner) : `*${goType(shape.inner)}`;
    case "const":
      return goType(shape.base);
  }
}

/** Whether an alias declaration is a Go type alias (`=`) rather than a defined type. */
export function isTypeAlias(decl: AliasDecl): boolean {
  return (
    decl.shape.kind === "nullable" ||
    decl.shape.kind === "any" ||
    decl.shape.kind === "null" ||
    (decl.shape.kind === "decl" && decl.shape.decl.kind === "union")
  );
}

/**
 * A Go expression of type func(*jsonrpc.Value) (T, error) reading a shape: a function's name
 * where there is one, else a function literal (written over several lines, as gofmt writes
 * them; the caller indents the lines after the first).
 */
export function reader(shape: Shape): string {
  switch (shape.kind) {
    case "string":
      return "jsonrpc.AsString";
    case "int":
      return "jsonrpc.AsInt";
    case "float":
      return "jsonrpc.AsFloat";
    case "bool":
      return "jsonrpc.AsBool";
    case "any":
      return "jsonrpc.AsValue";
    case "null":
      return "jsonrpc.AsNull";
    case "decl":
      return `read${shape.decl.name}`;
    case "const":
      return reader(shape.base);
    default:
      if (shape.kind === "nullable" && shape.inner.kind === "any") return "jsonrpc.AsValue";
      return `func(v *jsonrpc.Value) (${goType(shape)}, error) {\n\treturn ${readCall(shape, "v")}\n}`;
  }
}

/** A Go expression of type (T, error) reading the *jsonrpc.Value `arg` as a shape. */
export function readCall(shape: Shape, arg: string): string {
  switch (shape.kind) {
    case "array":
      return `jsonrpc.ReadArray(${arg}, ${reader(shape.item)})`;
    case "map":
      return `jsonrpc.ReadMap(${arg}, ${reader(shape.value)})`;
    case "nullable":
      if (shape.inner.kind === "any") return `jsonrpc.AsValue(${arg})`;
      return nilable(shape.inner)
        ? `jsonrpc.OrNull(${arg}, ${reader(shape.inner)})`
        : `jsonrpc.ReadNullable(${arg}, ${reader(shape.inner)})`;
    default:
      return `${reader(shape)}(${arg})`;
  }
}

/** A Go expression of type func(T) jsonrpc.Value writing a shape (see reader). */
export function writer(shape: Shape): string {
  switch (shape.kind) {
    case "string":
      return "jsonrpc.StringValue";
    case "int":
      return "jsonrpc.IntValue";
    case "float":
      return "jsonrpc.NumberValue";
    case "bool":
      return "jsonrpc.BoolValue";
    case "any":
      return "jsonrpc.WriteValue";
    case "null":
      return "jsonrpc.WriteNull";
    case "decl":
      return shape.decl.kind === "alias" ? `write${shape.decl.name}` : `${shape.decl.name}.toValue`;
    case "const":
      return writer(shape.base);
    default:
      if (shape.kind === "nullable" && shape.inner.kind === "any") return "jsonrpc.WriteValue";
      return `func(x ${goType(shape)}) jsonrpc.Value {\n\treturn ${writeCall(shape, "x")}\n}`;
  }
}

/** A Go expression of type jsonrpc.Value writing the Go value `arg` of a shape. */
export function writeCall(shape: Shape, arg: string): string {
  switch (shape.kind) {
    case "any":
      return arg;
    case "array":
      return `jsonrpc.WriteArray(${arg}, ${writer(shape.item)})`;
    case "map":
      return `jsonrpc.WriteMap(${arg}, ${writer(shape.value)})`;
    case "nullable": {
      const inner = shape.inner;
      if (inner.kind === "any") return arg;
      if (inner.kind === "array") return `jsonrpc.WriteArrayOrNull(${arg}, ${writer(inner.item)})`;
      if (inner.kind === "map") return `jsonrpc.WriteMapOrNull(${arg}, ${writer(inner.value)})`;
      if (nilable(inner)) return `jsonrpc.WriteOrNull(${arg}, ${writer(inner)})`;
      return `jsonrpc.WriteNullable(${arg}, ${writer(inner)})`;
    }
    case "decl":
      // A method of a value reached through a pointer is called on the pointer: Go dereferences it.
      if (shape.decl.kind !== "alias") return `${arg.startsWith("*") ? arg.slice(1) : arg}.toValue()`;
      return `write${shape.decl.name}(${arg})`;
    default:
      return `${writer(shape)}(${arg})`;
  }
}

/** How a field is held: its Go type and how it is read and written. */
interface FieldPlan {
  /** Undefined for a required constant, which is written and never held. */
  readonly type?: string;
  /** The statement (after `case "name":`) that reads member `p` into x.<Field>, setting err. */
  readonly read: string;
  /** Statements appending the member to `members`. */
  readonly write: string[];
}

function plan(field: Field): FieldPlan {
  const { shape, required, json } = field;
  const x = `x.${field.name}`;
  const member = (value: string) => `members = append(members, jsonrpc.Member{Key: ${goString(json)}, Value: ${value}})`;
  if (shape.kind === "const" && required) return { read: "// A constant: written, never held.", write: [member(goValue(shape.value))] };
  if (required) return { type: goType(shape), read: `${x}, err = ${readCall(shape, "p")}`, write: [member(writeCall(shape, x))] };
  if (shape.kind === "nullable") {
    if (shape.inner.kind === "any") return { type: "jsonrpc.Value", read: `${x} = *p`, write: [member(x)] };
    return {
      type: `jsonrpc.Optional[${goType(shape.inner)}]`,
      read: `${x}, err = jsonrpc.ReadOptional(p, ${reader(shape.inner)})`,
      write: [member(`jsonrpc.WriteOptional(${x}, ${writer(shape.inner)})`)],
    };
  }
  if (shape.kind === "any") return { type: "jsonrpc.Value", read: `${x} = *p`, write: [member(x)] };
  // A named type that is any JSON value has its own absent state: written as it is, absent left out.
  if (isValueShape(shape))
    return { type: goType(shape), read: `${x}, err = ${readCall(shape, "p")}`, write: [member(writeCall(shape, x))] };
  if (nilable(shape))
    return {
      type: goType(shape),
      read: `${x}, err = ${readCall(shape, "p")}`,
      write: [`if ${x} != nil {`, ...indentText(member(writeCall(shape, x))), "}"],
    };
  return {
    type: `*${goType(shape)}`,
    read: `${x}, err = jsonrpc.Ref(${readCall(shape, "p")})`,
    write: [`if ${x} != nil {`, ...indentText(member(writeCall(shape, `*${x}`))), "}"],
  };
}

/** Whether a shape is a jsonrpc.Value, by itself or through a named type alias. */
function isValueShape(shape: Shape): boolean {
  return shape.kind === "any" || (shape.kind === "decl" && shape.decl.kind === "alias" && isValueShape(shape.decl.shape));
}

/** Lines of text (a statement that may span several), one tab further in. */
function indentText(text: string): string[] {
  return text.split("\n").map((l) => (l === "" ? l : `\t${l}`));
}

function indentLines(text: string, tabs = 1): string {
  const pad = "\t".repeat(tabs);
  return text
    .split("\n")
    .map((l) => (l === "" ? l : pad + l))
    .join("\n");
}

function jsonMethods(name: string, what: string): string[] {
  return [
    `// MarshalJSON writes the canonical JSON text of the ${what}.`,
    `func (x ${name}) MarshalJSON() ([]byte, error) {`,
    "\treturn jsonrpc.Canonical(x.toValue())",
    "}",
    "",
    `// UnmarshalJSON reads a ${what} from JSON text, matching member names exactly. It checks`,
    `// shapes only; Decode${name} also validates.`,
    `func (x *${name}) UnmarshalJSON(data []byte) error {`,
    "\tv, err := jsonrpc.Parse(data)",
    "\tif err != nil {",
    "\t\treturn err",
    "\t}",
    `\tvalue, err := read${name}(&v)`,
    "\tif err != nil {",
    "\t\treturn err",
    "\t}",
    "\t*x = value",
    "\treturn nil",
    "}",
  ];
}

function structCode(decl: StructDecl): string[] {
  const plans = decl.fields.map((f) => ({ field: f, plan: plan(f) }));
  const held = plans.filter((p) => p.plan.type !== undefined);
  const extraType = decl.extra === "unknown" ? "map[string]jsonrpc.Value" : `map[string]${goType(decl.extra)}`;
  const out: string[] = [...docComment(decl.name, decl.description || `${decl.name} is an object of the protocol.`)];
  if (decl.variantOf.length) {
    if (out.length) out.push("//");
    out.push(...comment(`It is the variant ${decl.variantOf.map((v) => `${JSON.stringify(v.tag)} of ${v.union.name}`).join(", ")}.`));
  }
  out.push(`type ${decl.name} struct {`);
  for (const { field, plan: p } of held) {
    const doc = field.description ? docComment(field.name, field.description, "\t") : [];
    out.push(...doc);
    out.push(`\t${field.name}${CELL}${p.type}`);
  }
  const extraDoc =
    decl.extra === "unknown"
      ? `${decl.extraName} holds the members the schema does not declare, kept from a tolerant read and written back as they came.`
      : `${decl.extraName} holds the members beyond the declared ones.`;
  if (held.length) out.push("");
  out.push(...comment(extraDoc, "\t"), `\t${decl.extraName}${CELL}${extraType}`, "}", "");

  // Writing: the members beyond the declared ones first, so that a declared one of the same name wins.
  const extraShape: Shape = decl.extra === "unknown" ? { kind: "any" } : decl.extra;
  out.push(
    `func (x ${decl.name}) toValue() jsonrpc.Value {`,
    `\tmembers := make([]jsonrpc.Member, 0, ${plans.length}+len(x.${decl.extraName}))`,
    `\tfor k, v := range x.${decl.extraName} {`,
    indentLines(`members = append(members, jsonrpc.Member{Key: k, Value: ${writeCall(extraShape, "v")}})`, 2),
    "\t}",
  );
  for (const { plan: p } of plans) out.push(...p.write.flatMap((l) => l.split("\n")).map((l) => `\t${l}`));
  out.push("\treturn jsonrpc.ObjectValue(members...)", "}", "");

  out.push(
    `func read${decl.name}(v *jsonrpc.Value) (${decl.name}, error) {`,
    `\tvar x ${decl.name}`,
    "\tif v.Kind() != jsonrpc.Object {",
    '\t\treturn x, jsonrpc.Mismatch(v, "an object")',
    "\t}",
  );
  out.push("\tms := v.Members()", "\tfor i := range ms {", "\t\tp := &ms[i].Value", "\t\tvar err error", "\t\tswitch ms[i].Key {");
  for (const { field, plan: p } of plans) out.push(`\t\tcase ${goString(field.json)}:`, indentLines(p.read, 3));
  out.push(
    "\t\tdefault:",
    `\t\t\tvar e ${goType(extraShape)}`,
    indentLines(`e, err = ${readCall(extraShape, "p")}`, 3),
    `\t\t\tx.${decl.extraName} = jsonrpc.Put(x.${decl.extraName}, ms[i].Key, e)`,
    "\t\t}",
  );
  out.push("\t\tif err != nil {", "\t\t\treturn x, jsonrpc.At(ms[i].Key, err)", "\t\t}", "\t}", "\treturn x, nil", "}", "");
  out.push(...jsonMethods(decl.name, decl.name));
  return out;
}

function enumCode(decl: EnumDecl): string[] {
  const base = decl.base === "string" ? "string" : decl.base === "int" ? "int64" : "float64";
  const out = [...docComment(decl.name, decl.description || `${decl.name} is one of the values below.`), `type ${decl.name} ${base}`, ""];
  out.push(`// The values of ${decl.name}.`, "const (");
  for (const value of decl.values)
    out.push(`\t${value.name}${CELL}${decl.name}${CELL}= ${typeof value.value === "string" ? goString(value.value) : String(value.value)}`);
  out.push(")", "");
  const [make, read] =
    decl.base === "string"
      ? ["jsonrpc.StringValue(string(x))", "jsonrpc.AsString"]
      : decl.base === "int"
        ? ["jsonrpc.IntValue(int64(x))", "jsonrpc.AsInt"]
        : ["jsonrpc.NumberValue(float64(x))", "jsonrpc.AsFloat"];
  out.push(`func (x ${decl.name}) toValue() jsonrpc.Value {`, `\treturn ${make}`, "}", "");
  out.push(
    `func read${decl.name}(v *jsonrpc.Value) (${decl.name}, error) {`,
    `\tx, err := ${read}(v)`,
    `\treturn ${decl.name}(x), err`,
    "}",
    "",
  );
  out.push(...jsonMethods(decl.name, decl.name));
  return out;
}

function unionCode(decl: UnionDecl, variantChecks: ReadonlyMap<string, string>): string[] {
  const out = [...docComment(decl.name, decl.description || `${decl.name} is one of its variants.`)];
  const variants =
    decl.tagName === undefined
      ? `Its variants, told apart by their schemas (the first that accepts a value is read): ${decl.variants.map((v) => v.decl.name).join(", ")}.`
      : `Its variants, by their ${JSON.stringify(decl.tagName)}: ${decl.variants.map((v) => `${v.decl.name} (${JSON.stringify(v.tag)})`).join(", ")}.${decl.open ? ` A tag the schemas do not list is read as ${decl.name}Unknown, which keeps the value as it came.` : ""}`;
  out.push("//", ...comment(variants));
  out.push(`type ${decl.name} interface {`, `\tis${decl.name}()`, "\ttoValue() jsonrpc.Value", "}", "");
  for (const v of decl.variants) out.push(`func (${v.decl.name}) is${decl.name}() {}`, "");
  if (decl.open) {
    out.push(
      `// ${decl.name}Unknown is a ${decl.name} whose tag the schemas do not list, kept as it came.`,
      `type ${decl.name}Unknown struct {`,
      "\tValue jsonrpc.Value",
      "}",
      "",
      `func (${decl.name}Unknown) is${decl.name}() {}`,
      "",
      `func (x ${decl.name}Unknown) toValue() jsonrpc.Value {`,
      "\treturn x.Value",
      "}",
      "",
    );
  }
  if (decl.tagName === undefined) {
    // No tag: the variant is the first whose schema accepts the value, as the validators read it.
    out.push(`func read${decl.name}(v *jsonrpc.Value) (${decl.name}, error) {`, "\tswitch {");
    for (const v of decl.variants)
      out.push(`\tcase jsonrpc.Valid(${variantChecks.get(v.place!.key)!}, v, jsonrpc.Tolerant):`, `\t\treturn read${v.decl.name}(v)`);
    out.push("\t}", `\treturn nil, jsonrpc.NoVariant(v, ${goString(decl.name)})`, "}", "");
  } else {
    out.push(
      `func read${decl.name}(v *jsonrpc.Value) (${decl.name}, error) {`,
      "\tif v.Kind() != jsonrpc.Object {",
      '\t\treturn nil, jsonrpc.Mismatch(v, "an object")',
      "\t}",
    );
    out.push(`\ttag := v.Lookup(${goString(decl.tagName)})`, "\tif tag != nil && tag.Kind() == jsonrpc.String {", "\t\tswitch tag.Str() {");
    for (const v of decl.variants) out.push(`\t\tcase ${goString(v.tag!)}:`, `\t\t\treturn read${v.decl.name}(v)`);
    out.push("\t\t}");
    if (decl.open) out.push(`\t\treturn ${decl.name}Unknown{Value: *v}, nil`);
    out.push("\t}", `\treturn nil, jsonrpc.UnknownTag(${goString(decl.tagName)}, tag, ${goString(decl.name)})`, "}", "");
  }
  const any = `Any${decl.name}`;
  out.push(
    ...comment(
      `${any} holds a ${decl.name} where encoding/json needs a concrete type: its UnmarshalJSON ${decl.tagName === undefined ? "decodes the variant whose schema accepts the value" : "reads the tag and decodes the variant it names"}.`,
    ),
    `type ${any} struct {`,
    `\t${decl.name}`,
    "}",
    "",
    `// MarshalJSON writes the canonical JSON text of the variant held (null when none is).`,
    `func (x ${any}) MarshalJSON() ([]byte, error) {`,
    `\tif x.${decl.name} == nil {`,
    '\t\treturn []byte("null"), nil',
    "\t}",
    `\treturn jsonrpc.Canonical(x.${decl.name}.toValue())`,
    "}",
    "",
    `// UnmarshalJSON reads the variant ${decl.tagName === undefined ? "the value matches" : "the tag names"}. Decode${decl.name} also validates the whole value.`,
    `func (x *${any}) UnmarshalJSON(data []byte) error {`,
    "\tv, err := jsonrpc.Parse(data)",
    "\tif err != nil {",
    "\t\treturn err",
    "\t}",
    `\tx.${decl.name}, err = read${decl.name}(&v)`,
    "\treturn err",
    "}",
  );
  return out;
}

function aliasCode(decl: AliasDecl): string[] {
  const alias = isTypeAlias(decl);
  const type = goType(decl.shape);
  const out = [
    ...docComment(decl.name, decl.description || `${decl.name} is a value of the protocol.`),
    `type ${decl.name} ${alias ? "= " : ""}${type}`,
    "",
  ];
  out.push(`func read${decl.name}(v *jsonrpc.Value) (${decl.name}, error) {`);
  if (alias) out.push(indentLines(`return ${readCall(decl.shape, "v")}`));
  else out.push(indentLines(`x, err := ${readCall(decl.shape, "v")}`), `\treturn ${decl.name}(x), err`);
  out.push(
    "}",
    "",
    `func write${decl.name}(x ${decl.name}) jsonrpc.Value {`,
    indentLines(`return ${writeCall(decl.shape, alias ? "x" : `${type}(x)`)}`),
    "}",
    "",
  );
  if (!alias) {
    out.push(`func (x ${decl.name}) toValue() jsonrpc.Value {`, `\treturn write${decl.name}(x)`, "}", "");
    out.push(
      `// MarshalJSON writes the canonical JSON text of the ${decl.name}.`,
      `func (x ${decl.name}) MarshalJSON() ([]byte, error) {`,
      `\treturn jsonrpc.Canonical(write${decl.name}(x))`,
      "}",
      "",
      `// UnmarshalJSON reads a ${decl.name} from JSON text. It checks shapes only; Decode${decl.name} also validates.`,
      `func (x *${decl.name}) UnmarshalJSON(data []byte) error {`,
      "\tv, err := jsonrpc.Parse(data)",
      "\tif err != nil {",
      "\t\treturn err",
      "\t}",
      `\tvalue, err := read${decl.name}(&v)`,
      "\tif err != nil {",
      "\t\treturn err",
      "\t}",
      "\t*x = value",
      "\treturn nil",
      "}",
    );
  }
  return out;
}

/**
 * The declarations of types.go, each with its reading and writing. `variantChecks` are the
 * check functions (validators.go) of the variants of unions without a tag, by place.
 */
export function typesCode(decls: readonly Decl[], variantChecks: ReadonlyMap<string, string>): string {
  const parts: string[] = [];
  for (const decl of decls) {
    const lines =
      decl.kind === "struct"
        ? structCode(decl)
        : decl.kind === "enum"
          ? enumCode(decl)
          : decl.kind === "union"
            ? unionCode(decl, variantChecks)
            : aliasCode(decl);
    parts.push(lines.join("\n"));
  }
  return parts.join("\n\n");
}

/** Whether a Json value needs no Go declaration of its own (for the const members). */
export const constText = (value: Json) => goValue(value);
