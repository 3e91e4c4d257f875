/**
 * Slow: generated Rust clients against real peers, over stdio (the workspace built once by
 * cargo, see rust-toolchain.ts).
 *
 * - The client generated for this protocol (test/languages/rust/agent_gateway) drives
 *   `turnspec serve --stdio --memory` through a supervised turn: the scripted model asks for a
 *   shell command, the gateway opens a permission request, the client approves it, the
 *   command's output and the model's answer stream back, and the turn completes
 *   (examples/rust-client).
 * - The client generated from the MCP fixture (test/fixtures/mcp/rust/mcp_protocol) talks to
 *   @modelcontextprotocol/server-everything: tools, sampling and roots asked by the server and
 *   answered by the handler trait, resources, ping; nothing dropped; a member its schema does
 *   not declare refused before it is sent (test/languages/rust/mcp_everything).
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { buildWorkspace, CARGO_AVAILABLE, NO_CARGO, root } from "./rust-toolchain.js";

const run = promisify(execFile);
const everything = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");

if (!CARGO_AVAILABLE) console.log(NO_CARGO);

describe.skipIf(!CARGO_AVAILABLE)("generated Rust clients against real peers", () => {
  it("drive turnspec serve --stdio through a turn with an approval", async () => {
    const client = join(buildWorkspace(), "rust-client");
    const { stdout } = await run(client, [], {
      cwd: root,
      env: { ...process.env, TURNSPEC_STDIO_COMMAND: `${process.execPath} bin/turnspec.js serve --stdio --memory` },
      timeout: 90_000,
    });
    expect(stdout).toMatch(/^\[commandExecution: echo hello\]\n\[approving shell: .+\]\nhello\nThe command said hello\.\n\[Completed\]\n$/);
  }, 600_000);

  it("talk to @modelcontextprotocol/server-everything with the client generated from the MCP fixture", async () => {
    const client = join(buildWorkspace(), "mcp-everything");
    const { stdout } = await run(client, [process.execPath, everything, "stdio"], { cwd: root, timeout: 90_000 });
    const seen = JSON.parse(stdout) as Record<string, unknown>;
    expect(seen.server).toContain("everything");
    expect(seen.protocolVersion).toBe("2025-06-18");
    expect(seen.tools).toEqual(expect.arrayContaining(["echo", "get-sum", "trigger-sampling-request", "get-roots-list"]));
    expect(seen.echo).toBe("Echo: hello from rust");
    expect(seen.sum).toContain("42");
    expect(seen.sampled).toEqual(["text"]);
    expect(seen.sampling).toContain("A sampled answer.");
    expect(seen.rootsAsked).toBeGreaterThanOrEqual(1);
    expect(seen.roots).toContain("file:///work/project");
    expect(seen.unknownIsError).toBe(true);
    expect(seen.resources).toBeGreaterThan(0);
    expect(seen.ping).toBe("{}");
    expect(seen.undeclared).toBe("invalid_outgoing /undeclared");
    expect(seen.dropped).toEqual([]);
  }, 600_000);
});
