/**
 * The Python output keeps the contract: the testee of each generated package (python -m
 * <package>.testee, run by the .venv that .ci/run makes) answers every vector of this protocol
 * and of the mini, MCP and LSP fixtures as the TypeScript validators do: verdicts and error
 * pointers in both modes, canonical bytes out of a round trip and of the encoder, message
 * findings, ordering violations. The agreement is printed; the failures still known are listed
 * in test/languages/python/expected-failures.txt, which may only shrink. The packages are the
 * committed golden outputs, checked against the generator first.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { compareWithDisk, generateFiles } from "../../packages/generator/src/generate.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { buildVectors } from "../../packages/generator/src/vectors/index.js";
import { describeMismatch, judge, readExpectedFailures, runHarness } from "./harness.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
export const PYTHON = join(root, ".venv/bin/python");

export const PACKAGES = {
  "agent-gateway": { schemas: "schemas", package: "test/languages/python/agent_gateway" },
  mini: { schemas: "test/fixtures/mini-protocol/schemas", package: "test/fixtures/mini-protocol/python/kv_protocol" },
  mcp: { schemas: "test/fixtures/mcp/schemas", package: "test/fixtures/mcp/python/mcp_protocol" },
  lsp: { schemas: "test/fixtures/lsp/schemas", package: "test/fixtures/lsp/python/lsp_protocol" },
} as const;

/** How each formatter is asked whether it would change a file. */
const FORMATTERS = { black: ["--check", "--quiet"], ruff: ["format", "--check", "--quiet"] } as const;

describe("the generated Python packages", () => {
  const folders = [...Object.values(PACKAGES).map((p) => p.package), "examples/clients/python/agent_gateway", "examples/gateways/python/agent_gateway"];
  for (const formatter of Object.keys(FORMATTERS) as (keyof typeof FORMATTERS)[]) {
    const bin = join(root, ".venv/bin", formatter);
    it.skipIf(!existsSync(bin))(`are left as they are by ${formatter} (their files say # fmt: off)`, () => {
      const run = spawnSync(bin, [...FORMATTERS[formatter], ...folders], { cwd: root, encoding: "utf8" });
      expect(run.status, `${formatter} would change them:\n${run.stdout}${run.stderr}`).toBe(0);
    });
  }
});

describe.each(Object.keys(PACKAGES) as (keyof typeof PACKAGES)[])("the Python package of %s", (name) => {
  const { schemas, package: folder } = PACKAGES[name];

  it("is what `turnspec generate --lang python` writes, byte for byte", async () => {
    const files = await generateFiles({ schemasDir: join(root, schemas), lang: "python" });
    expect(compareWithDisk(files, join(root, folder)), `run: node bin/turnspec.js generate --lang python --schemas ${schemas} --out ${folder}`).toEqual([]);
  }, 60_000);

  it.skipIf(!existsSync(PYTHON))("answers every vector as the TypeScript validators do", async () => {
    const vectors = buildVectors(loadSchemas(join(root, schemas)));
    const pkg = folder.split("/").at(-1)!;
    const report = await runHarness({ command: PYTHON, args: ["-m", `${pkg}.testee`], cwd: join(root, dirname(folder)) }, vectors);
    const { unexpected, fixed, summary } = judge(report, readExpectedFailures(join(root, "test/languages/python/expected-failures.txt"), name));
    console.log(`Python, ${name}:\n${summary}`);
    expect(unexpected.slice(0, 8).map(describeMismatch)).toEqual([]);
    expect(fixed, "listed in test/languages/python/expected-failures.txt but passing now: remove them").toEqual([]);
  }, 300_000);
});
