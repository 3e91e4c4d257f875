/**
 * Small protocols for the diff tests, written to temporary folders and loaded by the
 * generator's loader: a method `thing/put` (client to server) whose params hold the
 * schema under test as the field `v`, its result, two notifications from the server, an
 * ordering rule, and any extra type files a case needs. And the re-check of a
 * counterexample with the validators the generator emits (its standalone code, run here).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { standaloneValidatorCode, type ValidationMode } from "../../packages/generator/src/emit/validators.js";
import { validatorHelper } from "../../packages/rpc/src/validator-helpers.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import type { Json, JsonObject, ProtocolModel } from "../../packages/generator/src/model.js";

const BASE = "https://example.test/schemas/";

const STANDARD_ERRORS: JsonObject[] = (
  [
    [-32700, "parse_error"],
    [-32600, "invalid_request"],
    [-32601, "method_not_found"],
    [-32602, "invalid_params"],
    [-32603, "internal_error"],
  ] as const
).map(([code, reason]) => ({ code, reason, message: reason, description: `The standard error ${reason}.`, standard: true }));

export const title = (file: string) =>
  file
    .replace(/\.json$/, "")
    .split("_")
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("");

/** What a case may change; everything left out keeps the default protocol. */
export interface ProtocolSpec {
  /** The schema of params field `v` (a required field of the closed params object). */
  readonly v?: Json;
  /** Extra type files by name; `$schema`, `$id`, `title` and `description` are added unless given. */
  readonly files?: Record<string, JsonObject>;
  /** Replaces the whole params file of thing/put. */
  readonly params?: JsonObject;
  readonly result?: JsonObject;
  /** The params of the notification thing/changed (server to client). */
  readonly changed?: JsonObject;
  readonly methods?: JsonObject[];
  readonly notifications?: JsonObject[];
  readonly errors?: JsonObject[];
  readonly rules?: JsonObject[];
  /** Protocol-level settings of protocol.json (batches, objects). */
  readonly settings?: JsonObject;
}

const closed = (properties: JsonObject, required: string[] = Object.keys(properties)): JsonObject => ({
  type: "object",
  additionalProperties: false,
  required,
  properties,
});

export const DEFAULT_METHODS: JsonObject[] = [
  {
    name: "thing/put",
    direction: "client_to_server",
    summary: "Put a thing.",
    params: { $ref: "thing_put_params.json" },
    result: { $ref: "thing_put_result.json" },
    errors: ["thing_locked"],
  },
];
export const DEFAULT_NOTIFICATIONS: JsonObject[] = [
  { name: "thing/changed", direction: "server_to_client", summary: "A thing changed.", params: { $ref: "thing_changed_params.json" } },
  { name: "thing/gone", direction: "server_to_client", summary: "A thing is gone.", params: { $ref: "thing_gone_params.json" } },
];
export const DEFAULT_ERRORS: JsonObject[] = [
  ...STANDARD_ERRORS,
  { code: -32010, reason: "thing_locked", message: "Thing locked", description: "The thing is locked." },
  { code: -32011, reason: "thing_missing", message: "Thing missing", description: "No such thing." },
];
export const DEFAULT_RULES: JsonObject[] = [
  {
    id: "THING-CHANGED-FIRST",
    requirement: "THING-CHANGED-FIRST",
    description: "A thing changes before it is gone.",
    kind: "precedes",
    scope: ["thing"],
    first: "thing/changed",
    then: ["thing/gone"],
  },
];

/** Writes the protocol to a fresh temporary folder and returns its path (removed by the caller's clean-up). */
export function writeProtocol(spec: ProtocolSpec, dirs: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-diff-case-"));
  dirs.push(dir);
  const files: Record<string, JsonObject> = {
    "thing_put_params.json": spec.params ?? closed({ id: { type: "string" }, v: spec.v ?? { type: "string" } }),
    "thing_put_result.json": spec.result ?? closed({ ok: { type: "boolean" } }),
    "thing_changed_params.json": spec.changed ?? closed({ thing_id: { type: "string" }, rev: { type: "integer", minimum: 0 } }),
    "thing_gone_params.json": closed({ thing_id: { type: "string" } }),
    ...spec.files,
  };
  for (const [file, schema] of Object.entries(files)) {
    const full = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      $id: BASE + file,
      title: title(file),
      description: `The type ${title(file)}.`,
      ...schema,
    };
    writeFileSync(join(dir, file), JSON.stringify(full, null, 2));
  }
  const protocol = {
    title: "things",
    version: "1.0.0",
    description: "A protocol for the diff tests.",
    schemaBaseUri: BASE,
    ...spec.settings,
    errors: { $ref: "errors.json" },
    methods: spec.methods ?? DEFAULT_METHODS,
    notifications: spec.notifications ?? DEFAULT_NOTIFICATIONS,
    ordering: { keys: { thing: "/thing_id" }, rules: spec.rules ?? DEFAULT_RULES },
  };
  writeFileSync(join(dir, "protocol.json"), JSON.stringify(protocol, null, 2));
  writeFileSync(
    join(dir, "errors.json"),
    JSON.stringify({ description: "The errors of the test protocol.", errors: spec.errors ?? DEFAULT_ERRORS }, null, 2),
  );
  return dir;
}

export function loadProtocol(spec: ProtocolSpec, dirs: string[]): ProtocolModel {
  return loadSchemas(writeProtocol(spec, dirs));
}

export function removeAll(dirs: string[]): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

type Validate = ((value: unknown) => boolean) & { errors?: unknown };
const emitted = new WeakMap<ProtocolModel, Map<ValidationMode, Record<string, Validate>>>();

/** The validator the generator emits for a type (standalone ajv code, evaluated here), in a mode. */
export function emittedValidator(model: ProtocolModel, mode: ValidationMode, file: string): Validate {
  let byMode = emitted.get(model);
  if (!byMode) emitted.set(model, (byMode = new Map()));
  let exports = byMode.get(mode);
  if (!exports) {
    exports = {} as Record<string, Validate>;
    new Function("exports", "require", standaloneValidatorCode(model, mode).code)(exports, validatorHelper);
    byMode.set(mode, exports);
  }
  return exports[model.byFile.get(file)!.title]!;
}
