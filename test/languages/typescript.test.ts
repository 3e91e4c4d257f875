/**
 * The TypeScript output keeps the contract: its testee (the support module's serveTestee over
 * the generated view.ts, precompiled validators and ordering rules) answers every vector of this
 * protocol and of the mini, MCP and LSP fixtures as the vectors say. This is what proves the
 * harness: the vectors' verdicts come from validators compiled at run time, the testee's from
 * the generated modules. The agreement is printed; test/languages/typescript/expected-failures.txt
 * may only shrink.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { buildVectors } from "../../packages/generator/src/vectors/index.js";
import { describeMismatch, judge, readExpectedFailures, runHarness } from "./harness.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

const OUTPUTS = {
  "agent-gateway": { schemas: "schemas", output: "generated" },
  mini: { schemas: "test/fixtures/mini-protocol/schemas", output: "test/fixtures/mini-protocol/expected" },
  mcp: { schemas: "test/fixtures/mcp/schemas", output: "test/fixtures/mcp/expected" },
  lsp: { schemas: "test/fixtures/lsp/schemas", output: "test/fixtures/lsp/expected" },
} as const;

describe.each(Object.keys(OUTPUTS) as (keyof typeof OUTPUTS)[])("the TypeScript output of %s", (name) => {
  it("answers every vector as the vectors say", async () => {
    const { schemas, output } = OUTPUTS[name];
    const vectors = buildVectors(loadSchemas(join(root, schemas)));
    const report = await runHarness({ command: process.execPath, args: ["--import", "./scripts/from-source.mjs", "test/languages/typescript/testee.ts", output], cwd: root }, vectors);
    const { unexpected, fixed, summary } = judge(report, readExpectedFailures(join(root, "test/languages/typescript/expected-failures.txt"), name));
    console.log(`TypeScript, ${name}:\n${summary}`);
    expect(unexpected.slice(0, 20).map(describeMismatch)).toEqual([]);
    expect(fixed, "listed in test/languages/typescript/expected-failures.txt but passing now: remove them").toEqual([]);
    expect(report.counts["validate/strict"].compared).toBe(vectors.types.length);
  }, 180_000);
});
