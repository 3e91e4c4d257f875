/**
 * Both ends of the mini protocol's generated Python package, in one process
 * (test/languages/python/kv_endpoints.py): typed server handlers answering the typed client,
 * the server's own error crossing the wire, a notification sent from a handler and received by
 * the client's override, a malformed request answered -32602 with every failing pointer, an
 * unknown method -32601, and a request its schema refuses kept from the wire.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const python = join(root, ".venv/bin/python");

describe.skipIf(!existsSync(python))("the generated Python client and server", () => {
  it("talk to each other through their typed methods and handlers, and answer malformed requests as JSON-RPC says", async () => {
    const { stdout } = await promisify(execFile)(python, ["test/languages/python/kv_endpoints.py"], {
      cwd: root,
      env: { ...process.env, PYTHONPATH: join(root, "test/fixtures/mini-protocol/python") },
      timeout: 60_000,
    });
    const out = JSON.parse(stdout) as Record<string, unknown>;
    expect(out.watch).toBe("w1");
    expect(out.put).toBe(1);
    expect(out.get).toEqual(["a", 1, { kind: "text", text: "one" }]);
    expect(out.missing).toEqual([-32010, { key: "nope", reason: "key_not_found" }]);
    expect(out.refused).toEqual(["invalid_outgoing", ["/value"]]);
    expect(out.changes).toEqual(["a@1"]);
    const invalid = out.invalid as { id: number; error: { code: number; data: { reason: string; errors: { pointer: string }[] } } };
    expect(invalid.id).toBe(7);
    expect(invalid.error.code).toBe(-32602);
    expect(invalid.error.data.reason).toBe("invalid_params");
    expect(invalid.error.data.errors.map((e) => e.pointer).sort()).toEqual(["/extra", "/key", "/value"]);
    expect(out.unknown).toMatchObject({ id: 8, error: { code: -32601, data: { reason: "method_not_found" } } });
  }, 90_000);
});
