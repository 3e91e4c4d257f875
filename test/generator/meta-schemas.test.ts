/**
 * turnspec's own meta-schemas (packages/generator/meta/: protocol.json, errors.json and the config
 * file) are valid JSON Schema 2020-12 and compile under ajv's strict mode. The generator
 * compiles them without checking them against JSON Schema's meta-schema on every run; this
 * is where that check lives.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";
import { describe, expect, it } from "vitest";
import { loadSchemas } from "../../packages/generator/src/load.js";
import {
  META_SCHEMAS,
  JSON_SCHEMA_META_OPTIONS,
  META_AJV_OPTIONS,
  META_VALIDATORS_MODULE,
  ajvVersion,
  metaDigest,
  metaSchema,
  type MetaSchemaName,
} from "../../packages/generator/src/meta.js";
import { metaValidatorsModule } from "../../packages/generator/src/meta-precompile.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const metaDir = fileURLToPath(new URL("../../packages/generator/meta/", import.meta.url));
const files = readdirSync(metaDir).filter((f) => f.endsWith(".json"));

describe("the generator's meta-schemas", () => {
  it("holds the protocol, errors and config meta-schemas", () => {
    expect(files.sort()).toEqual(["config.schema.json", "errors.schema.json", "import-map.schema.json", "protocol.schema.json"]);
  });

  it.each(files)("%s is valid JSON Schema 2020-12 and compiles in strict mode", (file) => {
    const schema = JSON.parse(readFileSync(`${metaDir}${file}`, "utf8")) as object;
    const ajv = new Ajv2020({ strict: true, discriminator: true, allErrors: true });
    expect(ajv.validateSchema(schema), JSON.stringify(ajv.errors)).toBe(true);
    expect(() => ajv.compile(schema)).not.toThrow();
  });
});

describe("the build's precompiled meta validators", () => {
  const code = metaValidatorsModule();
  const module = { exports: {} as Record<string, unknown> };
  new Function("module", "exports", "require", code)(module, module.exports, createRequire(import.meta.url));
  const built = module.exports as {
    validators: Record<string, ValidateFunction>;
    digests: Record<string, string>;
    jsonSchema: ValidateFunction;
    ajvVersion: string;
  };
  const protocol = JSON.parse(readFileSync(join(repoRoot, "schemas/protocol.json"), "utf8")) as Record<string, unknown>;
  const errors = JSON.parse(readFileSync(join(repoRoot, "schemas/errors.json"), "utf8")) as Record<string, unknown>;
  const methods = protocol.methods as Record<string, unknown>[];

  const acpMap = JSON.parse(readFileSync(join(repoRoot, "test/fixtures/import/acp.map.json"), "utf8")) as Record<string, unknown>;
  const config = { schemas: "schemas", out: "generated" };

  /** Values each meta-schema must judge: the repository's own, and broken ones of several kinds. */
  const cases: [name: MetaSchemaName, value: unknown][] = [
    ["protocol.schema.json", protocol],
    ["protocol.schema.json", { ...protocol, version: 2, extra: true }],
    ["protocol.schema.json", { ...protocol, methods: [{ ...methods[0], direction: "sideways" }, ...methods.slice(1)] }],
    ["protocol.schema.json", { ...protocol, ordering: [{ kind: "no-such-rule" }] }],
    ["protocol.schema.json", (({ title: _title, ...rest }) => rest)(protocol)],
    ["errors.schema.json", errors],
    ["errors.schema.json", { errors: "none" }],
    ["errors.schema.json", []],
    ["config.schema.json", config],
    ["config.schema.json", { ...config, colour: "blue" }],
    ["config.schema.json", { ...config, out: 3 }],
    ["import-map.schema.json", acpMap],
    ["import-map.schema.json", { ...acpMap, batches: "yes" }],
    ["import-map.schema.json", { ...acpMap, methods: { "session/new": {} } }],
  ];
  const accepted = 4;

  it("carry the digest of the meta-schema each was compiled from", () => {
    for (const name of META_SCHEMAS) expect(built.digests[name]).toBe(metaDigest(name));
  });

  it("answer and report every value as the same meta-schema compiled at run time", () => {
    const ajv = new Ajv2020({ ...META_AJV_OPTIONS });
    let refused = 0;
    for (const [name, value] of cases) {
      const runtime = ajv.getSchema(name) ?? (ajv.addSchema(metaSchema(name), name), ajv.getSchema(name)!);
      const expected = runtime(value);
      expect(built.validators[name]!(value), `${name} on ${JSON.stringify(value).slice(0, 80)}`).toBe(expected);
      expect(JSON.stringify(built.validators[name]!.errors)).toBe(JSON.stringify(runtime.errors));
      if (!expected) refused++;
    }
    expect(refused).toBe(cases.length - accepted);
  });

  it("hold JSON Schema 2020-12's meta validator, which judges and reports every type schema as ajv's own", () => {
    expect(built.ajvVersion).toBe(ajvVersion());
    const model = loadSchemas(join(repoRoot, "schemas"));
    const broken: unknown[] = [
      { type: "nope" },
      { properties: { a: { type: 3 } } },
      { $defs: { x: { minLength: -1 } } },
      { allOf: [] },
      { $ref: 5 },
      { required: ["a", "a"] },
      { oneOf: [{ type: "string" }, { items: { prefixItems: "x" } }] },
    ];
    const ajv = new Ajv2020({ ...JSON_SCHEMA_META_OPTIONS });
    const values = [...model.types.map((t) => t.schema), ...broken];
    for (const value of values) {
      const expected = ajv.validateSchema(value as object) as boolean;
      expect(built.jsonSchema(value), JSON.stringify(value).slice(0, 80)).toBe(expected);
      expect(JSON.stringify(built.jsonSchema.errors ?? null)).toBe(JSON.stringify(ajv.errors ?? null));
    }
    expect(values.filter((value) => !built.jsonSchema(value))).toEqual(broken);
  });

  it("are what the compiled loader checks a schemas folder with, reporting as the sources do", async () => {
    const dist = join(repoRoot, "packages/generator/dist");
    expect(readFileSync(join(dist, META_VALIDATORS_MODULE), "utf8")).toBe(code);
    const dir = mkdtempSync(join(tmpdir(), "turnspec-meta-"));
    try {
      cpSync(join(repoRoot, "test/fixtures/mini-protocol/schemas"), dir, { recursive: true });
      const file = join(dir, "protocol.json");
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), version: 3, colour: "blue" }));
      const failure = async (load: (dir: string) => unknown) => {
        try {
          load(dir);
        } catch (error) {
          return (error as Error).message;
        }
        return "loaded";
      };
      const compiled = (await import(pathToFileURL(join(dist, "load.js")).href)) as { loadSchemas: (dir: string) => unknown };
      const fromDist = await failure(compiled.loadSchemas);
      expect(fromDist).toContain('must NOT have additional properties "colour"');
      expect(fromDist).toBe(await failure(loadSchemas));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
