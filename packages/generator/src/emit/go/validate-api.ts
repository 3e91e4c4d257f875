/**
 * The public half of validators.go: per named type `Validate<T>` (every issue with its JSON
 * pointer, strict or tolerant) and `Decode<T>` (parse, validate, read), and by name
 * `ValidateType`, `ReadType` and `WriteType` for code that knows a type only by its title
 * (the message checker, the testee).
 */
import type { ProtocolModel } from "../../model.js";
import { goString } from "./names.js";
import type { GoShapes } from "./shapes.js";

export function validatorsFile(model: ProtocolModel, shapes: GoShapes, checkOf: ReadonlyMap<string, string>): string {
  const out: string[] = [];
  for (const type of model.types) {
    const name = type.title;
    const decl = shapes.byTitle.get(name)!;
    const check = checkOf.get(name)!;
    const zero = decl.kind === "union" ? "nil" : undefined;
    out.push(
      `// Validate${name} checks v as a ${name}: nil when it is valid, else a *jsonrpc.ValidationError`,
      "// naming each issue by its JSON pointer, as the TypeScript validators name them.",
      `func Validate${name}(v *jsonrpc.Value, mode jsonrpc.Mode) error {`,
      `\treturn jsonrpc.Validate(${goString(name)}, ${check}, v, mode)`,
      "}",
      "",
      `// Decode${name} reads JSON text as a ${name}, validated in the given mode.`,
      `func Decode${name}(data []byte, mode jsonrpc.Mode) (${name}, error) {`,
      `\treturn jsonrpc.Decode(data, ${goString(name)}, ${check}, read${name}, mode)`,
      "}",
      "",
    );
    void zero;
  }
  out.push(
    "// TypeNames are the titles of the protocol's named types.",
    `var TypeNames = []string{${model.types.map((t) => goString(t.title)).join(", ")}}`,
    "",
    "// checkOf is the check function of a named type, or nil.",
    "func checkOf(name string) func(*jsonrpc.Checker, *jsonrpc.Value) bool {",
    "\tswitch name {",
  );
  for (const type of model.types) out.push(`\tcase ${goString(type.title)}:`, `\t\treturn ${checkOf.get(type.title)}`);
  out.push(
    "\t}",
    "\treturn nil",
    "}",
    "",
    "// ValidateType checks v as the named type (see TypeNames).",
    "func ValidateType(name string, v *jsonrpc.Value, mode jsonrpc.Mode) error {",
    "\tcheck := checkOf(name)",
    "\tif check == nil {",
    "\t\treturn jsonrpc.UnknownType(name)",
    "\t}",
    "\treturn jsonrpc.Validate(name, check, v, mode)",
    "}",
    "",
    "// ReadType reads v as the named type, giving the Go value it decodes to (a struct, an enum,",
    "// a union's variant, …). It checks shapes only: validate first.",
    "func ReadType(name string, v *jsonrpc.Value) (any, error) {",
    "\tswitch name {",
  );
  for (const type of model.types) out.push(`\tcase ${goString(type.title)}:`, `\t\treturn read${type.title}(v)`);
  out.push("\t}", "\treturn nil, jsonrpc.UnknownType(name)", "}", "");
  out.push(
    "// WriteType writes a value of the named type, as ReadType gives it, back as JSON.",
    "func WriteType(name string, x any) (jsonrpc.Value, error) {",
    "\tswitch name {",
  );
  for (const type of model.types) {
    const decl = shapes.byTitle.get(type.title)!;
    const write = decl.kind === "alias" ? `write${type.title}(t)` : "t.toValue()";
    out.push(
      `\tcase ${goString(type.title)}:`,
      `\t\tif t, ok := x.(${type.title}); ok {`,
      `\t\t\treturn ${write}, nil`,
      "\t\t}",
      `\t\treturn jsonrpc.Value{}, jsonrpc.WrongGoType(name, x)`,
    );
  }
  out.push("\t}", "\treturn jsonrpc.Value{}, jsonrpc.UnknownType(name)", "}");
  return out.join("\n");
}
