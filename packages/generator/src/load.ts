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
import type { ErrorObject } from "ajv";
import { metaValidator, type MetaSchemaName } from "./meta.js";
import { combinesObjects, flattenObject, NotFlattenable, unsatisfiableClosure } from "./compose.js";
import type {
  DefModel,
  ErrorModel,
  Json,
  JsonObject,
  MethodModel,
  NotificationModel,
  ParamStructure,
  ProtocolModel,
  TypeModel,
  UnionModel,
} from "./model.js";
import { unionKeys, variantsOf } from "./open.js";
import { followRefs, resolveRef, splitRef } from "./refs.js";
import { loadOrdering } from "./ordering.js";
import { SchemaError, SchemaErrors } from "./schema-error.js";
import { escapeToken, isExtensionKeyword, isObject, walkSchema } from "./walk.js";

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
  {
    code: -32600,
    reason: "invalid_request",
    message: "Invalid Request",
    description: "The frame is JSON but not a valid JSON-RPC 2.0 request or notification.",
  },
  { code: -32601, reason: "method_not_found", message: "Method not found", description: "The method is not part of the protocol." },
  {
    code: -32602,
    reason: "invalid_params",
    message: "Invalid params",
    description:
      "The params do not match the method's schema; error.data.errors lists each failing JSON pointer with what was expected and what was received.",
  },
  {
    code: -32603,
    reason: "internal_error",
    message: "Internal error",
    description: "The server failed while handling a valid request. No internals are exposed.",
  },
].map((e) => ({ ...e, standard: true, anyMethod: true, details: [] }));

/** `kv_put_params.json` holds `KvPutParams`: the file name is the title in snake case (acronyms may stay upper case). */
function titleMatchesFile(title: string, file: string): boolean {
  return (
    title.toLowerCase() ===
    file
      .replace(/\.json$/, "")
      .replace(/_/g, "")
      .toLowerCase()
  );
}

const snakeCase = (title: string) =>
  title
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();

function metaCheck(file: string, meta: MetaSchemaName, value: Json, problems: SchemaError[]): boolean {
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

/** The `x-…` entries of a method or notification of protocol.json: facts turnspec has no field for. */
const extensionsOf = (entry: JsonObject): JsonObject =>
  Object.fromEntries(Object.entries(entry).filter(([key]) => isExtensionKeyword(key)));

/** `tool_call` or `toolCall` → `ToolCall`. */
const pascalCase = (key: string) =>
  key
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("");

export function loadSchemas(dir: string): ProtocolModel {
  const problems: SchemaError[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir)
      .filter((f) => f.endsWith(".json"))
      .sort();
  } catch (error) {
    throw new SchemaErrors([new SchemaError(dir, "", `cannot read the schemas folder: ${(error as Error).message}`)]);
  }
  if (!entries.includes("protocol.json"))
    throw new SchemaErrors([new SchemaError("protocol.json", "", "the schemas folder has no protocol.json")]);
  if (!entries.includes("errors.json"))
    throw new SchemaErrors([new SchemaError("errors.json", "", "the schemas folder has no errors.json")]);

  const digest = folderDigest(dir, entries);
  const protocolRaw = readJson(dir, "protocol.json", problems);
  const errorsRaw = readJson(dir, "errors.json", problems);
  if (protocolRaw !== undefined) metaCheck("protocol.json", "protocol.schema.json", protocolRaw, problems);
  if (errorsRaw !== undefined) metaCheck("errors.json", "errors.schema.json", errorsRaw, problems);
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
      problems.push(
        new SchemaError(
          file,
          "",
          'missing title: every type file names its type, e.g. "title": "' +
            file
              .replace(/\.json$/, "")
              .split("_")
              .map((w) => (w[0] ?? "").toUpperCase() + w.slice(1))
              .join("") +
            '"',
        ),
      );
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
      problems.push(
        new SchemaError(
          file,
          "/title",
          `title "${title}" does not match the file name: a type titled ${title} lives in ${snakeCase(title)}.json`,
        ),
      );
    }
    if (typeof raw.description !== "string" || raw.description.trim() === "") {
      problems.push(new SchemaError(file, "/description", "every schema needs a description"));
    }
    byFile.set(file, { file, id: baseUri + file, title, description: String(raw.description ?? ""), schema: raw, defs: [] });
  }

  // Local definitions: each is declared as a type of its own, named by its title or by the file's title and its key.
  const withDefs = new Map<string, TypeModel>();
  for (const type of byFile.values()) {
    const defs: DefModel[] = [];
    const raw = type.schema.$defs;
    if (raw !== undefined && !isObject(raw)) problems.push(new SchemaError(type.file, "/$defs", "$defs must be an object of schemas"));
    for (const [key, schema] of Object.entries(isObject(raw) ? raw : {})) {
      const pointer = `/$defs/${escapeToken(key)}`;
      if (!isObject(schema)) {
        problems.push(new SchemaError(type.file, pointer, "a local definition must be a JSON Schema object"));
        continue;
      }
      const title = typeof schema.title === "string" ? schema.title : `${type.title}${pascalCase(key)}`;
      if (!IDENTIFIER.test(title)) {
        problems.push(
          new SchemaError(
            type.file,
            typeof schema.title === "string" ? `${pointer}/title` : pointer,
            `the local definition's name ${JSON.stringify(title)} is not a PascalCase TypeScript name; give it a "title"`,
          ),
        );
        continue;
      }
      if (titles.has(title)) {
        problems.push(
          new SchemaError(
            type.file,
            pointer,
            `the local definition is named "${title}", which ${titles.get(title)} already names; give it another "title"`,
          ),
        );
        continue;
      }
      titles.set(title, `${type.file}#${pointer}`);
      defs.push({ key, title, pointer, schema });
    }
    withDefs.set(type.file, { ...type, defs });
  }
  for (const [file, type] of withDefs) byFile.set(file, type);
  const objects = (protocol.objects as "closed" | "open" | undefined) ?? "closed";

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
          problems.push(
            new SchemaError(
              type.file,
              `${pointer}/$ref`,
              `"${node.$ref}" points inside another file; reference a named type's file as a whole`,
            ),
          );
        } else if (file === undefined && fragment !== "" && !/^\/\$defs\/[^/]+$/.test(fragment)) {
          problems.push(
            new SchemaError(
              type.file,
              `${pointer}/$ref`,
              `local $ref "${node.$ref}": a local reference is "#" (the file's own type) or "#/$defs/<name>"`,
            ),
          );
        } else if (file === undefined && fragment !== "" && !resolveRef(node.$ref, type.file, byFile)) {
          problems.push(
            new SchemaError(
              type.file,
              `${pointer}/$ref`,
              `dangling local $ref "${node.$ref}": the file has no such definition${didYouMean(
                fragment.slice("/$defs/".length),
                type.defs.map((d) => d.key),
                true,
              )}`,
            ),
          );
        }
      }
      const isDef = /^\/\$defs\/[^/]+$/.test(pointer);
      // A position of a tuple may carry a title: the name of the param or element at that position.
      const isPosition = /\/prefixItems\/\d+$/.test(pointer);
      if (pointer !== "" && !isDef && (typeof node.$id === "string" || (!isPosition && typeof node.title === "string"))) {
        problems.push(
          new SchemaError(
            type.file,
            pointer,
            "a nested schema has its own title or $id; a named type gets its own file (or a local definition under $defs)",
          ),
        );
      }
      if (isDef && typeof node.$id === "string")
        problems.push(new SchemaError(type.file, `${pointer}/$id`, "a local definition has no $id of its own"));
      if (pointer !== "" && node.$defs !== undefined)
        problems.push(new SchemaError(type.file, `${pointer}/$defs`, "$defs is read only at the top level of a schema file"));
      if (node["x-open"] !== undefined) {
        if (node["x-open"] !== true) problems.push(new SchemaError(type.file, `${pointer}/x-open`, "x-open is true or absent"));
        else if (!unionKeys(node, type.file, byFile)) {
          problems.push(
            new SchemaError(
              type.file,
              `${pointer}/x-open`,
              "x-open needs an enum, or a union whose variants are told apart by constants (each a const, or each an object with a string const tag)",
            ),
          );
        }
      }
      if (node.enum !== undefined && node.type === undefined) {
        problems.push(
          new SchemaError(
            type.file,
            `${pointer}/enum`,
            'enum without type: state the type of its values (e.g. "type": "string") so that types and validators agree',
          ),
        );
      }
      if (node.uniqueItems !== undefined)
        problems.push(
          new SchemaError(
            type.file,
            `${pointer}/uniqueItems`,
            "uniqueItems is not supported; the gateway checks duplicates with its own error reason",
          ),
        );
      if (Array.isArray(node.allOf) || (typeof node.$ref === "string" && isObject(node.properties))) {
        const unsatisfiable = unsatisfiableClosure(node, type.file, byFile);
        if (unsatisfiable) problems.push(new SchemaError(type.file, pointer, unsatisfiable));
        else if (objects === "closed" && combinesObjects(node, type.file, byFile)) {
          try {
            flattenObject(node, type.file, byFile);
          } catch (error) {
            if (!(error instanceof NotFlattenable)) throw error;
            problems.push(
              new SchemaError(
                type.file,
                `${pointer}/allOf`,
                `in a protocol whose objects are closed, an allOf combines object schemas into one closed object, and ${error.message}`,
              ),
            );
          }
        }
      }
      if (Array.isArray(node.oneOf) && node.discriminator !== undefined) {
        const union = checkUnion(type, node, pointer, byFile, problems);
        // A named type that is a tagged union gets its tag checked first by the validators, and a table in the reference.
        if (union && pointer === "") unions.push(union);
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
    return type.title;
  };
  /** Why a type cannot be the params of the given structure, or undefined when it can. */
  const paramsProblem = (ref: string, structure: ParamStructure): string | undefined => {
    const root = followRefs({ $ref: ref }, ref, byFile);
    if (!root) return undefined;
    const types = (node: JsonObject) => (typeof node.type === "string" ? [node.type] : Array.isArray(node.type) ? node.type : undefined);
    if (structure === "by-position") {
      if (!types(root.node)?.includes("array") || !Array.isArray(root.node.prefixItems))
        return `params "${ref}" must be an array schema with prefixItems (param_structure is by-position: params are a JSON array, one element per position)`;
      return undefined;
    }
    if (structure === "either") {
      try {
        flattenObject(root.node, root.file, byFile);
      } catch (error) {
        if (!(error instanceof NotFlattenable)) throw error;
        // Not an object of named params: an object or an array taken as it is (LSP's telemetry/event takes any LSPAny).
        const shapes = (variantsOf(root.node) ?? [root.node]).map((v) => followRefs(v, root.file, byFile)?.node);
        // JSON-RPC's envelope takes only an object or an array as params; the schema must allow one of them.
        const fits = shapes.some((shape) => !shape || !types(shape) || types(shape)!.some((t) => t === "object" || t === "array"));
        if (!fits)
          return `params "${ref}" must be an object schema with properties, in the order of their positions, or a schema that allows an object or an array (param_structure is either): ${error.message}`;
      }
      return undefined;
    }
    const variants = variantsOf(root.node);
    const shapes = variants ? variants.map((v) => followRefs(v, root.file, byFile)?.node) : [root.node];
    for (const shape of shapes) {
      const stated = shape && types(shape);
      if (stated && !stated.includes("object"))
        return `params "${ref}" must be an object schema (params are sent by name); it is ${JSON.stringify(shape!.type)}${stated.includes("array") ? ' (for a JSON array of params, set "param_structure": "by-position")' : ""}`;
    }
    return undefined;
  };
  const paramsOf = (
    entry: JsonObject,
    where: string,
  ): { params: string | undefined; paramsOptional: boolean; paramStructure: ParamStructure; ok: boolean } => {
    const paramStructure = (entry.param_structure as ParamStructure | undefined) ?? "by-name";
    const paramsOptional = entry.params_optional === true;
    if (entry.params === undefined) {
      if (paramsOptional)
        problems.push(
          new SchemaError(
            "protocol.json",
            `${where}/params_optional`,
            "params_optional without params: a message without params never carries any",
          ),
        );
      if (entry.param_structure !== undefined)
        problems.push(
          new SchemaError("protocol.json", `${where}/param_structure`, "param_structure without params: the message takes no params"),
        );
      return { params: undefined, paramsOptional: false, paramStructure, ok: true };
    }
    const ref = (entry.params as JsonObject).$ref as string;
    const params = typeOfRef(ref, `${where}/params/$ref`);
    const problem = params === undefined ? undefined : paramsProblem(ref, paramStructure);
    if (problem) problems.push(new SchemaError("protocol.json", `${where}/params/$ref`, problem));
    return { params, paramsOptional, paramStructure, ok: params !== undefined };
  };

  const errors: ErrorModel[] = (errorsRaw as { errors: JsonObject[] }).errors.map((e) => ({
    code: e.code as number,
    reason: e.reason as string,
    message: e.message as string,
    description: e.description as string,
    standard: e.standard === true || STANDARD_ERRORS.some((s) => s.code === e.code),
    anyMethod: e.standard === true || e.anyMethod === true || STANDARD_ERRORS.some((s) => s.code === e.code),
    details: ((e.details as JsonObject[] | undefined) ?? []).map((d) => ({
      detail: d.detail as string,
      description: d.description as string,
    })),
    ...(isObject(e.data) ? { data: e.data.$ref as string } : {}),
  }));
  // An error's data type, by file: a title once checked.
  errors.forEach((e, i) => {
    if (e.data === undefined) return;
    const type = byFile.get(e.data);
    if (!type) {
      if (!broken.has(e.data))
        problems.push(
          new SchemaError("errors.json", `/errors/${i}/data/$ref`, `dangling $ref "${e.data}": no such file in the schemas folder`),
        );
      return;
    }
    (e as { data?: string }).data = type.title;
  });
  // Any integer code: -32099…-32000 is JSON-RPC's range for server errors, but a protocol such as
  // LSP claims codes outside it (-32803…-32800); only the five standard codes are fixed.
  const reasons = new Map<string, number>();
  const codes = new Map<number, string>();
  errors.forEach((e, i) => {
    if (reasons.has(e.reason)) problems.push(new SchemaError("errors.json", `/errors/${i}/reason`, `duplicate reason "${e.reason}"`));
    if (codes.has(e.code))
      problems.push(new SchemaError("errors.json", `/errors/${i}/code`, `code ${e.code} is used by "${codes.get(e.code)}" too`));
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
      problems.push(
        new SchemaError(
          "errors.json",
          index === undefined ? "/errors" : `/errors/${index}/code`,
          `the standard error ${standard.code} keeps its reason "${standard.reason}" (and that reason its code)`,
        ),
      );
    }
  }
  errors.unshift(...implied);

  const names = new Set<string>();
  const methods: MethodModel[] = [];
  (protocol.methods as JsonObject[]).forEach((m, i) => {
    const name = m.name as string;
    if (names.has(name)) problems.push(new SchemaError("protocol.json", `/methods/${i}/name`, `"${name}" is declared twice`));
    names.add(name);
    const params = paramsOf(m, `/methods/${i}`);
    const result = typeOfRef((m.result as JsonObject).$ref as string, `/methods/${i}/result/$ref`);
    const partialResult = isObject(m.partial_result)
      ? typeOfRef(m.partial_result.$ref as string, `/methods/${i}/partial_result/$ref`)
      : undefined;
    const errorData = isObject(m.error_data) ? typeOfRef(m.error_data.$ref as string, `/methods/${i}/error_data/$ref`) : undefined;
    const errs = m.errors as string[];
    errs.forEach((reason, j) => {
      if (!reasons.has(reason))
        problems.push(
          new SchemaError(
            "protocol.json",
            `/methods/${i}/errors/${j}`,
            `unknown error reason "${reason}": not in errors.json${didYouMean(reason, reasons.keys(), true)}`,
          ),
        );
    });
    if (params.ok && result) {
      const { ok: _ok, ...carried } = params;
      methods.push({
        name,
        direction: m.direction as MethodModel["direction"],
        summary: m.summary as string,
        ...carried,
        result,
        ...(partialResult === undefined ? {} : { partialResult }),
        ...(errorData === undefined ? {} : { errorData }),
        errors: errs,
        requirements: (m.requirements as string[] | undefined) ?? [],
        extensions: extensionsOf(m),
      });
    }
  });
  const notifications: NotificationModel[] = [];
  (protocol.notifications as JsonObject[]).forEach((n, i) => {
    const name = n.name as string;
    if (names.has(name)) problems.push(new SchemaError("protocol.json", `/notifications/${i}/name`, `"${name}" is declared twice`));
    names.add(name);
    const params = paramsOf(n, `/notifications/${i}`);
    if (params.ok) {
      const { ok: _ok, ...carried } = params;
      notifications.push({
        name,
        direction: n.direction as NotificationModel["direction"],
        summary: n.summary as string,
        ...carried,
        requirements: (n.requirements as string[] | undefined) ?? [],
        extensions: extensionsOf(n),
      });
    }
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
    batches: protocol.batches === true,
    objects,
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

function checkUnion(
  type: TypeModel,
  node: JsonObject,
  pointer: string,
  byFile: Map<string, TypeModel>,
  problems: SchemaError[],
): UnionModel | undefined {
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
    if (!isObject(branch)) {
      problems.push(new SchemaError(type.file, where, "each variant of a tagged union must be a schema object"));
      return;
    }
    // The tag is declared by the variant as written (an inline variant, or one that adds its tag to a type it builds on), or by the file it refers to.
    const declares = (schema: JsonObject) => isObject(schema.properties) && isObject(schema.properties[tag]);
    const refOnly = typeof branch.$ref === "string" && !declares(branch);
    const variant = refOnly ? byFile.get(branch.$ref as string) : undefined;
    if (refOnly && !variant) return; // a dangling $ref, reported where it is
    const holder = variant ? variant.schema : branch;
    const property = isObject(holder.properties) ? holder.properties[tag] : undefined;
    const required = Array.isArray(holder.required) && holder.required.includes(tag);
    if (!isObject(property) || typeof property.const !== "string" || !required) {
      problems.push(
        new SchemaError(
          variant ? variant.file : type.file,
          variant ? `/properties/${tag}` : where,
          `variant of the union ${type.title} must have a required "${tag}" with a string const`,
        ),
      );
      return;
    }
    if (seen.has(property.const)) problems.push(new SchemaError(type.file, where, `tag "${property.const}" is used by two variants`));
    seen.add(property.const);
    const built = Array.isArray(branch.allOf)
      ? branch.allOf.find((m) => isObject(m) && typeof m.$ref === "string")
      : typeof branch.$ref === "string"
        ? branch
        : undefined;
    const title = variant?.title ?? (isObject(built) ? byFile.get(built.$ref as string)?.title : undefined) ?? type.title;
    variants.push({ tag: property.const, title });
  });
  return { id: type.id, title: type.title, propertyName: tag, variants };
}
