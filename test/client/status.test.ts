/** The status fold: table cases, the wire mapping, and the statuses of real turns on the reference gateway. */
import { describe, expect, it } from "vitest";
import {
  foldTurnStatus,
  initialTurnStatus,
  lifecycleWireStatus,
  setWatching,
  turnStatusOf,
  wireStatus,
  type TurnDomainStatus,
  type WireTurnStatus,
} from "../../packages/client/src/index.js";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItem, TurnStatus } from "../../generated/types.js";
import { script, startHarness, text, type Harness } from "../gateway/harness.js";

const ids = { thread_id: "thr", turn_id: "trn" };
const task = (status: TurnItem["status"]): TurnItem => ({ type: "task", id: "task_1", status, prompt: "look it up" });
const request = (id: string) => ({
  request_id: id,
  workspace_id: "ws",
  thread_id: "thr",
  turn_id: "trn",
  tool_name: "shell",
  action: "shell_command" as const,
  scope_hash: "h",
  reason: "asks",
  details: {},
  allowed_scopes: ["allow_once" as const],
  created_at: "2026-01-01T00:00:00Z",
});

/** Notifications numbered in order from 1. */
function numbered(...ns: ((sequence: number) => AnyNotification)[]): AnyNotification[] {
  return ns.map((n, i) => n(i + 1));
}
const opened =
  (id: string) =>
  (sequence: number): AnyNotification => ({ method: "turn/permission/request/opened", params: { ...ids, sequence, request: request(id) } });
const resolved =
  (id: string) =>
  (sequence: number): AnyNotification => ({
    method: "turn/permission/request/resolved",
    params: { ...ids, sequence, request_id: id, resolution: "allow_once", resolved_at: "2026-01-01T00:00:01Z" },
  });
const item =
  (method: "item/started" | "item/completed", value: TurnItem) =>
  (sequence: number): AnyNotification => ({ method, params: { ...ids, sequence, item_id: value.id, item: value } });
const turn = (status: TurnStatus) =>
  ({
    id: "trn",
    status,
    prompt_manifest: null,
    permission_profile: { mode: "full_access", source: "defaulted", effective_policy: {} },
  }) as never;
const started = (sequence: number): AnyNotification => ({ method: "turn/started", params: { ...ids, sequence, turn: turn("InProgress") } });
const qOpened =
  (index: number) =>
  (sequence: number): AnyNotification => ({
    method: "turn/question/opened",
    params: {
      ...ids,
      sequence,
      call_id: "call_1",
      index,
      already_surfaced: false,
      question: {
        call_id: "call_1",
        index,
        header: "H",
        question: "Which?",
        options: [
          { id: "a", label: "A" },
          { id: "b", label: "B" },
        ],
        args_json: "{}",
        answer_token: "t",
        created_at: "2026-01-01T00:00:00Z",
        expires_at: "2026-01-01T00:10:00Z",
      },
    },
  });
const qResolved =
  (index: number) =>
  (sequence: number): AnyNotification => ({
    method: "turn/question/resolved",
    params: { ...ids, sequence, call_id: "call_1", index, resolution: "answered", option_id: "a", resolved_at: "2026-01-01T00:00:01Z" },
  });
const failed =
  (kind: "cancelled" | "provider_error" | "interrupted") =>
  (sequence: number): AnyNotification => ({
    method: "turn/failed",
    params: {
      ...ids,
      sequence,
      turn: turn(kind === "provider_error" ? "Failed" : "Interrupted"),
      error: { kind, message: "x", retryable: false },
    },
  });

describe("turn status fold", () => {
  it.each<[string, AnyNotification[], TurnDomainStatus, TurnStatus]>([
    ["queued before anything ran", [], "queued", "InProgress"],
    ["running once started", numbered(started), "running", "InProgress"],
    ["awaiting a human while a request is open", numbered(started, opened("p1")), "awaiting_hitl", "InProgress"],
    [
      "awaiting a human until every open request is resolved",
      numbered(started, opened("p1"), opened("p2"), resolved("p1")),
      "awaiting_hitl",
      "InProgress",
    ],
    ["awaiting a human while a question is open", numbered(started, qOpened(0), qOpened(1), qResolved(0)), "awaiting_hitl", "InProgress"],
    ["running once every question is answered", numbered(started, qOpened(0), qResolved(0)), "running", "InProgress"],
    ["running again once answered", numbered(started, opened("p1"), resolved("p1")), "running", "InProgress"],
    [
      "awaiting a child turn while a task runs",
      numbered(started, item("item/started", task("in_progress"))),
      "awaiting_subsession",
      "InProgress",
    ],
    [
      "awaiting a human wins over awaiting a child",
      numbered(started, item("item/started", task("in_progress")), opened("p1")),
      "awaiting_hitl",
      "InProgress",
    ],
    [
      "running once the task completed",
      numbered(started, item("item/started", task("in_progress")), item("item/completed", task("completed"))),
      "running",
      "InProgress",
    ],
    ["cancelled", numbered(started, opened("p1"), failed("cancelled")), "cancelled", "Interrupted"],
    ["failed", numbered(started, failed("provider_error")), "failed", "Failed"],
    ["failed by an interruption, Interrupted on the wire", numbered(started, failed("interrupted")), "failed", "Interrupted"],
  ])("%s", (_name, notifications, status, wire) => {
    const state = turnStatusOf(notifications);
    expect(state.status).toBe(status);
    expect(wireStatus(state)).toBe(wire);
  });

  it("is awaiting_hitl_resolution while a decision is open and nobody watches, both awaiting_input in the lifecycle's wire form", () => {
    const open = numbered(started, qOpened(0));
    const unwatched = turnStatusOf(open, { watching: false });
    expect(unwatched.status).toBe("awaiting_hitl_resolution");
    const watched = setWatching(unwatched, true);
    expect(watched.status).toBe("awaiting_hitl");
    expect(setWatching(watched, false).status).toBe("awaiting_hitl_resolution");
    // Watching changes nothing while no decision is open.
    expect(setWatching(turnStatusOf(numbered(started)), false).status).toBe("running");
    expect([unwatched, watched].map((s) => lifecycleWireStatus(s.status))).toEqual<WireTurnStatus[]>(["awaiting_input", "awaiting_input"]);
    expect(lifecycleWireStatus("awaiting_subsession")).toBe("awaiting_subsession");
    expect(lifecycleWireStatus("running")).toBe("running");
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
        if (n.method === "turn/permission/request/opened")
          void h.client.turnPermissionRequestRespond({
            request_id: n.params.request.request_id,
            resolution: "allow_once",
            ...(n.params.request.resolve_token ? { resolve_token: n.params.request.resolve_token } : {}),
          });
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
    expect(statuses).toEqual(["running", "awaiting_hitl", "running", "succeeded"]);
    expect(wire).toBe(gatewayStatus);
  });

  it("is awaiting_subsession while a sub-agent launched by the turn runs", async () => {
    const input = text(script({ tool: "spawn_agent", args: { prompt: script({ say: "child answer" }) } }, { say: "parent answer" }));
    const { statuses, wire, gatewayStatus } = await statusesOf("trn_parent", { input });
    expect(statuses).toEqual(["running", "awaiting_subsession", "running", "succeeded"]);
    expect(wire).toBe(gatewayStatus);
  });
});
