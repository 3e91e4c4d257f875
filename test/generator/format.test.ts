/**
 * The generator formats without a formatter library: json-schema-to-typescript's
 * unformatted declarations are indented and given their semicolons by formatDeclarations,
 * and the barrel reads the generated modules' exports with a line scanner. Both are checked
 * here on the shapes they meet; the golden files (mini-protocol, mcp, lsp) check the whole
 * output byte for byte.
 */
import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { exportedNames } from "../../packages/generator/src/emit/barrel.js";
import { formatDeclarations } from "../../packages/generator/src/format.js";
import { generateFiles } from "../../packages/generator/src/generate.js";
import { SchemaErrors } from "../../packages/generator/src/schema-error.js";
import { useTempDirs } from "./temp-dirs.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const tempDir = useTempDirs();

describe("formatDeclarations", () => {
  it("indents nested members and ends members and statements with semicolons", () => {
    const raw = [
      "/**",
      " * A config, with {braces} in its comment.",
      " */",
      "export interface Config {",
      "/**",
      " * Named providers.",
      " */",
      "providers?: {",
      "[k: string]: {",
      "base_url: string",
      "}",
      "} | undefined",
      'mode: ("a{" | "b}")',
      "list: {",
      "id: string",
      "}[]",
      "}",
      "",
      'export type Kind = ("x" | "y")',
      "export type Shape = {",
      "side: number",
      "}",
    ].join("\n");
    expect(formatDeclarations(raw)).toBe(
      [
        "/**",
        " * A config, with {braces} in its comment.",
        " */",
        "export interface Config {",
        "  /**",
        "   * Named providers.",
        "   */",
        "  providers?: {",
        "    [k: string]: {",
        "      base_url: string;",
        "    };",
        "  } | undefined;",
        '  mode: ("a{" | "b}");',
        "  list: {",
        "    id: string;",
        "  }[];",
        "}",
        "",
        'export type Kind = ("x" | "y");',
        "export type Shape = {",
        "  side: number;",
        "};",
      ].join("\n"),
    );
  });

  it("does not end a line that the next one continues", () => {
    expect(formatDeclarations("export type U = {\na: string\n}\n| Other")).toBe("export type U = {\n  a: string;\n}\n| Other;");
  });

  it("refuses unbalanced brackets, naming the line", () => {
    expect(() => formatDeclarations("export interface A {\nb: string\n)")).toThrow(/unbalanced "\)" in line 3/);
    expect(() => formatDeclarations("export interface A {\nb: string")).toThrow(/1 bracket\(s\) left open/);
  });
});

describe("the barrel's export scan", () => {
  it("reads declarations and export lists, with renames and type-only names", () => {
    const code = [
      "export interface A {}",
      "export type B = string;",
      "export const c = 1;",
      "export async function d() {}",
      "export class E {}",
      "export declare const f: number;",
      "  export const notTopLevel = 1;",
      'export type { G, H as I } from "./x.js";',
      "export {",
      "  J,",
      "  type K,",
      "};",
      'export * from "./y.js";',
    ].join("\n");
    expect(exportedNames(code).sort()).toEqual(["A", "B", "E", "I", "J", "K", "c", "d", "f", "G"].sort());
  });

  it("refuses a schema title that clashes with a generated name", async () => {
    const dir = tempDir("turnspec-clash-");
    cpSync(join(repoRoot, "test/fixtures/mini-protocol/schemas"), dir, { recursive: true });
    writeFileSync(
      join(dir, "direction.json"),
      JSON.stringify({
        $schema: "https://json-schema.org/draft/2020-12/schema",
        $id: "https://example.test/kv/direction.json",
        title: "Direction",
        description: "A name the registry also exports.",
        type: "string",
      }),
    );
    const error = await generateFiles({ schemasDir: dir }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SchemaErrors);
    expect((error as Error).message).toContain('"Direction" is exported by both types.ts and registry.ts');
  });
});
