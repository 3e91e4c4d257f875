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
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { compareWithDisk, generateFiles } from "../../packages/generator/src/generate.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The OpenRPC meta-schema with the JSON Schema meta-schema it refers to, both as published. */
async function openRpcValidator() {
  const Ajv = (await import("ajv")).default;
  const require = createRequire(import.meta.url);
  const { openrpcDocument } = require("@open-rpc/meta-schema") as { openrpcDocument: object };
  const jsonSchemaMeta = require("@json-schema-tools/meta-schema") as { default?: Record<string, unknown> } & Record<string, unknown>;
  const { $schema: _s, ...meta } = jsonSchemaMeta.default ?? jsonSchemaMeta;
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  for (const $id of ["https://meta.json-schema.tools", "https://meta.json-schema.tools/"]) ajv.addSchema({ ...meta, $id });
  return ajv.compile(openrpcDocument);
}

const directions = {
  // ping goes both ways: served by the server and called back on the client.
  mcp: {
    served: ["initialize", "ping", "tools/list", "tools/call", "resources/list"],
    calledBack: ["ping", "sampling/createMessage", "roots/list"],
  },
  lsp: { served: ["initialize", "textDocument/hover", "shutdown"], calledBack: ["window/showMessageRequest"] },
};

describe.each(["mcp", "lsp"])("the %s slice", (name) => {
  const schemasDir = join(root, "test/fixtures", name, "schemas");
  const expectedDir = join(root, "test/fixtures", name, "expected");

  it("generates exactly the golden files, the same bytes on every run", async () => {
    const files = await generateFiles({ schemasDir });
    const stale = compareWithDisk(files, expectedDir);
    expect(
      stale,
      `run: node bin/turnspec.js generate --schemas test/fixtures/${name}/schemas --out test/fixtures/${name}/expected`,
    ).toEqual([]);
    const again = await generateFiles({ schemasDir });
    expect(again.map((f) => f.content)).toEqual(files.map((f) => f.content));
  }, 60_000);

  it("openrpc.json validates against the OpenRPC meta-schema, the methods the server calls on its client listed apart", async () => {
    const validate = await openRpcValidator();
    const doc = JSON.parse(readFileSync(join(expectedDir, "openrpc.json"), "utf8"));
    expect(validate(doc), JSON.stringify(validate.errors, null, 2)).toBe(true);
    const { served, calledBack } = directions[name as keyof typeof directions];
    expect(doc.methods.map((m: { name: string }) => m.name)).toEqual(served);
    expect(doc["x-server-to-client-methods"].map((m: { name: string }) => m.name)).toEqual(calledBack);
    // The implied standard errors are part of the registry like the protocol's own.
    expect(Object.keys(doc.components.errors).slice(0, 5)).toEqual([
      "parse_error",
      "invalid_request",
      "method_not_found",
      "invalid_params",
      "internal_error",
    ]);
  });
});
