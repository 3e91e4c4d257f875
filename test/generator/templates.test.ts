/**
 * The generator's Handlebars templates as the build precompiles them (dist/templates.cjs,
 * templates-precompile.ts): every template, from its current text, by the Handlebars the
 * package runs; a spec of another text or another Handlebars is not used; and the built
 * command, rendering from the specs with Handlebars' runtime alone, writes what the sources
 * write (the committed generated/ folder, which `generate --check` holds to the sources).
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  handlebarsVersion,
  precompiledSpec,
  templateDigest,
  templatesDir,
  type PrecompiledTemplates,
} from "../../packages/generator/src/render.js";
import { useTempDirs } from "./temp-dirs.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tempDir = useTempDirs();
const built = join(root, "packages/generator/dist/templates.cjs");
const templateNames = readdirSync(templatesDir)
  .filter((file) => file.endsWith(".hbs"))
  .map((file) => file.slice(0, -".hbs".length))
  .sort();
const sourceOf = (name: string) => readFileSync(new URL(`${name}.hbs`, templatesDir), "utf8");

describe("the build's precompiled templates", () => {
  const precompiled = createRequire(import.meta.url)(built) as PrecompiledTemplates;

  it("hold every template, compiled from its current text by the Handlebars this package runs", () => {
    expect(Object.keys(precompiled.templates).sort()).toEqual(templateNames);
    expect(precompiled.handlebarsVersion).toBe(handlebarsVersion());
    for (const name of templateNames)
      expect(precompiledSpec(precompiled, name, sourceOf(name)), `${name} (after an edit, run: node build.mjs)`).toBeDefined();
  });

  it("are not used for another text of a template, nor by another Handlebars", () => {
    const name = templateNames[0]!;
    expect(precompiledSpec(precompiled, name, `${sourceOf(name)}\nedited`)).toBeUndefined();
    expect(precompiledSpec({ ...precompiled, handlebarsVersion: "0.0.1" }, name, sourceOf(name))).toBeUndefined();
    expect(precompiledSpec(undefined, name, sourceOf(name))).toBeUndefined();
    expect(templateDigest(sourceOf(name))).toBe(precompiled.templates[name]!.digest);
  });

  it("render, in the built command, what the sources write, with Handlebars' runtime alone", () => {
    const out = tempDir("turnspec-templates-out-");
    const requests = join(tempDir("turnspec-templates-trace-"), "requests.txt");
    const trace = join(tempDir("turnspec-templates-hook-"), "trace.cjs");
    // Lists what is required of Handlebars: its runtime, or the whole of it with the compiler.
    writeFileSync(
      trace,
      `const Module = require("node:module");
const { appendFileSync } = require("node:fs");
const load = Module._load;
Module._load = function (request, ...rest) {
  if (/^handlebars(\\/|$)/.test(request)) appendFileSync(${JSON.stringify(requests)}, request + "\\n");
  return load.call(this, request, ...rest);
};
`,
    );
    writeFileSync(requests, "");
    const run = spawnSync(
      process.execPath,
      ["--require", trace, join(root, "packages/turnspec/bin/turnspec.js"), "generate", "--schemas", join(root, "schemas"), "--out", out],
      { cwd: root, encoding: "utf8", env: { ...process.env, TURNSPEC_CACHE_DIR: tempDir("turnspec-templates-cache-") } },
    );
    expect(run.status, run.stderr).toBe(0);
    const written = readdirSync(out).sort();
    expect(written.length).toBeGreaterThan(5);
    for (const file of written)
      expect(readFileSync(join(out, file), "utf8"), file).toBe(readFileSync(join(root, "generated", file), "utf8"));
    const required = new Set(readFileSync(requests, "utf8").split("\n").filter(Boolean));
    expect(required.has("handlebars/runtime")).toBe(true);
    expect(required.has("handlebars")).toBe(false);
  });
});
