/**
 * Type-checks generated output under the strictest settings a user's project may have
 * (strict, NodeNext, noUncheckedIndexedAccess, exactOptionalPropertyTypes), with ts-morph's
 * compiler, without writing it anywhere: the files are added to an in-memory view of the
 * project. `@turnspec/rpc` is this installation's own support module (the sources it ships),
 * so the check needs nothing from the project the output is for.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { Project, ts } from "ts-morph";
import type { GeneratedFile } from "./generate.js";
import { rpcPackageDir } from "./standalone.js";

/** The support module's entry for the compiler: the sources @turnspec/rpc ships. */
function supportEntry(): string {
  const path = join(rpcPackageDir(), "src", "index.ts");
  if (existsSync(path)) return path;
  throw new Error(`turnspec generate --typecheck: the sources of @turnspec/rpc are missing (expected ${path}); reinstall @turnspec/rpc`);
}

export interface TypeCheckOptions {
  /** Where the files would live; relative imports resolve from there. */
  readonly outDir: string;
  /** Extra TypeScript files to check with them (for example type-level tests), by absolute path. */
  readonly extraFiles?: readonly string[];
}

/** Returns one line per diagnostic (`file:line:col message`); empty when everything compiles. */
export function typeCheck(files: readonly GeneratedFile[], options: TypeCheckOptions): string[] {
  const project = new Project({
    skipAddingFilesFromTsConfig: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      noImplicitOverride: true,
      noEmit: true,
      skipLibCheck: true,
      verbatimModuleSyntax: true,
      // Generated code uses no Node API: the check must not depend on @types/node being installed.
      types: [],
      paths: { "@turnspec/rpc": [supportEntry()] },
    },
  });
  const outDir = resolve(options.outDir);
  for (const file of files) {
    if (/\.(ts|cts|mts)$/.test(file.path)) project.createSourceFile(join(outDir, file.path), file.content, { overwrite: true });
  }
  for (const extra of options.extraFiles ?? []) project.addSourceFileAtPath(extra);
  project.resolveSourceFileDependencies();
  return project.getPreEmitDiagnostics().map((d) => {
    const source = d.getSourceFile();
    const where = source ? `${source.getFilePath()}:${d.getLineNumber() ?? 0}` : "(project)";
    return `${where} ${ts.flattenDiagnosticMessageText(d.compilerObject.messageText, "\n")}`;
  });
}
