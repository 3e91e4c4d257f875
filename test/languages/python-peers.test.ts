/**
 * Slow: generated Python clients against real peers, over stdio.
 *
 * - The client generated for this protocol (test/languages/python/agent_gateway) drives
 *   `turnspec serve --stdio --memory` through a supervised turn whose command needs an
 *   approval: examples/python/approval.py, which allows it when the gateway asks.
 * - The client generated from the MCP fixture (test/fixtures/mcp/python/mcp_protocol) talks to
 *   @modelcontextprotocol/server-everything: tools, sampling and roots asked by the server and
 *   answered by typed handlers, resources, ping; no frame dropped; a request missing a required
 *   field refused before it is sent.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
const python = join(root, ".venv/bin/python");
const everything = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");

describe.skipIf(!existsSync(python))("generated Python clients against real peers", () => {
  it("drive turnspec serve --stdio through a turn with an approval", async () => {
    const { stdout } = await run(python, ["examples/python/approval.py"], {
      cwd: root,
      env: { ...process.env, PYTHONPATH: join(root, "test/languages/python"), TURNSPEC_STDIO_COMMAND: `${process.execPath} bin/turnspec.js serve --stdio --memory` },
      timeout: 90_000,
    });
    expect(stdout.trim()).toMatch(/^\[approving shell: .+\]\nhello\nThe command said hello\.\n\[Completed\]$/);
  }, 120_000);

  it("talk to @modelcontextprotocol/server-everything with the client generated from the MCP fixture", async () => {
    const { stdout } = await run(python, ["test/languages/python/mcp_everything.py", process.execPath, everything, "stdio"], {
      cwd: root,
      env: { ...process.env, PYTHONPATH: join(root, "test/fixtures/mcp/python") },
      timeout: 90_000,
    });
    const seen = JSON.parse(stdout) as Record<string, unknown>;
    expect(seen.server).toContain("everything");
    expect(seen.protocolVersion).toBe("2025-06-18");
    expect(seen.tools).toEqual(expect.arrayContaining(["echo", "get-sum", "trigger-sampling-request", "get-roots-list"]));
    expect(seen.echo).toBe("Echo: hello from python");
    expect(seen.sum).toContain("42");
    expect(seen.sampled).toEqual(["text"]);
    expect(seen.sampling).toContain("A sampled answer.");
    expect(seen.rootsAsked).toBeGreaterThanOrEqual(1);
    expect(seen.roots).toContain("file:///work/project");
    expect(seen.unknownIsError).toBe(true);
    expect(seen.resources).toBeGreaterThan(0);
    expect(seen.ping).toEqual({});
    expect(seen.missingName).toBe("invalid_outgoing");
    expect(seen.dropped).toEqual([]);
  }, 120_000);
});
