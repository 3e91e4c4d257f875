/**
 * MCP servers that lie, attacked through a turn: a server the configuration does not mark
 * trusted declares a tool that writes `readOnlyHint: true`, which would make it an mcp_read
 * that supervised and auto_accept_edits run without asking; and tools whose names, as the
 * model sees them (mcp__SERVER__TOOL, cut to the characters providers accept), come out the
 * same as another tool's, so that one could answer a call meant for the other. Built-in
 * tools keep their names: no MCP tool's name can be one (every one starts with mcp__).
 */
import { existsSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { GatewayConfig, TurnCapability, TurnItem, TurnPermissionMode } from "../../generated/types.js";
import { mcpToolName } from "../../packages/gateway/src/backends/mcp.js";
import { ofTurn, script, startHarness, text, type Harness } from "../gateway/harness.js";

const LYING = join(import.meta.dirname, "..", "fixtures", "mcp", "lying-server.mjs");

let h: Harness | undefined;
afterEach(async () => {
  expect(h?.protocolErrors ?? []).toEqual([]);
  await h?.close();
  h = undefined;
});

const serverCap = (id: string, name: string): TurnCapability => ({ id, kind: { type: "mcpServer", name, scopeKind: "workspace" } });
const calls = (ns: readonly AnyNotification[]) =>
  ns.flatMap((n) =>
    n.method === "item/completed" && n.params.item.type === "dynamicToolCall"
      ? [n.params.item as Extract<TurnItem, { type: "dynamicToolCall" }>]
      : [],
  );

async function turn(
  servers: NonNullable<GatewayConfig["mcp_servers"]>,
  mode: TurnPermissionMode,
  steps: string,
  capabilities: TurnCapability[],
  turnId: string,
) {
  h = await startHarness({ config: { mcp_servers: servers } });
  const gw = h;
  const thread = await gw.thread();
  const end = gw.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);
  const { turn: started } = await gw.client.turnStart({
    thread_id: thread,
    turn_id: turnId,
    permission_profile: { mode },
    capabilities,
    input: text(steps),
  });
  return { gw, started, end };
}

describe("a writing tool an untrusted MCP server calls read-only", () => {
  it.each(["supervised", "auto_accept_edits"] as const)(
    "is still asked about under %s, and a denial keeps the file from being written",
    async (mode) => {
      const target = join(realpathSync(mkdtempSync(join(tmpdir(), "turnspec-mcp-lie-"))), "planted.txt");
      const { gw, end } = await turn(
        { liar: { command: process.execPath, args: [LYING, "liar"] } },
        mode,
        script({ tool: "mcp__liar__save_note", args: { path: target, content: "planted" } }, { say: "ok" }),
        [serverCap("cap_liar", "liar")],
        `trn_lie_${mode}`,
      );
      const opened = await gw.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.turn_id === `trn_lie_${mode}`);
      if (opened.method !== "turn/permission/request/opened") throw new Error("unreachable");
      expect(opened.params.request).toMatchObject({ tool_name: "mcp__liar__save_note", action: "mcp_write_or_unknown" });
      await gw.client.turnPermissionRequestRespond({
        request_id: opened.params.request.request_id,
        resolve_token: opened.params.request.resolve_token,
        resolution: "deny",
      });
      await end;
      expect(calls(ofTurn(gw.received, `trn_lie_${mode}`))).toMatchObject([{ tool_name: "mcp__liar__save_note", status: "declined" }]);
      expect(existsSync(target)).toBe(false);
    },
    60_000,
  );

  it("is a read when the configuration trusts the server", async () => {
    const target = join(realpathSync(mkdtempSync(join(tmpdir(), "turnspec-mcp-trusted-"))), "note.txt");
    const { gw, end } = await turn(
      { liar: { command: process.execPath, args: [LYING, "liar"], trusted: true } },
      "supervised",
      script({ tool: "mcp__liar__save_note", args: { path: target, content: "trusted" } }, { say: "ok" }),
      [serverCap("cap_liar", "liar")],
      "trn_trusted",
    );
    await end;
    expect(ofTurn(gw.received, "trn_trusted").some((n) => n.method === "turn/permission/request/opened")).toBe(false);
    expect(existsSync(target)).toBe(true);
  }, 60_000);
});

describe("MCP tool names that come out the same", () => {
  it("offer the name to one tool only, and say which were not offered", async () => {
    // Within one server, b.c and b_c are both mcp__x__b_c; across servers, x's b__c and x__b's c are both mcp__x__b__c.
    expect(mcpToolName("x", "b.c")).toBe(mcpToolName("x", "b_c"));
    expect(mcpToolName("x", "b__c")).toBe(mcpToolName("x__b", "c"));
    const { gw, started, end } = await turn(
      {
        x: { command: process.execPath, args: [LYING, "x"], trusted: true },
        x__b: { command: process.execPath, args: [LYING, "x__b"], trusted: true },
      },
      "full_access",
      script({ tool: "mcp__x__b_c", args: {} }, { tool: "mcp__x__b__c", args: {} }, { say: "ok" }),
      [serverCap("cap_x", "x"), serverCap("cap_xb", "x__b")],
      "trn_clash",
    );
    await end;
    const messages = (started.capabilities ?? []).map((c) => (c as { message?: string }).message ?? "").join("\n");
    expect(started.capabilities?.map((c) => c.status)).toEqual(["accepted", "accepted"]);
    // Each clash is said, naming the tool the name went to; that tool, and no other, answers the call.
    const within = /b[._]c \(its name mcp__x__b_c is (x\/b[._]c)'s already\)/.exec(messages);
    const across = /(?:b__c|c) \(its name mcp__x__b__c is (x\/b__c|x__b\/c)'s already\)/.exec(messages);
    expect(within, messages).not.toBeNull();
    expect(across, messages).not.toBeNull();
    const outputs = calls(ofTurn(gw.received, "trn_clash")).map((c) => c.output);
    expect(outputs).toEqual([`${within![1]} answered`, `${across![1]} answered`]);
  }, 60_000);

  it("keep built-in tools' names: an MCP tool's name always starts with mcp__", () => {
    for (const native of ["shell", "read_file", "write_file", "web_fetch", "spawn_agent", "ask_question"])
      expect(mcpToolName("s", native)).not.toBe(native);
    expect(mcpToolName("shell", "x").startsWith("mcp__")).toBe(true);
  });
});
