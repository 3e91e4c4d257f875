/**
 * Runs the type-level tests in client-types.ts against freshly generated output, and
 * proves the check can fail: copies of the file with one `@ts-expect-error` removed, or
 * one type equality made false, must each produce a diagnostic.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateFiles, type GeneratedFile } from "../../packages/generator/src/generate.js";
import { typeCheck } from "../../packages/generator/src/typecheck.js";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const clientTypes = fileURLToPath(new URL("./client-types.ts", import.meta.url));
const source = readFileSync(clientTypes, "utf8");
const lines = source.split("\n");

let files: GeneratedFile[];
beforeAll(async () => {
  files = await generateFiles({ schemasDir: `${repoRoot}schemas` });
});

const check = (extraFiles: string[]) => typeCheck(files, { outDir: `${repoRoot}generated`, extraFiles });

describe("type-level tests of the generated code", () => {
  it("client-types.ts compiles with the generated output, every @ts-expect-error used", () => {
    expect(check([clientTypes])).toEqual([]);
  });

  describe("the check is not vacuous", () => {
    // Copies are written beside client-types.ts so their relative imports resolve the same
    // way, and all checked in one run.
    const written: string[] = [];
    const copy = (name: string, text: string): string => {
      const path = fileURLToPath(new URL(`./.tmp-${process.pid}-${name}.ts`, import.meta.url));
      writeFileSync(path, text);
      written.push(path);
      return path;
    };
    const directives = lines.flatMap((line, index) => (line.trim().startsWith("// @ts-expect-error") ? [index] : []));
    const wantedEquality = 'Assert<Equals<ParamsOf<"turn/start">, T.TurnStartParams>>,';
    let withoutDirective: Array<{ path: string; guardedLine: number }>;
    let falseEquality: string;
    let diagnostics: string[];
    const inFile = (path: string) => diagnostics.filter((d) => d.startsWith(`${path}:`));

    beforeAll(() => {
      withoutDirective = directives.map((index) => ({
        // The guarded line keeps its number: the directive becomes a blank line.
        path: copy(`expect-error-${index + 1}`, lines.map((line, i) => (i === index ? "" : line)).join("\n")),
        guardedLine: index + 2,
      }));
      falseEquality = copy("false-equality", source.replace(wantedEquality, 'Assert<Equals<ParamsOf<"turn/start">, T.TurnCancelParams>>,'));
      try {
        diagnostics = check([...withoutDirective.map((c) => c.path), falseEquality]);
      } finally {
        for (const path of written) rmSync(path, { force: true });
      }
    });
    afterAll(() => {
      for (const path of written) rmSync(path, { force: true });
    });

    it("removing any one @ts-expect-error reports an error on the line it guarded", () => {
      expect(directives.length).toBeGreaterThanOrEqual(10);
      for (const { path, guardedLine } of withoutDirective) {
        const here = inFile(path);
        expect(here.length, `${path} should not compile`).toBeGreaterThan(0);
        expect(
          here.every((d) => d.startsWith(`${path}:${guardedLine} `)),
          here.join("\n"),
        ).toBe(true);
      }
    });

    it("a false type equality is reported", () => {
      expect(source).toContain(wantedEquality);
      const lineOfEquality = lines.findIndex((line) => line.includes(wantedEquality)) + 1;
      expect(inFile(falseEquality)).toEqual([expect.stringMatching(new RegExp(`^${falseEquality}:${lineOfEquality} `))]);
    });

    it("nothing outside the changed lines breaks", () => {
      const copies = new Set(written);
      expect(diagnostics.filter((d) => ![...copies].some((path) => d.startsWith(`${path}:`)))).toEqual([]);
    });
  });
});
