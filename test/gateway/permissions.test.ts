/**
 * Tool permissions end to end through the in-memory transport: approval requests and
 * their resolutions, allow_for_turn grants, expiry, cancellation, audit records, the
 * process policy and the security snapshot.
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

describe("an approval request", () => {
  it("pauses the tool until allow_once, then runs it; everything is audited", async () => {
    const thread = await setup();
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_ask",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo approved" } }, { say: "done" })),
    });
    expect(request).toMatchObject({
      workspace_id: "ws_default",
      thread_id: thread,
      turn_id: "trn_ask",
      tool_name: "shell",
      action: "shell_command",
      allowed_scopes: ["allow_once", "allow_for_turn"],
    });
    expect(request.scope_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(request.resolve_token).toBeTruthy();
    expect(request.reason).toMatch(/supervised/);
    expect(request.summary).toContain("echo approved");
    // The item is open and waits: nothing ran yet.
    expect(completed(ofTurn(h.received, "trn_ask"), "commandExecution")).toEqual([]);
    const answer = await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_once",
    });
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
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "deny",
    });
    const end = await terminalOf("trn_deny");
    expect(end.method).toBe("turn/completed");
    const item = completed(ofTurn(h.received, "trn_deny"), "commandExecution")[0] as {
      status: string;
      tool_result: string;
      stdout?: string;
    };
    expect(item).toMatchObject({ status: "declined", outcome: "declined" });
    expect(item.tool_result).toMatch(/denied/);
    expect(item.stdout).toBeUndefined();
    expect(audits(ofTurn(h.received, "trn_deny")).at(-1)).toMatchObject({
      kind: "decision_denied",
      decided_by: "resolution",
      resolution: "deny",
    });
  });

  it("lets allow_for_turn cover the same scope for the rest of the turn only", async () => {
    const thread = await setup();
    const same = { tool: "shell", args: { command: "echo   same" } };
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_grant",
      permission_profile: { mode: "supervised" },
      input: text(
        script(
          same,
          { tool: "shell", args: { command: "echo same" } },
          { tool: "shell", args: { command: "echo other" } },
          { say: "done" },
        ),
      ),
    });
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_for_turn",
    });
    const second = await h.waitFor(
      (n) => n.method === "turn/permission/request/opened" && n.params.request.request_id !== request.request_id,
    );
    const other = (second as Opened).params.request;
    expect(other.summary).toContain("echo other");
    expect(other.scope_hash).not.toBe(request.scope_hash);
    await h.client.turnPermissionRequestRespond({
      request_id: other.request_id,
      resolve_token: other.resolve_token,
      resolution: "allow_once",
    });
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
    await h.client.turnPermissionRequestRespond({ request_id: next.request_id, resolve_token: next.resolve_token, resolution: "deny" });
    await terminalOf("trn_grant_next");
  });

  it("expires unanswered after the configured time, which counts as a denial", async () => {
    const thread = await setup({ config: { permissions: { request_timeout_ms: 30 } } });
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_expire",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo late" } }, { say: "ok" })),
    });
    await terminalOf("trn_expire");
    const events = ofTurn(h.received, "trn_expire");
    expect(events.find((n) => n.method === "turn/permission/request/resolved")?.params).toMatchObject({ resolution: "expired" });
    expect(completed(events, "commandExecution")[0]).toMatchObject({ status: "declined" });
  });

  it("leaves nothing behind on its turn once resolved, however many a turn asks", async () => {
    // Each request listens for its turn's cancellation while it waits; one that outlived its
    // request would pile up on a long turn (Node warns past ten listeners on one signal).
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      const thread = await setup({ config: { permissions: { request_timeout_ms: 5 } } });
      const calls = Array.from({ length: 12 }, (_, i) => ({ tool: "shell", args: { command: `echo ${i}` } }));
      await h.client.turnStart({
        thread_id: thread,
        turn_id: "trn_many",
        permission_profile: { mode: "supervised" },
        input: text(script(...calls, { say: "ok" })),
      });
      await terminalOf("trn_many");
      await new Promise((resolve) => setImmediate(resolve));
      expect(opened(ofTurn(h.received, "trn_many"))).toHaveLength(12);
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.filter((w) => w.startsWith("MaxListenersExceededWarning"))).toEqual([]);
  });

  it("is cancelled with its turn", async () => {
    const thread = await setup();
    const request = await startAndWaitForRequest({
      thread_id: thread,
      turn_id: "trn_cx",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo x" } }, { say: "ok" })),
    });
    const { turn } = await h.client.turnCancel({ thread_id: thread, turn_id: "trn_cx" });
    expect(turn.status).toBe("Interrupted");
    expect(ofTurn(h.received, "trn_cx").find((n) => n.method === "turn/permission/request/resolved")?.params).toMatchObject({
      request_id: request.request_id,
      resolution: "cancelled",
    });
    await expect(
      h.client.turnPermissionRequestRespond({
        request_id: request.request_id,
        resolve_token: request.resolve_token,
        resolution: "allow_once",
      }),
    ).rejects.toMatchObject({ code: -32011, reason: "permission_request_resolved" });
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
      await h.client.turnPermissionRequestRespond({
        request_id: request.request_id,
        resolve_token: request.resolve_token,
        resolution: "allow_once",
      });
      await terminalOf("trn_env");
      const stdout = (completed(ofTurn(h.received, "trn_env"), "commandExecution")[0] as { stdout: string }).stdout;
      expect(stdout.startsWith("[] ")).toBe(true);
      expect(stdout).toContain(process.env.PATH!.split(":")[0]!);
      await h.runTurn({
        thread_id: thread,
        turn_id: "trn_env_full",
        input: text(script({ tool: "shell", args: { command: 'echo "[$TURNSPEC_TEST_SECRET]"' } }, { say: "ok" })),
      });
      // full_access has a wider allow-list, still not the whole environment (hole 14).
      expect(completed(ofTurn(h.received, "trn_env_full"), "commandExecution")[0]).toMatchObject({ stdout: "[]\n" });
    } finally {
      delete process.env.TURNSPEC_TEST_SECRET;
    }
  });
});

describe("the security snapshot", () => {
  it("is on every turn and honest about what this gateway cannot enforce", async () => {
    // A host without an OS sandbox (test/sandbox covers the host with one).
    const thread = await setup({ config: { sandbox: { bwrap_path: "/nonexistent/bwrap" } } });
    const supervised = (
      await h.client.turnStart({
        thread_id: thread,
        turn_id: "trn_sec",
        permission_profile: { mode: "supervised" },
        input: text(script({ say: "hi" })),
      })
    ).turn;
    expect(supervised.security).toMatchObject({
      sandbox: { mode: "read_only" },
      network: { mode: "disabled" },
      approval: { scopes: ["allow_once", "allow_for_turn"] },
      enforcement: { status: "partially_active" },
    });
    expect(supervised.security!.enforcement.degradations.length).toBeGreaterThan(0);
    expect(supervised.security!.process).toMatchObject({ environment: { mode: "allow_list" }, timeout_cap_ms: 120_000 });
    await terminalOf("trn_sec");
  });
});
