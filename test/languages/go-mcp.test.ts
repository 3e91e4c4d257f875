/**
 * The Go client generated from test/fixtures/mcp/schemas against a real MCP server nobody here
 * wrote, @modelcontextprotocol/server-everything over stdio (test/languages/go/mcp-everything):
 * it initializes, lists and calls tools, answers the server's sampling/createMessage and
 * roots/list with its typed handlers while a tool call waits on them, lists resources and pings.
 * No frame from the server is dropped as invalid and no handler fails; a params member the
 * schema does not declare is refused before it is sent.
 */
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { buildGo, GO_AVAILABLE, NO_GO } from "./go-toolchain.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const everything = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");

if (!GO_AVAILABLE) console.log(NO_GO);

it.skipIf(!GO_AVAILABLE)("the generated Go MCP client talks to server-everything", () => {
  const program = buildGo(join(root, "test/languages/go/mcp-everything"), ".", "mcp-everything");
  const report = JSON.parse(execFileSync(program, [process.execPath, everything, "stdio"], { encoding: "utf8", timeout: 90_000 })) as Record<string, unknown>;
  expect(report.protocolVersion).toBe("2025-06-18");
  expect(report.serverName).toContain("everything");
  expect(report.tools).toEqual(expect.arrayContaining(["echo", "get-sum", "trigger-sampling-request", "get-roots-list"]));
  expect(report.echo).toBe("Echo: hello from turnspec");
  expect(report.sum).toContain("42");
  expect(report.sampled).toBe(1);
  expect(report.sampledAnswer).toContain("A sampled answer.");
  expect(report.rootsAsked).toBeGreaterThan(0);
  expect(report.rootsSeen).toContain("file:///work/project");
  expect(report.resources).toBeGreaterThan(0);
  expect(report.pinged).toBe(true);
  expect(report.unknownToolIsError).toBe(true);
  expect(report.refusedLocally).toMatch(/^invalid_outgoing: .*params\/unexpected: is not a known field/);
  expect(report.notifications).toContain("notifications/tools/list_changed");
  expect(report.dropped, "frames from the server dropped as invalid").toBeNull();
  expect(report.internalErrors, "handlers that failed").toBeNull();
}, 120_000);
