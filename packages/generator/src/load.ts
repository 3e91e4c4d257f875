/**
 * Reads a schemas folder (protocol.json, errors.json and one file per named type),
 * checks it, and returns the model every emitter works from. Every mistake found is
 * reported with its file and JSON pointer; the run stops before anything is emitted.
 */
import { didYouMean } from "@turnspec/rpc";
import { describeJsonSyntaxError } from "@turnspec/rpc/json-file";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv";
import { metaSchema } from "./meta.js";
import type { ErrorModel, Json, JsonObject, MethodModel, NotificationModel, ProtocolModel, TypeModel, UnionModel } from "./model.js";
import { loadOrdering } from "./ordering.js";
import { SchemaError, SchemaErrors } from "./schema-error.js";
import { isExtensionKeyword, isObject, walkSchema } from "./walk.js";

const DRAFT = "https://json-schema.org/draft/2020-12/schema";
const RESERVED = new Set(["protocol.json", "errors.json"]);
const IDENTIFIER = /^[A-Z][A-Za-z0-9]*$/;

/** The folder's digest (see `ProtocolModel.digest`); `names` sorted. */
function folderDigest(dir: string, names: readonly string[]): string {
  const hash = createHash("sha256");
  for (const name of names) {
    const bytes = readFileSync(join(dir, name));
    hash.update(`${name}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest("hex");
}

function readJson(dir: string, file: string, problems: SchemaError[]): Json | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, file), "utf8");
  } catch (error) {
    problems.push(new SchemaError(file, "", `cannot read the file: ${(error as Error).message}`));
    return undefined;
  }
  try {
    return JSON.parse(text) as Json;
  } catch (error) {
    problems.push(new SchemaError(file, "", `not valid JSON: ${describeJsonSyntaxError(text, error as Error)}`));
    return undefined;
  }
}

/** The five standard JSON-RPC errors, implied in every protocol unless its errors.json registers them itself. */
export const STANDARD_ERRORS: readonly ErrorModel[] = [
  { code: -32700, reason: "parse_error", message: "Parse error", description: "The frame is not valid JSON. The response id is null." },
  { code: -32600, reason: "invalid_request", message: "Invalid Request", description: "The frame is JSON but not a valid JSON-RPC 2.0 request or notification." },
  { code: -32601, reason: "method_not_found", message: "Method not found", description: "The method is not part of the protocol." },
  { code: -32602, reason: "invalid_params", message: "Invalid params", description: "The params do not match the method's schema; error.data.errors lists each failing JSON pointer with what was expected and what was received." },
  { code: -32603, reason: "internal_error", message: "Internal error", description: "The server failed while handling a valid request. No internals are exposed." },
].map((e) => ({ ...e, standard: true, anyMethod: true, details: [] }));

/** `kv_put_params.json` holds `KvPutParams`: the file name is the title in snake case (acronyms may stay upper case). */
function titleMatchesFile(title: string, file: string): boolean {
  return title.toLowerCase() === file.replace(/\.json$/, "").replace(/_/g, "").toLowerCase();
}

const snakeCase = (title: string) => title.replace(/([a-z0-9])([A-Z])/g, "$1_$2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2").toLowerCase();

let metaAjv: Ajv2020 | undefined;
const metaValidators = new Map<object, ValidateFunction>();

/**
 * The validator of one of turnspec's own meta-schemas, compiled once per process by one
 * ajv. They are not checked against JSON Schema's meta-schema on every run (compiling that
 * costs more than the check it makes): test/generator/meta-schemas.test.ts checks them.
 */
function metaValidator(meta: object): ValidateFunction {
  let validate = metaValidators.get(meta);
  if (!validate) {
    // discriminator: a tagged oneOf (the ordering rule kinds) reports the errors of the tagged branch only.
    metaAjv ??= new Ajv2020({ allErrors: true, strict: true, discriminator: true, verbose: true, validateSchema: false });
    validate = metaAjv.compile(meta);
    metaValidators.set(meta, validate);
  }
  return validate;
}

function metaCheck(file: string, meta: object, value: Json, problems: SchemaError[]): boolean {
  const validate = metaValidator(meta);
  if (validate(value)) return true;
  for (const error of validate.errors as ErrorObject[]) {
    const extra =
      error.keyword === "required"
        ? ` "${String(error.params.missingProperty)}"`
        : error.keyword === "additionalProperties"
          ? ` "${String(error.params.additionalProperty)}"`
          : error.keyword === "enum"
            ? `: ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}; got ${JSON.stringify(error.data)}`
            : "";
    problems.push(new SchemaError(file, error.instancePath, `${error.message ?? error.keyword}${extra}`));
  }
  return false;
}

/** Splits a `$ref` into the file it names (undefined for a local ref) and its fragment. */
function splitRef(ref: string): { file: string | undefined; fragment: string } {
  const hash = ref.indexOf("#");
  const file = hash === -1 ? ref : ref.slice(0, hash);
  return { file: file === "" ? undefined : file, fragment: hash === -1 ? "" : ref.slice(hash + 1) };
}

const isNullSchema = (schema: Json | undefined) => isObject(schema) && schema.type === "null" && Object.keys(schema).length === 1;

export function loadSchemas(dir: string): ProtocolModel {
  const problems: SchemaError[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
  } catch (error) {
    throw new SchemaErrors([new SchemaError(dir, "", `cannot read the schemas folder: ${(error as Error).message}`)]);
  }
  if (!entries.includes("protocol.json")) throw new SchemaErrors([new SchemaError("protocol.json", "", "the schemas folder has no protocol.json")]);
  if (!entries.includes("errors.json")) throw new SchemaErrors([new SchemaError("errors.json", "", "the schemas folder has no errors.json")]);

  const digest = folderDigest(dir, entries);
  const protocolRaw = readJson(dir, "protocol.json", problems);
  const errorsRaw = readJson(dir, "errors.json", problems);
  if (protocolRaw !== undefined) metaCheck("protocol.json", metaSchema("protocol.schema.json"), protocolRaw, problems);
  if (errorsRaw !== undefined) metaCheck("errors.json", metaSchema("errors.schema.json"), errorsRaw, problems);
  if (problems.length) throw new SchemaErrors(problems);
  const protocol = protocolRaw as JsonObject;
  const baseUri = protocol.schemaBaseUri as string;

  // Named types.
  const byFile = new Map<string, TypeModel>();
  // Files that exist but could not be read as a type: a $ref to one is not reported again as dangling.
  const broken = new Set<string>();
  const titles = new Map<string, string>();
  const ids = new Map<string, string>();
  for (const file of entries) {
    if (RESERVED.has(file)) continue;
    const raw = readJson(dir, file, problems);
    if (raw === undefined || !isObject(raw)) {
      if (raw !== undefined) problems.push(new SchemaError(file, "", "a type file must hold a JSON Schema object"));
      broken.add(file);
      continue;
    }
    if (raw.$schema !== DRAFT) problems.push(new SchemaError(file, "/$schema", `must be "${DRAFT}"`));
    const id = raw.$id;
    if (typeof id !== "string" || id !== baseUri + file) {
      problems.push(new SchemaError(file, "/$id", `must be "${baseUri + file}" (the base URI of protocol.json and the file name)`));
    } else if (ids.has(id)) {
      problems.push(new SchemaError(file, "/$id", `the same $id as ${ids.get(id)}`));
    } else ids.set(id, file);
    const title = raw.title;
    if (title === undefined) {
      problems.push(new SchemaError(file, "", 'missing title: every type file names its type, e.g. "title": "' + file.replace(/\.json$/, "").split("_").map((w) => (w[0] ?? "").toUpperCase() + w.slice(1)).join("") + '"'));
      broken.add(file);
      continue;
    }
    if (typeof title !== "string" || !IDENTIFIER.test(title)) {
      problems.push(new SchemaError(file, "/title", `must be a PascalCase TypeScript name; got ${JSON.stringify(title)}`));
      broken.add(file);
      continue;
    }
    if (titles.has(title)) {
      problems.push(new SchemaError(file, "/title", `duplicate title "${title}": ${titles.get(title)} has it too`));
      continue;
    }
    titles.set(title, file);
    if (!titleMatchesFile(title, file)) {
      problems.push(new SchemaError(file, "/title", `title "${title}" does not match the file name: a type titled ${title} lives in ${snakeCase(title)}.json`));
    }
    if (typeof raw.description !== "string" || raw.description.trim() === "") {
      problems.push(new SchemaError(file, "/description", "every schema needs a description"));
    }
    byFile.set(file, { file, id: baseUri + file, title, description: String(raw.description ?? ""), schema: raw });
  }

  // Structural rules inside each type.
  const unions: UnionModel[] = [];
  for (const type of byFile.values()) {
    walkSchema(type.schema, (node, pointer) => {
      if (typeof node.$ref === "string") {
        const { file, fragment } = splitRef(node.$ref);
        if (file !== undefined && broken.has(file)) {
          // Already reported where the file itself is wrong.
        } else if (file !== undefined && !byFile.has(file)) {
          problems.push(new SchemaError(type.file, `${pointer}/$ref`, `dangling $ref "${node.$ref}": no such file in the schemas folder`));
        } else if (file !== undefined && fragment !== "") {
          problems.push(new SchemaError(type.file, `${pointer}/$ref`, `"${node.$ref}" points inside another file; reference a named type's file as a whole`));
        } else if (file === undefined) {
          problems.push(new SchemaError(type.file, `${pointer}/$ref`, `local $ref "${node.$ref}": a type used in two places gets its own file`));
        }
      }
      if (pointer !== "" && (typeof node.title === "string" || typeof node.$id === "string")) {
        problems.push(new SchemaError(type.file, pointer, "a nested schema has its own title or $id; a named type gets its own file"));
      }
      const isObjectSchema = (node.type === "object" && !Array.isArray(node.oneOf)) || isObject(node.properties);
      if (isObjectSchema && !("additionalProperties" in node)) {
        problems.push(new SchemaError(type.file, pointer, "object schema does not state additionalProperties (false to close it, true for a free-form payload)"));
      }
      if (pointer !== "") {
        for (const key of Object.keys(node).filter(isExtensionKeyword)) {
          problems.push(new SchemaError(type.file, `${pointer}/${key}`, `extension keyword ${key} is read only at the top level of a schema file, where it describes the named type`));
        }
      }
      if (node.enum !== undefined && node.type === undefined) {
        problems.push(new SchemaError(type.file, `${pointer}/enum`, 'enum without type: state the type of its values (e.g. "type": "string") so that types and validators agree'));
      }
      if (node.uniqueItems !== undefined) problems.push(new SchemaError(type.file, `${pointer}/uniqueItems`, "uniqueItems is not supported; the gateway checks duplicates with its own error reason"));
      if (node.allOf !== undefined) problems.push(new SchemaError(type.file, `${pointer}/allOf`, "allOf is not supported: it cannot extend a closed object"));
      if (Array.isArray(node.anyOf)) {
        const [a, b] = node.anyOf;
        if (node.anyOf.length !== 2 || !(isNullSchema(a) || isNullSchema(b))) {
          problems.push(new SchemaError(type.file, `${pointer}/anyOf`, "anyOf is only allowed as the nullable pair [schema, {\"type\": \"null\"}]; use a tagged oneOf for unions"));
        }
      }
      if (Array.isArray(node.oneOf)) {
        const union = checkUnion(type, node, pointer, byFile, problems);
        if (union && pointer === "") unions.push(union);
        else if (union) problems.push(new SchemaError(type.file, pointer, "a tagged union must be a named type of its own file"));
      }
      if (node.discriminator !== undefined && !Array.isArray(node.oneOf)) {
        problems.push(new SchemaError(type.file, `${pointer}/discriminator`, "discriminator without oneOf"));
      }
    });
  }

  // The method and notification table.
  const typeOfRef = (ref: string, where: string): string | undefined => {
    const type = byFile.get(ref);
    if (!type && broken.has(ref)) return undefined;
    if (!type) {
      problems.push(new SchemaError("protocol.json", where, `dangling $ref "${ref}": no such file in the schemas folder`));
      return undefined;
    }
    if (type.schema.type !== "object" && !Array.isArray(type.schema.oneOf)) {
      if (where.endsWith("/params/$ref")) problems.push(new SchemaError("protocol.json", where, `params "${ref}" must be an object schema (params are sent by name)`));
    }
    return type.title;
  };

  const errors: ErrorModel[] = (errorsRaw as { errors: JsonObject[] }).errors.map((e) => ({
    code: e.code as number,
    reason: e.reason as string,
    message: e.message as string,
    description: e.description as string,
    standard: e.standard === true || STANDARD_ERRORS.some((s) => s.code === e.code),
    anyMethod: e.standard === true || e.anyMethod === true || STANDARD_ERRORS.some((s) => s.code === e.code),
    details: ((e.details as JsonObject[] | undefined) ?? []).map((d) => ({ detail: d.detail as string, description: d.description as string })),
  }));
  // Any integer code: -32099…-32000 is JSON-RPC's range for server errors, but a protocol such as
  // LSP claims codes outside it (-32803…-32800); only the five standard codes are fixed.
  const reasons = new Map<string, number>();
  const codes = new Map<number, string>();
  errors.forEach((e, i) => {
    if (reasons.has(e.reason)) problems.push(new SchemaError("errors.json", `/errors/${i}/reason`, `duplicate reason "${e.reason}"`));
    if (codes.has(e.code)) problems.push(new SchemaError("errors.json", `/errors/${i}/code`, `code ${e.code} is used by "${codes.get(e.code)}" too`));
    reasons.set(e.reason, i);
    codes.set(e.code, e.reason);
  });
  // The standard errors are implied; a protocol that lists one may word it its own way, but keeps its code and reason.
  const implied: ErrorModel[] = [];
  for (const standard of STANDARD_ERRORS) {
    const byCode = codes.get(standard.code);
    const index = reasons.get(standard.reason);
    if (byCode === undefined && index === undefined) implied.push(standard);
    else if (byCode !== standard.reason) {
      problems.push(new SchemaError("errors.json", index === undefined ? "/errors" : `/errors/${index}/code`, `the standard error ${standard.code} keeps its reason "${standard.reason}" (and that reason its code)`));
    }
  }
  errors.unshift(...implied);

  const names = new Set<string>();
  const methods: MethodModel[] = [];
  (protocol.methods as JsonObject[]).forEach((m, i) => {
    const name = m.name as string;
    if (names.has(name)) problems.push(new SchemaError("protocol.json", `/methods/${i}/name`, `"${name}" is declared twice`));
    names.add(name);
    const params = typeOfRef((m.params as JsonObject).$ref as string, `/methods/${i}/params/$ref`);
    const result = typeOfRef((m.result as JsonObject).$ref as string, `/methods/${i}/result/$ref`);
    const errs = m.errors as string[];
    errs.forEach((reason, j) => {
      if (!reasons.has(reason)) problems.push(new SchemaError("protocol.json", `/methods/${i}/errors/${j}`, `unknown error reason "${reason}": not in errors.json${didYouMean(reason, reasons.keys(), true)}`));
    });
    if (params && result) methods.push({ name, direction: m.direction as MethodModel["direction"], summary: m.summary as string, params, result, errors: errs, requirements: (m.requirements as string[] | undefined) ?? [] });
  });
  const notifications: NotificationModel[] = [];
  (protocol.notifications as JsonObject[]).forEach((n, i) => {
    const name = n.name as string;
    if (names.has(name)) problems.push(new SchemaError("protocol.json", `/notifications/${i}/name`, `"${name}" is declared twice`));
    names.add(name);
    const params = typeOfRef((n.params as JsonObject).$ref as string, `/notifications/${i}/params/$ref`);
    if (params) notifications.push({ name, direction: n.direction as NotificationModel["direction"], summary: n.summary as string, params, requirements: (n.requirements as string[] | undefined) ?? [] });
  });

  if (problems.length) throw new SchemaErrors(problems);
  const byTitle = new Map([...byFile.values()].map((t) => [t.title, t]));
  const ordering = loadOrdering(protocol.ordering, { byFile, byTitle, notifications, methods, problems });

  if (problems.length) throw new SchemaErrors(problems);
  return {
    title: protocol.title as string,
    version: protocol.version as string,
    description: protocol.description as string,
    baseUri,
    digest,
    types: [...byFile.values()].sort((a, b) => (a.title < b.title ? -1 : a.title > b.title ? 1 : 0)),
    unions: unions.sort((a, b) => (a.title < b.title ? -1 : 1)),
    methods,
    notifications,
    errors,
    ordering,
    byFile,
  };
}

function checkUnion(type: TypeModel, node: JsonObject, pointer: string, byFile: Map<string, TypeModel>, problems: SchemaError[]): UnionModel | undefined {
  const discriminator = node.discriminator;
  if (!isObject(discriminator) || typeof discriminator.propertyName !== "string") {
    problems.push(new SchemaError(type.file, pointer, 'a union without a tag: oneOf needs "discriminator": { "propertyName": … }'));
    return undefined;
  }
  const tag = discriminator.propertyName;
  const variants: { tag: string; title: string }[] = [];
  const seen = new Set<string>();
  (node.oneOf as Json[]).forEach((branch, i) => {
    const where = `${pointer}/oneOf/${i}`;
    const variant = isObject(branch) && typeof branch.$ref === "string" ? byFile.get(branch.$ref) : undefined;
    if (!variant) {
      if (!(isObject(branch) && typeof branch.$ref === "string")) problems.push(new SchemaError(type.file, where, "each variant of a tagged union must be a $ref to its own file"));
      return;
    }
    const property = isObject(variant.schema.properties) ? variant.schema.properties[tag] : undefined;
    const required = Array.isArray(variant.schema.required) && variant.schema.required.includes(tag);
    if (!isObject(property) || typeof property.const !== "string" || !required) {
      problems.push(new SchemaError(variant.file, `/properties/${tag}`, `variant of the union ${type.title} must have a required "${tag}" with a string const`));
      return;
    }
    if (seen.has(property.const)) problems.push(new SchemaError(type.file, where, `tag "${property.const}" is used by two variants`));
    seen.add(property.const);
    variants.push({ tag: property.const, title: variant.title });
  });
  return { id: type.id, title: type.title, propertyName: tag, variants };
}
