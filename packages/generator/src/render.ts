/** Handlebars set-up shared by the template-based emitters. */
import { readFileSync } from "node:fs";
import Handlebars from "handlebars";

const templatesDir = new URL("../templates/", import.meta.url);

const hbs = Handlebars.create();
hbs.registerHelper("json", (value: unknown) => JSON.stringify(value));
// A JSON value as a TypeScript literal on one line, spaced as the TypeScript formatter spaces it.
hbs.registerHelper("literal", (value: unknown) => literal(value));
// Text inside a /** */ comment must not close it.
/** Whether any element of a list has the field, not null (`{{#if (anyHas errors "data")}}`). */
hbs.registerHelper(
  "anyHas",
  (list: unknown, key: unknown) =>
    Array.isArray(list) &&
    list.some((item) => item !== null && typeof item === "object" && (item as Record<string, unknown>)[String(key)] != null),
);
hbs.registerHelper("doc", (value: unknown) => String(value).replace(/\*\//g, "*\\/"));

const cache = new Map<string, Handlebars.TemplateDelegate>();

/** Renders `generator/templates/<name>.hbs` with a plain-object context. */
export function render(name: string, context: object): string {
  let template = cache.get(name);
  if (!template) {
    // noEscape: these templates write code and Markdown, not HTML.
    template = hbs.compile(readFileSync(new URL(`${name}.hbs`, templatesDir), "utf8"), { noEscape: true, strict: true });
    cache.set(name, template);
  }
  return template(context);
}

/** A JSON value as a one-line literal: `["a", "b"]`, `{ "k": 1 }`, `{}`. */
export function literal(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(literal).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).map(([key, v]) => `${JSON.stringify(key)}: ${literal(v)}`);
    return entries.length ? `{ ${entries.join(", ")} }` : "{}";
  }
  return JSON.stringify(value);
}

/** `turn/permission/request/respond` → `turnPermissionRequestRespond`. */
export function camelMethodName(name: string): string {
  return name
    .split(/[/_]/)
    .filter(Boolean)
    .map((part, i) => (i === 0 ? part : part[0]!.toUpperCase() + part.slice(1)))
    .join("");
}

/** A GitHub-style heading anchor for a heading text. */
export function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, "")
    .replace(/ /g, "-");
}
