/**
 * openrpc.json: the methods as an OpenRPC 1.3 document (params by name), the named types
 * under components.schemas, the error registry under components.errors, and the
 * notifications under the `x-notifications` extension.
 */
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { isObject, mapSchema } from "../walk.js";

function componentSchema(schema: Json, model: ProtocolModel): Json {
  return mapSchema(schema, (node) => {
    if (typeof node.$ref === "string") {
      const target = model.byFile.get(node.$ref);
      return target ? { ...node, $ref: `#/components/schemas/${target.title}` } : undefined;
    }
    return undefined;
  });
}

function contentDescriptors(title: string, model: ProtocolModel): JsonObject[] {
  const type = model.types.find((t) => t.title === title)!;
  const properties = isObject(type.schema.properties) ? type.schema.properties : {};
  const required = new Set(Array.isArray(type.schema.required) ? (type.schema.required as string[]) : []);
  return Object.entries(properties).map(([name, schema]) => {
    const descriptor: JsonObject = { name, required: required.has(name), schema: componentSchema(schema, model) };
    if (isObject(schema) && typeof schema.description === "string") descriptor.description = schema.description;
    return descriptor;
  });
}

export function emitOpenRpc(model: ProtocolModel, generatedNote: string): JsonObject {
  const methodObject = (m: ProtocolModel["methods"][number]): JsonObject => ({
    name: m.name,
    summary: m.summary,
    paramStructure: "by-name",
    params: contentDescriptors(m.params, model),
    result: { name: m.result, schema: { $ref: `#/components/schemas/${m.result}` } },
    errors: m.errors.map((reason) => ({ $ref: `#/components/errors/${reason}` })),
    "x-params-type": m.params,
  });
  const clientMethods = model.methods.filter((m) => m.direction === "server_to_client");
  return {
    "x-generated": generatedNote,
    openrpc: "1.3.2",
    info: { title: model.title, version: model.version, description: model.description },
    methods: model.methods.filter((m) => m.direction === "client_to_server").map(methodObject),
    components: {
      schemas: Object.fromEntries(
        model.types.map((t) => {
          const { $schema: _s, $id: _i, ...rest } = t.schema;
          return [t.title, componentSchema(rest, model)];
        }),
      ),
      errors: Object.fromEntries(
        model.errors.map((e) => [e.reason, { code: e.code, message: e.message, data: { reason: e.reason, description: e.description } }]),
      ),
    },
    "x-notifications": model.notifications.map((n) => ({
      name: n.name,
      summary: n.summary,
      direction: n.direction,
      paramStructure: "by-name",
      params: contentDescriptors(n.params, model),
      "x-params-type": n.params,
    })),
    // OpenRPC describes what a server serves; the methods a server calls on its client
    // (sampling in MCP, window/showMessageRequest in LSP) are listed apart, in the same form.
    ...(clientMethods.length ? { "x-server-to-client-methods": clientMethods.map(methodObject) } : {}),
  };
}
