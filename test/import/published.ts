/**
 * Where the tests find the published protocol files (MCP's schema.json of every version,
 * LSP's metaModel.json, Ethereum's OpenRPC document): $TURNSPEC_PUBLISHED_FIXTURES, else
 * `published/` beside the repository. They may not be committed; a test that needs one
 * says in one line what is missing and is skipped. ACP's schema.json is committed.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
export const publishedDir = process.env.TURNSPEC_PUBLISHED_FIXTURES ?? join(repoRoot, "..", "published");
export const MCP_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "draft"] as const;

export interface PublishedSource {
  readonly name: string;
  readonly file: string;
  readonly map: string;
  /** Whether the file is here; when it is not, `missing` says so in one line. */
  readonly present: boolean;
  readonly missing: string;
}

const source = (name: string, file: string, map: string): PublishedSource => ({
  name,
  file,
  map: join(repoRoot, "test/fixtures/import", map),
  present: existsSync(file),
  missing: `${name}: ${file} is not here (set TURNSPEC_PUBLISHED_FIXTURES to the folder of the published protocol files)`,
});

export const SOURCES: readonly PublishedSource[] = [
  ...MCP_VERSIONS.map((v) => source(`MCP ${v}`, join(publishedDir, "mcp", v, "schema.json"), `mcp/${v}.map.json`)),
  source("ACP v1", join(repoRoot, "test/fixtures/published/acp/schema.json"), "acp.map.json"),
  source("LSP 3.17", join(publishedDir, "lsp", "3.17", "metaModel.json"), "lsp.map.json"),
  source("Ethereum execution APIs", join(publishedDir, "ethereum", "openrpc.json"), "ethereum.map.json"),
  source("Ethereum execution APIs (with references)", join(publishedDir, "ethereum", "refs-openrpc.json"), "ethereum.map.json"),
];

/** Prints once, for a source that is not here, the line that says so. */
const said = new Set<string>();
export function sayMissing(s: PublishedSource): void {
  if (s.present || said.has(s.name)) return;
  said.add(s.name);
  console.log(`skipped: ${s.missing}`);
}
