/** Handlebars set-up shared by the template-based emitters. */
import { readFileSync } from "node:fs";
import Handlebars from "handlebars";

const templatesDir = new URL("./templates/", import.meta.url);

const hbs = Handlebars.create();
hbs.registerHelper("json", (value: unknown) => JSON.stringify(value));
// Text inside a /** */ comment must not close it.
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
