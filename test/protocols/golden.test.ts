/**
 * The outputs generated from the MCP and LSP slices are the committed golden files under
 * test/fixtures/<protocol>/expected/, byte for byte, and two runs give the same bytes. After an
 * intended change, rewrite them with
 *
 *   node bin/turnspec.js generate --schemas test/fixtures/mcp/schemas --out test/fixtures/mcp/expected
 *   node bin/turnspec.js generate --schemas test/fixtures/lsp/schemas --out test/fixtures/lsp/expected
 *
 * and review the diff.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { compareWithDisk, generateFiles } from "../../generator/generate.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe.each(["mcp", "lsp"])("the %s slice", (name) => {
  const schemasDir = join(root, "test/fixtures", name, "schemas");
  const expectedDir = join(root, "test/fixtures", name, "expected");

  it("generates exactly the golden files, the same bytes on every run", async () => {
    const files = await generateFiles({ schemasDir });
    const stale = compareWithDisk(files, expectedDir);
    expect(stale, `run: node bin/turnspec.js generate --schemas test/fixtures/${name}/schemas --out test/fixtures/${name}/expected`).toEqual([]);
    const again = await generateFiles({ schemasDir });
    expect(again.map((f) => f.content)).toEqual(files.map((f) => f.content));
  }, 60_000);
});
