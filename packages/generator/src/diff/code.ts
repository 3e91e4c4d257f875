/**
 * Generated-code compatibility: code compiled against the old generated output stops
 * compiling when an exported type is renamed or removed, when a field's TypeScript type
 * changes, when a field is removed, made required or made optional, or when a required
 * field is added. Each type is compared by its title (the exported name) and each field
 * by the TypeScript type the types emitter writes for it, in outline.
 */
import { structurallyEqual } from "./canonical.js";
import type { Json, JsonObject, ProtocolModel, TypeModel } from "../model.js";
import { escapeToken, isObject } from "../walk.js";
import type { Change } from "./report.js";
import { nullablePair, typesOf } from "./sample.js";
import { refName } from "../emit/type-expression.js";

const PRIMITIVE: Record<string, string> = {
  string: "string",
  integer: "number",
  number: "number",
  boolean: "boolean",
  null: "null",
  array: "unknown[]",
  object: "{ [k: string]: unknown }",
};

/** The TypeScript type of a schema node, as the generated types name it (referenced types by title). */
export function tsType(schema: Json | undefined, model: ProtocolModel): string {
  if (schema === true || schema === undefined) return "unknown";
  if (!isObject(schema)) return "never";
  if (typeof schema.$ref === "string") return refName(schema.$ref, "", model) ?? "unknown";
  if ("const" in schema) return JSON.stringify(schema.const);
  // Unions are written in a fixed order: reordering an enum or a oneOf changes no TypeScript type.
  if (Array.isArray(schema.enum))
    return schema.enum
      .map((v) => JSON.stringify(v))
      .sort()
      .join(" | ");
  const pair = nullablePair(schema);
  if (pair) return `${tsType(pair.value, model)} | null`;
  if (Array.isArray(schema.oneOf))
    return schema.oneOf
      .map((v) => tsType(v, model))
      .sort()
      .join(" | ");
  const types = typesOf(schema);
  if (!types) return isObject(schema.properties) ? objectType(schema, model) : "unknown";
  return types
    .map((t) =>
      t === "array"
        ? `(${tsType(schema.items, model)})[]`
        : t === "object" && isObject(schema.properties)
          ? objectType(schema, model)
          : PRIMITIVE[t]!,
    )
    .join(" | ");
}

function objectType(schema: JsonObject, model: ProtocolModel): string {
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const fields = Object.entries(schema.properties as JsonObject)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}${required.has(k) ? "" : "?"}: ${tsType(v, model)}`);
  if (schema.additionalProperties !== false) fields.push("[k: string]: unknown");
  return `{ ${fields.join("; ")} }`;
}

function fields(type: TypeModel): Map<string, { schema: Json; required: boolean }> {
  const out = new Map<string, { schema: Json; required: boolean }>();
  const required = new Set(Array.isArray(type.schema.required) ? (type.schema.required as string[]) : []);
  if (isObject(type.schema.properties) && !Array.isArray(type.schema.oneOf)) {
    for (const [name, schema] of Object.entries(type.schema.properties)) out.set(name, { schema, required: required.has(name) });
  }
  return out;
}

/**
 * Names the generated registry exports as union members (MethodName, NotificationName,
 * ErrorReason): one removed fails code that names it; a client_to_server method added
 * makes a server's Handlers map, written against the old output, incomplete.
 */
function registryNames(oldModel: ProtocolModel, newModel: ProtocolModel): Change[] {
  const out: Change[] = [];
  const lists = [
    ["MethodName", "methods", oldModel.methods.map((m) => m.name), newModel.methods.map((m) => m.name)],
    ["NotificationName", "notifications", oldModel.notifications.map((n) => n.name), newModel.notifications.map((n) => n.name)],
    ["ErrorReason", "errors", oldModel.errors.map((e) => e.reason), newModel.errors.map((e) => e.reason)],
  ] as const;
  for (const [union, kind, before, after] of lists) {
    const file = kind === "errors" ? "errors.json" : "protocol.json";
    for (const name of before.filter((n) => !(after as readonly string[]).includes(n))) {
      out.push({
        category: "code",
        rule: "CODE_NAME_REMOVED",
        subject: union,
        verdict: "breaking",
        change: `${union} "${name}" removed`,
        why: `code that names "${name}" (a handler, a call, a catch) no longer compiles`,
        old: { file, pointer: `/${kind}/${(before as readonly string[]).indexOf(name)}` },
        new: null,
      });
    }
    if (kind !== "methods") continue;
    for (const name of after.filter((n) => !(before as readonly string[]).includes(n))) {
      if (newModel.methods.find((m) => m.name === name)!.direction === "server_to_client") continue;
      out.push({
        category: "code",
        rule: "CODE_HANDLER_ADDED",
        subject: union,
        verdict: "breaking",
        change: `${union} "${name}" added`,
        why: "the generated server's Handlers map is keyed by every client_to_server method; a server written against the old output lacks this handler and no longer compiles",
        old: null,
        new: { file, pointer: `/${kind}/${(after as readonly string[]).indexOf(name)}` },
      });
    }
  }
  return out;
}

export function codeChanges(oldModel: ProtocolModel, newModel: ProtocolModel): Change[] {
  const out: Change[] = registryNames(oldModel, newModel);
  const newByTitle = new Map(newModel.types.map((t) => [t.title, t]));
  const oldTitles = new Set(oldModel.types.map((t) => t.title));
  const code = (subject: string, fields: Omit<Change, "category" | "subject">): Change => ({ category: "code", subject, ...fields });
  for (const old of oldModel.types) {
    const next = newByTitle.get(old.title);
    if (!next) {
      // A title names its file, so a rename usually moves the type to a new file: the same
      // file under a new title, or a new type with the same structure, is the renamed one.
      const sameFile = newModel.byFile.get(old.file);
      const renamed =
        sameFile && !oldTitles.has(sameFile.title)
          ? sameFile
          : newModel.types.find((t) => !oldTitles.has(t.title) && structurallyEqual(old.file, oldModel, t.file, newModel));
      out.push(
        code(old.title, {
          rule: renamed ? "CODE_TYPE_RENAMED" : "CODE_TYPE_REMOVED",
          verdict: "breaking",
          change: renamed ? `type ${old.title} renamed to ${renamed.title}` : `type ${old.title} removed`,
          why: `code that imports ${old.title} from the generated types no longer compiles`,
          old: { file: old.file, pointer: "/title" },
          new: renamed ? { file: renamed.file, pointer: "/title" } : null,
        }),
      );
      continue;
    }
    const a = fields(old);
    const b = fields(next);
    if (a.size === 0 && b.size === 0) {
      const before = tsType(old.schema, oldModel);
      const after = tsType(next.schema, newModel);
      if (before !== after)
        out.push(
          code(old.title, {
            rule: "CODE_TYPE_CHANGED",
            verdict: "breaking",
            change: `type ${old.title}: ${before} → ${after}`,
            why: "code written against the old type may not compile against the new one",
            old: { file: old.file, pointer: "" },
            new: { file: next.file, pointer: "" },
          }),
        );
      continue;
    }
    const place = (type: TypeModel, name: string) => ({ file: type.file, pointer: `/properties/${escapeToken(name)}` });
    for (const [name, field] of a) {
      const other = b.get(name);
      if (!other) {
        out.push(
          code(old.title, {
            rule: "CODE_FIELD_REMOVED",
            verdict: "breaking",
            change: `${old.title}.${name} removed`,
            why: `code that reads or sets ${name} no longer compiles`,
            old: place(old, name),
            new: null,
          }),
        );
        continue;
      }
      const before = tsType(field.schema, oldModel);
      const after = tsType(other.schema, newModel);
      if (before !== after)
        out.push(
          code(old.title, {
            rule: "CODE_FIELD_TYPE_CHANGED",
            verdict: "breaking",
            change: `${old.title}.${name}: ${before} → ${after}`,
            why: "the field's TypeScript type changed",
            old: place(old, name),
            new: place(next, name),
          }),
        );
      if (field.required !== other.required) {
        out.push(
          code(old.title, {
            rule: field.required ? "CODE_FIELD_MADE_OPTIONAL" : "CODE_FIELD_MADE_REQUIRED",
            verdict: "breaking",
            change: `${old.title}.${name}: ${field.required ? "required → optional" : "optional → required"}`,
            why: field.required
              ? "code that reads it without a check for undefined no longer compiles"
              : "code that builds the type without it no longer compiles",
            old: place(old, name),
            new: place(next, name),
          }),
        );
      }
    }
    for (const [name, field] of b) {
      if (a.has(name) || !field.required) continue;
      out.push(
        code(old.title, {
          rule: "CODE_FIELD_REQUIRED_ADDED",
          verdict: "breaking",
          change: `${old.title}.${name} added as required`,
          why: "code that builds the type without it no longer compiles",
          old: null,
          new: place(next, name),
        }),
      );
    }
  }
  return out;
}
