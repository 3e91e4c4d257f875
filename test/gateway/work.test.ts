/**
 * The turn-work projection through the wire: turn/work/page in both directions,
 * turn/work/items/get, freshness, and the work and timeline notifications.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors).toEqual([]);
  await h.close();
});

const steps = [
  { tool: "shell", args: { command: "echo one" } },
  { tool: "shell", args: { command: "echo two" } },
  { reasoning: "thinking", tool: "shell", args: { command: "echo three" } },
  { say: "all three ran" },
];

describe("turn/work/page and turn/work/items/get", () => {
  it("pages every work item exactly once, in order, from either end, with the log's freshness", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await h.runTurn({ thread_id: thread, turn_id: "trn_work", input: text(script(...steps)) });
    const { last_sequence } = await h.client.turnItems({ thread_id: thread, turn_id: "trn_work" });
    const all = await h.client.turnWorkPage({ threadId: thread, turnId: "trn_work", anchor: { kind: "oldest" }, limit: 100 });
    expect(all.items.map((i) => i.itemType)).toEqual([
      "commandExecution",
      "commandExecution",
      "reasoning",
      "commandExecution",
      "agentMessage",
    ]);
    expect(all).toMatchObject({
      threadId: thread,
      turnId: "trn_work",
      workspaceId: "ws_default",
      sourceHighWatermark: last_sequence,
      work: { state: "completed", counts: { total: 5 } },
    });
    expect(all.page).toMatchObject({ hasMoreBefore: false, hasMoreAfter: false });

    for (const limit of [1, 2, 3]) {
      const backward: string[] = [];
      let page = await h.client.turnWorkPage({ threadId: thread, turnId: "trn_work", anchor: { kind: "newest" }, limit });
      backward.unshift(...page.items.map((i) => i.workItemId));
      while (page.page.hasMoreBefore) {
        page = await h.client.turnWorkPage({
          threadId: thread,
          turnId: "trn_work",
          anchor: { kind: "before", cursor: page.page.beforeCursor! },
          limit,
        });
        backward.unshift(...page.items.map((i) => i.workItemId));
      }
      const forward: string[] = [];
      page = await h.client.turnWorkPage({ threadId: thread, turnId: "trn_work", anchor: { kind: "oldest" }, limit });
      forward.push(...page.items.map((i) => i.workItemId));
      while (page.page.hasMoreAfter) {
        page = await h.client.turnWorkPage({
          threadId: thread,
          turnId: "trn_work",
          anchor: { kind: "after", cursor: page.page.afterCursor! },
          limit,
        });
        forward.push(...page.items.map((i) => i.workItemId));
      }
      expect(backward).toEqual(all.items.map((i) => i.workItemId));
      expect(forward).toEqual(all.items.map((i) => i.workItemId));
    }

    const [first] = all.items;
    const refreshed = await h.client.turnWorkItemsGet({
      threadId: thread,
      turnId: "trn_work",
      workItemIds: [first!.workItemId, "gone_item"],
    });
    expect(refreshed.items).toEqual([first]);
    expect(refreshed.removedWorkItemIds).toEqual(["gone_item"]);
    expect(refreshed.sourceHighWatermark).toBe(last_sequence);

    const bad = await h.client
      .turnWorkPage({ threadId: thread, turnId: "trn_work", anchor: { kind: "before", cursor: "not-a-cursor" } })
      .catch((e: RpcError) => e);
    expect(bad).toMatchObject({ code: -32602, data: { errors: [{ pointer: "/anchor/cursor" }] } });
  });

  it("notifies changed work items and block state with freshness that never decreases, and timeline block changes", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await h.runTurn({ thread_id: thread, turn_id: "trn_live", input: text(script(...steps)) });
    const work = h.received.filter(
      (n): n is Extract<AnyNotification, { method: "turn/work/items/changed" | "turn/work/state/changed" }> =>
        n.method === "turn/work/items/changed" || n.method === "turn/work/state/changed",
    );
    const marks = work.map((n) => n.params.sourceHighWatermark);
    expect(marks).toEqual([...marks].sort((a, b) => a - b));
    const changed = new Set(work.flatMap((n) => (n.method === "turn/work/items/changed" ? n.params.changedWorkItemIds : [])));
    const page = await h.client.turnWorkPage({ threadId: thread, turnId: "trn_live", anchor: { kind: "oldest" } });
    expect([...changed].sort()).toEqual(page.items.map((i) => i.workItemId).sort());
    expect(work.filter((n) => n.method === "turn/work/state/changed").at(-1)?.params).toMatchObject({ work: { state: "completed" } });
    const timeline = h.received.filter((n) => n.method === "thread/timeline/blocks/changed");
    expect(timeline.map((n) => n.params)).toEqual([
      { threadId: thread, changedBlockIds: ["blk_trn_live"], turnId: "trn_live" },
      { threadId: thread, changedBlockIds: ["blk_trn_live"], turnId: "trn_live" },
    ]);
  });

  it("shows the block awaiting approval while a permission request is open", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_wait",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo hi" } }, { say: "ok" })),
    });
    const opened = await h.waitFor((n) => n.method === "turn/permission/request/opened");
    const page = await h.client.turnWorkPage({ threadId: thread, turnId: "trn_wait", anchor: { kind: "newest" } });
    expect(page.work.state).toBe("awaiting_approval");
    const { request } = opened.params as { request: { request_id: string; resolve_token?: string } };
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "deny",
    });
    await h.waitFor((n) => n.method === "turn/completed");
  });
});
