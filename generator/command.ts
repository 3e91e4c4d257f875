/** `turnspec generate`: runs the generator and reports, returning the exit code. */
import { relative } from "node:path";
import { compareWithDisk, generateFiles, writeToDisk } from "./generate.js";
import { SchemaErrors } from "./schema-error.js";

export interface GenerateCommand {
  readonly schemasDir: string;
  readonly outDir: string;
  readonly check: boolean;
  readonly typecheck: boolean;
  /** Import specifier of the support module; default turnspec/rpc. */
  readonly support?: string;
  /** Write the support module beside the output and import it from there. */
  readonly standalone?: boolean;
}

export async function runGenerate(command: GenerateCommand, out = process.stdout, err = process.stderr): Promise<number> {
  const started = performance.now();
  let files;
  try {
    files = await generateFiles({
      schemasDir: command.schemasDir,
      ...(command.support === undefined ? {} : { support: command.support }),
      ...(command.standalone ? { standalone: true } : {}),
    });
  } catch (error) {
    if (error instanceof SchemaErrors) {
      err.write(`turnspec generate: the schemas in ${command.schemasDir} have mistakes; nothing was written.\n${error.message}\n`);
      return 1;
    }
    throw error;
  }
  const outName = relative(process.cwd(), command.outDir) || ".";
  if (command.typecheck) {
    // The compiler is loaded only when asked for.
    const { typeCheck } = await import("./typecheck.js");
    const diagnostics = typeCheck(files, { outDir: command.outDir });
    if (diagnostics.length) {
      err.write(`turnspec generate: the generated code does not compile:\n${diagnostics.map((d) => `  ${d}`).join("\n")}\n`);
      return 1;
    }
  }
  if (command.check) {
    const stale = compareWithDisk(files, command.outDir);
    if (stale.length) {
      err.write(`turnspec generate --check: ${outName}/ is stale (${stale.length} file${stale.length === 1 ? "" : "s"}):\n`);
      for (const file of stale) err.write(`  ${outName}/${file.path}: ${file.problem}\n`);
      err.write(`Run "turnspec generate --schemas ${relative(process.cwd(), command.schemasDir) || "."} --out ${outName}" and commit the result.\n`);
      return 1;
    }
    out.write(`${outName}/ is up to date (${files.length} files).\n`);
    return 0;
  }
  const written = writeToDisk(files, command.outDir);
  const ms = Math.round(performance.now() - started);
  out.write(written.length ? `wrote ${written.map((p) => `${outName}/${p}`).join(", ")} in ${ms} ms\n` : `${outName}/ was already up to date (${files.length} files, ${ms} ms)\n`);
  return 0;
}
