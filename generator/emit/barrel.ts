/**
 * index.ts: re-exports every generated TypeScript module, after checking that no two of
 * them export the same name (a schema title that clashes with a generated helper would
 * otherwise shadow it silently). The exports are read from each module's syntax tree
 * (the TypeScript parser only: no program, no type checker).
 */
import ts from "typescript";
import { SchemaError, SchemaErrors } from "../schema-error.js";

const BARREL_MODULES = ["types.ts", "registry.ts", "validators.ts", "client.ts", "server.ts", "ordering.ts"];

const isExported = (node: ts.Node): boolean => ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/** The names a module exports by declaration or by `export { … }`. */
function exportedNames(source: ts.SourceFile): string[] {
  const names: string[] = [];
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      if (isExported(statement)) for (const d of statement.declarationList.declarations) if (ts.isIdentifier(d.name)) names.push(d.name.text);
    } else if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isFunctionDeclaration(statement) || ts.isEnumDeclaration(statement)) {
      if (isExported(statement) && statement.name) names.push(statement.name.text);
    } else if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) names.push(element.name.text);
    }
  }
  return names;
}

export function emitBarrel(files: readonly { path: string; content: string }[], header: string): string {
  const owner = new Map<string, string>();
  const clashes: SchemaError[] = [];
  const modules = BARREL_MODULES.filter((name) => files.some((f) => f.path === name));
  for (const name of modules) {
    const source = ts.createSourceFile(`/out/${name}`, files.find((f) => f.path === name)!.content, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
    for (const symbol of new Set(exportedNames(source))) {
      const first = owner.get(symbol);
      if (first && first !== name) clashes.push(new SchemaError("(generated)", "", `"${symbol}" is exported by both ${first} and ${name}; rename the schema whose title is "${symbol}"`));
      else owner.set(symbol, name);
    }
  }
  if (clashes.length) throw new SchemaErrors(clashes);
  const lines = [header, "/** Everything generated from the schemas, in one import. */", ...modules.map((name) => `export * from "./${name.replace(/\.ts$/, ".js")}";`)];
  return `${lines.join("\n")}\n`;
}
