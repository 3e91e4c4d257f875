/**
 * The `ordering` section of protocol.json: checks that every rule names notifications and
 * methods of the protocol and fields their params really carry, and expands it into the
 * explicit form the ordering checker is generated from (key names replaced by their
 * pointers, `"*"` replaced by the notifications it selects).
 */
import { didYouMean } from "@turnspec/rpc";
import type { Json, JsonObject, MethodModel, NotificationModel, OrderingRuleModel, TypeModel } from "./model.js";
import { SchemaError } from "./schema-error.js";
import { isObject } from "./walk.js";

const WILDCARD = "*";

/** A field a rule reads from params, and the JSON types it may have. */
interface Field {
  readonly pointer: string;
  readonly types: readonly string[];
}

interface Context {
  readonly byFile: ReadonlyMap<string, TypeModel>;
  readonly byTitle: ReadonlyMap<string, TypeModel>;
  readonly notifications: readonly NotificationModel[];
  readonly methods: readonly MethodModel[];
  readonly problems: SchemaError[];
}

const tokens = (pointer: string) =>
  pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));

/** Follows `$ref`s (whole files) until a schema that is not a reference. */
function deref(node: Json | undefined, byFile: ReadonlyMap<string, TypeModel>): JsonObject | undefined {
  let current = node;
  for (let hops = 0; isObject(current) && typeof current.$ref === "string" && hops < 32; hops++) current = byFile.get(current.$ref)?.schema;
  return isObject(current) ? current : undefined;
}

/**
 * The schema of the field `pointer` names inside `schema`, or why there is none. Every
 * step must be a required property: an ordering key is read from every message.
 */
function fieldOf(schema: JsonObject, pointer: string, byFile: ReadonlyMap<string, TypeModel>): JsonObject | string {
  let node: JsonObject | undefined = schema;
  let path = "";
  for (const token of tokens(pointer)) {
    const properties: Json | undefined = node?.properties;
    const required = Array.isArray(node?.required) ? node.required : [];
    if (!isObject(properties) || !(token in properties)) return `has no field ${path}/${token}`;
    if (!required.includes(token)) return `has ${path}/${token} only as an optional field; an ordering key must always be present`;
    path += `/${token}`;
    node = deref(properties[token], byFile);
  }
  return node ?? `has no schema at ${pointer}`;
}

/** The problem with reading a scope key or counter from `schema` at `pointer`, if any. */
function keyProblem(schema: JsonObject, pointer: string, ctx: Context, types: readonly string[]): string | undefined {
  const field = fieldOf(schema, pointer, ctx.byFile);
  if (typeof field === "string") return field;
  const type = field.type;
  if (typeof type !== "string" || !types.includes(type))
    return `has ${pointer} of type ${JSON.stringify(type ?? "unknown")}; the rule needs ${types.join(" or ")}`;
  return undefined;
}

export function loadOrdering(section: Json | undefined, ctx: Context): OrderingRuleModel[] {
  if (!isObject(section)) return [];
  const keys = section.keys as Record<string, string>;
  const rules = section.rules as JsonObject[];
  const notifications = new Map(ctx.notifications.map((n) => [n.name, n]));
  const methods = new Map(ctx.methods.map((m) => [m.name, m]));
  const paramsOf = (title: string) => ctx.byTitle.get(title)!.schema;
  const problem = (where: string, message: string) => ctx.problems.push(new SchemaError("protocol.json", where, message));
  const keyTypes = ["string", "integer"];

  /** The problems of `params` with the fields a rule reads from it; empty when it carries them all. */
  const missing = (params: string | undefined, fields: readonly Field[]) =>
    params === undefined
      ? fields.length
        ? ["takes no params"]
        : []
      : fields.flatMap(({ pointer, types }) => {
          const found = keyProblem(paramsOf(params), pointer, ctx, types);
          return found === undefined ? [] : [found];
        });

  const seen = new Set<string>();
  const loaded: OrderingRuleModel[] = [];
  rules.forEach((rule, i) => {
    const at = `/ordering/rules/${i}`;
    const before = ctx.problems.length;
    const id = rule.id as string;
    if (seen.has(id)) problem(`${at}/id`, `rule id "${id}" is used twice`);
    seen.add(id);

    const scope = (rule.scope as string[]).map((name, j) => {
      if (!Object.hasOwn(keys, name))
        problem(`${at}/scope/${j}`, `unknown key "${name}": not in /ordering/keys (${Object.keys(keys).join(", ")})`);
      return { name, pointer: keys[name] ?? "" };
    });
    const scopeFields: Field[] = scope.map((s) => ({ pointer: s.pointer, types: keyTypes }));

    /** A notification the rule names, which must carry the scope (and the `extra` fields). */
    const notification = (name: Json | undefined, where: string, extra: readonly Field[] = []): string => {
      const found = notifications.get(name as string);
      if (!found) {
        problem(
          where,
          `unknown notification "${String(name)}"${methods.has(name as string) ? " (a method of that name exists; ordering rules are about notifications)" : didYouMean(String(name), notifications.keys(), true)}`,
        );
        return String(name);
      }
      for (const issue of missing(found.params, [...scopeFields, ...extra]))
        problem(where, `${found.name} params (${found.params}) ${issue}`);
      return found.name;
    };
    /** A set of notifications: the names listed, or, for "*", every notification that carries the scope and `extra`, minus `exclude`. */
    const set = (value: Json | undefined, where: string, exclude: readonly string[] = [], extra: readonly Field[] = []): string[] => {
      if (value === WILDCARD) {
        return ctx.notifications
          .filter((n) => !exclude.includes(n.name) && missing(n.params, [...scopeFields, ...extra]).length === 0)
          .map((n) => n.name);
      }
      return (value as string[]).map((name, j) => notification(name, `${where}/${j}`, extra));
    };
    const method = (name: Json | undefined, where: string): MethodModel | undefined => {
      const found = methods.get(name as string);
      if (!found) problem(where, `unknown method "${String(name)}"${didYouMean(String(name), methods.keys(), true)}`);
      return found;
    };

    const common = {
      id,
      requirement: rule.requirement as string,
      description: rule.description as string,
      kind: rule.kind as string,
      scope,
    };
    let expanded: JsonObject;
    switch (rule.kind) {
      case "precedes": {
        const first = notification(rule.first, `${at}/first`);
        expanded = { first, then: set(rule.then, `${at}/then`, [first]) };
        break;
      }
      case "leads": {
        const lead = notification(rule.notification, `${at}/notification`);
        expanded = { notification: lead, before: set(rule.before, `${at}/before`, [lead]) };
        break;
      }
      case "trails": {
        const trail = notification(rule.notification, `${at}/notification`);
        expanded = { notification: trail, after: set(rule.after, `${at}/after`, [trail]) };
        break;
      }
      case "single_terminal": {
        const terminals = (rule.terminals as string[]).map((name, j) => notification(name, `${at}/terminals/${j}`));
        expanded = { terminals, after: set(rule.after, `${at}/after`, terminals) };
        break;
      }
      case "quiet_after": {
        const after = notification(rule.notification, `${at}/notification`);
        const until = (rule.until as string[]).map((name, j) => {
          const found = method(name, `${at}/until/${j}`);
          if (found)
            for (const issue of missing(found.params, scopeFields))
              problem(`${at}/until/${j}`, `${found.name} params (${found.params}) ${issue}`);
          return name;
        });
        expanded = { notification: after, quiet: set(rule.quiet, `${at}/quiet`), until };
        break;
      }
      case "paired": {
        const end = (side: "open" | "close") => {
          const value = rule[side] as JsonObject;
          const key = value.key as string;
          return { notification: notification(value.notification, `${at}/${side}/notification`, [{ pointer: key, types: keyTypes }]), key };
        };
        expanded = { subject: rule.subject as string, open: end("open"), close: end("close") };
        break;
      }
      case "sequence": {
        const field = rule.field as string;
        const results = (rule.results as JsonObject[]).map((source, j) => {
          const where = `${at}/results/${j}`;
          const items = source.items as string;
          const found = method(source.method, `${where}/method`);
          if (found) {
            const array = fieldOf(paramsOf(found.result), items, ctx.byFile);
            const element = typeof array === "string" ? undefined : deref(array.items, ctx.byFile);
            if (typeof array === "string") problem(`${where}/items`, `${found.name} result (${found.result}) ${array}`);
            else if (array.type !== "array" || !element)
              problem(
                `${where}/items`,
                `${found.name} result (${found.result}) has ${items} of type ${JSON.stringify(array.type ?? "unknown")}; it must be an array`,
              );
            else {
              const issue = keyProblem(element, field, ctx, ["integer"]);
              if (issue) problem(`${where}/items`, `the elements of ${found.name} result ${items} ${issue}`);
            }
          }
          return { method: String(source.method), items };
        });
        expanded = {
          field,
          notifications: set(rule.notifications, `${at}/notifications`, [], [{ pointer: field, types: ["integer"] }]),
          results,
        };
        break;
      }
      default:
        problem(`${at}/kind`, `unknown rule kind ${JSON.stringify(rule.kind)}`);
        return;
    }
    if (ctx.problems.length === before) loaded.push({ ...common, rule: { ...common, ...expanded } });
  });
  return loaded;
}
