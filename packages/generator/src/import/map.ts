/**
 * The --map file of `turnspec import`: what the source does not say (the result of a request
 * MCP lists apart, a protocol's title where the source has none, how a method takes its
 * params). Checked against meta/import-map.schema.json; every entry an import does not use
 * is reported, so that a stale map is seen rather than silently ignored.
 */
import { readFileSync } from "node:fs";
import { describeJsonSyntaxError } from "@turnspec/rpc/json-file";
import { metaValidator } from "../meta.js";
import type { ImportDirection, ImportedError, Reporter } from "./folder.js";

export interface MapMethod {
  readonly direction?: ImportDirection;
  readonly param_structure?: "by-name" | "by-position" | "either";
  readonly params_optional?: boolean;
  readonly errors?: readonly string[];
}

export interface ImportMapFile {
  readonly title?: string;
  readonly version?: string;
  readonly description?: string;
  readonly schemaBaseUri?: string;
  readonly batches?: boolean;
  readonly results?: Readonly<Record<string, string | readonly string[]>>;
  readonly methods?: Readonly<Record<string, MapMethod>>;
  readonly errors?: readonly {
    readonly code: number;
    readonly reason: string;
    readonly message: string;
    readonly description: string;
    readonly anyMethod?: boolean;
  }[];
}

/** A map file or its content is wrong: a usage error of the import (exit 2). */
export class MapError extends Error {
  override readonly name = "MapError";
}

export function readMap(file: string): ImportMapFile {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new MapError(
      `cannot read the map file ${file}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new MapError(`${file} is not valid JSON: ${describeJsonSyntaxError(text, error as Error)}`);
  }
  const validate = metaValidator("import-map.schema.json");
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map(
      (e) =>
        `  ${e.instancePath || "(top level)"}: ${e.message ?? e.keyword}${e.keyword === "additionalProperties" ? ` "${String(e.params.additionalProperty)}"` : ""}`,
    );
    throw new MapError(
      `${file} does not match the import map's schema (meta/import-map.schema.json of @turnspec/generator):\n${problems.join("\n")}`,
    );
  }
  return raw as ImportMapFile;
}

/** The map as an import reads it: each entry it takes is marked, the rest reported at the end. */
export class ImportMap {
  private readonly usedResults = new Set<string>();
  private readonly usedMethods = new Set<string>();
  constructor(readonly file: ImportMapFile = {}) {}

  /** The result type names the map gives a method, or undefined. */
  results(method: string): readonly string[] | undefined {
    const value = this.file.results?.[method];
    if (value === undefined) return undefined;
    this.usedResults.add(method);
    return typeof value === "string" ? [value] : value;
  }

  method(name: string): MapMethod {
    const value = this.file.methods?.[name];
    if (value) this.usedMethods.add(name);
    return value ?? {};
  }

  /** The errors the map adds to those the source declares, as the import writes them. */
  extraErrors(): ImportedError[] {
    return (this.file.errors ?? []).map((extra) => ({
      code: extra.code,
      reason: extra.reason,
      message: extra.message,
      description: extra.description,
      ...(extra.anyMethod ? { anyMethod: true } : {}),
    }));
  }

  /** Reports every entry of results and methods the import did not take. */
  reportUnused(reporter: Reporter): void {
    for (const name of Object.keys(this.file.results ?? {}).filter((n) => !this.usedResults.has(n)))
      reporter.unusedMap.push({ subject: name, detail: "results: the source has no request of this name" });
    for (const name of Object.keys(this.file.methods ?? {}).filter((n) => !this.usedMethods.has(n)))
      reporter.unusedMap.push({ subject: name, detail: "methods: the source has no method or notification of this name" });
  }
}
