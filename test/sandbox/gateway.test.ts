/**
 * The sandbox as a client sees it, through the gateway: the turn's security snapshot, the
 * per-turn temp folder's life, and sandbox.required refusing turns when the host has no
 * sandbox. The hosts without bubblewrap are simulated with sandbox.bwrap_path naming a
 * binary that does not exist, so these run everywhere; the confined turn needs bubblewrap.
 */
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnExecutionSecuritySnapshot } from "../../generated/types.js";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { detectBubblewrap } from "../../packages/gateway/src/sandbox/bubblewrap.js";
import { script, startHarness, text, type Harness } from "../gateway/harness.js";

const missing = { bwrap_path: "/nonexistent/bwrap" };
let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors).toEqual([]);
  await h.close();
});

const securityOf = (n: AnyNotification): TurnExecutionSecuritySnapshot =>
  (n.params as { turn: { security: TurnExecutionSecuritySnapshot } }).turn.security;

describe("sandbox.required", () => {
  it("refuses a restricted turn on a host without a sandbox, with sandbox_unavailable, and leaves no turn behind", async () => {
    h = await startHarness({ config: { sandbox: { required: true, ...missing } } });
    const thread = await h.thread();
    const error = (await h.client
      .turnStart({ thread_id: thread, turn_id: "trn_refused", permission_profile: { mode: "supervised" }, input: text("hi") })
      .catch((e: unknown) => e)) as RpcError;
    expect(error.code).toBe(-32060);
    expect(error.data).toMatchObject({ reason: "sandbox_unavailable", mode: "supervised" });
    expect(error.message).toMatch(/sandbox\.required/);
    expect(h.store.turnsOfThread(thread)).toEqual([]);
    // The same id is free for a turn that needs no sandbox.
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_refused",
      permission_profile: { mode: "full_access" },
      input: text("hi"),
    });
    expect(end.method).toBe("turn/completed");
  });

  it("without it, the same host runs the turn partially_active, naming what is not confined", async () => {
    h = await startHarness({ config: { sandbox: missing } });
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_degraded",
      permission_profile: { mode: "supervised" },
      input: text("hi"),
    });
    const security = securityOf(end);
    expect(security.enforcement.status).toBe("partially_active");
    expect(security.enforcement.degradations.map((d) => d.capability)).toEqual([
      "filesystem_confinement",
      "network_blocking",
      "process_confinement",
    ]);
    expect(security.backend.sandbox_backend).toBeNull();
    expect(security.sandbox).toMatchObject({ temp_policy: "host", backend_requirement: "best_effort" });
  });
});

describe.runIf(detectBubblewrap())("a restricted turn on a host with bubblewrap", () => {
  it("is active, names bubblewrap, runs its shell confined, and its temp folder goes with the turn", async () => {
    h = await startHarness({ config: { sandbox: { required: true } } });
    const thread = await h.thread();
    const terminal = h.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed");
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_confined",
      permission_profile: { mode: "auto_accept_edits" },
      input: text(
        script(
          { tool: "shell", args: { command: 'echo kept > "$TMPDIR/t" && cat "$TMPDIR/t" && touch /etc/turnspec-planted' } },
          { say: "done" },
        ),
      ),
    });
    // The approval lets the command run; it does not let it out of the sandbox.
    const opened = await h.waitFor((n) => n.method === "turn/permission/request/opened");
    const { request } = opened.params as { request: { request_id: string; resolve_token?: string } };
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_once",
    });
    const end = await terminal;
    const security = securityOf(end);
    expect(security.enforcement).toEqual({ status: "active", degradations: [] });
    expect(security.backend.sandbox_backend).toBe("bubblewrap");
    expect(security.sandbox).toMatchObject({ temp_policy: "per_turn", backend_requirement: "required" });
    const temp = security.sandbox.filesystem.entries.find((e) => e.kind === "temp")!;
    const item = h.received.find((n) => n.method === "item/completed" && n.params.item.type === "commandExecution")!.params as {
      item: { stdout: string; stderr: string };
    };
    expect(item.item.stdout).toBe("kept\n");
    expect(item.item.stderr).toMatch(/Read-only file system/);
    expect(existsSync("/etc/turnspec-planted")).toBe(false);
    expect(existsSync(temp.path)).toBe(false);
  });
});

describe.runIf(detectBubblewrap())("a restricted network through the gateway", () => {
  it("audits each connection the turn's proxy refuses, like any other denial, and closes the proxy with the turn", async () => {
    h = await startHarness({ config: { network: { allow_domains: ["allowed.invalid"] } } });
    const thread = await h.thread();
    const terminal = h.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed");
    const probe = `node -e 'const p=new URL(process.env.HTTP_PROXY);require("http").get({host:p.hostname,port:p.port,path:"http://elsewhere.invalid:8080/x"},r=>console.log(r.statusCode))'; tr '\\0' '\\n' < /proc/$PPID/cmdline | grep 'proxy\\.sock$'`;
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_proxied",
      permission_profile: { mode: "auto_accept_edits" },
      input: text(script({ tool: "shell", args: { command: probe } }, { say: "done" })),
    });
    const opened = await h.waitFor((n) => n.method === "turn/permission/request/opened");
    const { request } = opened.params as { request: { request_id: string; resolve_token?: string } };
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_once",
    });
    const end = await terminal;
    expect(securityOf(end).network.mode).toBe("restricted");
    const item = h.received.find((n) => n.method === "item/completed" && n.params.item.type === "commandExecution")!.params as {
      item: { stdout: string };
    };
    const [status, socket] = item.item.stdout.trim().split("\n");
    expect(status).toBe("403");
    // The bridge's socket is the gateway's proxy; it is gone once the turn has ended.
    expect(socket).toMatch(/turnspec-net-.*\/proxy\.sock$/);
    await expect.poll(() => existsSync(socket!)).toBe(false);
    const denied = h.received
      .filter((n) => n.method === "turn/permission/audit" && n.params.decided_by === "config")
      .map((n) => n.params as unknown as Record<string, unknown>);
    expect(denied).toHaveLength(1);
    expect(denied[0]).toMatchObject({ kind: "decision_denied", tool_name: "shell", action: "network", behavior: "deny" });
    expect(denied[0]!.reason).toMatch(/elsewhere\.invalid:8080 is not in the turn's allow_domains/);
  });
});
