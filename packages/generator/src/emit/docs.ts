/** PROTOCOL.md: a readable reference of every method, notification, type and error, from the schemas. */
import type { Json, JsonObject, MethodModel, NotificationModel, ProtocolModel } from "../model.js";
import { splitRef } from "../refs.js";
import { anchorOf, render } from "../render.js";
import { isObject } from "../walk.js";

const DIRECTION = { client_to_server: "client → server", server_to_client: "server → client", both: "either side" } as const;

/** The title a `$ref` in `file` names: a type file, the file's own type (`#`) or one of its local definitions. */
function refTitle(ref: string, file: string, model: ProtocolModel): string | undefined {
  const { file: target, fragment } = splitRef(ref);
  const type = model.byFile.get(target ?? file);
  if (!type) return undefined;
  if (fragment === "") return type.title;
  return type.defs.find((d) => d.pointer === fragment)?.title;
}

/** A short Markdown rendering of a schema's type, with links to named types; `file` is where the schema is written. */
export function describeSchema(schema: Json, model: ProtocolModel, file = ""): string {
  if (!isObject(schema)) return "any";
  const open = schema["x-open"] === true ? " (open: other values are kept)" : "";
  if (typeof schema.$ref === "string") {
    const title = refTitle(schema.$ref, file, model);
    return title ? `[\`${title}\`](#${anchorOf(title)})` : "`unknown`";
  }
  if ("const" in schema) return `\`${JSON.stringify(schema.const)}\``;
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => `\`${JSON.stringify(v)}\``).join(" \\| ") + open;
  if (Array.isArray(schema.anyOf)) return schema.anyOf.map((s) => describeSchema(s, model, file)).join(" \\| ") + open;
  if (Array.isArray(schema.oneOf))
    return (
      schema.oneOf.map((s) => describeSchema(s, model, file)).join(" \\| ") +
      (isObject(schema.discriminator) ? "" : " (exactly one)") +
      open
    );
  if (Array.isArray(schema.allOf)) {
    const own = isObject(schema.properties) ? ["object"] : [];
    return [...schema.allOf.map((s) => describeSchema(s, model, file)), ...own].join(" & ");
  }
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length === 0) return "any";
  return types
    .map((t) => {
      if (t === "array" && Array.isArray(schema.prefixItems)) {
        const positions = schema.prefixItems.map((s) => describeSchema(s, model, file));
        const rest = schema.items === false ? "" : `, …${describeSchema(schema.items ?? {}, model, file)}`;
        return `[${positions.join(", ")}${rest}]`;
      }
      if (t === "array") return `${describeSchema(schema.items ?? {}, model, file)}[]`;
      if (t === "object" && isObject(schema.additionalProperties) && !isObject(schema.properties)) {
        return `map of ${describeSchema(schema.additionalProperties, model, file)}${isObject(schema.propertyNames) ? ` (keys: ${describeSchema({ type: "string", ...schema.propertyNames }, model, file)}${typeof schema.propertyNames.pattern === "string" ? ` matching \`${schema.propertyNames.pattern}\`` : ""})` : ""}`;
      }
      if (t === "object") return schema.additionalProperties === true || !isObject(schema.properties) ? "object (free-form)" : "object";
      return `\`${String(t)}\``;
    })
    .join(" \\| ");
}

/** How a message's params are written in the tables: a link to their type, with how they are sent. */
function paramsText(m: MethodModel | NotificationModel): string {
  if (m.params === undefined) return "none";
  const notes = [
    m.paramStructure === "by-position" ? "by position" : m.paramStructure === "either" ? "by name or by position" : "",
    m.paramsOptional ? "may be left out" : "",
  ].filter(Boolean);
  return `[\`${m.params}\`](#${anchorOf(m.params)})${notes.length ? ` (${notes.join(", ")})` : ""}`;
}

const cell = (text: unknown) => (typeof text === "string" ? text.replace(/\|/g, "\\|").replace(/\n+/g, " ") : "");

/** A field's description, with the value its schema defaults to (its `default` keyword) when it declares one. */
const fieldText = (schema: JsonObject) =>
  schema.default === undefined
    ? schema.description
    : [schema.description, `Default: \`${JSON.stringify(schema.default)}\`.`].filter(Boolean).join(" ");

export function emitDocs(model: ProtocolModel, header: string): string {
  const usedBy = new Map<string, string[]>();
  const use = (title: string, name: string) => usedBy.set(title, [...(usedBy.get(title) ?? []), name]);
  for (const m of model.methods) {
    if (m.params !== undefined) use(m.params, `${m.name} params`);
    use(m.result, `${m.name} result`);
    if (m.partialResult !== undefined) use(m.partialResult, `${m.name} partial result`);
    if (m.errorData !== undefined) use(m.errorData, `${m.name} error data`);
  }
  for (const n of model.notifications) if (n.params !== undefined) use(n.params, n.name);
  for (const e of model.errors) if (e.data !== undefined) use(e.data, `${e.reason} data`);
  const messages = [...model.methods, ...model.notifications];
  const byName = messages.every((m) => m.params === undefined || m.paramStructure === "by-name");
  const errorsByReason = new Map(model.errors.map((e) => [e.reason, e]));

  return render("PROTOCOL.md", {
    header,
    protocol: { title: model.title, version: model.version, description: model.description },
    paramsSentence: byName
      ? "Params are sent by name, as one object."
      : "Each method and notification says how its params are sent: by name (one object), by position (one array) or either.",
    batchesSentence: model.batches
      ? "A frame may also be a batch: an array of requests and notifications, answered by an array of their responses."
      : "Batches (arrays of messages) are not part of the protocol.",
    objectsSentence: model.objects === "open" ? "An object keeps fields its type does not declare unless the type closes it." : "",
    methods: model.methods.map((m) => ({
      ...m,
      anchor: anchorOf(m.name),
      paramsText: paramsText(m),
      resultAnchor: anchorOf(m.result),
      partialResultText: m.partialResult === undefined ? "" : `[\`${m.partialResult}\`](#${anchorOf(m.partialResult)})`,
      errorDataText: m.errorData === undefined ? "" : `[\`${m.errorData}\`](#${anchorOf(m.errorData)})`,
      directionText: DIRECTION[m.direction],
      errors: m.errors.map((reason) => errorsByReason.get(reason)!),
    })),
    notifications: model.notifications.map((n) => ({ ...n, paramsText: paramsText(n), directionText: DIRECTION[n.direction] })),
    errors: model.errors.map((e) => ({
      ...e,
      dataText: e.data === undefined ? "" : `[\`${e.data}\`](#${anchorOf(e.data)})`,
      description: cell(e.description),
      details: e.details.map((d) => ({ ...d, description: cell(d.description) })),
    })),
    ordering: model.ordering.map((r) => ({ ...r, description: cell(r.description), requirementDiffers: r.requirement !== r.id })),
    types: model.types
      .flatMap((t) => [
        { title: t.title, file: t.file, where: t.file, description: t.description, schema: t.schema },
        ...t.defs.map((d) => ({
          title: d.title,
          file: t.file,
          where: `${t.file}#${d.pointer}`,
          description: typeof d.schema.description === "string" ? d.schema.description : `A local definition of ${t.title}.`,
          schema: d.schema,
        })),
      ])
      .sort((a, b) => (a.title < b.title ? -1 : a.title > b.title ? 1 : 0))
      .map((t) => {
        const union = t.where === t.file ? model.unions.find((u) => u.title === t.title) : undefined;
        const properties = isObject(t.schema.properties) ? t.schema.properties : {};
        const required = new Set(Array.isArray(t.schema.required) ? (t.schema.required as string[]) : []);
        return {
          title: t.title,
          file: t.where,
          description: t.description,
          usedBy: usedBy.get(t.title) ?? [],
          union: union
            ? { propertyName: union.propertyName, variants: union.variants.map((v) => ({ ...v, anchor: anchorOf(v.title) })) }
            : undefined,
          fields: Object.entries(properties).map(([name, schema]) => ({
            name,
            type: describeSchema(schema, model, t.file),
            required: required.has(name),
            description: cell(fieldText(schema as JsonObject)),
          })),
          shape: describeSchema(Array.isArray(t.schema.allOf) ? { allOf: t.schema.allOf } : t.schema, model, t.file),
          composed: Array.isArray(t.schema.allOf) ? describeSchema({ allOf: t.schema.allOf }, model, t.file) : "",
        };
      }),
  });
}
