/**
 * Both ends of a generated Go module in one process over a WebSocket (the MCP fixture's module;
 * test/languages/go/ws-both): the typed server's handler asks its client to sample a model while
 * it answers a tools/call, sends it a log notification, and asks for the client's roots once
 * the client is initialized; the typed client answers with its ClientHandlers. A request that
 * outlives the client's timeout fails locally with a timeout, a registered error crosses the
 * wire with its code and reason, nothing is dropped, and the server ends cleanly when the
 * client closes.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { buildGo, GO_AVAILABLE, NO_GO } from "./go-toolchain.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

if (!GO_AVAILABLE) console.log(NO_GO);

it.skipIf(!GO_AVAILABLE)("a Go server and a Go client call each other over a WebSocket", () => {
  const program = buildGo(join(root, "test/languages/go/ws-both"), ".", "ws-both");
  const report = JSON.parse(execFileSync(program, [], { encoding: "utf8", timeout: 60_000 })) as Record<string, unknown>;
  expect(report).toEqual({
    serverName: "go-ws-server",
    tools: ["ask", "slow"],
    asked: "the model said 42",
    sampledByClient: ["What is 6 times 7?"],
    loggedToClient: ["sampled 42"],
    rootsSeenByServer: ["file:///work/project"],
    serverHeardInitialized: true,
    timeout: "timeout",
    refusedCode: -32602,
    refusedReason: "invalid_params",
    dropped: null,
    internalErrors: null,
    serverStoppedCleanly: true,
  });
}, 120_000);
