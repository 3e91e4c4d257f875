/** Scenarios of the work capability: the turn-work projection. */
import { Failure, shown, type Scenario } from "../scenario.js";
import { itemOf } from "./core.js";

const work: Scenario = {
  name: "the turn-work projection",
  checks: ["WORK-PAGE", "WORK-ITEMS-GET", "WORK-CHANGED-NOTIFIED", "WORK-WATERMARK-MONOTONIC", "WORK-NOT-FOUND"],
  async run(ctx) {
    ctx.script([{ reply: { toolCalls: [{ tool: "shell", args: { command: "echo work" } }] } }, { reply: { text: "Work done." } }]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Do some work", { mode: "Agent" });
    await ctx.ended(turn.id);
    const opened = ctx
      .ofTurn(turn.id)
      .filter((n) => n.method === "item/started")
      .map(itemOf)
      .filter((i) => i && i.type !== "userMessage")
      .map((i) => i!.id);
    const page = await ctx.step("WORK-PAGE", async () => {
      const page = await ctx.client.turnWorkPage({ threadId: thread.id, turnId: turn.id, anchor: { kind: "newest" }, limit: 100 });
      const listed = page.items.map((w) => w.item.id);
      if (JSON.stringify(listed) !== JSON.stringify(opened))
        throw new Failure(`the page lists items ${shown(listed)}, the turn opened ${shown(opened)}`);
      return page;
    });
    await ctx.attempt("WORK-ITEMS-GET", async () => {
      const first = page.items[0];
      if (!first) throw new Failure("the page has no rows to ask for");
      const missing = ctx.id("work_missing");
      const got = await ctx.client.turnWorkItemsGet({ threadId: thread.id, turnId: turn.id, workItemIds: [first.workItemId, missing] });
      if (got.items.length !== 1 || got.items[0]?.workItemId !== first.workItemId)
        throw new Failure(`items/get returned ${shown(got.items.map((w) => w.workItemId))}, expected [${first.workItemId}]`);
      if (!got.removedWorkItemIds.includes(missing)) throw new Failure(`items/get does not list ${missing} as removed`);
      ctx.check(
        "WORK-WATERMARK-MONOTONIC",
        got.sourceHighWatermark >= page.sourceHighWatermark,
        `items/get reports watermark ${got.sourceHighWatermark}, lower than the page's ${page.sourceHighWatermark} read before it`,
      );
    });
    await ctx.attempt("WORK-CHANGED-NOTIFIED", async () => {
      await ctx.waitFor("turn/work/items/changed", (n) => n.method === "turn/work/items/changed" && n.params.turnId === turn.id);
      await ctx.waitFor("turn/work/state/changed", (n) => n.method === "turn/work/state/changed" && n.params.turnId === turn.id);
    });
    const announced = ctx
      .ofTurn(turn.id)
      .filter((n) => n.method === "turn/work/items/changed" || n.method === "turn/work/state/changed")
      .map((n) => (n.params as { sourceHighWatermark?: number }).sourceHighWatermark ?? 0);
    const highest = Math.max(0, ...announced);
    ctx.check(
      "WORK-WATERMARK-MONOTONIC",
      page.sourceHighWatermark >= highest,
      `the page reports watermark ${page.sourceHighWatermark}, lower than ${highest} announced before it`,
    );
    await ctx.attempt("WORK-NOT-FOUND", async () => {
      const missing = { threadId: thread.id, turnId: ctx.id("trn_missing") };
      await ctx.rejects(
        ctx.client.turnWorkPage({ ...missing, anchor: { kind: "newest" } }),
        "turn_not_found",
        "turn/work/page of an unknown turn",
      );
      await ctx.rejects(
        ctx.client.turnWorkItemsGet({ ...missing, workItemIds: ["work_x"] }),
        "turn_not_found",
        "turn/work/items/get of an unknown turn",
      );
    });
  },
};

export const workScenarios: readonly Scenario[] = [work];
