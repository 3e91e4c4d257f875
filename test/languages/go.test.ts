/**
 * The Go output keeps the contract: the testee of each generated module (cmd/testee, built
 * with go build) answers every vector of this protocol and of the mini, MCP and LSP fixtures as
 * the TypeScript validators do: verdicts and error pointers in both modes, canonical bytes out of
 * a round trip through the Go types and out of the encoder, message findings, ordering
 * violations. The agreement is printed; the failures still known are listed in
 * test/languages/go/expected-failures.txt, which may only shrink. The modules are the committed
 * golden outputs, checked against the generator first.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { compareWithDisk, generateFiles } from "../../packages/generator/src/generate.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { buildVectors } from "../../packages/generator/src/vectors/index.js";
import { buildGo, GO_AVAILABLE, GO_MODULES, NO_GO } from "./go-toolchain.js";
import { describeMismatch, judge, readExpectedFailures, runHarness } from "./harness.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

if (!GO_AVAILABLE) console.log(NO_GO);

describe.each(Object.keys(GO_MODULES) as (keyof typeof GO_MODULES)[])("the Go module of %s", (name) => {
  const { schemas, module, path } = GO_MODULES[name];

  it("is what `turnspec generate --lang go` writes, byte for byte", async () => {
    const files = await generateFiles({ schemasDir: join(root, schemas), lang: "go", goModule: path });
    expect(compareWithDisk(files, join(root, module)), `run: node bin/turnspec.js generate --lang go --schemas ${schemas} --out ${module} --go-module ${path}`).toEqual([]);
  }, 60_000);

  it.skipIf(!GO_AVAILABLE)("answers every vector as the TypeScript validators do", async () => {
    const vectors = buildVectors(loadSchemas(join(root, schemas)));
    const testee = buildGo(join(root, module), "./cmd/testee", "testee");
    const report = await runHarness({ command: testee, args: [] }, vectors);
    const { unexpected, fixed, summary } = judge(report, readExpectedFailures(join(root, "test/languages/go/expected-failures.txt"), name));
    console.log(`Go, ${name}:\n${summary}`);
    expect(unexpected.slice(0, 20).map(describeMismatch)).toEqual([]);
    expect(fixed, "listed in test/languages/go/expected-failures.txt but passing now: remove them").toEqual([]);
    expect(report.counts["validate/strict"].compared).toBe(vectors.types.length);
  }, 300_000);
});
