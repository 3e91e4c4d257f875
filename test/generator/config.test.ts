/**
 * turnspec.config.json and the generate flags: the config supplies schemas/out/outputs
 * (paths relative to its own folder), a flag overrides it, a config that breaks its
 * schema is a usage error naming the field, and `outputs` emits only what was asked for
 * plus what it imports.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runGenerate, type GenerateCommand } from "../../packages/generator/src/command.js";
import { OUTPUT_KINDS, withDependencies } from "../../packages/generator/src/config.js";
import configSchema from "../../packages/generator/meta/config.schema.json" with { type: "json" };
import { useTempDirs } from "./temp-dirs.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const mini = join(root, "test/fixtures/mini-protocol/schemas");
const tempDir = useTempDirs();

async function generate(command: Partial<GenerateCommand>) {
  let out = "";
  let err = "";
  const code = await runGenerate(
    { check: false, typecheck: false, ...command },
    { write: (t: string) => (out += t) },
    { write: (t: string) => (err += t) },
  );
  return { code, out, err };
}

/** A project folder with the mini protocol in proto/ and the given config. */
function project(config: unknown): string {
  const dir = tempDir("turnspec-config-");
  cpSync(mini, join(dir, "proto"), { recursive: true });
  writeFileSync(join(dir, "turnspec.config.json"), JSON.stringify(config));
  return dir;
}

describe("turnspec.config.json", () => {
  it("supplies the schemas and out folders, relative to the config file, and the outputs", async () => {
    const dir = project({
      $schema: "node_modules/turnspec/schemas/meta/config.schema.json",
      schemas: "proto",
      out: "gen",
      outputs: ["openrpc", "docs"],
    });
    const { code, err } = await generate({ configFile: join(dir, "turnspec.config.json") });
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(readdirSync(join(dir, "gen")).sort()).toEqual(["PROTOCOL.md", "openrpc.json"]);
  });

  it("is overridden by the flags", async () => {
    const dir = project({ schemas: "proto", out: "gen", outputs: ["openrpc"] });
    const elsewhere = join(dir, "other");
    const { code } = await generate({ configFile: join(dir, "turnspec.config.json"), outDir: elsewhere, outputs: ["docs"] });
    expect(code).toBe(0);
    expect(existsSync(join(dir, "gen"))).toBe(false);
    expect(readdirSync(elsewhere)).toEqual(["PROTOCOL.md"]);
  });

  it("a config that breaks its schema is a usage error (exit 2) naming the field", async () => {
    const dir = project({ schemas: "proto", outputs: ["types", "clients"], colour: "blue" });
    const { code, err } = await generate({ configFile: join(dir, "turnspec.config.json") });
    expect(code).toBe(2);
    expect(err).toContain("does not match the config schema");
    expect(err).toContain('must NOT have additional properties "colour"');
    expect(err).toContain("/outputs/1: must be equal to one of the allowed values");
    writeFileSync(join(dir, "turnspec.config.json"), '{ "schemas": "proto", }');
    const syntax = await generate({ configFile: join(dir, "turnspec.config.json") });
    expect(syntax.code).toBe(2);
    expect(syntax.err).toContain("is not valid JSON: line 1, column 23");
    const missing = await generate({ configFile: join(dir, "nope.json") });
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("no such file");
  });

  it("the config schema lists the same outputs as the generator", () => {
    expect(configSchema.properties.outputs.items.enum).toEqual([...OUTPUT_KINDS]);
  });

  it("outputs bring what they import: client and server need validators, validators need types, the registry and the ordering checker (for the protocol view)", async () => {
    expect(withDependencies(["client"])).toEqual(["types", "validators", "client", "ordering"]);
    expect(withDependencies(["ordering", "docs"])).toEqual(["types", "docs", "ordering"]);
    const out = tempDir("turnspec-outputs-");
    mkdirSync(out, { recursive: true });
    const { code } = await generate({ schemasDir: mini, outDir: out, outputs: ["server"], typecheck: true });
    expect(code).toBe(0);
    expect(
      readdirSync(out)
        .filter((f) => f.endsWith(".ts"))
        .sort(),
    ).toEqual([
      "index.ts",
      "ordering.ts",
      "registry.ts",
      "server.ts",
      "types.ts",
      "validators.report.ts",
      "validators.strict.ts",
      "validators.tolerant.ts",
      "validators.ts",
      "view.ts",
    ]);
  }, 60_000);
});
