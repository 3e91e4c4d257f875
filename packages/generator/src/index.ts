/**
 * The generator's programmatic API (`@turnspec/generator`): what `turnspec generate` does,
 * for build scripts and tools. Pure functions from a schemas folder to files:
 *
 *   const check = checkSchemas("schemas");           // every mistake, each with its file and JSON pointer
 *   const files = await generateFiles({ schemasDir: "schemas" });   // in memory: [{ path, content }]
 *   await generate({ schemasDir: "schemas", outDir: "src/generated" });  // written to a folder
 *
 * The output is byte-identical for the same schemas.
 */
import { compareWithDisk, generateFiles, writeToDisk, type GeneratedFile, type GenerateOptions, type StaleFile } from "./generate.js";
import { loadSchemas } from "./load.js";
import type { ProtocolModel } from "./model.js";
import { SchemaError, SchemaErrors } from "./schema-error.js";
import { loadTypeCheck } from "./load-typecheck.js";

export {
  compareWithDisk,
  emitAll,
  GENERATED_MARK,
  generateFiles,
  writeToDisk,
  type GeneratedFile,
  type GenerateOptions,
  type StaleFile,
} from "./generate.js";
export { loadSchemas } from "./load.js";
export type * from "./model.js";
export { SchemaError, SchemaErrors } from "./schema-error.js";
export { STANDALONE_DIR, STANDALONE_SUPPORT } from "./standalone.js";
// The schema diff: which change breaks whom (docs/diff.md).
export * from "./diff/index.js";

export type SchemaCheck =
  { readonly ok: true; readonly model: ProtocolModel } | { readonly ok: false; readonly errors: readonly SchemaError[] };

/** Loads and checks a schemas folder: the protocol model, or every mistake found. */
export function checkSchemas(schemasDir: string): SchemaCheck {
  try {
    return { ok: true, model: loadSchemas(schemasDir) };
  } catch (error) {
    if (error instanceof SchemaErrors) return { ok: false, errors: error.errors };
    throw error;
  }
}

/** The generated files as a map from path (relative to the output folder) to content. */
export async function generateFileMap(options: GenerateOptions): Promise<Map<string, string>> {
  return new Map((await generateFiles(options)).map((file) => [file.path, file.content]));
}

export interface GenerateToFolderOptions extends GenerateOptions {
  /** The output folder; generated files no longer produced are removed from it. */
  readonly outDir: string;
}

/** Generates into `outDir` and returns the paths written (unchanged files are left alone). */
export async function generate(options: GenerateToFolderOptions): Promise<string[]> {
  const { outDir, ...rest } = options;
  return writeToDisk(await generateFiles(rest), outDir);
}

/** The files of `outDir` that differ from what the schemas give now; empty when it is up to date. */
export async function staleFiles(options: GenerateToFolderOptions): Promise<StaleFile[]> {
  const { outDir, ...rest } = options;
  return compareWithDisk(await generateFiles(rest), outDir);
}

/**
 * Type-checks generated files under strict settings (what `--typecheck` runs); one line per
 * diagnostic, empty when they compile. Loads the TypeScript compiler when called.
 */
export async function typeCheckFiles(files: readonly GeneratedFile[], outDir: string): Promise<string[]> {
  const { typeCheck } = await loadTypeCheck();
  return typeCheck(files, { outDir });
}
