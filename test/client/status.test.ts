/** The status fold: table cases, the wire mapping, and the statuses of real turns on the reference gateway. */
import { describe, expect, it } from "vitest";
import { foldTurnStatus, initialTurnStatus, turnStatusOf, wireStatus, type TurnDomainStatus } from "../../client/index.js";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItem, TurnStatus } from "../../generated/types.js";
import { script, startHarness, text, type Harness } from "../gateway/harness.js";

const ids = { thread_id: "thr", turn_id: "trn" };
const task = (status: TurnItem["status"]): TurnItem => ({ type: "task", id: "task_1", status, prompt: "look it up" });
const request = (id: string) => ({
  request_id: id, workspace_id: "ws", thread_id: "thr", turn_id: "trn", tool_name: "shell", action: "shell_command" as const,
  scope_hash: "h", reason: "asks", details: {}, allowed_scopes: ["allow_once" as const], created_at: "2026-01-01T00:00:00Z",
});

/** Notifications numbered in order from 1. */
function numbered(...ns: ((sequence: number) => AnyNotification)[]): AnyNotification[] {
  return ns.map((n, i) => n(i + 1));
}
const opened = (id: string) => (sequence: number): AnyNotification => ({ method: "turn/permission/request/opened", params: { ...ids, sequence, request: request(id) } });
const resolved = (id: string) => (sequence: number): AnyNotification => ({ method: "turn/permission/request/resolved", params: { ...ids, sequence, request_id: id, resolution: "allow_once", resolved_at: "2026-01-01T00:00:01Z" } });
const item = (method: "item/started" | "item/completed", value: TurnItem) => (sequence: number): AnyNotification => ({ method, params: { ...ids, sequence, item_id: value.id, item: value } });
const turn = (status: TurnStatus) => ({ id: "trn", status, prompt_manifest: null, permission_profile: { mode: "full_access", source: "defaulted", effective_policy: {} } }) as never;
const started = (sequence: number): AnyNotification => ({ method: "turn/started", params: { ...ids, sequence, turn: turn("InProgress") } });
const failed = (kind: "cancelled" | "provider_error" | "interrupted") => (sequence: number): AnyNotification => ({
  method: "turn/failed", params: { ...ids, sequence, turn: turn(kind === "provider_error" ? "Failed" : "Interrupted"), error: { kind, message: "x", retryable: false } },
});

describe("turn status fold", () => {
  it.each<[string, AnyNotification[], TurnDomainStatus, TurnStatus]>([
    ["queued before anything ran", [], "queued", "InProgress"],
    ["running once started", numbered(started), "running", "InProgress"],
    ["awaiting input while a request is open", numbered(started, opened("p1")), "awaiting_input", "InProgress"],
    ["awaiting input until every open request is resolved", numbered(started, opened("p1"), opened("p2"), resolved("p1")), "awaiting_input", "InProgress"],
    ["running again once answered", numbered(started, opened("p1"), resolved("p1")), "running", "InProgress"],
    ["awaiting a child turn while a task runs", numbered(started, item("item/started", task("in_progress"))), "awaiting_child", "InProgress"],
    ["awaiting input wins over awaiting a child", numbered(started, item("item/started", task("in_progress")), opened("p1")), "awaiting_input", "InProgress"],
    ["running once the task completed", numbered(started, item("item/started", task("in_progress")), item("item/completed", task("completed"))), "running", "InProgress"],
    ["cancelled", numbered(started, opened("p1"), failed("cancelled")), "cancelled", "Interrupted"],
    ["failed", numbered(started, failed("provider_error")), "failed", "Failed"],
    ["failed by an interruption, Interrupted on the wire", numbered(started, failed("interrupted")), "failed", "Interrupted"],
  ])("%s", (_name, notifications, status, wire) => {
    const state = turnStatusOf(notifications);
    expect(state.status).toBe(status);
    expect(wireStatus(state)).toBe(wire);
  });

  it("ignores a duplicated or replayed notification and anything after the end", () => {
    const [s, o, r] = numbered(started, opened("p1"), resolved("p1"));
    const state = [s!, o!, r!, o!].reduce(foldTurnStatus, initialTurnStatus);
    expect(state.status).toBe("running");
    const ended = foldTurnStatus(state, failed("provider_error")(4));
    expect(foldTurnStatus(ended, opened("p9")(5)).status).toBe("failed");
  });

  /** Runs a turn on a fresh gateway, folding its status; answers any approval with allow_once. */
  async function statusesOf(turnId: string, params: Omit<Parameters<Harness["runTurn"]>[0], "thread_id" | "turn_id">) {
    const h = await startHarness();
    try {
      const threadId = await h.thread();
      const statuses: TurnDomainStatus[] = [];
      let state = initialTurnStatus;
      h.client.onAny((n) => {
        if ("turn_id" in n.params && n.params.turn_id === turnId) {
          state = foldTurnStatus(state, n);
          if (statuses.at(-1) !== state.status) statuses.push(state.status);
        }
        if (n.method === "turn/permission/request/opened") void h.client.turnPermissionRequestRespond({ request_id: n.params.request.request_id, resolution: "allow_once", ...(n.params.request.resolve_token ? { resolve_token: n.params.request.resolve_token } : {}) });
      });
      await h.runTurn({ thread_id: threadId, turn_id: turnId, ...params });
      const { turn } = await h.client.turnGet({ thread_id: threadId, turn_id: turnId });
      return { statuses, wire: wireStatus(state), gatewayStatus: turn.status };
    } finally {
      await h.close();
    }
  }

  it("sees the approval wait on the reference gateway and ends with the gateway's own status", async () => {
    const input = text(script({ tool: "shell", args: { command: "echo ok" } }, { say: "done" }));
    const { statuses, wire, gatewayStatus } = await statusesOf("trn_supervised", { input, permission_profile: { mode: "supervised" } });
    expect(statuses).toEqual(["running", "awaiting_input", "running", "succeeded"]);
    expect(wire).toBe(gatewayStatus);
  });

  it("is awaiting_child while a sub-agent launched by the turn runs", async () => {
    const input = text(script({ tool: "spawn_agent", args: { prompt: script({ say: "child answer" }) } }, { say: "parent answer" }));
    const { statuses, wire, gatewayStatus } = await statusesOf("trn_parent", { input });
    expect(statuses).toEqual(["running", "awaiting_child", "running", "succeeded"]);
    expect(wire).toBe(gatewayStatus);
  });
});
