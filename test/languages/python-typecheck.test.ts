/**
 * Slow: the generated Python packages pass `pyright --strict` (test/languages/python/pyrightconfig.json:
 * this protocol's package and the mini, MCP and LSP fixtures' packages), and a handler object
 * missing one of the requests the other end sends is a type error: the generated Protocol of
 * handlers catches it before anything runs.
 */
import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../generator/temp-dirs.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
const pyright = join(root, "node_modules/.bin/pyright");
const venv = join(root, ".venv");
const tempDir = useTempDirs();

/** pyright's output and exit code (it exits 1 when it reports errors). */
async function pyrightOn(project: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await run(pyright, ["-p", project], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, output: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: `${failed.stdout}${failed.stderr}` };
  }
}

describe.skipIf(!existsSync(join(venv, "bin/python")))("the generated Python packages under pyright --strict", () => {
  it("type-check with no error", async () => {
    const { code, output } = await pyrightOn("test/languages/python/pyrightconfig.json");
    expect(output).toContain("0 errors");
    expect(code).toBe(0);
  }, 300_000);

  it("refuse a client whose handlers miss a request the server sends", async () => {
    const dir = tempDir("turnspec-pyright-");
    writeFileSync(
      join(dir, "probe.py"),
      [
        "from mcp_protocol import models",
        "from mcp_protocol.client import ProtocolClient",
        "from mcp_protocol._transport import memory_pair",
        "",
        "",
        "class OnlyRoots:",
        "    async def roots_list(self, params: models.ListRootsRequestParams) -> models.ListRootsResult:",
        "        return models.ListRootsResult(roots=[])",
        "",
        "",
        "def connect() -> ProtocolClient:",
        "    ours, _theirs = memory_pair()",
        "    return ProtocolClient(ours, OnlyRoots())",
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(dir, "pyrightconfig.json"),
      JSON.stringify({ typeCheckingMode: "strict", pythonVersion: "3.11", venvPath: root, venv: ".venv", extraPaths: [join(root, "test/fixtures/mcp/python")], include: ["probe.py"] }),
    );
    const { code, output } = await pyrightOn(dir);
    expect(code).toBe(1);
    expect(output).toMatch(/"OnlyRoots" is incompatible with protocol "ClientHandlers"/);
    expect(output).toContain("sampling_create_message");
  }, 300_000);
});
