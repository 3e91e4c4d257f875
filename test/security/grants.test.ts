/**
 * Grants bound to exactly what was approved, attacked through the gateway (holes 2, 3, 4
 * and 17): each test earns an allow_for_turn grant (or an allow_once), then makes the call
 * that the old scope let through silently, and asserts a new approval request stops it.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { TurnPermissionApprovalRequest } from "../../generated/types.js";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { ofTurn, script, text } from "../gateway/harness.js";
import { completed, h, opened, setup, startAndWaitForRequest, terminalOf, usePermissionHarness } from "../gateway/permission-steps.js";

usePermissionHarness();
const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-outside-")));
writeFileSync(join(elsewhere, "secret.txt"), "outside the roots\n");
afterAll(() => rmSync(elsewhere, { recursive: true, force: true }));

/** Answers the n-th request of `turnId` once it is open. */
async function answerNth(
  turnId: string,
  n: number,
  resolution: "allow_once" | "allow_for_turn" | "deny",
): Promise<TurnPermissionApprovalRequest> {
  await h.waitFor(() => opened(ofTurn(h.received, turnId)).length >= n);
  const request = opened(ofTurn(h.received, turnId))[n - 1]!;
  await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolve_token: request.resolve_token, resolution });
  return request;
}

describe("an allow_for_turn grant", () => {
  it("for a shell command in the workspace does not cover the same command in an outside cwd (hole 2)", async () => {
    const thread = await setup();
    const turn = "trn_cwd";
    await startAndWaitForRequest({
      thread_id: thread,
      turn_id: turn,
      permission_profile: { mode: "supervised" },
      input: text(
        script({ tool: "shell", args: { command: "pwd" } }, { tool: "shell", args: { command: "pwd", cwd: elsewhere } }, { say: "done" }),
      ),
    });
    await answerNth(turn, 1, "allow_for_turn");
    const second = await answerNth(turn, 2, "deny");
    expect(second.outside_paths).toEqual([elsewhere]);
    expect(second.allowed_scopes).toEqual(["allow_once"]);
    await terminalOf(turn);
    expect(completed(ofTurn(h.received, turn), "commandExecution").map((i) => i.status)).toEqual(["completed", "declined"]);
  });

  it("for `echo cat /x` does not cover `echo<newline>cat /x` (hole 3)", async () => {
    const thread = await setup();
    const turn = "trn_newline";
    await startAndWaitForRequest({
      thread_id: thread,
      turn_id: turn,
      permission_profile: { mode: "supervised" },
      input: text(
        script({ tool: "shell", args: { command: "echo cat /x" } }, { tool: "shell", args: { command: "echo\ncat /x" } }, { say: "done" }),
      ),
    });
    const first = await answerNth(turn, 1, "allow_for_turn");
    const second = await answerNth(turn, 2, "deny");
    expect(second.scope_hash).not.toBe(first.scope_hash);
    await terminalOf(turn);
    expect(completed(ofTurn(h.received, turn), "commandExecution").map((i) => i.status)).toEqual(["completed", "declined"]);
  });

  it("for web_fetch of 127.0.0.1:9 does not cover another port of that host (hole 17)", async () => {
    const thread = await setup();
    const turn = "trn_port";
    await startAndWaitForRequest({
      thread_id: thread,
      turn_id: turn,
      permission_profile: { mode: "supervised" },
      input: text(
        script(
          { tool: "web_fetch", args: { url: "http://127.0.0.1:9/" } },
          { tool: "web_fetch", args: { url: "http://127.0.0.1:8080/admin" } },
          { say: "done" },
        ),
      ),
    });
    const first = await answerNth(turn, 1, "allow_for_turn");
    const second = await answerNth(turn, 2, "deny");
    expect(second.scope_hash).not.toBe(first.scope_hash);
    expect(second.summary).toContain("127.0.0.1:8080/admin");
    await terminalOf(turn);
  });
});

describe("a request for a path outside the roots (hole 4)", () => {
  it("offers only allow_once, refuses allow_for_turn, and covers that one call", async () => {
    const thread = await setup();
    const turn = "trn_outside";
    const secret = join(elsewhere, "secret.txt");
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: turn,
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "read_file", args: { path: secret } }, { tool: "read_file", args: { path: secret } }, { say: "done" })),
    });
    expect(request.allowed_scopes).toEqual(["allow_once"]);
    const refused = (await h.client
      .turnPermissionRequestRespond({ request_id: request.request_id, resolve_token: request.resolve_token, resolution: "allow_for_turn" })
      .catch((e: unknown) => e)) as RpcError;
    expect(refused.code).toBe(-32602);
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_once",
    });
    // The second read of the same path asks again.
    const again = await answerNth(turn, 2, "deny");
    expect(again.request_id).not.toBe(request.request_id);
    await terminalOf(turn);
    const calls = completed(ofTurn(h.received, turn), "dynamicToolCall") as { status: string; output?: string }[];
    expect(calls.map((c) => c.status)).toEqual(["completed", "declined"]);
    expect(calls[0]!.output).toBe("outside the roots\n");
  });
});
