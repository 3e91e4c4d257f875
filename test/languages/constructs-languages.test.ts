/**
 * Slow: each fixture protocol of test/fixtures/constructs/ (one per construct: local $defs,
 * allOf, tuples, maps, untagged and open unions, open enums, recursive types, both-way
 * messages, absent, optional and positional params, error data, batches, …) generated as a
 * Python package and as a Go module. The Python package passes `pyright --strict`, the Go module
 * `go vet`; the testee of each answers every vector of the fixture as the TypeScript validators
 * do (verdicts and pointers in both modes, round trips, encoding, message findings), with no
 * expected failure.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { generateFiles, type GeneratedFile } from "../../packages/generator/src/generate.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { buildVectors } from "../../packages/generator/src/vectors/index.js";
import { useTempDirs } from "../generator/temp-dirs.js";
import { buildGo, go, GO_AVAILABLE, NO_GO } from "./go-toolchain.js";
import { describeMismatch, runHarness, type TesteeCommand } from "./harness.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
const fixtures = join(root, "test/fixtures/constructs");
const python = join(root, ".venv/bin/python");
const pyright = join(root, "node_modules/.bin/pyright");
const tempDir = useTempDirs();
const constructs = readdirSync(fixtures).filter((name) => statSync(join(fixtures, name)).isDirectory()).sort();

function write(files: readonly GeneratedFile[], dir: string): void {
  for (const file of files) {
    mkdirSync(dirname(join(dir, file.path)), { recursive: true });
    writeFileSync(join(dir, file.path), file.content);
  }
}

async function agrees(testee: TesteeCommand, schemasDir: string): Promise<void> {
  const vectors = buildVectors(loadSchemas(schemasDir));
  const report = await runHarness(testee, vectors);
  expect(report.mismatches.map(describeMismatch)).toEqual([]);
  expect(report.counts["validate/strict"].compared).toBe(vectors.types.length);
  expect(report.counts["messages/strict"].compared).toBe(vectors.messages.length);
}

if (!existsSync(python)) console.log("no .venv/bin/python: the Python side of the construct fixtures is skipped");
if (!GO_AVAILABLE) console.log(NO_GO);

describe.each(constructs)("the %s construct", (name) => {
  const schemasDir = join(fixtures, name, "schemas");
  const pkg = name.replace(/-/g, "_");

  it.skipIf(!existsSync(python))("in Python: pyright --strict is clean and every vector gets the TypeScript verdict", async () => {
    const dir = tempDir("turnspec-py-construct-");
    write(await generateFiles({ schemasDir, lang: "python" }), join(dir, pkg));
    writeFileSync(join(dir, "pyrightconfig.json"), JSON.stringify({ typeCheckingMode: "strict", pythonVersion: "3.11", venvPath: root, venv: ".venv", include: [pkg] }));
    const checked = await run(pyright, ["-p", dir], { cwd: root, maxBuffer: 16 << 20 }).then(
      ({ stdout }) => stdout,
      (error: { stdout: string; stderr: string }) => `${error.stdout}${error.stderr}`,
    );
    expect(checked).toContain("0 errors");
    await agrees({ command: python, args: ["-m", `${pkg}.testee`], cwd: dir }, schemasDir);
  }, 300_000);

  it.skipIf(!GO_AVAILABLE)("in Go: go vet is clean and every vector gets the TypeScript verdict", async () => {
    const dir = tempDir("turnspec-go-construct-");
    write(await generateFiles({ schemasDir, lang: "go", goModule: `example.test/${pkg.replace(/_/g, "")}` }), dir);
    go(["vet", "./..."], dir);
    await agrees({ command: buildGo(dir, "./cmd/testee", "testee"), args: [] }, schemasDir);
  }, 300_000);
});
