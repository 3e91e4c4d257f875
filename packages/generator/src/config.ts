/**
 * turnspec.config.json: the project's settings for `turnspec generate` and `turnspec
 * validate`, checked against schemas/meta/config.schema.json. Flags override it; relative
 * paths in it are resolved against its own folder.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { metaSchema } from "./meta.js";
import { describeJsonSyntaxError } from "./load.js";
import { LANGUAGES, OUTPUT_KINDS, type Language, type OutputKind } from "./outputs.js";

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
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read the config file ${file}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${file} is not valid JSON: ${describeJsonSyntaxError(text, error as Error)}`);
  }
  const validate = new Ajv2020({ allErrors: true, strict: true }).compile(metaSchema("config.schema.json"));
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map((e) => {
      const extra = e.keyword === "additionalProperties" ? ` "${String(e.params.additionalProperty)}"` : e.keyword === "enum" ? `: ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}` : "";
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
