/**
 * turnspec.config.json: the project's settings for `turnspec generate` and `turnspec
 * validate`, checked against schemas/meta/config.schema.json. Flags override it; relative
 * paths in it are resolved against its own folder.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { JsonFileError, readJsonFile } from "@turnspec/rpc/json-file";
import { metaValidator } from "./meta.js";
import { LANGUAGES, OUTPUT_KINDS, type Language, type OutputKind } from "./outputs.js";
import type { Acceptance } from "./diff/report.js";

export { LANGUAGES, OUTPUT_KINDS, type Language, type OutputKind };

export const CONFIG_FILE = "turnspec.config.json";

export interface TurnspecConfig {
  readonly schemas?: string;
  readonly out?: string;
  readonly support?: string;
  readonly standalone?: boolean;
  readonly outputs?: readonly OutputKind[];
  /** The language of the output (default typescript). */
  readonly lang?: Language;
  /** The crate name of a Rust output. */
  readonly crateName?: string;
  /** The module path of a Go output (go.mod's module). */
  readonly goModule?: string;
  /** For `turnspec diff`: the changes accepted for one release, by rule id. */
  readonly diff?: { readonly accept?: readonly Acceptance[] };
}

/** The config file is unreadable or breaks its schema: a usage error (exit 2). */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export interface LoadedConfig {
  /** The file read, or undefined when there is none. */
  readonly file: string | undefined;
  /** Its settings, paths resolved against its folder. */
  readonly config: TurnspecConfig;
}

/**
 * Reads the config: `explicit` when given (it must exist), else turnspec.config.json in
 * `cwd` when there is one, else no settings.
 */
export function loadConfig(explicit: string | undefined, cwd = process.cwd()): LoadedConfig {
  const file = explicit === undefined ? join(cwd, CONFIG_FILE) : resolve(cwd, explicit);
  if (explicit === undefined && !existsSync(file)) return { file: undefined, config: {} };
  let raw: unknown;
  try {
    raw = readJsonFile(file, "the config file");
  } catch (error) {
    throw error instanceof JsonFileError ? new ConfigError(error.message) : error;
  }
  const validate = metaValidator("config.schema.json");
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map((e) => {
      const extra =
        e.keyword === "additionalProperties"
          ? ` "${String(e.params.additionalProperty)}"`
          : e.keyword === "enum"
            ? `: ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`
            : "";
      return `  ${e.instancePath || "(top level)"}: ${e.message ?? e.keyword}${extra}`;
    });
    throw new ConfigError(`${file} does not match the config schema (schemas/meta/config.schema.json):\n${problems.join("\n")}`);
  }
  const config = raw as TurnspecConfig & { $schema?: string };
  const base = dirname(file);
  const { $schema: _schema, ...settings } = config;
  return {
    file,
    config: {
      ...settings,
      ...(settings.schemas === undefined ? {} : { schemas: resolve(base, settings.schemas) }),
      ...(settings.out === undefined ? {} : { out: resolve(base, settings.out) }),
    },
  };
}

/** What each output imports from the others. */
const NEEDS: Record<OutputKind, readonly OutputKind[]> = {
  types: [],
  validators: ["types", "ordering"],
  client: ["validators"],
  server: ["validators"],
  ordering: ["types"],
  openrpc: [],
  docs: [],
};

/** The outputs asked for together with every output they import, in the canonical order. */
export function withDependencies(outputs: readonly OutputKind[]): OutputKind[] {
  const chosen = new Set<OutputKind>();
  const add = (kind: OutputKind) => {
    if (chosen.has(kind)) return;
    chosen.add(kind);
    NEEDS[kind].forEach(add);
  };
  outputs.forEach(add);
  return OUTPUT_KINDS.filter((k) => chosen.has(k));
}
