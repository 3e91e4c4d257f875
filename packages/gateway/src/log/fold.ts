/**
 * A turn's state as a fold of its persisted events. The gateway never keeps a second,
 * mutable copy of a turn: `turn/get`, the agent loop's history and restart recovery all
 * read it from here, so they agree with `turn/items` by construction.
 */
import type {
  ItemRecoveryKind,
  Turn,
  TurnExecutionWindowCounts,
  TurnExecutionWindowExhaustionReason,
  TurnItem,
  TurnPermissionApprovalRequest,
  TurnPermissionApprovalResolution,
  TurnQuestion,
  TurnQuestionResolution,
} from "@turnspec/protocol/types";
import { extensions, notifications, type AnyNotification, type NotificationName } from "@turnspec/protocol/registry";
import { appendToField } from "@turnspec/rpc";
import type { StoredEvent } from "../store/store.js";

/** An approval request of the turn, with its resolution once it has one. */
export interface RequestState {
  readonly request: TurnPermissionApprovalRequest;
  readonly resolution?: TurnPermissionApprovalResolution;
  readonly resolved_at?: string;
}

/** A question the model asked (turn/question/opened), with how it ended once it has. */
export interface QuestionState {
  readonly question: TurnQuestion;
  readonly resolution?: TurnQuestionResolution;
  readonly option_id?: string;
  readonly resolved_at?: string;
}

/** The key of a question in `TurnState.questions`: its identity within the turn is (call id, index). */
export const questionKey = (callId: string, index: number) => `${callId}#${index}`;

/** A recovery job of the turn (item/recovery_opened), open until a resume attaches to it or the turn ends. */
export interface RecoveryJobState {
  readonly recovery_job_id: string;
  readonly item_id: string;
  readonly reason: ItemRecoveryKind;
  readonly exhaustion_reason?: TurnExecutionWindowExhaustionReason;
  /** Attempts made under the job so far (item/recovery_exhausted), 0 when none were counted. */
  readonly attempts: number;
  readonly open: boolean;
}

/** An execution window of the turn (turn/execution_window/started), with what it observed once it ended. */
export interface WindowState {
  readonly window_id: string;
  readonly window_index: number;
  /** When the window's started event was recorded. */
  readonly started_at: string;
  /** Counts recorded when the window was exhausted; absent while it runs (or if it ran to the end of the turn). */
  readonly observed?: TurnExecutionWindowCounts;
}

export interface TurnState {
  /**
   * The latest turn snapshot carried by turn/started, turn/completed, turn/failed or
   * turn/blocked; a resume (item/recovery_attached) turns a Blocked snapshot back to InProgress.
   */
  readonly turn: Turn;
  /** Every item, in the order it was opened, in its latest state (deltas applied). */
  readonly items: readonly TurnItem[];
  readonly lastSequence: number;
  /** Every approval request opened in the turn, by id. */
  readonly requests: ReadonlyMap<string, RequestState>;
  /** Every question the model asked in the turn, by questionKey(call_id, index), in the order opened. */
  readonly questions: ReadonlyMap<string, QuestionState>;
  /** How many earlier messages the turn's context/compressed folded into a summary; absent when its context was not compacted. */
  readonly compacted?: number;
  /** Scope hashes approved allow_for_turn: later actions with one of them run without asking. */
  readonly grants: ReadonlySet<string>;
  /** Every recovery job of the turn, by id, in the order opened. */
  readonly jobs: ReadonlyMap<string, RecoveryJobState>;
  /** The turn's execution windows, in order; the last one is the current one. */
  readonly windows: readonly WindowState[];
}

/**
 * The item field each delta stream appends to, as the ItemDeltaStream schema states it. The
 * agent loop builds live items with the same map.
 */
export const DELTA_FIELD = extensions.ItemDeltaStream["x-appends-to-item-field"];

/**
 * The notifications whose params type declares extension keyword `key` (in its schema file)
 * with a value that `accepts` takes: how the engine reads a protocol fact about notifications
 * from the schemas instead of listing them again.
 */
export function notificationsDeclaring(key: string, accepts: (value: unknown) => boolean): ReadonlySet<NotificationName> {
  const keywordsOf: Readonly<Record<string, Readonly<Record<string, unknown>> | undefined>> = extensions;
  const names = Object.values(notifications)
    .filter((entry) => {
      const value = keywordsOf[entry.params]?.[key];
      return value !== undefined && accepts(value);
    })
    .map((entry) => entry.name);
  return new Set(names);
}

/** The events that carry the turn's whole snapshot (`x-carries-snapshot: "turn"`). */
export const TURN_SNAPSHOTS: ReadonlySet<string> = notificationsDeclaring("x-carries-snapshot", (v) => v === "turn");

/** The events that carry an item's whole snapshot (`x-carries-snapshot: "item"`). */
export const ITEM_SNAPSHOTS: ReadonlySet<string> = notificationsDeclaring("x-carries-snapshot", (v) => v === "item");

/** A notification whose params carry the turn's whole snapshot. */
export type TurnSnapshotNotification = Extract<AnyNotification, { params: { turn: Turn } }>;

/** A notification whose params carry an item's whole snapshot. */
export type ItemSnapshotNotification = Extract<AnyNotification, { params: { item_id: string; item: TurnItem } }>;

/**
 * A stored event read as the notification it is. The turn log stores only notifications it
 * has checked strictly against their params schema, so an event's method names its params'
 * type: this is the one place that says so.
 */
export function asNotification(event: StoredEvent): AnyNotification {
  return event as unknown as AnyNotification;
}

/** Whether `n` carries the turn's snapshot (TURN_SNAPSHOTS: the schemas' x-carries-snapshot, checked against the params schemas by the protocol-facts test). */
export const carriesTurn = (n: AnyNotification): n is TurnSnapshotNotification => TURN_SNAPSHOTS.has(n.method);

/** Whether `n` carries an item's snapshot (ITEM_SNAPSHOTS). */
export const carriesItem = (n: AnyNotification): n is ItemSnapshotNotification => ITEM_SNAPSHOTS.has(n.method);

/**
 * A turn's fold, kept up to date one event at a time: `apply` each event of the log in
 * order, read `state()` whenever needed. A state read is a snapshot: later events never
 * change one already handed out, and reading twice without new events costs nothing.
 */
export class TurnFold {
  private turn: Turn | undefined;
  /** Every item by id, in the order opened, as of its last snapshot; the deltas since then are in `grown`. */
  private readonly items = new Map<string, TurnItem>();
  /**
   * The deltas applied to an item since its last snapshot, per field, as pieces: a delta is
   * pushed, not copied into a new item, and the item is built once, when it is next read.
   */
  private readonly grown = new Map<string, Map<string, string[]>>();
  /** The pieces the last delta went to, while it is the latest event: the next delta of the same item and stream joins them at once. */
  private lastGrown: { readonly id: string; readonly stream: string; readonly parts: string[] } | undefined;
  private readonly requests = new Map<string, RequestState>();
  private readonly questions = new Map<string, QuestionState>();
  private readonly grants = new Set<string>();
  private readonly jobs = new Map<string, RecoveryJobState>();
  private readonly windows: WindowState[] = [];
  private compacted: number | undefined;
  private last = 0;
  private snapshot: TurnState | undefined;

  /** The latest turn snapshot (see TurnState.turn); undefined before turn/started. */
  get currentTurn(): Turn | undefined {
    return this.turn;
  }

  /** An item in its latest state (deltas applied). */
  item(itemId: string): TurnItem | undefined {
    const pieces = this.grown.get(itemId);
    return pieces === undefined ? this.items.get(itemId) : this.build(itemId, pieces);
  }

  /** Builds an item from its snapshot and the pieces appended since: one string per field, however many deltas. */
  private build(itemId: string, pieces: Map<string, string[]>): TurnItem {
    let item = this.items.get(itemId)!;
    for (const [field, parts] of pieces) item = appendToField(item, field, parts.join(""));
    this.grown.delete(itemId);
    if (this.lastGrown?.id === itemId) this.lastGrown = undefined;
    this.items.set(itemId, item);
    return item;
  }

  /** The approval request still waiting for an answer, if any. */
  openRequest(): TurnPermissionApprovalRequest | undefined {
    for (const { request, resolution } of this.requests.values()) if (resolution === undefined) return request;
    return undefined;
  }

  /** Sequence of the last event applied (0 before any). */
  get lastSequence(): number {
    return this.last;
  }

  /**
   * Applies the next event of the turn. Returns the id of the item a delta grew (a delta
   * of a stream that appends to a field, to an item the turn holds), else undefined.
   */
  apply(event: StoredEvent): string | undefined {
    this.last = event.sequence;
    this.snapshot = undefined;
    const { items, requests, grants, jobs, windows } = this;
    const params = event.params as Record<string, unknown>;
    // Deltas are most of a turn's events: they are told apart first.
    if (typeof params.delta === "string" && typeof params.stream === "string") {
      const id = params.item_id as string;
      const last = this.lastGrown;
      if (last !== undefined && last.id === id && last.stream === params.stream) {
        last.parts.push(params.delta);
        return id;
      }
      const field = deltaFieldOf(params.stream);
      if (field === undefined || !items.has(id)) return undefined;
      let pieces = this.grown.get(id);
      if (pieces === undefined) this.grown.set(id, (pieces = new Map()));
      let parts = pieces.get(field);
      if (parts === undefined) pieces.set(field, (parts = [params.delta]));
      else parts.push(params.delta);
      this.lastGrown = { id, stream: params.stream, parts };
      return id;
    }
    this.lastGrown = undefined;
    const n = asNotification(event);
    if (carriesTurn(n)) {
      this.turn = n.params.turn;
      // A turn that ends closes whatever recovery job it still had open; one that blocks keeps only the job it names.
      const keep = n.method === "turn/blocked" ? n.params.recovery_job_id : undefined;
      for (const [id, job] of jobs) if (job.open && id !== keep) jobs.set(id, { ...job, open: false });
      return undefined;
    }
    if (carriesItem(n)) {
      // A snapshot replaces the item, deltas before it included.
      this.grown.delete(n.params.item_id);
      items.set(n.params.item_id, n.params.item);
      return undefined;
    }
    switch (n.method) {
      case "item/recovery_opened": {
        const { recovery_job_id: id, item_id, reason, exhaustion_reason } = n.params;
        jobs.set(id, {
          recovery_job_id: id,
          item_id,
          reason,
          ...(exhaustion_reason ? { exhaustion_reason } : {}),
          attempts: 0,
          open: true,
        });
        break;
      }
      case "item/recovery_exhausted": {
        const job = n.params.recovery_job_id === null ? undefined : jobs.get(n.params.recovery_job_id);
        if (job) jobs.set(job.recovery_job_id, { ...job, attempts: n.params.attempts });
        break;
      }
      case "item/recovery_succeeded": {
        const job = n.params.recovery_job_id === undefined ? undefined : jobs.get(n.params.recovery_job_id);
        if (job) jobs.set(job.recovery_job_id, { ...job, open: false });
        break;
      }
      case "item/recovery_attached": {
        const job = jobs.get(n.params.recovery_job_id);
        if (job) jobs.set(job.recovery_job_id, { ...job, open: false });
        if (this.turn?.status === "Blocked") {
          const { blocked: _blocked, ...running } = this.turn;
          this.turn = { ...running, status: "InProgress" };
        }
        break;
      }
      case "turn/execution_window/started":
        windows.push({ window_id: n.params.window_id, window_index: n.params.window_index, started_at: event.recorded_at });
        break;
      case "turn/execution_window/exhausted": {
        const last = windows.at(-1);
        if (last && last.window_id === n.params.window_id) windows[windows.length - 1] = { ...last, observed: n.params.observed };
        break;
      }
      case "turn/permission/request/opened": {
        const { request } = n.params;
        requests.set(request.request_id, { request });
        break;
      }
      case "turn/permission/request/resolved": {
        const open = requests.get(n.params.request_id);
        if (open) {
          const { resolution, resolved_at } = n.params;
          requests.set(open.request.request_id, { ...open, resolution, resolved_at });
          // A sandbox escape is approved once, for that very call: never a standing grant.
          if (resolution === "allow_for_turn" && !open.request.sandbox_escape) grants.add(open.request.scope_hash);
        }
        break;
      }
      case "context/compressed":
        this.compacted = n.params.summarized_messages;
        break;
      case "turn/question/opened": {
        const { question } = n.params;
        this.questions.set(questionKey(question.call_id, question.index), { question });
        break;
      }
      case "turn/question/resolved": {
        const key = questionKey(n.params.call_id, n.params.index);
        const open = this.questions.get(key);
        if (open) {
          const { resolution, option_id, resolved_at } = n.params;
          this.questions.set(key, { ...open, resolution, ...(option_id === undefined ? {} : { option_id }), resolved_at });
        }
        break;
      }
    }
    return undefined;
  }

  /** The turn's state as of the last event applied; undefined before its turn/started. */
  state(): TurnState | undefined {
    if (this.turn === undefined) return undefined;
    if (this.snapshot) return this.snapshot;
    for (const [id, pieces] of this.grown) this.build(id, pieces);
    this.snapshot = {
      turn: this.turn,
      items: [...this.items.values()],
      lastSequence: this.last,
      requests: new Map(this.requests),
      questions: new Map(this.questions),
      ...(this.compacted === undefined ? {} : { compacted: this.compacted }),
      grants: new Set(this.grants),
      jobs: new Map(this.jobs),
      windows: [...this.windows],
    };
    return this.snapshot;
  }
}

/**
 * An item with a delta of `stream` appended to the field the stream appends to (the
 * ItemDeltaStream schema's x-appends-to-item-field); undefined when the stream appends
 * to no field of this item, which a fold then leaves unchanged.
 */
export function appendDelta(item: TurnItem, stream: string, delta: string): TurnItem | undefined {
  const field = deltaFieldOf(stream);
  return field === undefined ? undefined : appendToField(item, field, delta);
}

/** The item field a delta stream appends to; undefined for a stream the schemas do not name. */
function deltaFieldOf(stream: string): string | undefined {
  return Object.hasOwn(DELTA_FIELD, stream) ? (DELTA_FIELD as Record<string, string>)[stream] : undefined;
}

/** A turn's state folded from all its events at once. */
export function foldTurn(events: readonly StoredEvent[]): TurnState | undefined {
  const fold = new TurnFold();
  for (const event of events) fold.apply(event);
  return fold.state();
}

/** The statuses in which a turn still occupies its thread. */
export function isActive(turn: Turn): boolean {
  return turn.status === "InProgress" || turn.status === "Blocked";
}
