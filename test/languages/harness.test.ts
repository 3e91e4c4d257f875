/**
 * The harness catches a testee that answers otherwise, and its expected-failures lists may
 * only shrink: run against a testee whose lengths count UTF-16 code units, it reports exactly
 * the cases with astral characters under a length bound; listed, they pass the run; a listed
 * case that passes fails it.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { buildVectors } from "../../packages/generator/src/vectors/index.js";
import { judge, readExpectedFailures, runHarness } from "./harness.js";
import { useTempDirs } from "../generator/temp-dirs.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tempDir = useTempDirs();

describe("the contract harness", () => {
  it("reports each case a testee answers otherwise, and holds the expected-failures list to what fails", async () => {
    const schemas = join(root, "schemas");
    const vectors = buildVectors(loadSchemas(schemas));
    const report = await runHarness({ command: process.execPath, args: ["--import", "./scripts/from-source.mjs", "test/languages/typescript/utf16-testee.ts", schemas], cwd: root }, vectors);
    const failing = report.mismatches.map((m) => `${m.check} ${m.id}`);
    expect(failing.length).toBeGreaterThan(0);
    // Only verdicts on astral characters under a length bound differ.
    for (const m of report.mismatches) {
      expect(m.check).toMatch(/^validate\/|^roundtrip\//);
      expect(vectors.types.find((c) => c.id === m.id)!.json).toContain("\u{1F600}");
    }
    expect(failing).toContain(`validate/strict ${vectors.types.find((c) => c.id.includes("maxLength/boundary-astral"))!.id}`);

    const list = join(tempDir("turnspec-harness-"), "expected-failures.txt");
    writeFileSync(list, `# the UTF-16 testee\n[agent-gateway]\n${failing.join("\n")}\n[lsp]\nvalidate/strict Hover/minimal\n`);
    const listed = judge(report, readExpectedFailures(list, "agent-gateway"));
    expect(listed.unexpected).toEqual([]);
    expect(listed.fixed).toEqual([]);
    const unlisted = judge(report, new Set(failing.slice(1)));
    expect(unlisted.unexpected.map((m) => `${m.check} ${m.id}`)).toEqual([failing[0]]);
    const stale = judge(report, new Set([...failing, "validate/strict Thread/minimal"]));
    expect(stale.fixed).toEqual(["validate/strict Thread/minimal"]);
    expect(listed.summary).toMatch(/validate\/strict\s+\d+\/\d+/);
  }, 120_000);
});
