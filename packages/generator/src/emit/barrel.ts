/**
 * index.ts: re-exports every generated TypeScript module, after checking that no two of
 * them export the same name (a schema title that clashes with a generated helper would
 * otherwise shadow it silently). The exports are read from the modules' top-level export
 * statements, which the generator itself writes one per line at the start of a line: no
 * parser needed.
 */
import { SchemaError, SchemaErrors } from "../schema-error.js";

const BARREL_MODULES = ["types.ts", "registry.ts", "validators.ts", "client.ts", "server.ts", "ordering.ts", "view.ts"];

/** `export [declare] [abstract] [async] const|let|var|function|class|interface|type|enum Name`. */
const DECLARATION =
  /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:const|let|var|function\*?|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm;
/** `export [type] { A, B as C, type D } [from "…"]`, possibly over several lines. */
const NAMED = /^export\s+(?:type\s+)?\{([^}]*)\}/gm;

/** The names a module exports by declaration or by `export { … }`. */
export function exportedNames(code: string): string[] {
  const names: string[] = [];
  for (const match of code.matchAll(DECLARATION)) names.push(match[1]!);
  for (const match of code.matchAll(NAMED)) {
    for (const element of match[1]!.split(",")) {
      const words = element
        .trim()
        .replace(/^type\s+/, "")
        .split(/\s+as\s+/);
      const name = words[words.length - 1]!.trim();
      if (name) names.push(name);
    }
  }
  return names;
}

export function emitBarrel(files: readonly { path: string; content: string }[], header: string): string {
  const owner = new Map<string, string>();
  const clashes: SchemaError[] = [];
  const modules = BARREL_MODULES.filter((name) => files.some((f) => f.path === name));
  for (const name of modules) {
    for (const symbol of new Set(exportedNames(files.find((f) => f.path === name)!.content))) {
      const first = owner.get(symbol);
      if (first && first !== name)
        clashes.push(
          new SchemaError(
            "(generated)",
            "",
            `"${symbol}" is exported by both ${first} and ${name}; rename the schema whose title is "${symbol}"`,
          ),
        );
      else owner.set(symbol, name);
    }
  }
  if (clashes.length) throw new SchemaErrors(clashes);
  const lines = [
    header,
    "/** Everything generated from the schemas, in one import. */",
    ...modules.map((name) => `export * from "./${name.replace(/\.ts$/, ".js")}";`),
  ];
  return `${lines.join("\n")}\n`;
}
