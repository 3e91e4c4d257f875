/**
 * An OpenRPC 1.x document: its methods (params as content descriptors, by name, by position
 * or either as `paramStructure` says, OpenRPC's default being either), results, errors with
 * their data, and `components` (schemas, content descriptors, errors). A method without a
 * `result` is a notification, as OpenRPC 1.2 and later define it; turnspec's own
 * `x-notifications` and `x-server-to-client-methods` (what `turnspec generate` writes) are
 * read back too. Everything an OpenRPC server serves is sent by the client.
 *
 * Params are one type per method, `<Method>Params` (an object of the named params, or for
 * params by position a tuple of them, each position titled with its name); a result not
 * written as a reference to a component is `<Method>Result`. Errors are one entry per code:
 * the reason made from the first message the document gives it, the other messages said in
 * its description; an error whose `data` is a JSON Schema (Ethereum's execution-apis write
 * the type of the data there) gets it as its data type.
 */
import type { Json, JsonObject } from "../model.js";
import { STANDARD_ERRORS } from "../load.js";
import { isObject, mapSchema } from "../walk.js";
import {
  Names,
  reasonOf,
  refTo,
  Reporter,
  summaryOf,
  type ImportedError,
  type ImportedMessage,
  type ImportedProtocol,
  type ImportReport,
} from "./folder.js";
import { ImportError, protocolIdentity } from "./jsonschema.js";
import type { ImportMap } from "./map.js";

export interface OpenRpcOptions {
  readonly map: ImportMap;
  readonly sourceName: string;
}

const SCHEMA_WORDS = ["type", "$ref", "properties", "items", "anyOf", "oneOf", "allOf", "enum", "const", "pattern"];
const isSchema = (value: Json | undefined): value is JsonObject => isObject(value) && SCHEMA_WORDS.some((k) => k in value);

export function importOpenRpc(doc: JsonObject, options: OpenRpcOptions): { protocol: ImportedProtocol; report: ImportReport } {
  if (typeof doc.openrpc !== "string" || !/^1\./.test(doc.openrpc))
    throw new ImportError(`the document says openrpc ${JSON.stringify(doc.openrpc)}; turnspec imports OpenRPC 1.x`);
  const reporter = new Reporter();
  const names = new Names(reporter);
  const map = options.map;
  const info = isObject(doc.info) ? doc.info : {};
  const identity = protocolIdentity(info, map, reporter, options.sourceName);
  const components = isObject(doc.components) ? doc.components : {};
  const componentSchemas = isObject(components.schemas) ? components.schemas : {};
  const types = new Map<string, JsonObject>();

  /** A reference of the document (`#/components/…`) resolved; local schema refs become type files. */
  const resolve = (node: Json | undefined): JsonObject | undefined => {
    let current = node;
    for (let hops = 0; isObject(current) && typeof current.$ref === "string" && hops < 16; hops++) {
      const path = current.$ref
        .replace(/^#\//, "")
        .split("/")
        .map((t) => decodeURIComponent(t).replace(/~1/g, "/").replace(/~0/g, "~"));
      let target: Json | undefined = doc;
      for (const token of path) target = isObject(target) ? target[token] : undefined;
      if (target === undefined) throw new ImportError(`the document refers to ${current.$ref}, which it does not have`);
      current = target;
    }
    return isObject(current) ? current : undefined;
  };
  const schemaName = (key: string) => names.source(key, `schema:${key}`);
  const componentOf = (ref: unknown): string | undefined =>
    typeof ref === "string" && /^#\/components\/schemas\/[^/]+$/.test(ref)
      ? decodeURIComponent(ref.slice("#/components/schemas/".length))
      : undefined;
  /** A reference into a component (`#/components/schemas/X/properties/y`): the schema there, written in place. */
  const inside = (ref: unknown): Json | undefined => {
    if (typeof ref !== "string" || !ref.startsWith("#/components/schemas/")) return undefined;
    return resolve({ $ref: ref });
  };

  const expanding = new Set<string>();
  /** A schema of the document as a type file writes it: component references to files, nested titles kept as x-title. */
  const convert = (schema: Json, top = true): JsonObject => {
    const out = mapSchema(schema, (node) => {
      const component = componentOf(node.$ref);
      if (component !== undefined) {
        if (!(component in componentSchemas))
          throw new ImportError(`the document refers to #/components/schemas/${component}, which it does not have`);
        const { $ref: _ref, ...rest } = node;
        return { ...refTo(schemaName(component)), ...convert(rest, false) };
      }
      const deep = inside(node.$ref);
      if (deep !== undefined) {
        const { $ref: ref, ...rest } = node;
        if (expanding.has(ref as string))
          throw new ImportError(`${String(ref)} refers back into itself; a reference into a component cannot be written in place`);
        expanding.add(ref as string);
        try {
          return { ...convert(deep, false), ...convert(rest, false) };
        } finally {
          expanding.delete(ref as string);
        }
      }
      if (typeof node.$ref === "string")
        throw new ImportError(
          `the document refers to ${node.$ref} from a schema; turnspec reads references to #/components/schemas/ there`,
        );
      if ((!top || node !== schema) && typeof node.title === "string") {
        const { title, ...rest } = node;
        return { ...convert(rest, false), "x-title": title };
      }
      return undefined;
    }) as JsonObject;
    return out;
  };

  for (const [key, schema] of Object.entries(componentSchemas)) {
    const name = schemaName(key);
    const converted = isObject(schema) ? convert(schema) : {};
    const { title, ...rest } = converted;
    const description =
      typeof rest.description === "string" && rest.description
        ? rest.description
        : typeof title === "string"
          ? `${title[0]!.toUpperCase()}${title.slice(1)}.`
          : undefined;
    if (description === undefined) reporter.made(name, "description: the component gives none");
    types.set(name, { ...rest, description: description ?? `The ${name} type of ${identity.title}.` });
  }

  const errorsByCode = new Map<number, ImportedError & { messages: Set<string>; usedBy: string[] }>();
  /** The reason of an error of a method, registered once per code. */
  const errorOf = (raw: Json, method: string): string => {
    const error = resolve(raw);
    if (!error || typeof error.code !== "number" || typeof error.message !== "string")
      throw new ImportError(`an error of ${method} has no integer code and string message`);
    const standard = STANDARD_ERRORS.find((e) => e.code === error.code);
    let entry = errorsByCode.get(error.code);
    if (!entry) {
      const reason = standard?.reason ?? reasonOf(error.message);
      if (!standard) reporter.made(`errors.json ${reason}`, `reason made from the message "${error.message}" of code ${error.code}`);
      entry = {
        code: error.code,
        reason,
        message: error.message,
        description: error.message,
        messages: new Set([error.message]),
        usedBy: [],
      };
      errorsByCode.set(error.code, entry);
    }
    entry.messages.add(error.message);
    entry.usedBy.push(method);
    if (error.data !== undefined) {
      if (isSchema(error.data)) {
        const dataType =
          entry.data ??
          names.made(
            entry.reason,
            "Data",
            `data:${error.code}`,
            `the type of the data of error ${error.code}, which the document gives as a schema in the error's data`,
          );
        if (!entry.data) types.set(dataType, { ...convert(error.data), description: `The data of the ${entry.reason} error.` });
        (entry as { data?: string }).data = dataType;
      } else
        reporter.notExpressible.push({
          subject: `errors.json ${entry.reason}`,
          detail: `${method} gives error ${error.code} an example data value (${JSON.stringify(error.data).slice(0, 80)}); errors.json describes data by a type, not a value`,
        });
    }
    return entry.reason;
  };

  const message = (raw: Json, serverCalls: boolean, where: string): { kind: "method" | "notification"; message: ImportedMessage } => {
    const m = resolve(raw);
    if (!m || typeof m.name !== "string") throw new ImportError(`${where} has no name`);
    const name = m.name;
    const override = map.method(name);
    const descriptors = (Array.isArray(m.params) ? m.params : []).map((p, i) => {
      const d = resolve(p);
      if (!d || typeof d.name !== "string") throw new ImportError(`param ${i} of ${name} is not a content descriptor with a name`);
      return d;
    });
    const declared = typeof m.paramStructure === "string" ? (m.paramStructure as "by-name" | "by-position" | "either") : undefined;
    const structure = override.param_structure ?? declared ?? "either";
    const paramsName = names.made(
      name,
      "Params",
      `params:${name}`,
      `the params of ${name}: ${structure === "by-position" ? "a tuple of" : "an object of"} its content descriptors`,
    );
    const required = descriptors.map((d) => d.required === true);
    let paramsSchema: JsonObject;
    if (structure === "by-position") {
      const minItems = required.lastIndexOf(true) + 1;
      paramsSchema = {
        description: `The params of ${name}, by position.`,
        type: "array",
        prefixItems: descriptors.map((d) => ({
          ...convert(d.schema ?? {}, false),
          title: d.name as string,
          ...(typeof d.description === "string" ? { description: d.description } : {}),
        })),
        items: false,
        ...(minItems ? { minItems } : {}),
      };
    } else {
      paramsSchema = {
        description: `The params of ${name}${structure === "either" ? ", by name or by position in this order" : ""}.`,
        type: "object",
        properties: Object.fromEntries(
          descriptors.map((d) => [
            d.name as string,
            { ...convert(d.schema ?? {}, false), ...(typeof d.description === "string" ? { description: d.description } : {}) },
          ]),
        ),
        ...(required.some(Boolean) ? { required: descriptors.filter((d) => d.required === true).map((d) => d.name as string) } : {}),
        additionalProperties: false,
      };
    }
    types.set(paramsName, paramsSchema);
    const noParams = descriptors.length === 0;
    if (noParams) reporter.made(paramsName, "params may be left out: the method lists no params (a frame may carry an empty list or none)");
    const summary = summaryOf((m.summary as string | undefined) ?? (m.description as string | undefined), `The ${name} method.`);
    const extensions: JsonObject = {};
    for (const key of ["description", "deprecated", "tags", "externalDocs", "examples", "servers", "x-direction"])
      if (m[key] !== undefined && !(key === "description" && m[key] === m.summary))
        extensions[`x-${key.replace(/^x-/, "")}`] = m[key] as Json;
    const base = {
      name,
      direction: override.direction ?? (m["x-direction"] === "both" ? "both" : serverCalls ? "server_to_client" : "client_to_server"),
      summary,
      params: paramsName,
      paramsOptional: override.params_optional ?? (noParams || m["x-params-optional"] === true),
      paramStructure: structure,
    } as const;
    if (m.result === undefined) return { kind: "notification", message: { ...base, extensions } };
    const result = resolve(m.result);
    if (!result) throw new ImportError(`the result of ${name} is not a content descriptor`);
    const component = isObject(result.schema) ? componentOf(result.schema.$ref) : undefined;
    let resultName: string;
    if (component !== undefined && Object.keys(result.schema as JsonObject).length === 1) resultName = schemaName(component);
    else {
      resultName = names.made(
        name,
        "Result",
        `result:${name}`,
        `the result of ${name}, written inline in the document${typeof result.name === "string" ? ` (its content descriptor is named "${result.name}")` : ""}`,
      );
      const converted = convert(result.schema ?? {}, false);
      const { title, ...rest } = converted;
      types.set(resultName, {
        ...rest,
        description:
          typeof result.description === "string"
            ? result.description
            : typeof title === "string"
              ? `${title[0]!.toUpperCase()}${title.slice(1)}.`
              : `The result of ${name}.`,
        ...(typeof title === "string" ? { "x-title": title } : {}),
      });
    }
    const errors = [...new Set([...(Array.isArray(m.errors) ? m.errors : []).map((e) => errorOf(e, name)), ...(override.errors ?? [])])];
    return { kind: "method", message: { ...base, result: resultName, errors, extensions } };
  };

  const methods: ImportedMessage[] = [];
  const notifications: ImportedMessage[] = [];
  const add = (list: Json | undefined, serverCalls: boolean, where: string) => {
    (Array.isArray(list) ? list : []).forEach((raw, i) => {
      const { kind, message: m } = message(raw, serverCalls, `${where}/${i}`);
      (kind === "method" ? methods : notifications).push(m);
    });
  };
  if (!Array.isArray(doc.methods)) throw new ImportError("the document has no methods list");
  add(doc.methods, false, "methods");
  add(doc["x-server-to-client-methods"], true, "x-server-to-client-methods");
  for (const [i, raw] of (Array.isArray(doc["x-notifications"]) ? doc["x-notifications"] : []).entries()) {
    const n = resolve(raw);
    if (!n) continue;
    const { result: _result, ...withoutResult } = n;
    const { message: m } = message(withoutResult, n.direction === "server_to_client", `x-notifications/${i}`);
    notifications.push({ ...m, direction: (n.direction as ImportedMessage["direction"] | undefined) ?? m.direction });
  }
  for (const key of ["servers", "externalDocs"])
    if (doc[key] !== undefined)
      reporter.notExpressible.push({
        subject: "protocol.json",
        detail: `the document's ${key} (where to reach a server, further reading) has no place in a schemas folder`,
      });
  const errors: ImportedError[] = [...errorsByCode.values()].map(({ messages, usedBy, ...e }) => ({
    ...e,
    description: messages.size > 1 ? `${e.message}. The document also words it: ${[...messages].slice(1).join("; ")}.` : e.message,
  }));
  errors.sort((a, b) => a.code - b.code);
  errors.push(...map.extraErrors());
  map.reportUnused(reporter);
  const protocol: ImportedProtocol = {
    ...identity,
    objects: "open",
    batches: map.file.batches ?? doc["x-batches"] === true,
    methods,
    notifications,
    errors,
    types,
  };
  return { protocol, report: reporter.finish("openrpc", `OpenRPC ${doc.openrpc}`, protocol) };
}
