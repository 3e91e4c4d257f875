/**
 * `turnspec generate --lang python` as a command: the language from the flag or the config
 * file, --check over the package, TypeScript's options refused with it, and a schema keyword
 * the Python checks cannot read as JSON Schema does refused with its place. And the ECMA-262 →
 * Python `re` rewrite of patterns, row by row.
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runGenerate } from "../../packages/generator/src/command.js";
import { pythonPattern, UntranslatablePattern } from "../../packages/generator/src/emit/python/patterns.js";
import { useTempDirs } from "../generator/temp-dirs.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const mini = join(root, "test/fixtures/mini-protocol/schemas");
const tempDir = useTempDirs();

function sink() {
  const chunks: string[] = [];
  return { write: (text: string) => chunks.push(text), text: () => chunks.join("") };
}

describe("turnspec generate --lang python", () => {
  it("writes the package, and --check finds it up to date, then stale once a file changes", async () => {
    const out = join(tempDir("turnspec-py-"), "kv_protocol");
    expect(await runGenerate({ schemasDir: mini, outDir: out, check: false, typecheck: false, lang: "python" }, sink(), sink())).toBe(0);
    expect(readFileSync(join(out, "models.py"), "utf8")).toBe(readFileSync(join(root, "test/fixtures/mini-protocol/python/kv_protocol/models.py"), "utf8"));
    const ok = sink();
    expect(await runGenerate({ schemasDir: mini, outDir: out, check: true, typecheck: false, lang: "python" }, ok, sink())).toBe(0);
    expect(ok.text()).toContain("is up to date");
    writeFileSync(join(out, "models.py"), "# edited\n");
    const stale = sink();
    expect(await runGenerate({ schemasDir: mini, outDir: out, check: true, typecheck: false, lang: "python" }, sink(), stale)).toBe(1);
    expect(stale.text()).toContain("models.py: differs");
  });

  it("takes the language from turnspec.config.json", async () => {
    const dir = tempDir("turnspec-py-config-");
    writeFileSync(join(dir, "turnspec.config.json"), JSON.stringify({ schemas: mini, out: "kv", lang: "python" }));
    expect(await runGenerate({ configFile: join(dir, "turnspec.config.json"), check: false, typecheck: false }, sink(), sink())).toBe(0);
    expect(readFileSync(join(dir, "kv", "validators.py"), "utf8")).toContain("def check_KvPutParams(");
    const bad = sink();
    writeFileSync(join(dir, "turnspec.config.json"), JSON.stringify({ schemas: mini, lang: "cobol" }));
    expect(await runGenerate({ configFile: join(dir, "turnspec.config.json"), check: false, typecheck: false }, sink(), bad)).toBe(2);
    expect(bad.text()).toContain("/lang");
  });

  it("refuses TypeScript's options rather than ignoring them", async () => {
    const err = sink();
    expect(await runGenerate({ schemasDir: mini, outDir: tempDir("turnspec-py-"), check: false, typecheck: false, lang: "python", standalone: true, outputs: ["types"] }, sink(), err)).toBe(2);
    expect(err.text()).toContain("standalone, outputs are options of the TypeScript output");
  });

  it("refuses a pattern Python's re cannot read as ECMA-262 does, naming the type and place", async () => {
    const schemas = tempDir("turnspec-py-pattern-");
    cpSync(mini, schemas, { recursive: true });
    const file = join(schemas, "kv_get_params.json");
    const schema = JSON.parse(readFileSync(file, "utf8"));
    schema.properties.key.pattern = "^\\p{L}+$";
    writeFileSync(file, JSON.stringify(schema, null, 2));
    const err = sink();
    expect(await runGenerate({ schemasDir: schemas, outDir: tempDir("turnspec-py-"), check: false, typecheck: false, lang: "python" }, sink(), err)).toBe(1);
    expect(err.text()).toContain("KvGetParams");
    expect(err.text()).toContain("Unicode property escape");
  });
});

describe("patterns rewritten for Python's re", () => {
  const rows: [string, { given: string; want: string }][] = [
    ["$ matches only at the very end", { given: "^[a-z]+$", want: "^[a-z]+\\Z" }],
    [". leaves out the four line terminators", { given: "^a.b", want: "^a[^\\n\\r\\u2028\\u2029]b" }],
    ["\\d is ASCII digits", { given: "\\d{2}", want: "[0-9]{2}" }],
    ["\\w inside a class", { given: "[\\w-]", want: "[A-Za-z0-9_-]" }],
    ["a named group", { given: "(?<year>\\d{4})", want: "(?P<year>[0-9]{4})" }],
    ["\\u{…} escapes", { given: "\\u{1F600}", want: "\\U0001F600" }],
    ["a literal [ inside a class", { given: "[[]", want: "[\\[]" }],
    ["an escaped $ stays literal", { given: "\\$", want: "\\$" }],
  ];
  it.each(rows)("%s", (_name, { given, want }) => {
    expect(pythonPattern(given)).toBe(want);
  });
  it("refuses what it cannot rewrite", () => {
    expect(() => pythonPattern("\\p{Lu}")).toThrow(UntranslatablePattern);
    expect(() => pythonPattern("[^\\S]")).toThrow(/inside a character class/);
  });
});
