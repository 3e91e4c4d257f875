/**
 * What an approval request carries for the card a surface renders (turn-event-stream.md's
 * ApprovalPending): a title, the arguments as JSON, a preview the gateway computed, and an
 * override reason only when the pause overrides a call the policy allows.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { TurnPermissionRequestOpenedNotification } from "../../generated/types.js";
import { script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
});

async function requestOf(turnId: string, mode: "supervised" | "full_access", args: Record<string, unknown>) {
  h = await startHarness();
  const thread = await h.thread();
  const end = h.runTurn({
    thread_id: thread,
    turn_id: turnId,
    input: text(script({ tool: "shell", args }, { say: "ok" })),
    permission_profile: { mode },
  });
  const { request } = (await h.waitFor((n) => n.method === "turn/permission/request/opened"))
    .params as TurnPermissionRequestOpenedNotification;
  await h.client.turnPermissionRequestRespond({
    request_id: request.request_id,
    resolution: "deny",
    ...(request.resolve_token ? { resolve_token: request.resolve_token } : {}),
  });
  await end;
  return request;
}

describe("the approval card", () => {
  it("has a title, the arguments as JSON and a preview, and no override reason for an ordinary gated call", async () => {
    const request = await requestOf("trn_card", "supervised", { command: "echo hi" });
    expect(request).toMatchObject({ tool_name: "shell", title: "Run a command", preview: { title: "Command", text: "echo hi" } });
    expect(JSON.parse(request.args_json!)).toEqual({ command: "echo hi" });
    expect(request.override_reason).toBeUndefined();
  });

  it("says why when the pause overrides a call the policy allows (leaving the sandbox in full access)", async () => {
    const request = await requestOf("trn_override", "full_access", { command: "echo out", escape_sandbox: true });
    expect(request.override_reason).toMatch(/outside the sandbox/);
  });
});
