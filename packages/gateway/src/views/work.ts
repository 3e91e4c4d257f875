/**
 * The work view of one turn (turn/work/page, turn/work/items/get and the
 * turn/work/items/changed and turn/work/state/changed notifications): a pure projection of
 * the turn's persisted events into wire objects. Like fold.ts it is kept up to date one
 * event at a time (WorkFold), from the same events in the same order as the turn's fold, so
 * it agrees with turn/items and turn/get by construction; a page or a lookup costs what it
 * returns, not what the turn holds.
 *
 * Every TurnItem of the turn except the user's message is one work row; rows are ordered
 * by the sequence of the event that opened them, so a running turn only ever appends rows
 * at the newest end and a cursor, once issued, keeps naming the same place.
 */
import type {
  Turn,
  TurnItem,
  TurnWorkBlock,
  TurnWorkBlockPresentation,
  TurnWorkBlockState,
  TurnWorkItem,
  TurnWorkPageParams,
  TurnWorkPageState,
} from "@turnspec/protocol/types";
import { parseRfc3339 } from "../routes/rfc3339.js";
import type { StoredEvent } from "../store/store.js";
import { asNotification, carriesItem, TURN_SNAPSHOTS, TurnFold } from "../log/fold.js";
import type { FoldedTurn } from "../log/turn-log.js";

/**
 * Version of the rules that build this view (which items are rows, how they are ordered,
 * how state and counts are derived). Views of different versions are never merged: a
 * client holding another version reloads. Within one version, sourceHighWatermark (then
 * projectionUpdatedAtUnixMicros) says which of two views is newer. Bump it whenever a rule
 * here changes what an existing log projects to; cursors carry it, so a cursor from
 * another version is refused instead of silently pointing elsewhere.
 */
export const PROJECTION_VERSION = 1;

/** Page size when turn/work/page names no limit. */
export const DEFAULT_WORK_PAGE_LIMIT = 50;

/** The freshness fields of a work view, named as the responses and notifications carry them. */
export interface WorkFreshness {
  readonly projectionVersion: number;
  /** Sequence of the last event folded in (0 before any). */
  readonly sourceHighWatermark: number;
  /** recorded_at of that event in µs, never below an earlier event's (see projectWork). */
  readonly projectionUpdatedAtUnixMicros: number;
}

/** The work view of one turn: its block summary and every row, oldest first. */
export interface WorkProjection {
  readonly workspaceId: string;
  readonly threadId: string;
  readonly turnId: string;
  readonly block: TurnWorkBlock;
  readonly items: readonly TurnWorkItem[];
  /** Index in `items` of each row, by work item id. */
  readonly indexById: ReadonlyMap<string, number>;
  readonly freshness: WorkFreshness;
}

/** A page of rows and where to go on from it. */
export interface WorkPage {
  readonly items: TurnWorkItem[];
  readonly page: TurnWorkPageState;
}

/**
 * A cursor this gateway did not issue for this turn's work (malformed, of another turn or
 * projection version, or naming no row). Local: the turn/work/page handler reports it as
 * -32602 at `pointer`.
 */
export class WorkCursorError extends Error {
  readonly pointer = "/anchor/cursor";
  constructor(
    readonly cursor: string,
    why: string,
  ) {
    super(`cursor "${cursor}" ${why}`);
    this.name = "WorkCursorError";
  }
}

const TERMINAL: ReadonlySet<Turn["status"]> = new Set(["Completed", "Failed", "Interrupted"]);
const TITLE_LENGTH = 80;
const SUBTITLE_LENGTH = 160;
const FALLBACK_TITLE = "Turn work";

/** Where a row came from in the log. */
interface RowSource {
  /** The item as of its last snapshot, or as of the last read when `grown`. */
  item: TurnItem;
  /** Deltas grew the item since `item` was taken: the turn's fold builds it when the row is next read. */
  grown?: boolean;
  openedSequence: number;
  openedAt: number;
  lastSequence: number;
  lastAt: number;
}

/**
 * A turn's work view, kept up to date one event at a time. `apply` every event of the turn
 * in order; `view()` is the current view (its rows array is live: read it before the next
 * apply); `takeChanged()` names the rows changed since it was last called.
 */
export class WorkFold {
  /** The turn's own fold: the block's state comes from it, so it cannot disagree with turn/get. */
  readonly turn = new TurnFold();
  private readonly rows = new Map<string, RowSource>();
  private readonly items: TurnWorkItem[] = [];
  private readonly indexById = new Map<string, number>();
  private readonly counts = { total: 0, inProgress: 0, completed: 0, failed: 0 };
  private title = FALLBACK_TITLE;
  private userMessageSeen = false;
  /** Rows whose source changed since their TurnWorkItem was last built: built when next read. */
  private readonly stale = new Set<number>();
  private readonly sources: RowSource[] = [];
  private startedAt: number | undefined;
  private lastSnapshotAt = 0;
  private updatedAt = 0;
  private changed = new Set<string>();
  /** The row the last delta grew while it is marked stale and changed (and no other event came since): the next delta to it only moves its end. */
  private lastGrown: { readonly id: string; readonly row: RowSource } | undefined;

  constructor(private readonly ids: FoldedTurn) {}

  apply(event: StoredEvent): void {
    if (event.turn_id !== this.ids.turnId) {
      throw new Error(`the work view of turn ${this.ids.turnId} was given event ${event.sequence} of turn ${event.turn_id}`);
    }
    const grew = this.turn.apply(event);
    const at = unixMicros(event);
    // The clock may step back between appends; the projection time must not, or a newer
    // view would look older than the one a client already holds.
    this.updatedAt = Math.max(this.updatedAt, at);
    if (grew !== undefined) {
      // A delta (most of a turn's events): the row it grew is marked, and built when next read.
      const last = this.lastGrown;
      if (last !== undefined && last.id === grew) {
        last.row.grown = true;
        last.row.lastSequence = event.sequence;
        last.row.lastAt = at;
        return;
      }
      const row = this.rows.get(grew);
      if (row === undefined) return;
      row.grown = true;
      row.lastSequence = event.sequence;
      row.lastAt = at;
      const index = this.indexById.get(grew);
      // The user's message is no row (see below).
      if (index === undefined) return;
      this.stale.add(index);
      this.changed.add(grew);
      this.lastGrown = { id: grew, row };
      return;
    }
    this.lastGrown = undefined;
    if (TURN_SNAPSHOTS.has(event.method)) {
      this.startedAt ??= at;
      this.lastSnapshotAt = at;
    }
    const row = applyItemEvent(this.rows, event, at);
    if (row === undefined) return;
    const { id, source, was } = row;
    // The user's message heads the turn in the thread timeline already; the work block
    // holds what the assistant did about it.
    if (source.item.type === "userMessage") {
      if (!this.userMessageSeen) this.title = titleOf(source.item);
      this.userMessageSeen = true;
      return;
    }
    const index = this.indexById.get(id);
    if (index === undefined) {
      this.indexById.set(id, this.items.length);
      this.sources.push(source);
      this.items.push(rowOf(id, source));
      this.counts.total++;
      count(this.counts, source.item.status, +1);
    } else {
      // A delta changes the row's text, not its status: the row is rebuilt when it is next read.
      if (was !== undefined && was !== source.item.status) {
        count(this.counts, was, -1);
        count(this.counts, source.item.status, +1);
      }
      this.stale.add(index);
    }
    this.changed.add(id);
  }

  /** Rebuilds the rows changed since they were last read, each with its item as the turn's fold has it now. */
  private refresh(): void {
    for (const index of this.stale) {
      const id = this.items[index]!.workItemId;
      const source = this.sources[index]!;
      if (source.grown) {
        source.item = this.turn.item(id)!;
        source.grown = false;
      }
      this.items[index] = rowOf(id, source);
    }
    this.stale.clear();
    this.lastGrown = undefined;
  }

  /** The ids of the rows opened or changed since the last call, in row order. */
  takeChanged(): string[] {
    this.refresh();
    const changed = [...this.changed].sort((a, b) => this.indexById.get(a)! - this.indexById.get(b)!);
    this.changed = new Set();
    this.lastGrown = undefined;
    return changed;
  }

  /** The view as of the last event applied; undefined while the log holds no turn/started. */
  view(): WorkProjection | undefined {
    const turn = this.turn.currentTurn;
    if (turn === undefined || this.startedAt === undefined) return undefined;
    this.refresh();
    const { turnId } = this.ids;
    const items = this.items;
    const openRequest = this.turn.openRequest();
    const blockState = blockStateOf(turn, openRequest !== undefined);
    const endedAt = TERMINAL.has(turn.status) ? this.lastSnapshotAt : undefined;
    const block: TurnWorkBlock = {
      blockId: `blk_${turnId}`,
      turnId,
      presentation: presentationOf(blockState, this.title, turn, openRequest),
      state: blockState,
      counts: { ...this.counts },
      cursors: {
        oldest: items.length ? cursorOf(turnId, items[0]!.orderKey) : null,
        newest: items.length ? cursorOf(turnId, items[items.length - 1]!.orderKey) : null,
      },
      startedAtUnixMicros: this.startedAt,
      ...(endedAt === undefined ? {} : { endedAtUnixMicros: endedAt }),
      elapsedMs: Math.max(0, Math.floor(((endedAt ?? this.updatedAt) - this.startedAt) / 1000)),
    };
    return {
      ...this.ids,
      block,
      items,
      indexById: this.indexById,
      freshness: {
        projectionVersion: PROJECTION_VERSION,
        sourceHighWatermark: this.turn.lastSequence,
        projectionUpdatedAtUnixMicros: this.updatedAt,
      },
    };
  }
}

/** Adds `by` to the count `status` falls under. */
function count(counts: { inProgress: number; completed: number; failed: number }, status: TurnWorkItem["status"], by: 1 | -1): void {
  if (status === "in_progress") counts.inProgress += by;
  else if (status === "completed") counts.completed += by;
  else counts.failed += by; // failed, declined, cancelled: ended without succeeding
}

/** A new turn's work fold: what the gateway's turn log keeps of each turn (TurnLogPorts.newFold). */
export function workFoldOf(turn: FoldedTurn): WorkFold {
  return new WorkFold(turn);
}

/**
 * Projects a turn's events (all of them, oldest first, as the store returns them) into its
 * work view, a snapshot no later event changes; undefined while the log holds no turn/started.
 */
export function projectWork(
  events: readonly StoredEvent[],
  ids: { readonly workspaceId: string; readonly threadId: string; readonly turnId: string },
): WorkProjection | undefined {
  const fold = new WorkFold(ids);
  for (const event of events) fold.apply(event);
  const view = fold.view();
  return view && { ...view, items: [...view.items], indexById: new Map(view.indexById) };
}

/**
 * Applies an item snapshot to the rows exactly as the turn's fold applies it to the turn's
 * items, and records it as the row's latest source; returns the row it changed. A row is
 * opened by the first event naming its item. (A delta is applied by WorkFold.apply, when
 * the turn's fold says it grew an item: the fold drops the others, so they change nothing
 * a client could see.)
 */
function applyItemEvent(
  rows: Map<string, RowSource>,
  event: StoredEvent,
  at: number,
): { id: string; source: RowSource; was?: TurnItem["status"] } | undefined {
  const n = asNotification(event);
  if (!carriesItem(n)) return undefined;
  const { item_id: id, item } = n.params;
  const row = rows.get(id);
  if (!row) {
    const source = { item, openedSequence: event.sequence, openedAt: at, lastSequence: event.sequence, lastAt: at };
    rows.set(id, source);
    return { id, source };
  }
  const was = row.item.status;
  row.item = item;
  row.grown = false;
  row.lastSequence = event.sequence;
  row.lastAt = at;
  return { id, source: row, was };
}

/** The wire row of a source. */
function rowOf(workItemId: string, source: RowSource): TurnWorkItem {
  return {
    workItemId,
    item: source.item,
    status: source.item.status,
    itemType: source.item.type,
    orderKey: orderKeyOf(source.openedSequence),
    createdAtUnixMicros: source.openedAt,
    updatedAtUnixMicros: source.lastAt,
    sourceSequence: source.lastSequence,
    sourceUpdatedAtUnixMicros: source.lastAt,
  };
}

function blockStateOf(turn: Turn, requestOpen: boolean): TurnWorkBlockState {
  switch (turn.status) {
    case "InProgress":
      return requestOpen ? "awaiting_approval" : "running";
    case "Blocked":
      return "blocked";
    case "Completed":
      return "completed";
    case "Failed":
      return "failed";
    case "Interrupted":
      return "interrupted";
  }
}

/** The block's title: the start of the user's first non-blank text, on one line. */
function titleOf(userMessage: TurnItem | undefined): string {
  const firstText =
    userMessage?.type === "userMessage" ? userMessage.content.find((c) => c.type === "text" && c.text.trim() !== "") : undefined;
  return firstText?.type === "text" ? shorten(firstText.text, TITLE_LENGTH) : FALLBACK_TITLE;
}

function presentationOf(
  state: TurnWorkBlockState,
  title: string,
  turn: Turn,
  openRequest: { summary?: string; reason: string } | undefined,
): TurnWorkBlockPresentation {
  // The subtitle says what the user may need to act on or know; a plain running or
  // completed block needs none.
  const subtitle =
    state === "awaiting_approval" && openRequest
      ? `Waiting for approval: ${openRequest.summary ?? openRequest.reason}`
      : state === "blocked" && turn.blocked
        ? `Blocked: ${turn.blocked.reason}`
        : (state === "failed" || state === "interrupted") && turn.error
          ? turn.error.message
          : undefined;
  return {
    title,
    ...(subtitle === undefined ? {} : { subtitle: shorten(subtitle, SUBTITLE_LENGTH) }),
    // Folded once there is nothing left to look at: a completed or interrupted turn. A
    // failed or blocked one stays open, since its last rows explain what went wrong.
    collapsed: state === "completed" || state === "interrupted",
  };
}

/** One line of at most `max` characters (code points, so no emoji is cut in half). */
function shorten(text: string, max: number): string {
  // Only the start can show: a long text is cut (generously, for whitespace runs) before it is normalised.
  const line = [
    ...text
      .slice(0, max * 8)
      .replace(/\s+/g, " ")
      .trim(),
  ];
  return line.length <= max
    ? line.join("")
    : `${line
        .slice(0, max - 1)
        .join("")
        .trimEnd()}…`;
}

// Sequences are padded so that plain string comparison orders rows, as the schema
// promises; 12 digits outlast any turn's log.
const ORDER_KEY_DIGITS = 12;
const ORDER_KEY = new RegExp(`^\\d{${ORDER_KEY_DIGITS}}$`);

function orderKeyOf(sequence: number): string {
  return String(sequence).padStart(ORDER_KEY_DIGITS, "0");
}

/**
 * Cursors are opaque to clients. They carry the projection version and the turn, so a
 * cursor of another version or turn is refused rather than read as a position here.
 */
function cursorOf(turnId: string, orderKey: string): string {
  return Buffer.from(`${PROJECTION_VERSION}:${turnId}:${orderKey}`, "utf8").toString("base64url");
}

/** The index in `projection.items` of the row a cursor names; throws WorkCursorError otherwise. */
function indexOfCursor(projection: WorkProjection, cursor: string): number {
  // Node's base64url decoder skips characters it does not know; re-encoding catches them.
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  if (cursor === "" || Buffer.from(text, "utf8").toString("base64url") !== cursor) {
    throw new WorkCursorError(cursor, "is not a turn work cursor");
  }
  const first = text.indexOf(":");
  const last = text.lastIndexOf(":");
  const orderKey = text.slice(last + 1);
  if (first < 0 || first === last || !ORDER_KEY.test(orderKey)) throw new WorkCursorError(cursor, "is not a turn work cursor");
  const version = text.slice(0, first);
  if (version !== String(PROJECTION_VERSION)) {
    throw new WorkCursorError(
      cursor,
      `was issued by projection version ${version}, not ${PROJECTION_VERSION}; reload the work from an end`,
    );
  }
  const turnId = text.slice(first + 1, last);
  if (turnId !== projection.turnId) throw new WorkCursorError(cursor, `belongs to turn ${turnId}, not ${projection.turnId}`);
  // Rows are sorted by orderKey (the sequence that opened them): a binary search finds it.
  const rows = projection.items;
  let low = 0;
  let high = rows.length - 1;
  let index = -1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const key = rows[middle]!.orderKey;
    if (key === orderKey) {
      index = middle;
      break;
    }
    if (key < orderKey) low = middle + 1;
    else high = middle - 1;
  }
  if (index < 0) throw new WorkCursorError(cursor, `names no work item of turn ${projection.turnId}`);
  return index;
}

/**
 * One page of rows, always oldest first. `before`/`after` pages exclude the cursor's own
 * row. The page's cursors are those of its first and last rows (null only for an empty
 * page), so a client can keep paging newer after hasMoreAfter was false and the running
 * turn has appended rows.
 */
export function pageWork(projection: WorkProjection, params: TurnWorkPageParams): WorkPage {
  const rows = projection.items;
  const limit = params.limit ?? DEFAULT_WORK_PAGE_LIMIT;
  let start: number;
  let end: number; // exclusive
  switch (params.anchor.kind) {
    case "newest":
      end = rows.length;
      start = Math.max(0, end - limit);
      break;
    case "oldest":
      start = 0;
      end = Math.min(rows.length, limit);
      break;
    case "before":
      end = indexOfCursor(projection, params.anchor.cursor);
      start = Math.max(0, end - limit);
      break;
    case "after":
      start = indexOfCursor(projection, params.anchor.cursor) + 1;
      end = Math.min(rows.length, start + limit);
      break;
  }
  const items = rows.slice(start, end);
  return {
    items,
    page: {
      beforeCursor: items.length ? cursorOf(projection.turnId, items[0]!.orderKey) : null,
      afterCursor: items.length ? cursorOf(projection.turnId, items[items.length - 1]!.orderKey) : null,
      hasMoreBefore: start > 0,
      hasMoreAfter: end < rows.length,
    },
  };
}

/**
 * The current rows for the requested ids, in row order, and the requested ids that name no
 * row (never one, or the user's message, which is not a row). Each id is answered once.
 */
export function workItemsGet(projection: WorkProjection, ids: readonly string[]): { items: TurnWorkItem[]; removedWorkItemIds: string[] } {
  const wanted = [...new Set(ids)];
  const found = wanted
    .map((id) => projection.indexById.get(id))
    .filter((index) => index !== undefined)
    .sort((a, b) => a - b);
  const removedWorkItemIds = wanted.filter((id) => !projection.indexById.has(id));
  return { items: found.map((index) => projection.items[index]!), removedWorkItemIds };
}

/**
 * Ids of the rows of `after` that are new or were changed by a later source event than in
 * `before`, in row order: what turn/work/items/changed names.
 */
export function changedWorkItemIds(before: WorkProjection | undefined, after: WorkProjection): string[] {
  const seen = new Map(before?.items.map((row) => [row.workItemId, row.sourceSequence]));
  return after.items.filter((row) => seen.get(row.workItemId) !== row.sourceSequence).map((row) => row.workItemId);
}

/**
 * Whether turn/work/state/changed is due: the block summary differs in anything but
 * elapsedMs. Elapsed time moves with every event of a running turn, so counting it would
 * send a state notification per output delta; clients tick it themselves from
 * startedAtUnixMicros.
 */
export function blockChanged(before: Pick<WorkProjection, "block"> | undefined, after: Pick<WorkProjection, "block">): boolean {
  if (!before) return true;
  const { elapsedMs: _a, ...was } = before.block;
  const { elapsedMs: _b, ...now } = after.block;
  return !sameJson(was, now);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every((k) => Object.hasOwn(b, k) && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

/** recorded_at of an event in µs since the epoch, keeping any sub-millisecond digits. */
let lastRecordedAt = "";
let lastMicros = 0;

function unixMicros(event: StoredEvent): number {
  // Events recorded in the same instant share their time: the last one read is kept.
  if (event.recorded_at === lastRecordedAt) return lastMicros;
  lastMicros = parseUnixMicros(event);
  lastRecordedAt = event.recorded_at;
  return lastMicros;
}

function parseUnixMicros(event: StoredEvent): number {
  const ms = parseRfc3339(event.recorded_at);
  if (ms === undefined)
    throw new Error(`event ${event.sequence} of turn ${event.turn_id} has recorded_at "${event.recorded_at}", not an RFC 3339 date-time`);
  const fraction = /\.(\d+)/.exec(event.recorded_at)?.[1] ?? "";
  return ms * 1000 + Number(fraction.padEnd(6, "0").slice(3, 6));
}
