/**
 * Handlebars set-up shared by the template-based emitters.
 *
 * A template is rendered from the spec the build precompiled (`dist/templates.cjs`,
 * templates-precompile.ts) when that spec was compiled from the same text by the same
 * Handlebars, with Handlebars' runtime alone; otherwise (a checkout run from its sources, a
 * template edited since) it is compiled here, by the full Handlebars, loaded only then.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type Handlebars from "handlebars";
import { builtModule, packageVersion } from "./built.js";

type HandlebarsEnvironment = typeof Handlebars;
/** A precompiled template, as Handlebars' runtime takes it. */
type TemplateSpec = Parameters<HandlebarsEnvironment["template"]>[0];

const require = createRequire(import.meta.url);

export const templatesDir = new URL("../templates/", import.meta.url);

/** How every template is compiled: they write code and Markdown, not HTML, and a missing field is an error. */
export const TEMPLATE_OPTIONS = { noEscape: true, strict: true } as const;

/** The file the build writes beside the compiled modules. */
const PRECOMPILED_MODULE = "templates.cjs";

/** The version of Handlebars this package runs. */
export function handlebarsVersion(): string {
  return packageVersion("handlebars");
}

/** What a precompiled spec is checked against: the text it was compiled from. */
export function templateDigest(source: string): string {
  return createHash("sha256").update(source).digest("hex");
}

/** What the build precompiled (`dist/templates.cjs`). */
export interface PrecompiledTemplates {
  readonly templates: Readonly<Record<string, { readonly digest: string; readonly spec: TemplateSpec }>>;
  readonly handlebarsVersion: string;
}

/** The precompiled spec of a template, when it was compiled from `source` by this Handlebars. */
export function precompiledSpec(precompiled: PrecompiledTemplates | undefined, name: string, source: string): TemplateSpec | undefined {
  if (precompiled === undefined || precompiled.handlebarsVersion !== handlebarsVersion()) return undefined;
  const entry = precompiled.templates[name];
  return entry !== undefined && entry.digest === templateDigest(source) ? entry.spec : undefined;
}

let precompiled: PrecompiledTemplates | null | undefined;

function loadPrecompiled(): PrecompiledTemplates | undefined {
  if (precompiled === undefined) precompiled = builtModule<PrecompiledTemplates>(PRECOMPILED_MODULE) ?? null;
  return precompiled ?? undefined;
}

/** The helpers every template may use. */
function withHelpers(hbs: HandlebarsEnvironment): HandlebarsEnvironment {
  hbs.registerHelper("json", (value: unknown) => JSON.stringify(value));
  // A JSON value as a TypeScript literal on one line, spaced as the TypeScript formatter spaces it.
  hbs.registerHelper("literal", (value: unknown) => literal(value));
  /** Whether any element of a list has the field, not null (`{{#if (anyHas errors "data")}}`). */
  hbs.registerHelper(
    "anyHas",
    (list: unknown, key: unknown) =>
      Array.isArray(list) &&
      list.some((item) => item !== null && typeof item === "object" && (item as Record<string, unknown>)[String(key)] != null),
  );
  // Text inside a /** */ comment must not close it.
  hbs.registerHelper("doc", (value: unknown) => String(value).replace(/\*\//g, "*\\/"));
  return hbs;
}

let runtime: HandlebarsEnvironment | undefined;
let compiler: HandlebarsEnvironment | undefined;
const cache = new Map<string, Handlebars.TemplateDelegate>();

/** Renders `generator/templates/<name>.hbs` with a plain-object context. */
export function render(name: string, context: object): string {
  let template = cache.get(name);
  if (!template) {
    const source = readFileSync(new URL(`${name}.hbs`, templatesDir), "utf8");
    const spec = precompiledSpec(loadPrecompiled(), name, source);
    if (spec !== undefined) {
      runtime ??= withHelpers((require("handlebars/runtime") as { default: HandlebarsEnvironment }).default.create());
      template = runtime.template(spec);
    } else {
      compiler ??= withHelpers((require("handlebars") as HandlebarsEnvironment).create());
      template = compiler.compile(source, TEMPLATE_OPTIONS);
    }
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
