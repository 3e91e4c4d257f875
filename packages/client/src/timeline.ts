/**
 * A timeline reducer for one turn's work block, following the freshness rules of the work
 * projection: it merges `turn/work/page` pages, `turn/work/items/get` refreshes and the
 * `turn/work/items/changed` / `turn/work/state/changed` notifications into one state a UI
 * renders.
 *
 * - A view is newer than another of the same `projectionVersion` when its
 *   `sourceHighWatermark` is higher, or equal with a later `projectionUpdatedAtUnixMicros`.
 *   A response or notification older than the newest one applied is ignored whole.
 * - A row never goes back: one with a lower `sourceSequence` than the row held is ignored,
 *   and a row held as completed, failed, declined or cancelled is never replaced by one
 *   in progress.
 * - Removed ids disappear (named by a refresh or a notification, or missing from a page
 *   within the range the page covers), and an older view cannot bring them back.
 * - A refresh touches only the rows it names: loaded pages stay.
 * - A view of another projection version is not merged: a page of it replaces the state;
 *   a refresh or notification of it only marks the state for reloading.
 *
 * `(state, input) => state`, with plain JSON state (no Map, no class), so it can be kept
 * in any store, persisted and compared.
 */
import type {
  TurnItemStatus,
  TurnWorkBlock,
  TurnWorkItem,
  TurnWorkItemsChangedNotification,
  TurnWorkItemsGetResponse,
  TurnWorkPageResponse,
  TurnWorkPageState,
  TurnWorkStateChangedNotification,
} from "@turnspec/protocol/types";

/** The freshness of the newest view applied. */
export interface TimelineFreshness {
  readonly projectionVersion: number;
  readonly sourceHighWatermark: number;
  readonly projectionUpdatedAtUnixMicros: number;
}

export interface TimelineState {
  readonly threadId: string;
  readonly turnId: string;
  /** Freshness of the newest view applied; null before the first. */
  readonly freshness: TimelineFreshness | null;
  /** The block summary, once a page or a state notification brought one. */
  readonly work: TurnWorkBlock | null;
  /** Loaded rows by workItemId. Render them with `timelineRows`. */
  readonly rows: Readonly<Record<string, TurnWorkItem>>;
  /** Ids a change notification named that no refresh has brought yet: fetch them with turn/work/items/get. */
  readonly staleIds: readonly string[];
  /** Pagination of the newest page applied, for loading older or newer rows. */
  readonly page: TurnWorkPageState | null;
  /** Set when a view of another projection version arrived: load the first page again. */
  readonly needsReload: boolean;
}

export type TimelineInput =
  | { readonly kind: "page"; readonly response: TurnWorkPageResponse }
  | { readonly kind: "items"; readonly response: TurnWorkItemsGetResponse }
  | { readonly kind: "items_changed"; readonly notification: TurnWorkItemsChangedNotification }
  | { readonly kind: "state_changed"; readonly notification: TurnWorkStateChangedNotification };

export function emptyTimeline(threadId: string, turnId: string): TimelineState {
  return { threadId, turnId, freshness: null, work: null, rows: {}, staleIds: [], page: null, needsReload: false };
}

const TERMINAL: ReadonlySet<TurnItemStatus> = new Set(["completed", "failed", "declined", "cancelled"]);

/** Negative when `a` is older than `b`, 0 when they are the same view, positive when newer. */
function compareFreshness(a: TimelineFreshness, b: TimelineFreshness): number {
  return a.sourceHighWatermark - b.sourceHighWatermark || a.projectionUpdatedAtUnixMicros - b.projectionUpdatedAtUnixMicros;
}

function freshnessOf(view: TimelineFreshness): TimelineFreshness {
  return {
    projectionVersion: view.projectionVersion,
    sourceHighWatermark: view.sourceHighWatermark,
    projectionUpdatedAtUnixMicros: view.projectionUpdatedAtUnixMicros,
  };
}

/** Whether `incoming` may replace `held`: never older, never from a final state back to a running one. */
function rowMayReplace(held: TurnWorkItem | undefined, incoming: TurnWorkItem): boolean {
  if (!held) return true;
  if (incoming.sourceSequence < held.sourceSequence) return false;
  return !(TERMINAL.has(held.status) && !TERMINAL.has(incoming.status));
}

function mergeRows(
  rows: Readonly<Record<string, TurnWorkItem>>,
  incoming: readonly TurnWorkItem[],
  removed: readonly string[],
): Record<string, TurnWorkItem> {
  const next: Record<string, TurnWorkItem> = { ...rows };
  for (const row of incoming) if (rowMayReplace(next[row.workItemId], row)) next[row.workItemId] = row;
  for (const id of removed) delete next[id];
  return next;
}

export function reduceTimeline(state: TimelineState, input: TimelineInput): TimelineState {
  const view = input.kind === "page" || input.kind === "items" ? input.response : input.notification;
  if (view.threadId !== state.threadId || view.turnId !== state.turnId) return state;
  const incoming = freshnessOf(view);
  const held = state.freshness;

  if (held && incoming.projectionVersion !== held.projectionVersion) {
    // Views of different versions are not comparable: only a whole page of the other version replaces the state.
    if (input.kind !== "page") return state.needsReload ? state : { ...state, needsReload: true };
    return reduceTimeline(emptyTimeline(state.threadId, state.turnId), input);
  }
  if (held && compareFreshness(incoming, held) < 0) return state;
  const freshness = incoming;

  switch (input.kind) {
    case "page": {
      const { items, work, page } = input.response;
      // Within the range a page covers it is the whole truth: a loaded row missing from it was removed.
      const gone = Object.values(state.rows).filter(
        (r) => pageCovers(input.response, r.orderKey) && !items.some((i) => i.workItemId === r.workItemId),
      );
      const rows = mergeRows(
        state.rows,
        items,
        gone.map((r) => r.workItemId),
      );
      const brought = new Set(items.map((i) => i.workItemId));
      return { ...state, freshness, work, rows, page, needsReload: false, staleIds: state.staleIds.filter((id) => !brought.has(id)) };
    }
    case "items": {
      const { items, removedWorkItemIds } = input.response;
      const rows = mergeRows(state.rows, items, removedWorkItemIds);
      const settled = new Set([...items.map((i) => i.workItemId), ...removedWorkItemIds]);
      return { ...state, freshness, rows, staleIds: state.staleIds.filter((id) => !settled.has(id)) };
    }
    case "items_changed": {
      const { changedWorkItemIds, removedWorkItemIds = [] } = input.notification;
      const rows = mergeRows(state.rows, [], removedWorkItemIds);
      const removed = new Set(removedWorkItemIds);
      const staleIds = [...new Set([...state.staleIds, ...changedWorkItemIds])].filter((id) => !removed.has(id));
      return { ...state, freshness, rows, staleIds };
    }
    case "state_changed":
      return { ...state, freshness, work: input.notification.work };
  }
}

/** Whether a row at `orderKey` falls in the range of the block that `response` is a page of. */
function pageCovers(response: TurnWorkPageResponse, orderKey: string): boolean {
  const keys = response.items.map((i) => i.orderKey).sort();
  const first = keys[0];
  const last = keys.at(-1);
  const fromStart = !response.page.hasMoreBefore || (first !== undefined && orderKey >= first);
  const toEnd = !response.page.hasMoreAfter || (last !== undefined && orderKey <= last);
  return fromStart && toEnd;
}

/** The loaded rows in display order (orderKey, oldest first). */
export function timelineRows(state: TimelineState): TurnWorkItem[] {
  return Object.values(state.rows).sort((a, b) => (a.orderKey < b.orderKey ? -1 : a.orderKey > b.orderKey ? 1 : 0));
}
