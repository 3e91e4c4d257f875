/**
 * The timeline reducer: table cases for each freshness rule, a property that no order or
 * duplication of stale responses ever makes the state go back, and a run against the
 * reference gateway's work projection.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { emptyTimeline, reduceTimeline, timelineRows, type TimelineInput, type TimelineState } from "../../packages/client/src/index.js";
import type { TurnItemStatus, TurnWorkBlock, TurnWorkItem, TurnWorkItemsGetResponse, TurnWorkPageResponse } from "../../generated/types.js";
import { script, startHarness, text } from "../gateway/harness.js";

const THREAD = "thr_t";
const TURN = "trn_t";
const TERMINAL = new Set<TurnItemStatus>(["completed", "failed", "declined", "cancelled"]);

/** One item's life in the projection: opened at `open`, final at `end` (with `final`), gone from `removed` on. */
interface Life {
  readonly open: number;
  readonly end: number;
  readonly final: TurnItemStatus;
  readonly removed: number | undefined;
}

function row(id: string, status: TurnItemStatus, sourceSequence: number, orderKey: string): TurnWorkItem {
  return {
    workItemId: id,
    item: { type: "systemEvent", id, status, level: "info", message: `${id} ${status}` },
    status,
    itemType: "systemEvent",
    orderKey,
    createdAtUnixMicros: 1,
    updatedAtUnixMicros: sourceSequence,
    sourceSequence,
    sourceUpdatedAtUnixMicros: sourceSequence,
  };
}

const block = (watermark: number): TurnWorkBlock => ({
  blockId: `blk_${TURN}`,
  turnId: TURN,
  presentation: { title: "Working", collapsed: false },
  state: "running",
  counts: { total: watermark, inProgress: 0, completed: 0, failed: 0 },
  cursors: { oldest: null, newest: null },
  startedAtUnixMicros: 0,
  elapsedMs: watermark,
});

/** The projection's rows at watermark `w`. */
function rowsAt(lives: readonly Life[], w: number): TurnWorkItem[] {
  return lives
    .flatMap((life, i) => {
      if (w < life.open || (life.removed !== undefined && w >= life.removed)) return [];
      const done = w >= life.end;
      return [row(`work_${i}`, done ? life.final : "in_progress", done ? life.end : life.open, String(life.open).padStart(4, "0") + i)];
    })
    .sort((a, b) => (a.orderKey < b.orderKey ? -1 : 1));
}

const freshness = (w: number, version = 1) => ({
  projectionVersion: version,
  sourceHighWatermark: w,
  projectionUpdatedAtUnixMicros: w * 1000,
});

function page(lives: readonly Life[], w: number, version = 1): TurnWorkPageResponse {
  return {
    workspaceId: "ws",
    threadId: THREAD,
    turnId: TURN,
    ...freshness(w, version),
    work: block(w),
    items: rowsAt(lives, w),
    page: { beforeCursor: null, afterCursor: null, hasMoreBefore: false, hasMoreAfter: false },
  };
}

function refresh(lives: readonly Life[], w: number, ids: readonly string[]): TurnWorkItemsGetResponse {
  const rows = rowsAt(lives, w);
  return {
    workspaceId: "ws",
    threadId: THREAD,
    turnId: TURN,
    ...freshness(w),
    items: rows.filter((r) => ids.includes(r.workItemId)),
    removedWorkItemIds: ids.filter((id) => !rows.some((r) => r.workItemId === id)),
  };
}

const lifeArb: fc.Arbitrary<Life> = fc
  .tuple(
    fc.integer({ min: 1, max: 10 }),
    fc.integer({ min: 0, max: 5 }),
    fc.constantFrom<TurnItemStatus>("completed", "failed", "declined", "cancelled"),
    fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
  )
  .map(([open, length, final, removedAfter]) => ({
    open,
    end: open + length,
    final,
    removed: removedAfter === undefined ? undefined : open + length + removedAfter,
  }));

/** Inputs a client may receive: pages and refreshes of views at any watermark up to `top`, plus change notifications. */
function inputArb(lives: readonly Life[], top: number): fc.Arbitrary<TimelineInput> {
  const ids = lives.map((_, i) => `work_${i}`);
  const w = fc.integer({ min: 1, max: top });
  return fc.oneof(
    w.map((at) => ({ kind: "page", response: page(lives, at) }) as TimelineInput),
    fc
      .tuple(w, fc.subarray(ids, { minLength: 1 }))
      .map(([at, some]) => ({ kind: "items", response: refresh(lives, at, some) }) as TimelineInput),
    fc.tuple(w, fc.subarray(ids)).map(([at, some]) => {
      const present = new Set(rowsAt(lives, at).map((r) => r.workItemId));
      return {
        kind: "items_changed",
        notification: {
          threadId: THREAD,
          turnId: TURN,
          ...freshness(at),
          changedWorkItemIds: some.filter((id) => present.has(id)),
          removedWorkItemIds: some.filter((id) => !present.has(id) && lives[Number(id.slice(5))]!.open <= at),
        },
      } as TimelineInput;
    }),
    w.map(
      (at) =>
        ({ kind: "state_changed", notification: { threadId: THREAD, turnId: TURN, ...freshness(at), work: block(at) } }) as TimelineInput,
    ),
  );
}

/** What must hold between two consecutive states, `input` being what led from one to the other. */
function checkNoRegression(before: TimelineState, input: TimelineInput, after: TimelineState): void {
  const held = before.freshness?.sourceHighWatermark ?? 0;
  const view = input.kind === "page" || input.kind === "items" ? input.response : input.notification;
  expect(after.freshness?.sourceHighWatermark ?? 0).toBeGreaterThanOrEqual(held);
  for (const [id, old] of Object.entries(before.rows)) {
    const next = after.rows[id];
    if (!next) continue;
    expect(next.sourceSequence, `${id} went back`).toBeGreaterThanOrEqual(old.sourceSequence);
    if (TERMINAL.has(old.status)) expect(next.status, `${id} left its final state`).toBe(old.status);
  }
  const stale = view.sourceHighWatermark < held;
  // A stale view adds nothing; a fresh one removes what it says is gone.
  for (const id of Object.keys(after.rows)) if (!before.rows[id]) expect(stale, `${id} was added by a stale view`).toBe(false);
  const removed =
    input.kind === "items"
      ? input.response.removedWorkItemIds
      : input.kind === "items_changed"
        ? (input.notification.removedWorkItemIds ?? [])
        : [];
  if (!stale) for (const id of removed) expect(after.rows[id], `${id} was removed but stayed`).toBeUndefined();
}

describe("timeline reducer", () => {
  const lives: Life[] = [
    { open: 1, end: 3, final: "completed", removed: undefined },
    { open: 2, end: 6, final: "failed", removed: undefined },
    { open: 4, end: 4, final: "completed", removed: 7 },
  ];

  it.each<[string, { given: TimelineInput[]; want: Record<string, TurnItemStatus>; watermark: number }]>([
    [
      "applies a page",
      {
        given: [{ kind: "page", response: page(lives, 5) }],
        want: { work_0: "completed", work_1: "in_progress", work_2: "completed" },
        watermark: 5,
      },
    ],
    [
      "ignores a page older than the one applied",
      {
        given: [
          { kind: "page", response: page(lives, 6) },
          { kind: "page", response: page(lives, 2) },
        ],
        want: { work_0: "completed", work_1: "failed", work_2: "completed" },
        watermark: 6,
      },
    ],
    [
      "merges a refresh and keeps rows it did not name",
      {
        given: [
          { kind: "page", response: page(lives, 5) },
          { kind: "items", response: refresh(lives, 6, ["work_1"]) },
        ],
        want: { work_0: "completed", work_1: "failed", work_2: "completed" },
        watermark: 6,
      },
    ],
    [
      "drops removed ids",
      {
        given: [
          { kind: "page", response: page(lives, 5) },
          { kind: "items", response: refresh(lives, 7, ["work_2"]) },
        ],
        want: { work_0: "completed", work_1: "in_progress" },
        watermark: 7,
      },
    ],
    [
      "does not bring a removed id back from an older page",
      {
        given: [
          { kind: "page", response: page(lives, 5) },
          { kind: "items", response: refresh(lives, 7, ["work_2"]) },
          { kind: "page", response: page(lives, 5) },
        ],
        want: { work_0: "completed", work_1: "in_progress" },
        watermark: 7,
      },
    ],
  ])("%s", (_name, { given, want, watermark }) => {
    const state = given.reduce(reduceTimeline, emptyTimeline(THREAD, TURN));
    expect(Object.fromEntries(timelineRows(state).map((r) => [r.workItemId, r.status]))).toEqual(want);
    expect(state.freshness?.sourceHighWatermark).toBe(watermark);
  });

  it("keeps a final row final even when a newer view carries it as running", () => {
    const final = reduceTimeline(emptyTimeline(THREAD, TURN), { kind: "page", response: page(lives, 3) });
    const regressed = { ...refresh(lives, 4, ["work_0"]), items: [row("work_0", "in_progress", 3, "00010")] };
    expect(reduceTimeline(final, { kind: "items", response: regressed }).rows.work_0?.status).toBe("completed");
  });

  it("keeps the row with the higher source sequence even when the view carrying the lower one is newer", () => {
    const state = reduceTimeline(emptyTimeline(THREAD, TURN), { kind: "page", response: page(lives, 5) });
    const lagging = {
      ...refresh(lives, 6, ["work_1"]),
      items: [
        {
          ...row("work_1", "in_progress", 1, "00021"),
          item: { type: "systemEvent" as const, id: "work_1", status: "in_progress" as const, level: "info" as const, message: "older" },
        },
      ],
    };
    expect(state.rows.work_1?.sourceSequence).toBe(2);
    expect(reduceTimeline(state, { kind: "items", response: lagging }).rows.work_1).toEqual(state.rows.work_1);
  });

  it("marks ids named by a change notification as stale until a refresh brings them", () => {
    let state = reduceTimeline(emptyTimeline(THREAD, TURN), { kind: "page", response: page(lives, 3) });
    state = reduceTimeline(state, {
      kind: "items_changed",
      notification: { threadId: THREAD, turnId: TURN, ...freshness(6), changedWorkItemIds: ["work_1"] },
    });
    expect(state.staleIds).toEqual(["work_1"]);
    // A page sent before the change, answered after it, is older and ignored.
    expect(reduceTimeline(state, { kind: "page", response: page(lives, 5) })).toBe(state);
    state = reduceTimeline(state, { kind: "items", response: refresh(lives, 6, ["work_1"]) });
    expect(state.staleIds).toEqual([]);
    expect(state.rows.work_1?.status).toBe("failed");
  });

  it("does not merge a view of another projection version: a refresh asks for a reload, a page replaces the state", () => {
    const state = reduceTimeline(emptyTimeline(THREAD, TURN), { kind: "page", response: page(lives, 5) });
    const other = { ...refresh(lives, 9, ["work_0"]), projectionVersion: 2 };
    const marked = reduceTimeline(state, { kind: "items", response: other });
    expect(marked.needsReload).toBe(true);
    expect(marked.rows).toEqual(state.rows);
    const reloaded = reduceTimeline(marked, { kind: "page", response: page(lives, 2, 2) });
    expect(reloaded).toMatchObject({ needsReload: false, freshness: { projectionVersion: 2, sourceHighWatermark: 2 } });
    expect(Object.keys(reloaded.rows)).toEqual(["work_0", "work_1"]);
  });

  it("ignores views of another turn", () => {
    const state = emptyTimeline(THREAD, "trn_other");
    expect(reduceTimeline(state, { kind: "page", response: page(lives, 5) })).toBe(state);
  });

  it("never regresses under any order and duplication of responses, and ends at the newest view it was given", () => {
    fc.assert(
      fc.property(
        fc.array(lifeArb, { minLength: 1, maxLength: 5 }).chain((ls) => {
          const top = Math.max(...ls.map((l) => (l.removed ?? l.end) + 1));
          return fc.tuple(fc.constant(ls), fc.constant(top), fc.array(inputArb(ls, top), { minLength: 1, maxLength: 25 }));
        }),
        ([ls, top, inputs]) => {
          // The newest full page arrives somewhere in the middle, duplicated at the end.
          const all: TimelineInput[] = [
            ...inputs.slice(0, inputs.length >> 1),
            { kind: "page", response: page(ls, top) },
            ...inputs.slice(inputs.length >> 1),
            { kind: "page", response: page(ls, top) },
          ];
          let state = emptyTimeline(THREAD, TURN);
          for (const input of all) {
            const next = reduceTimeline(state, input);
            checkNoRegression(state, input, next);
            expect(JSON.parse(JSON.stringify(next))).toEqual(next);
            state = next;
          }
          expect(timelineRows(state)).toEqual(rowsAt(ls, top));
          expect(state.freshness?.sourceHighWatermark).toBe(top);
        },
      ),
    );
  });

  it("follows the reference gateway's work projection through a turn", async () => {
    const h = await startHarness();
    try {
      const threadId = await h.thread();
      let state = emptyTimeline(threadId, "trn_work");
      const pages: Promise<TurnWorkPageResponse>[] = [];
      h.client.on("turn/work/items/changed", (notification) => {
        state = reduceTimeline(state, { kind: "items_changed", notification });
        pages.push(h.client.turnWorkPage({ threadId, turnId: "trn_work", anchor: { kind: "newest" } }));
      });
      h.client.on("turn/work/state/changed", (notification) => (state = reduceTimeline(state, { kind: "state_changed", notification })));
      const input = text(
        script(
          { tool: "shell", args: { command: "echo one" } },
          { tool: "shell", args: { command: "echo two" } },
          { say: "Two commands ran." },
        ),
      );
      expect((await h.runTurn({ thread_id: threadId, turn_id: "trn_work", input })).method).toBe("turn/completed");
      // Pages answered in reverse order: the older ones must not undo the newer.
      for (const response of (await Promise.all(pages)).reverse()) state = reduceTimeline(state, { kind: "page", response });
      const latest = await h.client.turnWorkPage({ threadId, turnId: "trn_work", anchor: { kind: "newest" } });
      state = reduceTimeline(state, { kind: "page", response: latest });
      expect(timelineRows(state)).toEqual(latest.items);
      expect(timelineRows(state).map((r) => [r.itemType, r.status])).toEqual([
        ["commandExecution", "completed"],
        ["commandExecution", "completed"],
        ["agentMessage", "completed"],
      ]);
      expect(state.work?.state).toBe("completed");
      expect(state.staleIds).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
