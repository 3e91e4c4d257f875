/**
 * Tool permissions end to end through the in-memory transport: approval requests and
 * their resolutions, allow_for_turn grants, expiry, cancellation, audit records, signed
 * resolve tokens, paths outside the roots, sandbox escapes and child turns.
 */
import { mkdirSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItem, TurnPermissionApprovalRequest } from "../../generated/types.js";
import type { RpcError } from "../../runtime/rpc/index.js";
import { ofTurn, script, startHarness, text, type Harness, type HarnessOptions } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
});

type Opened = Extract<AnyNotification, { method: "turn/permission/request/opened" }>;
const opened = (ns: readonly AnyNotification[]) => ns.filter((n): n is Opened => n.method === "turn/permission/request/opened").map((n) => n.params.request);
const audits = (ns: readonly AnyNotification[]) =>
  ns.filter((n): n is Extract<AnyNotification, { method: "turn/permission/audit" }> => n.method === "turn/permission/audit").map((n) => n.params);
const completed = (ns: readonly AnyNotification[], type: TurnItem["type"]) =>
  ns.filter((n): n is Extract<AnyNotification, { method: "item/completed" }> => n.method === "item/completed").map((n) => n.params.item).filter((i) => i.type === type);

async function setup(options: HarnessOptions = {}) {
  h = await startHarness(options);
  return h.thread();
}

/** Starts a turn and resolves at its n-th approval request (1-based). */
async function startAndWaitForRequest(params: Parameters<Harness["client"]["turnStart"]>[0], n = 1): Promise<TurnPermissionApprovalRequest> {
  await h.client.turnStart(params);
  const isNth = (x: AnyNotification) => x.method === "turn/permission/request/opened" && x.params.turn_id === params.turn_id && opened(ofTurn(h.received, params.turn_id)).length >= n;
  await h.waitFor(isNth);
  return opened(ofTurn(h.received, params.turn_id))[n - 1]!;
}

const terminalOf = (turnId: string) => h.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);

describe("an approval request", () => {
  it("pauses the tool until allow_once, then runs it; everything is audited", async () => {
    const thread = await setup();
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_ask",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo approved" } }, { say: "done" })),
    });
    expect(request).toMatchObject({ workspace_id: "ws_default", thread_id: thread, turn_id: "trn_ask", tool_name: "shell", action: "shell_command", allowed_scopes: ["allow_once", "allow_for_turn"] });
    expect(request.scope_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(request.resolve_token).toBeTruthy();
    expect(request.reason).toMatch(/supervised/);
    expect(request.summary).toContain("echo approved");
    // The item is open and waits: nothing ran yet.
    expect(completed(ofTurn(h.received, "trn_ask"), "commandExecution")).toEqual([]);
    const answer = await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_once" });
    expect(answer).toMatchObject({ request_id: request.request_id, thread_id: thread, turn_id: "trn_ask", resolution: "allow_once" });
    await terminalOf("trn_ask");
    const events = ofTurn(h.received, "trn_ask");
    const methods = events.map((n) => n.method);
    expect(methods.indexOf("turn/permission/request/resolved")).toBeLessThan(methods.indexOf("item/command_execution/output_delta"));
    expect(completed(events, "commandExecution")[0]).toMatchObject({ status: "completed", stdout: "approved\n" });
    expect(audits(events).map((a) => [a.kind, a.decided_by])).toEqual([
      ["profile_selected", undefined],
      ["request_opened", undefined],
      ["request_resolved", undefined],
      ["decision_allowed", "resolution"],
    ]);
    expect(audits(events)[0]).toMatchObject({ profile: { mode: "supervised", source: "composer" } });
  });

  it("declines the tool on deny: the item completes declined, the model is told, the turn goes on", async () => {
    const thread = await setup();
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_deny",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo no" } }, { say: "fine" })),
    });
    await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "deny" });
    const end = await terminalOf("trn_deny");
    expect(end.method).toBe("turn/completed");
    const item = completed(ofTurn(h.received, "trn_deny"), "commandExecution")[0] as { status: string; tool_result: string; stdout?: string };
    expect(item).toMatchObject({ status: "declined", outcome: "declined" });
    expect(item.tool_result).toMatch(/denied/);
    expect(item.stdout).toBeUndefined();
    expect(audits(ofTurn(h.received, "trn_deny")).at(-1)).toMatchObject({ kind: "decision_denied", decided_by: "resolution", resolution: "deny" });
  });

  it("lets allow_for_turn cover the same scope for the rest of the turn only", async () => {
    const thread = await setup();
    const same = { tool: "shell", args: { command: "echo   same" } };
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_grant",
      permission_profile: { mode: "supervised" },
      input: text(script(same, { tool: "shell", args: { command: "echo same" } }, { tool: "shell", args: { command: "echo other" } }, { say: "done" })),
    });
    await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_for_turn" });
    const second = await h.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== request.request_id);
    const other = (second as Opened).params.request;
    expect(other.summary).toContain("echo other");
    expect(other.scope_hash).not.toBe(request.scope_hash);
    await h.client.turnPermissionRequestRespond({ request_id: other.request_id, resolution: "allow_once" });
    await terminalOf("trn_grant");
    const events = ofTurn(h.received, "trn_grant");
    expect(opened(events)).toHaveLength(2);
    expect(audits(events).filter((a) => a.decided_by === "turn_grant")).toHaveLength(1);
    expect(completed(events, "commandExecution").map((i) => (i as { stdout?: string }).stdout)).toEqual(["same\n", "same\n", "other\n"]);
    // The grant does not outlive its turn.
    const next = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_grant_next",
      permission_profile: { mode: "supervised" },
      input: text(script(same, { say: "again" })),
    });
    expect(next.scope_hash).toBe(request.scope_hash);
    await h.client.turnPermissionRequestRespond({ request_id: next.request_id, resolution: "deny" });
    await terminalOf("trn_grant_next");
  });

  it("expires unanswered after the configured time, which counts as a denial", async () => {
    const thread = await setup({ config: { permissions: { request_timeout_ms: 30 } } });
    await h.client.turnStart({ thread_id: thread, turn_id: "trn_expire", permission_profile: { mode: "supervised" }, input: text(script({ tool: "shell", args: { command: "echo late" } }, { say: "ok" })) });
    await terminalOf("trn_expire");
    const events = ofTurn(h.received, "trn_expire");
    expect(events.find((n) => n.method === "turn/permission/request/resolved")?.params).toMatchObject({ resolution: "expired" });
    expect(completed(events, "commandExecution")[0]).toMatchObject({ status: "declined" });
  });

  it("is cancelled with its turn", async () => {
    const thread = await setup();
    const request = await startAndWaitForRequest({ thread_id: thread, turn_id: "trn_cx", permission_profile: { mode: "supervised" }, input: text(script({ tool: "shell", args: { command: "echo x" } }, { say: "ok" })) });
    const { turn } = await h.client.turnCancel({ thread_id: thread, turn_id: "trn_cx" });
    expect(turn.status).toBe("Interrupted");
    expect(ofTurn(h.received, "trn_cx").find((n) => n.method === "turn/permission/request/resolved")?.params).toMatchObject({ request_id: request.request_id, resolution: "cancelled" });
    await expect(h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_once" })).rejects.toMatchObject({ code: -32011, reason: "permission_request_resolved" });
  });
});

describe("responding", () => {
  it("refuses an unknown request, a second answer, and gateway-only resolutions", async () => {
    const thread = await setup();
    await expect(h.client.turnPermissionRequestRespond({ request_id: "perm_nope", resolution: "deny" })).rejects.toMatchObject({ code: -32010, reason: "permission_request_not_found" });
    const request = await startAndWaitForRequest({ thread_id: thread, turn_id: "trn_twice", permission_profile: { mode: "supervised" }, input: text(script({ tool: "shell", args: { command: "echo once" } }, { say: "ok" })) });
    const raw = h.client.rpc;
    await expect(raw.request("turn/permission/request/respond", { request_id: request.request_id, resolution: "expired" })).rejects.toMatchObject({ kind: "invalid_outgoing" });
    await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_once" });
    const again = await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_once" }).catch((e: RpcError) => e);
    expect(again).toMatchObject({ code: -32011, reason: "permission_request_resolved", data: { resolution: "allow_once" } });
    await terminalOf("trn_twice");
    expect(completed(ofTurn(h.received, "trn_twice"), "commandExecution")).toHaveLength(1);
  });
});

describe("signed resolve tokens", () => {
  it("with require_resolve_token, refuses a missing, altered or foreign token and keeps the request open", async () => {
    const thread = await setup({ config: { permissions: { require_resolve_token: true } } });
    const first = await startAndWaitForRequest({ thread_id: thread, turn_id: "trn_tok", permission_profile: { mode: "supervised" }, input: text(script({ tool: "shell", args: { command: "echo a" } }, { tool: "shell", args: { command: "echo b" } }, { say: "ok" })) });
    const token = first.resolve_token!;
    const altered = token.slice(0, -3) + (token.endsWith("A") ? "BBB" : "AAA");
    for (const bad of [undefined, altered, "garbage", `${token}x`]) {
      const refused = await h.client.turnPermissionRequestRespond({ request_id: first.request_id, resolution: "allow_once", ...(bad === undefined ? {} : { resolve_token: bad }) }).catch((e: RpcError) => e);
      expect(refused).toMatchObject({ code: -32030, reason: "unauthorized" });
    }
    await h.client.turnPermissionRequestRespond({ request_id: first.request_id, resolution: "allow_once", resolve_token: token });
    const second = (await h.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== first.request_id)) as Opened;
    // The first request's token does not open the second one.
    const foreign = await h.client.turnPermissionRequestRespond({ request_id: second.params.request.request_id, resolution: "allow_once", resolve_token: token }).catch((e: RpcError) => e);
    expect(foreign).toMatchObject({ reason: "unauthorized", data: { detail: "wrong_request" } });
    // Replaying the used token answers that the request is resolved: nothing runs twice.
    await expect(h.client.turnPermissionRequestRespond({ request_id: first.request_id, resolution: "allow_once", resolve_token: token })).rejects.toMatchObject({ reason: "permission_request_resolved" });
    await h.client.turnPermissionRequestRespond({ request_id: second.params.request.request_id, resolution: "deny", resolve_token: second.params.request.resolve_token! });
    await terminalOf("trn_tok");
  });
});

describe("rules no mode overrides", () => {
  it("always asks for a sandbox escape, even in full_access, approves it only once, and asks again next time", async () => {
    const thread = await setup();
    const escape = { tool: "shell", args: { command: "echo out", escape_sandbox: true } };
    const request = await startAndWaitForRequest({ thread_id: thread, turn_id: "trn_escape", input: text(script(escape, escape, { say: "ok" })) });
    expect(request).toMatchObject({ sandbox_escape: true, allowed_scopes: ["allow_once"] });
    const forTurn = await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_for_turn" }).catch((e: RpcError) => e);
    expect(forTurn).toMatchObject({ code: -32602 });
    await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_once" });
    const next = (await h.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== request.request_id)) as Opened;
    expect(next.params.request.sandbox_escape).toBe(true);
    await h.client.turnPermissionRequestRespond({ request_id: next.params.request.request_id, resolution: "deny" });
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
      input: text(script({ tool: "read_file", args: { path: "link/secret.txt" } }, { tool: "read_file", args: { path: "../" + outsideDir.split("/").at(-1) + "/secret.txt" } }, { say: "ok" })),
    });
    expect(request.outside_paths?.[0]).toContain(outsideDir.split("/").at(-1));
    expect(request.outside_paths?.[0]).not.toContain("/link/");
    await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "deny" });
    const second = (await h.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== request.request_id)) as Opened;
    expect(second.params.request.outside_paths?.[0]).toMatch(/secret\.txt$/);
    await h.client.turnPermissionRequestRespond({ request_id: second.params.request.request_id, resolution: "deny" });
    await terminalOf("trn_outside");
    // Allowed paths and full_access read without asking.
    await h.runTurn({ thread_id: thread, turn_id: "trn_allowed", permission_profile: { mode: "auto_accept_edits", allowed_paths: [outsideDir] }, input: text(script({ tool: "read_file", args: { path: "link/secret.txt" } }, { say: "ok" })) });
    await h.runTurn({ thread_id: thread, turn_id: "trn_full", input: text(script({ tool: "read_file", args: { path: "link/secret.txt" } }, { say: "ok" })) });
    expect(opened(ofTurn(h.received, "trn_allowed"))).toEqual([]);
    expect(opened(ofTurn(h.received, "trn_full"))).toEqual([]);
    expect(completed(ofTurn(h.received, "trn_full"), "dynamicToolCall")[0]).toMatchObject({ status: "completed" });
  });

  it("never runs a denied tool, whatever the model does", async () => {
    const thread = await setup();
    const marker = join(h.cwd, "ran");
    await h.runTurn({ thread_id: thread, turn_id: "trn_denied", permission_profile: { denied_tools: ["shell"] }, input: text(script({ tool: "shell", args: { command: `touch ${marker}` } }, { tool: "shell", args: { command: `touch ${marker}` } }, { say: "ok" })) });
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
      input: text(script({ tool: "spawn_agent", args: { prompt: child } }, { tool: "spawn_agent", args: { prompt: child, permission_mode: "full_access" } }, { say: "ok" })),
    });
    // spawn_agent (task_subagent) asks under auto_accept_edits: approve each launch.
    for (let n = 1; n <= 2; n++) {
      await h.waitFor(() => opened(ofTurn(h.received, "trn_parent")).length >= n);
      await h.client.turnPermissionRequestRespond({ request_id: opened(ofTurn(h.received, "trn_parent"))[n - 1]!.request_id, resolution: "allow_once" });
    }
    await terminalOf("trn_parent");
    const tasks = completed(ofTurn(h.received, "trn_parent"), "task") as Extract<TurnItem, { type: "task" }>[];
    expect(tasks).toHaveLength(2);
    const inherited = (await h.client.turnGet({ thread_id: tasks[0]!.child_thread_id!, turn_id: tasks[0]!.child_turn_id! })).turn;
    const capped = (await h.client.turnGet({ thread_id: tasks[1]!.child_thread_id!, turn_id: tasks[1]!.child_turn_id! })).turn;
    expect(inherited.permission_profile).toMatchObject({ mode: "auto_accept_edits", source: "inherited_from_parent_turn", effective_policy: { allowed_tools: ["spawn_agent", "shell"] } });
    expect(capped.permission_profile).toMatchObject({ mode: "auto_accept_edits", source: "task_permission_cap" });
    expect(capped.security?.parent_cap).toMatchObject({ parent_turn_id: "trn_parent", parent_mode: "auto_accept_edits" });
  });
});

describe("the process policy", () => {
  it("passes a restricted turn's shell only the allow-listed environment", async () => {
    process.env.TURNSPEC_TEST_SECRET = "do-not-leak";
    try {
      const thread = await setup();
      const request = await startAndWaitForRequest({
        thread_id: thread,
        turn_id: "trn_env",
        permission_profile: { mode: "supervised" },
        input: text(script({ tool: "shell", args: { command: 'echo "[$TURNSPEC_TEST_SECRET]" "$PATH"' } }, { say: "ok" })),
      });
      await h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolution: "allow_once" });
      await terminalOf("trn_env");
      const stdout = (completed(ofTurn(h.received, "trn_env"), "commandExecution")[0] as { stdout: string }).stdout;
      expect(stdout.startsWith("[] ")).toBe(true);
      expect(stdout).toContain(process.env.PATH!.split(":")[0]!);
      await h.runTurn({ thread_id: thread, turn_id: "trn_env_full", input: text(script({ tool: "shell", args: { command: 'echo "[$TURNSPEC_TEST_SECRET]"' } }, { say: "ok" })) });
      expect(completed(ofTurn(h.received, "trn_env_full"), "commandExecution")[0]).toMatchObject({ stdout: "[do-not-leak]\n" });
    } finally {
      delete process.env.TURNSPEC_TEST_SECRET;
    }
  });
});

describe("the security snapshot", () => {
  it("is on every turn and honest about what this gateway cannot enforce", async () => {
    const thread = await setup();
    const supervised = (await h.client.turnStart({ thread_id: thread, turn_id: "trn_sec", permission_profile: { mode: "supervised" }, input: text(script({ say: "hi" })) })).turn;
    expect(supervised.security).toMatchObject({ sandbox: { mode: "read_only" }, network: { mode: "disabled" }, approval: { scopes: ["allow_once", "allow_for_turn"] }, enforcement: { status: "partially_active" } });
    expect(supervised.security!.enforcement.degradations.length).toBeGreaterThan(0);
    expect(supervised.security!.process).toMatchObject({ environment: { mode: "allow_list" }, timeout_cap_ms: 120_000 });
    await terminalOf("trn_sec");
  });
});
