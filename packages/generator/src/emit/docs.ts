/** PROTOCOL.md: a readable reference of every method, notification, type and error, from the schemas. */
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { anchorOf, render } from "../render.js";
import { isObject } from "../walk.js";

const DIRECTION = { client_to_server: "client → server", server_to_client: "server → client" } as const;

/** A short Markdown rendering of a schema's type, with links to named types. */
export function describeSchema(schema: Json, model: ProtocolModel): string {
  if (!isObject(schema)) return "any";
  if (typeof schema.$ref === "string") {
    const target = model.byFile.get(schema.$ref);
    return target ? `[\`${target.title}\`](#${anchorOf(target.title)})` : "`unknown`";
  }
  if ("const" in schema) return `\`${JSON.stringify(schema.const)}\``;
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => `\`${JSON.stringify(v)}\``).join(" \\| ");
  if (Array.isArray(schema.anyOf)) return schema.anyOf.map((s) => describeSchema(s, model)).join(" \\| ");
  if (Array.isArray(schema.oneOf)) return schema.oneOf.map((s) => describeSchema(s, model)).join(" \\| ");
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length === 0) return "any";
  return types
    .map((t) => {
      if (t === "array") return `${describeSchema(schema.items ?? {}, model)}[]`;
      if (t === "object") return schema.additionalProperties === true || !isObject(schema.properties) ? "object (free-form)" : "object";
      return `\`${String(t)}\``;
    })
    .join(" \\| ");
}

const cell = (text: unknown) => (typeof text === "string" ? text.replace(/\|/g, "\\|").replace(/\n+/g, " ") : "");

/** A field's description, with the value its schema defaults to (its `default` keyword) when it declares one. */
const fieldText = (schema: JsonObject) => (schema.default === undefined ? schema.description : [schema.description, `Default: \`${JSON.stringify(schema.default)}\`.`].filter(Boolean).join(" "));

export function emitDocs(model: ProtocolModel, header: string): string {
  const usedBy = new Map<string, string[]>();
  const use = (title: string, name: string) => usedBy.set(title, [...(usedBy.get(title) ?? []), name]);
  for (const m of model.methods) {
    use(m.params, `${m.name} params`);
    use(m.result, `${m.name} result`);
  }
  for (const n of model.notifications) use(n.params, n.name);
  const errorsByReason = new Map(model.errors.map((e) => [e.reason, e]));

  return render("PROTOCOL.md", {
    header,
    protocol: { title: model.title, version: model.version, description: model.description },
    methods: model.methods.map((m) => ({
      ...m,
      anchor: anchorOf(m.name),
      paramsAnchor: anchorOf(m.params),
      resultAnchor: anchorOf(m.result),
      directionText: DIRECTION[m.direction],
      errors: m.errors.map((reason) => errorsByReason.get(reason)!),
    })),
    notifications: model.notifications.map((n) => ({ ...n, paramsAnchor: anchorOf(n.params), directionText: DIRECTION[n.direction] })),
    errors: model.errors.map((e) => ({ ...e, description: cell(e.description), details: e.details.map((d) => ({ ...d, description: cell(d.description) })) })),
    ordering: model.ordering.map((r) => ({ ...r, description: cell(r.description), requirementDiffers: r.requirement !== r.id })),
    types: model.types.map((t) => {
      const union = model.unions.find((u) => u.id === t.id);
      const properties = isObject(t.schema.properties) ? t.schema.properties : {};
      const required = new Set(Array.isArray(t.schema.required) ? (t.schema.required as string[]) : []);
      return {
        title: t.title,
        file: t.file,
        description: t.description,
        usedBy: usedBy.get(t.title) ?? [],
        union: union ? { propertyName: union.propertyName, variants: union.variants.map((v) => ({ ...v, anchor: anchorOf(v.title) })) } : undefined,
        fields: Object.entries(properties).map(([name, schema]) => ({
          name,
          type: describeSchema(schema, model),
          required: required.has(name),
          description: cell(fieldText(schema as JsonObject)),
        })),
        shape: describeSchema(t.schema, model),
      };
    }),
  });
}
