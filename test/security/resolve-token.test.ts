/**
 * Hole 10: in the default configuration an answer must carry the request's resolve_token,
 * as the request schema says; require_resolve_token: false is the documented switch for a
 * gateway that authenticates whoever answers by other means.
 */
import { describe, expect, it } from "vitest";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { script, text } from "../gateway/harness.js";
import { h, setup, startAndWaitForRequest, terminalOf, usePermissionHarness } from "../gateway/permission-steps.js";

usePermissionHarness();
const shellTurn = (thread: string, turn: string) => ({
  thread_id: thread,
  turn_id: turn,
  permission_profile: { mode: "supervised" as const },
  input: text(script({ tool: "shell", args: { command: "echo hi" } }, { say: "ok" })),
});

describe("an answer to a permission request", () => {
  it("without the token is refused by default, and the request stays open for the one with it", async () => {
    const thread = await setup();
    const request = await startAndWaitForRequest(shellTurn(thread, "trn_tokenless"));
    expect(request.resolve_token).toBeTruthy();
    const refused = (await h.client
      .turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_once" })
      .catch((e: unknown) => e)) as RpcError;
    expect(refused).toMatchObject({ code: -32030, reason: "unauthorized" });
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token!,
      resolution: "allow_once",
    });
    expect((await terminalOf("trn_tokenless")).method).toBe("turn/completed");
  });

  it("without the token is accepted under require_resolve_token: false", async () => {
    const thread = await setup({ config: { permissions: { require_resolve_token: false } } });
    const request = await startAndWaitForRequest(shellTurn(thread, "trn_switch"));
    await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_once" });
    expect((await terminalOf("trn_switch")).method).toBe("turn/completed");
  });
});
