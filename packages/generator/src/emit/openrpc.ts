/**
 * openrpc.json: the methods as an OpenRPC 1.3 document (params by name, by position or
 * either, as protocol.json says), the named types and their local definitions under
 * components.schemas, the error registry under components.errors (with the type of each
 * error's data under `x-error-data`), the notifications under the `x-notifications`
 * extension, and `x-batches` when the protocol takes batches.
 */
import { flattenObject, NotFlattenable, type Flattened } from "../compose.js";
import type { Json, JsonObject, MethodModel, NotificationModel, ProtocolModel } from "../model.js";
import { splitRef } from "../refs.js";
import { isObject, mapSchema } from "../walk.js";

/** A schema of the file `file` with its references pointing into components.schemas. */
function componentSchema(schema: Json, model: ProtocolModel, file: string): Json {
  return mapSchema(schema, (node) => {
    if (typeof node.$ref !== "string") return undefined;
    const { file: target, fragment } = splitRef(node.$ref);
    const type = model.byFile.get(target ?? file);
    const title = fragment === "" ? type?.title : type?.defs.find((d) => d.pointer === fragment)?.title;
    if (!title) return undefined;
    // The keys in their order, the reference rewritten in its place.
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => [
        key,
        key === "$ref" ? `#/components/schemas/${title}` : componentSchema(value, model, file),
      ]),
    );
  });
}

/** The properties of an object schema (through allOf), or undefined for params OpenRPC cannot list by name (a union). */
function flatOrUndefined(schema: JsonObject, file: string, model: ProtocolModel): Flattened | undefined {
  try {
    return flattenObject(schema, file, model.byFile);
  } catch (error) {
    if (error instanceof NotFlattenable) return undefined;
    throw error;
  }
}

/** The content descriptors of a message's params, in the order of their positions; empty for params that are a union (see `x-params-schema`). */
function contentDescriptors(m: MethodModel | NotificationModel, model: ProtocolModel): JsonObject[] {
  if (m.params === undefined) return [];
  const type = model.types.find((t) => t.title === m.params)!;
  if (m.paramStructure === "by-position") {
    const positions = Array.isArray(type.schema.prefixItems) ? type.schema.prefixItems : [];
    const required = typeof type.schema.minItems === "number" ? type.schema.minItems : 0;
    return positions.map((schema, i) => {
      const node = isObject(schema) ? schema : {};
      const { title, ...rest } = node;
      const descriptor: JsonObject = {
        name: typeof title === "string" ? title : `param${i + 1}`,
        required: i < required,
        schema: componentSchema(rest, model, type.file),
      };
      if (typeof node.description === "string") descriptor.description = node.description;
      return descriptor;
    });
  }
  const flat = flatOrUndefined(type.schema, type.file, model);
  if (!flat) return [];
  const required = new Set(flat.required);
  return Object.entries(flat.properties).map(([name, schema]) => {
    const descriptor: JsonObject = { name, required: required.has(name), schema: componentSchema(schema, model, type.file) };
    if (isObject(schema) && typeof schema.description === "string") descriptor.description = schema.description;
    return descriptor;
  });
}

export function emitOpenRpc(model: ProtocolModel, generatedNote: string): JsonObject {
  const paramsOf = (m: MethodModel | NotificationModel): JsonObject => ({
    paramStructure: m.params === undefined ? "by-name" : m.paramStructure,
    params: contentDescriptors(m, model),
  });
  // turnspec's facts OpenRPC has no field for: the params' type, params that may be left out.
  const paramsExtensions = (m: MethodModel | NotificationModel): JsonObject => ({
    ...(m.params === undefined ? {} : { "x-params-type": m.params }),
    // Params that are a union of objects have no list of named params: their schema is given whole.
    ...(m.params !== undefined &&
    m.paramStructure !== "by-position" &&
    !flatOrUndefined(model.types.find((t) => t.title === m.params)!.schema, model.types.find((t) => t.title === m.params)!.file, model)
      ? { "x-params-schema": { $ref: `#/components/schemas/${m.params}` } }
      : {}),
    ...(m.paramsOptional ? { "x-params-optional": true } : {}),
  });
  const methodObject = (m: MethodModel): JsonObject => ({
    name: m.name,
    summary: m.summary,
    ...paramsOf(m),
    result: { name: m.result, schema: { $ref: `#/components/schemas/${m.result}` } },
    errors: m.errors.map((reason) => ({ $ref: `#/components/errors/${reason}` })),
    ...paramsExtensions(m),
    ...(m.direction === "both" ? { "x-direction": "both" } : {}),
    ...(m.partialResult === undefined ? {} : { "x-partial-result": { $ref: `#/components/schemas/${m.partialResult}` } }),
    ...(m.errorData === undefined ? {} : { "x-error-data": { $ref: `#/components/schemas/${m.errorData}` } }),
    ...m.extensions,
  });
  const clientMethods = model.methods.filter((m) => m.direction !== "client_to_server");
  const schemas: [string, Json][] = [];
  for (const t of model.types) {
    const { $schema: _s, $id: _i, $defs: _d, ...rest } = t.schema;
    schemas.push([t.title, componentSchema(rest, model, t.file)]);
    for (const d of t.defs) {
      const { title: _t, ...def } = d.schema;
      schemas.push([d.title, componentSchema(def, model, t.file)]);
    }
  }
  return {
    "x-generated": generatedNote,
    openrpc: "1.3.2",
    info: { title: model.title, version: model.version, description: model.description },
    methods: model.methods.filter((m) => m.direction !== "server_to_client").map(methodObject),
    components: {
      schemas: Object.fromEntries(schemas.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))),
      errors: Object.fromEntries(
        model.errors.map((e) => [e.reason, { code: e.code, message: e.message, data: { reason: e.reason, description: e.description } }]),
      ),
    },
    "x-notifications": model.notifications.map((n) => ({
      name: n.name,
      summary: n.summary,
      direction: n.direction,
      ...paramsOf(n),
      ...paramsExtensions(n),
    })),
    // The type of each error's data, where errors.json gives one (an error object has no field for it).
    ...(model.errors.some((e) => e.data !== undefined)
      ? {
          "x-error-data": Object.fromEntries(
            model.errors.filter((e) => e.data !== undefined).map((e) => [e.reason, { $ref: `#/components/schemas/${e.data}` }]),
          ),
        }
      : {}),
    ...(model.batches ? { "x-batches": true } : {}),
    // OpenRPC describes what a server serves; the methods a server calls on its client
    // (sampling in MCP, window/showMessageRequest in LSP) are listed apart, in the same form.
    ...(clientMethods.length ? { "x-server-to-client-methods": clientMethods.map(methodObject) } : {}),
  };
}
