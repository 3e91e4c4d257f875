/**
 * Type-checks generated output under strict settings, with ts-morph's compiler, without
 * writing it anywhere: the files are added to an in-memory view of the project.
 */
import { fileURLToPath } from "node:url";
import { join, resolve } from "node:path";
import { Project, ts } from "ts-morph";
import type { GeneratedFile } from "./generate.js";

const repoRoot = fileURLToPath(new URL("..", import.meta.url));

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
      noImplicitOverride: true,
      noEmit: true,
      skipLibCheck: true,
      verbatimModuleSyntax: true,
      types: ["node"],
      typeRoots: [join(repoRoot, "node_modules/@types")],
      paths: { "turnspec/rpc": [join(repoRoot, "rpc/index.ts")] },
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
