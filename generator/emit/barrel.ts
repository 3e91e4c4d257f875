/**
 * index.ts, built with ts-morph: re-exports every generated TypeScript module, after
 * checking that no two of them export the same name (a schema title that clashes with a
 * generated helper would otherwise shadow it silently).
 */
import { Project } from "ts-morph";
import { SchemaError, SchemaErrors } from "../schema-error.js";

const BARREL_MODULES = ["types.ts", "registry.ts", "validators.ts", "client.ts", "server.ts", "ordering.ts"];

export function emitBarrel(files: readonly { path: string; content: string }[], header: string): string {
  const project = new Project({ useInMemoryFileSystem: true, compilerOptions: { strict: true } });
  const owner = new Map<string, string>();
  const clashes: SchemaError[] = [];
  const modules = BARREL_MODULES.filter((name) => files.some((f) => f.path === name));
  for (const name of modules) {
    const source = project.createSourceFile(`/out/${name}`, files.find((f) => f.path === name)!.content);
    const exported = [
      ...source.getInterfaces(),
      ...source.getTypeAliases(),
      ...source.getClasses(),
      ...source.getFunctions(),
      ...source.getEnums(),
    ]
      .filter((d) => d.isExported())
      .map((d) => d.getName()!)
      .concat(source.getVariableDeclarations().filter((d) => d.isExported()).map((d) => d.getName()))
      .concat(source.getExportDeclarations().flatMap((d) => d.getNamedExports().map((e) => e.getAliasNode()?.getText() ?? e.getName())));
    for (const symbol of new Set(exported)) {
      const first = owner.get(symbol);
      if (first && first !== name) clashes.push(new SchemaError("(generated)", "", `"${symbol}" is exported by both ${first} and ${name}; rename the schema whose title is "${symbol}"`));
      else owner.set(symbol, name);
    }
  }
  if (clashes.length) throw new SchemaErrors(clashes);
  const barrel = project.createSourceFile("/out/index.ts", `${header}\n/** Everything generated from the schemas, in one import. */\n`);
  for (const name of modules) barrel.addExportDeclaration({ moduleSpecifier: `./${name.replace(/\.ts$/, ".js")}` });
  return barrel.getFullText();
}
