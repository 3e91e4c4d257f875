/**
 * cmd/testee/main.go: the module's answer to the language contract's harness
 * (docs/languages.md), over the package's own validators, types and ordering rules.
 */
import type { ProtocolModel } from "../../model.js";

export function testeeFile(model: ProtocolModel, module: string, pkg: string): string {
  return [
    `// Command testee answers the harness of turnspec's language contract for ${model.title}: one JSON`,
    "// command per line on standard input, one JSON answer per line on standard output",
    "// (validate, roundtrip, encode, messages, ordering).",
    "package main",
    "",
    "import (",
    '\t"fmt"',
    '\t"os"',
    "",
    `\t${pkg} "${module}"`,
    `\t"${module}/jsonrpc"`,
    ")",
    "",
    "func main() {",
    `\ttypes := jsonrpc.TesteeTypes{Read: ${pkg}.ReadType, Write: ${pkg}.WriteType}`,
    `\tif err := jsonrpc.ServeTestee(${pkg}.Protocol, types, os.Stdin, os.Stdout); err != nil {`,
    '\t\tfmt.Fprintln(os.Stderr, "testee:", err)',
    "\t\tos.Exit(1)",
    "\t}",
    "}",
  ].join("\n");
}
