/**
 * `turnspec import SOURCE --out DIR`: reads a protocol someone else wrote (a JSON Schema
 * file with $defs as MCP and ACP publish theirs, an OpenRPC 1.x document, LSP's meta model),
 * writes it as a schemas folder that `generate`, `validate` and `diff` take as it is, and
 * prints the report. The same source (and map) always gives the same bytes; `--check`
 * writes nothing and fails when DIR is not what the source gives, for CI.
 *
 * Exit codes: 0 written (or up to date with --check); 1 DIR is stale (--check), or the
 * folder the source gives does not load (named, file and pointer); 2 a usage mistake: an
 * unreadable source or map, a format not recognised, a source the importer cannot read as a
 * protocol (an unpaired request, a type it names that does not exist).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { describeJsonSyntaxError } from "@turnspec/rpc/json-file";
import { loadSchemas } from "../load.js";
import type { JsonObject } from "../model.js";
import { SchemaErrors } from "../schema-error.js";
import { isObject } from "../walk.js";
import { folderFiles, type ImportedProtocol, type ImportReport } from "./folder.js";
import { ImportError, importJsonSchema } from "./jsonschema.js";
import { importLsp } from "./lsp.js";
import { ImportMap, MapError, readMap } from "./map.js";
import { importOpenRpc } from "./openrpc.js";

export type SourceFormat = "jsonschema" | "openrpc" | "lsp";
export const SOURCE_FORMATS: readonly SourceFormat[] = ["jsonschema", "openrpc", "lsp"];

export interface ImportCommand {
  readonly source: string;
  readonly out: string;
  /** Force the format; default: recognised from the content. */
  readonly from?: SourceFormat;
  /** The map file: what the source does not say. */
  readonly map?: string;
  /** Write nothing; exit 1 when `out` is not what the source gives. */
  readonly check: boolean;
  /** Print the report as JSON. */
  readonly json: boolean;
}

interface Output {
  write(text: string): unknown;
}

/** The format a parsed source is, from its content. */
export function recognise(root: JsonObject): SourceFormat | undefined {
  if (typeof root.openrpc === "string") return "openrpc";
  if (isObject(root.metaData) && Array.isArray(root.requests) && Array.isArray(root.structures)) return "lsp";
  if (isObject(root.$defs) || isObject(root.definitions)) return "jsonschema";
  return undefined;
}

/** The folder a source gives, in memory: its files by name, and the report. */
export function importSource(
  root: JsonObject,
  format: SourceFormat,
  map: ImportMap,
  sourceName: string,
): { files: Map<string, string>; protocol: ImportedProtocol; report: ImportReport } {
  const { protocol, report } =
    format === "jsonschema"
      ? importJsonSchema(root, { map, sourceName })
      : format === "openrpc"
        ? importOpenRpc(root, { map, sourceName })
        : importLsp(root, { map, sourceName });
  return { files: folderFiles(protocol), protocol, report };
}

/** Loads the files as a schemas folder: the loader's mistakes, or none. */
function loadProblems(files: ReadonlyMap<string, string>): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-import-"));
  try {
    for (const [name, text] of files) writeFileSync(join(dir, name), text);
    loadSchemas(dir);
    return undefined;
  } catch (error) {
    if (error instanceof SchemaErrors) return error.message;
    throw error;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The report as text: what was imported, then what was made up, dropped, not expressible, unused. */
export function renderReport(report: ImportReport, source: string, out: string): string {
  const { methods, notifications, types, errors } = report.counts;
  const lines = [
    `turnspec import: ${report.conventions} from ${source} into ${out}: ${methods} method${methods === 1 ? "" : "s"}, ${notifications} notification${notifications === 1 ? "" : "s"}, ${types} type${types === 1 ? "" : "s"}, ${errors} error${errors === 1 ? "" : "s"}`,
  ];
  const section = (title: string, entries: readonly { subject: string; detail: string }[]) => {
    lines.push(`${title} (${entries.length})${entries.length ? ":" : ""}`);
    for (const e of entries) lines.push(`  - ${e.subject}: ${e.detail}`);
  };
  section("made up", report.madeUp);
  section("dropped", report.dropped);
  section("not expressible", report.notExpressible);
  section("unused map entries", report.unusedMap);
  return `${lines.join("\n")}\n`;
}

export async function runImport(command: ImportCommand, out: Output = process.stdout, err: Output = process.stderr): Promise<number> {
  let text: string;
  try {
    text = readFileSync(command.source, "utf8");
  } catch (error) {
    err.write(
      `turnspec import: cannot read ${command.source}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}\n`,
    );
    return 2;
  }
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch (error) {
    err.write(`turnspec import: ${command.source} is not JSON: ${describeJsonSyntaxError(text, error as Error)}\n`);
    return 2;
  }
  if (!isObject(root as JsonObject)) {
    err.write(`turnspec import: ${command.source} holds no JSON object\n`);
    return 2;
  }
  const format = command.from ?? recognise(root as JsonObject);
  if (!format) {
    err.write(
      `turnspec import: cannot tell the format of ${command.source}: it is neither an OpenRPC document (openrpc), nor LSP's meta model (metaData, requests, structures), nor a JSON Schema with $defs; name it with --from ${SOURCE_FORMATS.join("|")}\n`,
    );
    return 2;
  }
  let imported: ReturnType<typeof importSource>;
  try {
    const map = new ImportMap(command.map === undefined ? {} : readMap(command.map));
    imported = importSource(root as JsonObject, format, map, basename(command.source));
  } catch (error) {
    if (error instanceof MapError || error instanceof ImportError) {
      err.write(`turnspec import: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const problems = loadProblems(imported.files);
  if (problems) {
    err.write(`turnspec import: the folder ${command.source} gives does not load; nothing was written:\n${problems}\n`);
    return 1;
  }
  const shown = relative(process.cwd(), command.out) || ".";
  const sourceShown = relative(process.cwd(), command.source) || command.source;
  if (command.check) {
    const stale: string[] = [];
    for (const [name, content] of imported.files) {
      const path = join(command.out, name);
      if (!existsSync(path)) stale.push(`${name} (missing)`);
      else if (readFileSync(path, "utf8") !== content) stale.push(`${name} (differs)`);
    }
    if (existsSync(command.out))
      for (const name of readdirSync(command.out).filter((n) => n.endsWith(".json") && !imported.files.has(n)))
        stale.push(`${name} (not imported any more)`);
    if (stale.length) {
      err.write(
        `turnspec import --check: ${shown} is not what ${sourceShown} gives:\n${stale
          .sort()
          .map((s) => `  ${s}`)
          .join(
            "\n",
          )}\nrun: turnspec import ${sourceShown} --out ${shown}${command.map ? ` --map ${relative(process.cwd(), command.map) || command.map}` : ""}${command.from ? ` --from ${command.from}` : ""}\n`,
      );
      return 1;
    }
    out.write(
      command.json
        ? `${JSON.stringify(imported.report, null, 2)}\n`
        : `${shown} is up to date with ${sourceShown} (${imported.files.size} files)\n`,
    );
    return 0;
  }
  mkdirSync(command.out, { recursive: true });
  // The folder is the import's: JSON files it no longer gives are removed.
  for (const name of readdirSync(command.out).filter((n) => n.endsWith(".json") && !imported.files.has(n))) rmSync(join(command.out, name));
  for (const [name, content] of imported.files) {
    const path = join(command.out, name);
    if (!existsSync(path) || readFileSync(path, "utf8") !== content) writeFileSync(path, content);
  }
  out.write(command.json ? `${JSON.stringify(imported.report, null, 2)}\n` : renderReport(imported.report, sourceShown, shown));
  return 0;
}
