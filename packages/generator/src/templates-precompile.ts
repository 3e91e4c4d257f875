/**
 * The build's precompilation of the generator's Handlebars templates (`templates/*.hbs`):
 * each template's spec as Handlebars writes it, in a CommonJS module the generator requires
 * (`dist/templates.cjs`, written by build.mjs), beside the digest of the template it was
 * compiled from and the Handlebars version that compiled it, so that a run neither loads
 * Handlebars' compiler nor compiles a template, and never uses a spec of another text.
 */
import { readdirSync, readFileSync } from "node:fs";
import Handlebars from "handlebars";
import { TEMPLATE_OPTIONS, handlebarsVersion, templateDigest, templatesDir } from "./render.js";

/** The text of `dist/templates.cjs`: `templates`, by name (`client.ts`), each `{ digest, spec }`; and `handlebarsVersion`. */
export function templatesModule(): string {
  const names = readdirSync(templatesDir)
    .filter((file) => file.endsWith(".hbs"))
    .map((file) => file.slice(0, -".hbs".length))
    .sort();
  const entries = names.map((name) => {
    const source = readFileSync(new URL(`${name}.hbs`, templatesDir), "utf8");
    const spec = Handlebars.precompile(source, TEMPLATE_OPTIONS);
    return `  ${JSON.stringify(name)}: { digest: ${JSON.stringify(templateDigest(source))}, spec: ${String(spec)} },`;
  });
  return [
    "// Written by the build of @turnspec/generator from templates/ (templates-precompile.ts). Do not edit.",
    "module.exports.templates = {",
    ...entries,
    "};",
    `module.exports.handlebarsVersion = ${JSON.stringify(handlebarsVersion())};`,
    "",
  ].join("\n");
}
