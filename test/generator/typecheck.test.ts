/**
 * The committed generated/ compiles under strict settings (typeCheck is what
 * `turnspec generate --typecheck` runs), and broken variants of it do not: each reports a
 * diagnostic naming the file, so a clean result is not vacuous.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { GeneratedFile } from "../../packages/generator/src/generate.js";
import { typeCheck } from "../../packages/generator/src/typecheck.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const generatedDir = join(repoRoot, "generated");

// The files are checked as if they lived in an empty temporary folder: they must not lean
// on anything beside them but each other and the `@turnspec/rpc` support module.
const outDir = mkdtempSync(join(tmpdir(), "turnspec-typecheck-"));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

const committed: GeneratedFile[] = readdirSync(generatedDir)
  .filter((path) => path.endsWith(".ts"))
  .sort()
  .map((path) => ({ path, content: readFileSync(join(generatedDir, path), "utf8") }));

/** The committed files with `change` applied to the content of `path`. */
function withChange(files: readonly GeneratedFile[], path: string, change: (content: string) => string): GeneratedFile[] {
  return files.map((f) => {
    if (f.path !== path) return f;
    const content = change(f.content);
    if (content === f.content) throw new Error(`the change to ${path} changed nothing`);
    return { ...f, content };
  });
}

describe("type check of generated/", () => {
  it("compiles under strict settings", () => {
    expect(committed.map((f) => f.path)).toEqual(
      expect.arrayContaining(["types.ts", "registry.ts", "validators.ts", "client.ts", "server.ts", "index.ts"]),
    );
    expect(typeCheck(committed, { outDir })).toEqual([]);
  });

  it("reports broken variants with the file and a readable message", () => {
    let files = committed;
    // A method dropped from the registry table: the mapped type over the method names
    // makes the missing entry a compile error.
    files = withChange(files, "registry.ts", (c) => c.replace(/\n  "thread\/get": \{\n(?:.*\n)*?  \},/, ""));
    // Code that compiles only without strict settings: an implicit any and an unchecked index.
    files = withChange(
      files,
      "server.ts",
      (c) => `${c}\nexport function echo(x) {\n  return x;\n}\nconst list: string[] = [];\nexport const first: string = list[0];\n`,
    );
    const diagnostics = typeCheck(files, { outDir });
    const at = (file: string) => diagnostics.filter((d) => d.startsWith(join(outDir, file) + ":"));

    expect(at("registry.ts").join("\n")).toContain(`Property '"thread/get"' is missing`);
    expect(at("server.ts").join("\n")).toContain("Parameter 'x' implicitly has an 'any' type.");
    expect(at("server.ts").join("\n")).toContain("Type 'string | undefined' is not assignable to type 'string'.");
    // Every diagnostic names a file and line and carries its message text.
    for (const d of diagnostics) expect(d).toMatch(new RegExp(`^${outDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/[\\w.]+\\.ts:\\d+ \\S`));
    // A chained message (the strict index one above is) is flattened, not printed as "undefined".
    expect(diagnostics.filter((d) => d.endsWith(" undefined"))).toEqual([]);
  });
});
