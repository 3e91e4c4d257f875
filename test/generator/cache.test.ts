/**
 * The cache of `turnspec generate`: a run of unchanged schemas and options reads its files
 * back; a changed schema, template or option is another key; an entry that cannot be
 * trusted is ignored and written again; the output is the same bytes with and without it.
 */
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cacheDirFor, cacheKey, generatorFingerprint, readCache, writeCache } from "../../packages/generator/src/cache.js";
import { runGenerate, type GenerateCommand } from "../../packages/generator/src/command.js";
import { useTempDirs } from "./temp-dirs.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tempDir = useTempDirs();

function miniSchemas(): string {
  const schemas = tempDir("turnspec-cache-schemas-");
  cpSync(join(root, "test/fixtures/mini-protocol/schemas"), schemas, { recursive: true });
  return schemas;
}

async function generate(
  command: Omit<GenerateCommand, "check" | "typecheck"> & { check?: boolean },
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runGenerate(
    { check: false, typecheck: false, ...command },
    { write: (t: string) => (stdout += t) },
    { write: (t: string) => (stderr += t) },
  );
  return { code, stdout, stderr };
}

/** Every file of a folder, by name. */
function contents(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((name) => [name, readFileSync(join(dir, name), "utf8")]),
  );
}

function entries(cacheDir: string): string[] {
  return existsSync(cacheDir) ? readdirSync(cacheDir).filter((name) => name.endsWith(".json")) : [];
}

describe("turnspec generate's cache", () => {
  it("writes the same bytes with and without the cache, and on a hit", async () => {
    const schemas = miniSchemas();
    const cacheDir = tempDir("turnspec-cache-");
    const fresh = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: fresh, cache: false, cacheDir })).code).toBe(0);
    expect(entries(cacheDir)).toEqual([]);
    const miss = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: miss, cacheDir })).code).toBe(0);
    expect(entries(cacheDir)).toHaveLength(1);
    const hit = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: hit, cacheDir })).code).toBe(0);
    expect(entries(cacheDir)).toHaveLength(1);
    expect(contents(miss)).toEqual(contents(fresh));
    expect(contents(hit)).toEqual(contents(fresh));
  });

  it("answers from its entry when the key matches (the entry's files are what is written)", async () => {
    const schemas = miniSchemas();
    const cacheDir = tempDir("turnspec-cache-");
    const out = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: out, cacheDir })).code).toBe(0);
    const key = cacheKey({ schemasDir: schemas });
    const files = readCache(cacheDir, key)!;
    expect(files.map((f) => f.path)).toEqual(Object.keys(contents(out)));
    // A well-formed entry under the same key is trusted: what it holds is written.
    writeCache(
      cacheDir,
      key,
      files.map((f) => (f.path === "PROTOCOL.md" ? { ...f, content: `${f.content}entry of the cache\n` } : f)),
    );
    const second = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: second, cacheDir })).code).toBe(0);
    expect(readFileSync(join(second, "PROTOCOL.md"), "utf8")).toMatch(/entry of the cache\n$/);
    // --check compares the disk with the entry's files.
    const check = await generate({ schemasDir: schemas, outDir: out, cacheDir, check: true });
    expect(check.code).toBe(1);
    expect(check.stderr).toContain("PROTOCOL.md: differs");
  });

  it("misses when a schema or an option changes, and generates what they say", async () => {
    const schemas = miniSchemas();
    const cacheDir = tempDir("turnspec-cache-");
    const out = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: out, cacheDir })).code).toBe(0);
    const before = cacheKey({ schemasDir: schemas });

    const file = join(schemas, "kv_get_params.json");
    const schema = JSON.parse(readFileSync(file, "utf8"));
    writeFileSync(file, JSON.stringify({ ...schema, description: "Params of kv/get, edited since the last run." }, null, 2));
    expect(cacheKey({ schemasDir: schemas })).not.toBe(before);
    expect((await generate({ schemasDir: schemas, outDir: out, cacheDir })).code).toBe(0);
    expect(readFileSync(join(out, "types.ts"), "utf8")).toContain("edited since the last run");
    expect(entries(cacheDir)).toHaveLength(2);

    // A file added to the folder is part of the key too.
    const withReadme = cacheKey({ schemasDir: schemas });
    writeFileSync(join(schemas, "NOTES.txt"), "notes\n");
    expect(cacheKey({ schemasDir: schemas })).not.toBe(withReadme);

    const support = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: support, cacheDir, support: "./my-rpc.js" })).code).toBe(0);
    expect(readFileSync(join(support, "client.ts"), "utf8")).toContain('"./my-rpc.js"');
    const outputs = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: outputs, cacheDir, outputs: ["openrpc"] })).code).toBe(0);
    expect(readdirSync(outputs)).toEqual(["openrpc.json"]);
    const keys = [
      cacheKey({ schemasDir: schemas }),
      cacheKey({ schemasDir: schemas, support: "./my-rpc.js" }),
      cacheKey({ schemasDir: schemas, outputs: ["openrpc"] }),
      cacheKey({ schemasDir: schemas, lang: "python" }),
      cacheKey({ schemasDir: schemas, standalone: true }),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("takes the generator's templates, code and version into its key", () => {
    const generator = tempDir("turnspec-cache-generator-");
    const own = join(root, "packages/generator");
    for (const part of ["package.json", "templates", "meta", "src"]) cpSync(join(own, part), join(generator, part), { recursive: true });
    const base = generatorFingerprint(generator);
    expect(generatorFingerprint(generator)).toBe(base);
    const template = join(generator, "templates/client.ts.hbs");
    writeFileSync(template, `${readFileSync(template, "utf8")}// one more line\n`);
    const templateChanged = generatorFingerprint(generator);
    expect(templateChanged).not.toBe(base);
    writeFileSync(join(generator, "src/render.ts"), `${readFileSync(join(generator, "src/render.ts"), "utf8")}\n`);
    const codeChanged = generatorFingerprint(generator);
    expect(codeChanged).not.toBe(templateChanged);
    const manifest = JSON.parse(readFileSync(join(generator, "package.json"), "utf8"));
    writeFileSync(join(generator, "package.json"), JSON.stringify({ ...manifest, version: "99.0.0" }));
    expect(generatorFingerprint(generator)).not.toBe(codeChanged);
  });

  it("ignores an entry it cannot trust, generates, and writes it again", async () => {
    const schemas = miniSchemas();
    const cacheDir = tempDir("turnspec-cache-");
    const expected = join(tempDir("turnspec-cache-out-"), "gen");
    expect((await generate({ schemasDir: schemas, outDir: expected, cache: false, cacheDir })).code).toBe(0);
    const key = cacheKey({ schemasDir: schemas });
    const path = join(cacheDir, `${key}.json`);
    expect((await generate({ schemasDir: schemas, outDir: join(tempDir("turnspec-cache-out-"), "gen"), cacheDir })).code).toBe(0);
    const good = readFileSync(path, "utf8");

    const parsed = JSON.parse(good);
    const corruptions = [
      good.slice(0, good.length / 2), // cut short
      "not json",
      JSON.stringify({
        ...parsed,
        files: parsed.files.map((f: { path: string; content: string }) => (f.path === "types.ts" ? { ...f, content: "export {};\n" } : f)),
      }), // content that fails its digest
      JSON.stringify({ ...parsed, key: "0".repeat(64) }), // another key's entry
      JSON.stringify({ ...parsed, files: [{ path: 1 }] }),
    ];
    for (const corrupt of corruptions) {
      writeFileSync(path, corrupt);
      expect(readCache(cacheDir, key)).toBeUndefined();
      const out = join(tempDir("turnspec-cache-out-"), "gen");
      expect((await generate({ schemasDir: schemas, outDir: out, cacheDir })).code).toBe(0);
      expect(contents(out)).toEqual(contents(expected));
      expect(JSON.parse(readFileSync(path, "utf8"))).toEqual(parsed);
    }
  });

  it("keeps its folder out of the output folder", async () => {
    const out = join(tempDir("turnspec-cache-out-"), "gen");
    const schemas = miniSchemas();
    expect(() => cacheDirFor(schemas, out, join(out, ".cache"))).toThrow(/inside the output folder/);
    const refused = await generate({ schemasDir: schemas, outDir: out, cacheDir: join(out, "cache") });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`the cache folder ${join(out, "cache")} (TURNSPEC_CACHE_DIR) is inside the output folder ${out}`);
    expect(existsSync(out)).toBe(false);
    // A default under the output folder (node_modules of --out .) is passed over.
    const project = tempDir("turnspec-cache-project-");
    cpSync(schemas, join(project, "schemas"), { recursive: true });
    writeFileSync(join(project, "package.json"), "{}");
    cpSync(schemas, join(project, "node_modules", "placeholder"), { recursive: true });
    expect(cacheDirFor(join(project, "schemas"), join(project, "generated"), "")).toBe(join(project, "node_modules", ".cache", "turnspec"));
    expect(cacheDirFor(join(project, "schemas"), project, "").startsWith(project)).toBe(false);
  });
});
