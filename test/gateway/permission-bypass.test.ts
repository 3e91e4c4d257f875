/**
 * Attempts to get a tool run that nobody allowed, each of which must fail: answering
 * twice, replaying or forging a resolve token, using one request's token for another,
 * escaping the roots through `..` or a symlink, stretching an allow_for_turn grant to
 * another scope or turn, sandbox escapes, a denied tool called anyway, and a child turn
 * asking for more than its parent has.
 */
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { TurnItem } from "../../generated/types.js";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { ofTurn, script, text } from "./harness.js";
import {
  audits,
  completed,
  h,
  opened,
  setup,
  startAndWaitForRequest,
  terminalOf,
  usePermissionHarness,
  type Opened,
} from "./permission-steps.js";

usePermissionHarness();

describe("responding", () => {
  it("refuses an unknown request, a second answer, and gateway-only resolutions", async () => {
    const thread = await setup();
    await expect(h.client.turnPermissionRequestRespond({ request_id: "perm_nope", resolution: "deny" })).rejects.toMatchObject({
      code: -32010,
      reason: "permission_request_not_found",
    });
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_twice",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo once" } }, { say: "ok" })),
    });
    const raw = h.client.rpc;
    await expect(
      raw.request("turn/permission/request/respond", {
        request_id: request.request_id,
        resolve_token: request.resolve_token,
        resolution: "expired",
      }),
    ).rejects.toMatchObject({ kind: "invalid_outgoing" });
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_once",
    });
    const again = await h.client
      .turnPermissionRequestRespond({ request_id: request.request_id, resolve_token: request.resolve_token, resolution: "allow_once" })
      .catch((e: RpcError) => e);
    expect(again).toMatchObject({ code: -32011, reason: "permission_request_resolved", data: { resolution: "allow_once" } });
    await terminalOf("trn_twice");
    expect(completed(ofTurn(h.received, "trn_twice"), "commandExecution")).toHaveLength(1);
  });
});

describe("signed resolve tokens", () => {
  it("with require_resolve_token, refuses a missing, altered or foreign token and keeps the request open", async () => {
    const thread = await setup({ config: { permissions: { require_resolve_token: true } } });
    const first = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_tok",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo a" } }, { tool: "shell", args: { command: "echo b" } }, { say: "ok" })),
    });
    const token = first.resolve_token!;
    const altered = token.slice(0, -3) + (token.endsWith("A") ? "BBB" : "AAA");
    for (const bad of [undefined, altered, "garbage", `${token}x`]) {
      const refused = await h.client
        .turnPermissionRequestRespond({
          request_id: first.request_id,
          resolution: "allow_once",
          ...(bad === undefined ? {} : { resolve_token: bad }),
        })
        .catch((e: RpcError) => e);
      expect(refused).toMatchObject({ code: -32030, reason: "unauthorized" });
    }
    await h.client.turnPermissionRequestRespond({ request_id: first.request_id, resolution: "allow_once", resolve_token: token });
    const second = (await h.waitFor(
      (n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== first.request_id,
    )) as Opened;
    // The first request's token does not open the second one.
    const foreign = await h.client
      .turnPermissionRequestRespond({ request_id: second.params.request.request_id, resolution: "allow_once", resolve_token: token })
      .catch((e: RpcError) => e);
    expect(foreign).toMatchObject({ reason: "unauthorized", data: { detail: "wrong_request" } });
    // Replaying the used token answers that the request is resolved: nothing runs twice.
    await expect(
      h.client.turnPermissionRequestRespond({ request_id: first.request_id, resolution: "allow_once", resolve_token: token }),
    ).rejects.toMatchObject({ reason: "permission_request_resolved" });
    await h.client.turnPermissionRequestRespond({
      request_id: second.params.request.request_id,
      resolution: "deny",
      resolve_token: second.params.request.resolve_token!,
    });
    await terminalOf("trn_tok");
  });
});

describe("rules no mode overrides", () => {
  it("always asks for a sandbox escape, even in full_access, approves it only once, and asks again next time", async () => {
    const thread = await setup();
    const escape = { tool: "shell", args: { command: "echo out", escape_sandbox: true } };
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_escape",
      input: text(script(escape, escape, { say: "ok" })),
    });
    expect(request).toMatchObject({ sandbox_escape: true, allowed_scopes: ["allow_once"] });
    const forTurn = await h.client
      .turnPermissionRequestRespond({ request_id: request.request_id, resolve_token: request.resolve_token, resolution: "allow_for_turn" })
      .catch((e: RpcError) => e);
    expect(forTurn).toMatchObject({ code: -32602 });
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_once",
    });
    const next = (await h.waitFor(
      (n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== request.request_id,
    )) as Opened;
    expect(next.params.request.sandbox_escape).toBe(true);
    await h.client.turnPermissionRequestRespond({
      request_id: next.params.request.request_id,
      resolve_token: next.params.request.resolve_token,
      resolution: "deny",
    });
    await terminalOf("trn_escape");
  });

  it("asks for a path outside the roots, naming the resolved path, including through a symlink; allowed_paths and full_access do not ask", async () => {
    const thread = await setup();
    const outsideDir = join(h.cwd, "..", `outside-${Date.now()}`);
    mkdirSync(outsideDir, { recursive: true });
    writeFileSync(join(outsideDir, "secret.txt"), "secret");
    symlinkSync(outsideDir, join(h.cwd, "link"));
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_outside",
      permission_profile: { mode: "auto_accept_edits" },
      input: text(
        script(
          { tool: "read_file", args: { path: "link/secret.txt" } },
          { tool: "read_file", args: { path: "../" + outsideDir.split("/").at(-1) + "/secret.txt" } },
          { say: "ok" },
        ),
      ),
    });
    expect(request.outside_paths?.[0]).toContain(outsideDir.split("/").at(-1));
    expect(request.outside_paths?.[0]).not.toContain("/link/");
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "deny",
    });
    const second = (await h.waitFor(
      (n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== request.request_id,
    )) as Opened;
    expect(second.params.request.outside_paths?.[0]).toMatch(/secret\.txt$/);
    await h.client.turnPermissionRequestRespond({
      request_id: second.params.request.request_id,
      resolve_token: second.params.request.resolve_token,
      resolution: "deny",
    });
    await terminalOf("trn_outside");
    // Allowed paths and full_access read without asking.
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_allowed",
      permission_profile: { mode: "auto_accept_edits", allowed_paths: [outsideDir] },
      input: text(script({ tool: "read_file", args: { path: "link/secret.txt" } }, { say: "ok" })),
    });
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_full",
      input: text(script({ tool: "read_file", args: { path: "link/secret.txt" } }, { say: "ok" })),
    });
    expect(opened(ofTurn(h.received, "trn_allowed"))).toEqual([]);
    expect(opened(ofTurn(h.received, "trn_full"))).toEqual([]);
    expect(completed(ofTurn(h.received, "trn_full"), "dynamicToolCall")[0]).toMatchObject({ status: "completed" });
  });

  it("never runs a denied tool, whatever the model does", async () => {
    const thread = await setup();
    const marker = join(h.cwd, "ran");
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_denied",
      permission_profile: { denied_tools: ["shell"] },
      input: text(
        script(
          { tool: "shell", args: { command: `touch ${marker}` } },
          { tool: "shell", args: { command: `touch ${marker}` } },
          { say: "ok" },
        ),
      ),
    });
    expect(existsSync(marker)).toBe(false);
    const events = ofTurn(h.received, "trn_denied");
    expect(completed(events, "commandExecution").map((i) => i.status)).toEqual(["declined", "declined"]);
    expect(audits(events).filter((a) => a.kind === "decision_denied" && a.decided_by === "policy")).toHaveLength(2);
    expect(opened(events)).toEqual([]);
  });
});

describe("child turns", () => {
  it("inherit the parent's mode, and are capped to it when they ask for more", async () => {
    const thread = await setup();
    const child = script({ say: "child here" });
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_parent",
      permission_profile: { mode: "auto_accept_edits", allowed_tools: ["spawn_agent", "shell"] },
      input: text(
        script(
          { tool: "spawn_agent", args: { prompt: child } },
          { tool: "spawn_agent", args: { prompt: child, permission_mode: "full_access" } },
          { say: "ok" },
        ),
      ),
    });
    // spawn_agent (task_subagent) asks under auto_accept_edits: approve each launch.
    for (let n = 1; n <= 2; n++) {
      await h.waitFor(() => opened(ofTurn(h.received, "trn_parent")).length >= n);
      const request = opened(ofTurn(h.received, "trn_parent"))[n - 1]!;
      await h.client.turnPermissionRequestRespond({
        request_id: request.request_id,
        resolve_token: request.resolve_token,
        resolution: "allow_once",
      });
    }
    await terminalOf("trn_parent");
    const tasks = completed(ofTurn(h.received, "trn_parent"), "task") as Extract<TurnItem, { type: "task" }>[];
    expect(tasks).toHaveLength(2);
    const inherited = (await h.client.turnGet({ thread_id: tasks[0]!.child_thread_id!, turn_id: tasks[0]!.child_turn_id! })).turn;
    const capped = (await h.client.turnGet({ thread_id: tasks[1]!.child_thread_id!, turn_id: tasks[1]!.child_turn_id! })).turn;
    expect(inherited.permission_profile).toMatchObject({
      mode: "auto_accept_edits",
      source: "inherited_from_parent_turn",
      effective_policy: { allowed_tools: ["spawn_agent", "shell"] },
    });
    expect(capped.permission_profile).toMatchObject({ mode: "auto_accept_edits", source: "task_permission_cap" });
    expect(capped.security?.parent_cap).toMatchObject({ parent_turn_id: "trn_parent", parent_mode: "auto_accept_edits" });
  });
});
