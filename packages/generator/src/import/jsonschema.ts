/**
 * A protocol published as one JSON Schema file with its types under `$defs` (or draft-07's
 * `definitions`), the way MCP and ACP publish theirs. The messages are found from the
 * source's own conventions:
 *
 * - MCP: the unions ClientRequest, ServerRequest, ClientNotification and ServerNotification
 *   of message wrappers, each with a `method` const and its `params`; a method in both
 *   sides' unions goes both ways. MCP lists results apart from requests (ClientResult,
 *   ServerResult), so which result answers which request comes from the map (`results`).
 *   An error response with a const code (URLElicitationRequiredError) is an error of
 *   errors.json, its data a type.
 * - ACP: every params and result type carries `x-method` (the method) and `x-side` (the
 *   side that receives it: agent, client, or protocol for either); the request, response
 *   and notification envelopes (ClientRequest, AgentResponse, …) say which type is which.
 *   The codes of the error object's `code` (ErrorCode, constants with titles) are the
 *   errors.
 *
 * JSON-RPC envelopes (a `jsonrpc` field), message wrappers (a `method` field), the JSON-RPC
 * error object, and unions and arrays made only of those are dropped and reported. Every
 * other type is kept under its own name, its schema as written but for references (to type
 * files), `allOf` of one reference with a description (a reference with a description),
 * nested titles (kept as `x-title`) and draft-07 forms. Objects are left open, as JSON
 * Schema reads them (protocol.json's `objects: "open"`).
 */
import type { Json, JsonObject } from "../model.js";
import { STANDARD_ERRORS } from "../load.js";
import { jsonTypesOf } from "../open.js";
import { isObject, mapSchema } from "../walk.js";
import {
  Names,
  reasonOf,
  refTo,
  Reporter,
  summaryOf,
  type ImportDirection,
  type ImportedError,
  type ImportedMessage,
  type ImportedProtocol,
  type ImportReport,
} from "./folder.js";
import type { ImportMap } from "./map.js";

/** The source says something the importer cannot read as a protocol: a usage error naming what and where. */
export class ImportError extends Error {
  override readonly name = "ImportError";
}

interface Source {
  readonly defs: Readonly<Record<string, JsonObject>>;
  /** `#/$defs/` or `#/definitions/`. */
  readonly prefix: string;
  readonly root: JsonObject;
}

function readSource(root: JsonObject): Source {
  if (isObject(root.$defs)) return { defs: root.$defs as Record<string, JsonObject>, prefix: "#/$defs/", root };
  if (isObject(root.definitions)) return { defs: root.definitions as Record<string, JsonObject>, prefix: "#/definitions/", root };
  throw new ImportError("the JSON Schema source has no $defs (or definitions): a protocol's types are read from there");
}

/** The def a local reference names, or undefined. */
const defOf = (ref: unknown, source: Source): string | undefined =>
  typeof ref === "string" && ref.startsWith(source.prefix) ? decodeURIComponent(ref.slice(source.prefix.length)) : undefined;

/** The defs a schema refers to, through allOf wrappers and unions. */
function refsIn(schema: Json, source: Source): string[] {
  const out: string[] = [];
  mapSchema(schema, (node) => {
    const name = defOf(node.$ref, source);
    if (name !== undefined) out.push(name);
    return undefined;
  });
  return out;
}

/** The variants of a def that is a union of references (anyOf/oneOf, possibly wrapped in allOf), each a def name. */
function unionMembers(schema: JsonObject | undefined, source: Source): string[] {
  if (!schema) return [];
  const list = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (!list) return [];
  return list.flatMap((v) => {
    if (!isObject(v)) return [];
    const direct = defOf(v.$ref, source);
    if (direct !== undefined) return [direct];
    if (Array.isArray(v.allOf) && v.allOf.length === 1 && isObject(v.allOf[0])) {
      const wrapped = defOf(v.allOf[0].$ref, source);
      return wrapped === undefined ? [] : [wrapped];
    }
    return unionMembers(v, source);
  });
}

/** Why a schema (a def, or an inline variant of a union) is part of JSON-RPC's own envelope rather than of the protocol; undefined when it is not. */
function envelopeKind(schema: JsonObject, source: Source, known: ReadonlyMap<string, string>): string | undefined {
  const properties = isObject(schema.properties) ? schema.properties : {};
  if ("jsonrpc" in properties) return "a JSON-RPC envelope (it has the jsonrpc field)";
  if ("method" in properties) return "a message wrapper (it has the method field); its params are the message's params type";
  if ("id" in properties && ("result" in properties || "error" in properties))
    return "a JSON-RPC response envelope (id with result or error)";
  const keys = Object.keys(properties);
  if (keys.length > 0 && keys.every((k) => ["code", "message", "data"].includes(k)) && "code" in properties && "message" in properties)
    return "the JSON-RPC error object (code, message, data)";
  // A union, or an array, made only of envelopes (references to them or inline ones).
  const variants = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : isObject(schema.items)
        ? [schema.items]
        : undefined;
  if (variants && variants.length > 0 && variants.every((v) => isEnvelope(v, source, known)))
    return schema.type === "array" ? "a batch of JSON-RPC envelopes" : "a union of JSON-RPC envelopes";
  return undefined;
}

function isEnvelope(node: Json, source: Source, known: ReadonlyMap<string, string>): boolean {
  if (!isObject(node)) return false;
  const unwrapped = unwrapSingleAllOf(node) ?? node;
  const def = defOf(unwrapped.$ref, source);
  if (def !== undefined) return known.has(def);
  return envelopeKind(unwrapped, source, known) !== undefined;
}

/**
 * The envelope types of the source, with why, found to a fixed point (a union of envelopes
 * is one too). A type shaped like a message that another kept type holds as a value (MCP
 * 2026's input requests, carried inside a result) is data, not an envelope: it is kept.
 */
function envelopes(source: Source): Map<string, string> {
  const data = new Set<string>();
  for (;;) {
    const found = new Map<string, string>();
    for (let changed = true; changed;) {
      changed = false;
      for (const [name, schema] of Object.entries(source.defs)) {
        if (found.has(name) || data.has(name)) continue;
        const why = envelopeKind(schema, source, found);
        if (why) {
          found.set(name, why);
          changed = true;
        }
      }
    }
    // What a kept type refers to is kept, envelope-shaped or not; then the envelopes are found again without it.
    const before = data.size;
    for (const [name, schema] of Object.entries(source.defs))
      if (!found.has(name)) for (const referred of refsIn(schema, source)) if (found.has(referred)) data.add(referred);
    if (data.size === before) return found;
  }
}

/** A `$ref`-only wrapper `allOf: [{$ref}]` with only annotations beside it, read as the reference with them. */
function unwrapSingleAllOf(node: JsonObject): JsonObject | undefined {
  if (!Array.isArray(node.allOf) || node.allOf.length !== 1 || !isObject(node.allOf[0])) return undefined;
  const member = node.allOf[0];
  if (typeof member.$ref !== "string" || Object.keys(member).length !== 1) return undefined;
  const { allOf: _allOf, ...rest } = node;
  if (!Object.keys(rest).every((k) => NOTES.has(k) || k.startsWith("x-"))) return undefined;
  return { $ref: member.$ref, ...rest };
}

const NOTES = new Set(["description", "title", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly", "format"]);

export interface JsonSchemaImport {
  readonly protocol: ImportedProtocol;
  readonly report: ImportReport;
}

class Converter {
  constructor(
    private readonly source: Source,
    private readonly names: Names,
    private readonly dropped: ReadonlyMap<string, string>,
    private readonly reporter: Reporter,
  ) {}

  /** The name a kept def is written under. */
  nameOf(def: string): string {
    return this.names.source(def, `def:${def}`);
  }

  /** A schema of the source as a type file writes it (its root keys kept), `where` naming it for the report. */
  convert(schema: JsonObject, where: string): JsonObject {
    const out = mapSchema(schema, (node) => {
      const unwrapped = unwrapSingleAllOf(node);
      if (unwrapped) return this.convert(unwrapped, where);
      const def = defOf(node.$ref, this.source);
      if (def !== undefined) {
        const { $ref: _ref, title, ...rest } = node;
        if (this.dropped.has(def))
          this.reporter.notExpressible.push({
            subject: where,
            detail: `refers to ${def}, ${this.dropped.get(def)}, which a type file cannot hold`,
          });
        const converted: JsonObject = { ...refTo(this.nameOf(def)), ...(this.convert(rest as JsonObject, where) as JsonObject) };
        if (typeof title === "string" && title !== def) converted["x-title"] = title;
        return converted;
      }
      if (node !== schema && typeof node.title === "string") {
        // A nested title names a variant or a field's schema: kept, as an annotation a type file may hold.
        const { title, ...rest } = node;
        return { ...(this.convert(rest as JsonObject, where) as JsonObject), "x-title": title };
      }
      return undefined;
    }) as JsonObject;
    return this.draft2020(out);
  }

  /** Draft-07 forms in 2020-12 terms, and an enum's type stated from its values. */
  private draft2020(schema: JsonObject): JsonObject {
    return mapSchema(schema, (node) => {
      let changed = false;
      const copy: JsonObject = { ...node };
      if (Array.isArray(copy.items)) {
        // Draft-07 tuple: items as a list, additionalItems for the rest.
        copy.prefixItems = copy.items;
        if (copy.additionalItems !== undefined) copy.items = copy.additionalItems;
        else delete copy.items;
        delete copy.additionalItems;
        changed = true;
      }
      if (
        Array.isArray(copy.enum) &&
        copy.type === undefined &&
        copy.enum.every((v) => v === null || ["string", "number", "boolean"].includes(typeof v))
      ) {
        const types = jsonTypesOf(copy.enum);
        copy.type = types.length === 1 ? types[0]! : types;
        changed = true;
      }
      if (!changed) return undefined;
      return this.draft2020(copy);
    }) as JsonObject;
  }
}

export interface JsonSchemaOptions {
  readonly map: ImportMap;
  /** The source file's name, for what must be made up. */
  readonly sourceName: string;
}

/** Which conventions a JSON Schema source follows: ACP (x-method on its types) or MCP (the four message unions). */
export function conventionsOf(root: JsonObject): "acp" | "mcp" | undefined {
  const defs = isObject(root.$defs) ? root.$defs : isObject(root.definitions) ? root.definitions : undefined;
  if (!defs) return undefined;
  if (Object.values(defs).some((d) => isObject(d) && typeof d["x-method"] === "string")) return "acp";
  if (["ClientRequest", "ServerRequest", "ClientNotification", "ServerNotification"].some((n) => n in defs)) return "mcp";
  return undefined;
}

export function importJsonSchema(root: JsonObject, options: JsonSchemaOptions): JsonSchemaImport {
  const conventions = conventionsOf(root);
  if (!conventions)
    throw new ImportError(
      "the JSON Schema source follows neither MCP's conventions (ClientRequest, ServerRequest, ClientNotification and ServerNotification unions of messages with a method const) nor ACP's (x-method and x-side on the params and result types)",
    );
  const source = readSource(root);
  const reporter = new Reporter();
  const names = new Names(reporter);
  const dropped = envelopes(source);
  const converter = new Converter(source, names, dropped, reporter);
  const types = new Map<string, JsonObject>();
  const map = options.map;

  const identity = protocolIdentity(root, map, reporter, options.sourceName);
  // Every def that is not an envelope, under its own name.
  for (const [def, schema] of Object.entries(source.defs)) {
    if (dropped.has(def)) continue;
    const name = converter.nameOf(def);
    const converted = converter.convert(schema, name);
    if (typeof converted.description !== "string" || converted.description.trim() === "") {
      converted.description = `The ${name} type of ${identity.title}.`;
      reporter.made(name, "description: the source gives the type none");
    }
    const { title: _title, ...rest } = converted;
    types.set(name, rest);
  }
  for (const [def, why] of dropped) reporter.dropped.push({ subject: def, detail: why });

  const { methods, notifications, errors, batches } =
    conventions === "mcp"
      ? mcpMessages(source, { source, names, converter, types, map, reporter, dropped, identity })
      : acpMessages(source, { source, names, converter, types, map, reporter, dropped, identity });
  errors.push(...map.extraErrors());
  map.reportUnused(reporter);
  const protocol: ImportedProtocol = {
    ...identity,
    objects: "open",
    batches: map.file.batches ?? batches,
    methods,
    notifications,
    errors,
    types,
  };
  return {
    protocol,
    report: reporter.finish(
      "jsonschema",
      conventions === "mcp" ? "MCP (message unions, method consts; results from the map)" : "ACP (x-method and x-side)",
      protocol,
    ),
  };
}

interface Identity {
  readonly title: string;
  readonly version: string;
  readonly description: string;
  readonly schemaBaseUri: string;
}

/** The protocol's title, version, description and base URI: from the source, else the map, else made up and reported. */
export function protocolIdentity(root: JsonObject, map: ImportMap, reporter: Reporter, sourceName: string): Identity {
  const stem = sourceName.replace(/\.[^.]*$/, "");
  const title = map.file.title ?? (typeof root.title === "string" ? root.title : undefined);
  const version = map.file.version ?? (typeof root.version === "string" ? root.version : undefined);
  const description = map.file.description ?? (typeof root.description === "string" ? root.description : undefined);
  const out = {
    title: title ?? stem,
    version: version ?? "0.0.0",
    description: description ?? `${title ?? stem}, imported from ${sourceName}.`,
    schemaBaseUri:
      map.file.schemaBaseUri ??
      `https://turnspec.dev/imported/${reasonOf(title ?? stem).replace(/_/g, "-") || "protocol"}/${(version ?? "0.0.0").replace(/[^A-Za-z0-9.-]/g, "-")}/`,
  };
  if (title === undefined)
    reporter.made("protocol.json", `title: the source has none and the map gives none; the source file's name "${out.title}"`);
  if (version === undefined) reporter.made("protocol.json", 'version: the source has none and the map gives none; "0.0.0"');
  if (description === undefined) reporter.made("protocol.json", "description: the source has none and the map gives none");
  if (map.file.schemaBaseUri === undefined)
    reporter.made("protocol.json", `schemaBaseUri: the source has none and the map gives none; ${out.schemaBaseUri}`);
  return out;
}

interface Context {
  readonly source: Source;
  readonly names: Names;
  readonly converter: Converter;
  readonly types: Map<string, JsonObject>;
  readonly map: ImportMap;
  readonly reporter: Reporter;
  readonly dropped: ReadonlyMap<string, string>;
  readonly identity: Identity;
}

interface Messages {
  methods: ImportedMessage[];
  notifications: ImportedMessage[];
  errors: ImportedError[];
  batches: boolean;
}

/** A direction from the sides a message is listed under. */
const directionOf = (client: boolean, server: boolean): ImportDirection =>
  client && server ? "both" : client ? "client_to_server" : "server_to_client";

/** The params of a wrapper: a reference to a kept type, or an inline schema given a made-up name. */
function wrapperParams(def: string, wrapper: JsonObject, ctx: Context): { params?: string; optional: boolean } {
  const properties = isObject(wrapper.properties) ? wrapper.properties : {};
  const params = properties.params;
  if (!isObject(params)) return { optional: false };
  const required = Array.isArray(wrapper.required) && wrapper.required.includes("params");
  const direct = defOf(params.$ref, ctx.source);
  if (direct !== undefined && Object.keys(params).every((k) => k === "$ref" || NOTES.has(k)))
    return { params: ctx.converter.nameOf(direct), optional: !required };
  const name = ctx.names.made(def, "Params", `params:${def}`, `the params of ${def}, inline in the source`);
  const converted = ctx.converter.convert(params, name);
  ctx.types.set(name, {
    ...converted,
    description:
      typeof converted.description === "string" && converted.description
        ? converted.description
        : `The params of ${typeof (properties.method as JsonObject | undefined)?.const === "string" ? (properties.method as JsonObject).const : def}.`,
  });
  if (!(typeof converted.description === "string" && converted.description))
    ctx.reporter.made(name, "description: inline params have none");
  return { params: name, optional: !required };
}

function mcpMessages(source: Source, ctx: Context): Messages {
  const sides = (union: string) => unionMembers(source.defs[union], source);
  const clientRequests = sides("ClientRequest");
  const serverRequests = sides("ServerRequest");
  const clientNotifications = sides("ClientNotification");
  const serverNotifications = sides("ServerNotification");
  const methodOf = (def: string) => {
    const m = (source.defs[def]?.properties as JsonObject | undefined)?.method;
    return isObject(m) && typeof m.const === "string" ? m.const : undefined;
  };
  const collect = (client: string[], server: string[]) => {
    const byMethod = new Map<string, { def: string; client: boolean; server: boolean }>();
    for (const [list, side] of [
      [client, "client"],
      [server, "server"],
    ] as const) {
      for (const def of list) {
        const method = methodOf(def);
        if (method === undefined) throw new ImportError(`${def} is listed as a message but has no method const`);
        const entry = byMethod.get(method) ?? { def, client: false, server: false };
        entry[side] = true;
        byMethod.set(method, entry);
      }
    }
    return byMethod;
  };
  const methods: ImportedMessage[] = [];
  const unpaired: string[] = [];
  for (const [name, { def, client, server }] of collect(clientRequests, serverRequests)) {
    const wrapper = source.defs[def]!;
    const { params, optional } = wrapperParams(def, wrapper, ctx);
    const override = ctx.map.method(name);
    const results = ctx.map.results(name);
    if (!results) {
      unpaired.push(`${name} (${def}${source.defs[def.replace(/Request$/, "Result")] ? `; ${def.replace(/Request$/, "Result")}?` : ""})`);
      continue;
    }
    methods.push({
      name,
      direction: override.direction ?? directionOf(client, server),
      summary: summaryOf(wrapper.description as string | undefined, `The ${name} request.`),
      ...(params === undefined
        ? {}
        : {
            params,
            paramsOptional: override.params_optional ?? optional,
            ...(override.param_structure ? { paramStructure: override.param_structure } : {}),
          }),
      result: resultType(name, results, ctx),
      errors: override.errors ?? [],
    });
  }
  if (unpaired.length)
    throw new ImportError(
      `the source does not say which result answers these requests; give each in the map's "results" (the source's result types are listed in its ClientResult and ServerResult): ${unpaired.join(", ")}`,
    );
  const notifications: ImportedMessage[] = [];
  for (const [name, { def, client, server }] of collect(clientNotifications, serverNotifications)) {
    const wrapper = source.defs[def]!;
    const { params, optional } = wrapperParams(def, wrapper, ctx);
    const override = ctx.map.method(name);
    notifications.push({
      name,
      direction: override.direction ?? directionOf(client, server),
      summary: summaryOf(wrapper.description as string | undefined, `The ${name} notification.`),
      ...(params === undefined ? {} : { params, paramsOptional: override.params_optional ?? optional }),
    });
  }
  const errors: ImportedError[] = [];
  for (const [def, schema] of Object.entries(source.defs)) {
    const error = (schema.properties as JsonObject | undefined)?.error;
    if (!ctx.dropped.has(def) || !isObject(error)) continue;
    const flat = Array.isArray(error.allOf) ? error.allOf.filter(isObject) : [error];
    const own = flat.find(
      (m) => isObject(m.properties) && isObject(m.properties.code) && typeof (m.properties.code as JsonObject).const === "number",
    );
    if (!own) continue;
    const code = ((own.properties as JsonObject).code as JsonObject).const as number;
    const words = def.replace(/Error$/, "");
    const reason = STANDARD_ERRORS.find((e) => e.code === code)?.reason ?? reasonOf(words);
    const data = (own.properties as JsonObject).data;
    let dataType: string | undefined;
    if (isObject(data)) {
      const direct = defOf(data.$ref, source);
      if (direct !== undefined) dataType = ctx.converter.nameOf(direct);
      else {
        dataType = ctx.names.made(def, "Data", `data:${def}`, `the data of ${def}, inline in the source`);
        const converted = ctx.converter.convert(data, dataType);
        ctx.types.set(dataType, {
          ...converted,
          description:
            typeof converted.description === "string" && converted.description ? converted.description : `The data of the ${reason} error.`,
        });
      }
    }
    ctx.reporter.made(
      `errors.json ${reason}`,
      `reason and message made from the name ${def} (the source gives the code ${code} and its data, not a name)`,
    );
    errors.push({
      code,
      reason,
      message: words.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2"),
      description: summaryOf(schema.description as string | undefined, `The ${def} error.`),
      anyMethod: true,
      ...(dataType === undefined ? {} : { data: dataType }),
    });
  }
  // Batches: the source's message union takes an array of messages.
  const batches = Object.entries(source.defs).some(
    ([def, schema]) =>
      ctx.dropped.has(def) &&
      (Array.isArray(schema.anyOf) ? schema.anyOf : []).some(
        (v) =>
          isObject(v) &&
          (v.type === "array" || (defOf(v.$ref, source) !== undefined && source.defs[defOf(v.$ref, source)!]?.type === "array")),
      ),
  );
  return { methods, notifications, errors, batches };
}

/** The result type of a method: one of the source's types, or a union of several named `<Method>Result`. */
function resultType(method: string, results: readonly string[], ctx: Context): string {
  const source = ctx.source;
  for (const r of results) {
    if (!(r in source.defs)) throw new ImportError(`the map's results give ${method} the type ${r}, which the source does not have`);
    if (ctx.dropped.has(r)) throw new ImportError(`the map's results give ${method} the type ${r}, which is ${ctx.dropped.get(r)}`);
  }
  if (results.length === 1) return ctx.converter.nameOf(results[0]!);
  const name = ctx.names.made(
    method,
    "Result",
    `result:${method}`,
    `the result of ${method}: one of ${results.join(", ")} (the map's results)`,
  );
  ctx.types.set(name, {
    description: `The result of ${method}: one of ${results.join(", ")}.`,
    anyOf: results.map((r) => refTo(ctx.converter.nameOf(r))),
  });
  return name;
}

function acpMessages(source: Source, ctx: Context): Messages {
  // Which envelope lists each x-method type: a request's params, a response's result, or a notification's params.
  const roles = new Map<string, "request" | "response" | "notification">();
  // The envelope defs, and the envelopes the source's top level lists inline (ACP's protocol-level messages).
  const top = (Array.isArray(source.root.anyOf) ? source.root.anyOf : []).filter(
    (v): v is JsonObject => isObject(v) && isEnvelope(v, source, ctx.dropped),
  );
  const envelopeSchemas: [string, JsonObject][] = [
    ...Object.entries(source.defs).filter(([def]) => ctx.dropped.has(def)),
    ...top.map((v, i): [string, JsonObject] => [`(top level anyOf/${i})`, v]),
  ];
  for (const [, schema] of envelopeSchemas) {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const describe = (node: Json | undefined, role: "request" | "response" | "notification") => {
      if (!isObject(node)) return;
      for (const member of refsIn(node, source)) if (typeof source.defs[member]?.["x-method"] === "string") roles.set(member, role);
    };
    if ("method" in properties) describe(properties.params, "id" in properties ? "request" : "notification");
    for (const variant of Array.isArray(schema.anyOf) ? schema.anyOf : [])
      if (isObject(variant) && isObject(variant.properties)) describe(variant.properties.result, "response");
  }
  const side = (def: string): ImportDirection => {
    const value = source.defs[def]!["x-side"];
    if (value === "agent") return "client_to_server";
    if (value === "client") return "server_to_client";
    if (value === "protocol") return "both";
    throw new ImportError(`${def} has x-side ${JSON.stringify(value)}; ACP's sides are agent, client and protocol`);
  };
  const byMethod = new Map<string, { request?: string; response?: string; notification?: string }>();
  for (const [def, role] of roles) {
    const method = source.defs[def]!["x-method"] as string;
    const entry = byMethod.get(method) ?? {};
    entry[role] = def;
    byMethod.set(method, entry);
  }
  const requiresNothing = (def: string) =>
    !(Array.isArray(source.defs[def]!.required) && (source.defs[def]!.required as Json[]).length > 0);
  const methods: ImportedMessage[] = [];
  const notifications: ImportedMessage[] = [];
  for (const [name, entry] of [...byMethod].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const override = ctx.map.method(name);
    if (entry.request) {
      if (!entry.response)
        throw new ImportError(
          `${entry.request} is a request of ${name} (x-method), but no response type of the source has x-method ${name}`,
        );
      methods.push({
        name,
        direction: override.direction ?? side(entry.request),
        summary: summaryOf(source.defs[entry.request]!.description as string | undefined, `The ${name} request.`),
        params: ctx.converter.nameOf(entry.request),
        // The envelope's params are optional; a message whose params require nothing may leave them out.
        paramsOptional: override.params_optional ?? requiresNothing(entry.request),
        result: ctx.converter.nameOf(entry.response),
        errors: override.errors ?? [],
        extensions: {},
      });
    } else if (entry.notification) {
      notifications.push({
        name,
        direction: override.direction ?? side(entry.notification),
        summary: summaryOf(source.defs[entry.notification]!.description as string | undefined, `The ${name} notification.`),
        params: ctx.converter.nameOf(entry.notification),
        paramsOptional: override.params_optional ?? requiresNothing(entry.notification),
      });
    } else if (entry.response)
      throw new ImportError(
        `${entry.response} is a response of ${name} (x-method), but no request type of the source has x-method ${name}`,
      );
  }
  // The envelopes let params be null, which JSON-RPC 2.0 does not.
  for (const [def, schema] of Object.entries(source.defs)) {
    const params = (schema.properties as JsonObject | undefined)?.params;
    if (
      ctx.dropped.has(def) &&
      isObject(params) &&
      Array.isArray(params.anyOf) &&
      params.anyOf.some((v) => isObject(v) && v.type === "null")
    ) {
      ctx.reporter.notExpressible.push({
        subject: def,
        detail:
          "params may be null in the source's envelope; JSON-RPC 2.0 takes params as an object or an array, or left out, and so do turnspec's messages (left out is allowed where the params require nothing)",
      });
    }
  }
  // The codes of the error object: a union of integer constants, each with its title.
  const errors: ImportedError[] = [];
  const errorObject = Object.entries(source.defs).find(
    ([def]) => ctx.dropped.get(def) === "the JSON-RPC error object (code, message, data)",
  );
  const codeRef = errorObject ? ((errorObject[1].properties as JsonObject).code as JsonObject) : undefined;
  const codeDef = codeRef ? (defOf(codeRef.$ref, source) ?? refsIn(codeRef, source)[0]) : undefined;
  const codes = codeDef ? source.defs[codeDef] : undefined;
  for (const variant of Array.isArray(codes?.anyOf) ? codes!.anyOf : []) {
    if (!isObject(variant) || typeof variant.const !== "number" || typeof variant.title !== "string") continue;
    // A standard code keeps its standard reason; the others are made from their titles.
    const standard = STANDARD_ERRORS.find((e) => e.code === variant.const);
    const reason = standard?.reason ?? reasonOf(variant.title);
    errors.push({
      code: variant.const,
      reason,
      message: variant.title,
      description: summaryOf((variant.description as string | undefined)?.replace(/^\*\*[^*]+\*\*:\s*/, ""), variant.title),
      anyMethod: true,
    });
    if (!standard)
      ctx.reporter.made(`errors.json ${reason}`, `reason made from the title "${variant.title}" of code ${variant.const} in ${codeDef}`);
  }
  return { methods, notifications, errors, batches: false };
}
