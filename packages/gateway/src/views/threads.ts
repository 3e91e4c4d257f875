/**
 * Threads: creating and finding them, the view of one (with its active turn), its
 * timeline of turn blocks, and finding a turn in it. Everything about a turn is read from
 * the turn log's fold.
 */
import { randomUUID } from "node:crypto";
import { protocolError } from "@turnspec/protocol/server";
import type { Thread, ThreadStartParams, ThreadTimelineBlock, ThreadTimelinePageResponse, Turn } from "@turnspec/protocol/types";
import { invalidParams } from "@turnspec/rpc";
import type { EventStore, ThreadRecord } from "../store/store.js";
import { isActive, type TurnState } from "../log/fold.js";
import type { Clock, TurnReader } from "../engine/ports.js";

export interface ThreadPorts {
  readonly log: TurnReader;
  readonly clock: Pick<Clock, "nowIso">;
  readonly store: Pick<EventStore, "getThread" | "createThread" | "turnsOfThread" | "turnThread" | "events">;
  /** The working directory of a thread started without one. */
  readonly defaultCwd: string;
}

const micros = (iso: string) => Date.parse(iso) * 1000;

export class Threads {
  constructor(private readonly ports: ThreadPorts) {}

  /** The thread; throws thread_not_found for an unknown id. */
  thread(threadId: string): ThreadRecord {
    const thread = this.ports.store.getThread(threadId);
    if (!thread) throw protocolError("thread_not_found", `Thread ${threadId} does not exist`, { thread_id: threadId });
    return thread;
  }

  /** Whether the thread exists. */
  exists(threadId: string): boolean {
    return this.ports.store.getThread(threadId) !== undefined;
  }

  create(params: Pick<ThreadStartParams, "workspace_id" | "cwd" | "model_provider" | "model" | "mode">): ThreadRecord {
    const record: ThreadRecord = {
      id: `thr_${randomUUID().replace(/-/g, "")}`,
      workspace_id: params.workspace_id ?? "ws_default",
      cwd: params.cwd ?? this.ports.defaultCwd,
      mode: params.mode ?? "Agent",
      ...(params.model_provider === undefined ? {} : { model_provider: params.model_provider }),
      ...(params.model === undefined ? {} : { model: params.model }),
      created_at: this.ports.clock.nowIso(),
    };
    this.ports.store.createThread(record);
    return record;
  }

  /** The thread's turn that is still running or blocked, if any. */
  activeTurn(threadId: string): Turn | undefined {
    for (const ref of this.ports.store.turnsOfThread(threadId).reverse()) {
      const state = this.ports.log.state(ref.turn_id);
      if (state && isActive(state.turn)) return state.turn;
    }
    return undefined;
  }

  /** The wire view of a thread: its record and its active turn. */
  view(record: ThreadRecord): Thread {
    const active = this.activeTurn(record.id);
    return { ...record, ...(active ? { active_turn_id: active.id } : {}) };
  }

  /** A turn of the thread; throws thread_not_found or turn_not_found. */
  turnOf(threadId: string, turnId: string): TurnState {
    this.thread(threadId);
    const owner = this.ports.store.turnThread(turnId);
    const state = owner === threadId ? this.ports.log.state(turnId) : undefined;
    if (!state)
      throw protocolError("turn_not_found", `Turn ${turnId} does not exist in thread ${threadId}`, {
        thread_id: threadId,
        turn_id: turnId,
      });
    return state;
  }

  /** thread/timeline/page: one block per turn, newest first across pages. */
  timelinePage(threadId: string, cursor: string | undefined, limit = 50): ThreadTimelinePageResponse {
    const refs = this.ports.store.turnsOfThread(threadId);
    // A cursor is the index (from the oldest) the next page ends before.
    const end = cursor === undefined ? refs.length : Number.parseInt(cursor, 10);
    if (!Number.isInteger(end) || end < 0 || end > refs.length) {
      throw invalidParams("thread/timeline/page", `cursor "${cursor}" is not one this gateway issued`, [
        { pointer: "/cursor", message: "is not a cursor of this thread", received: cursor },
      ]);
    }
    const start = Math.max(0, end - limit);
    const blocks = refs.slice(start, end).flatMap((ref): ThreadTimelineBlock[] => {
      // A turn registered without its first events (a start whose commit failed, on a store
      // that keeps the registration) never started: it has no block.
      const state = this.ports.log.state(ref.turn_id);
      if (!state) return [];
      const user = state.items.find((i) => i.type === "userMessage");
      const answer = [...state.items].reverse().find((i) => i.type === "agentMessage");
      const text = user?.type === "userMessage" ? user.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("\n") : undefined;
      const summary = state.turn.error?.message ?? (answer?.type === "agentMessage" ? answer.text.slice(0, 200) : undefined);
      const last = this.ports.store.events(ref.turn_id, state.lastSequence - 1, 1)[0];
      const block: ThreadTimelineBlock = {
        blockId: `blk_${ref.turn_id}`,
        kind: "turn_work",
        turnId: ref.turn_id,
        status: state.turn.status,
        createdAtUnixMicros: micros(ref.created_at),
        ...(last ? { updatedAtUnixMicros: micros(last.recorded_at) } : {}),
        ...(state.turn.completed_at ? { completedAtUnixMicros: micros(state.turn.completed_at) } : {}),
        ...(text === undefined ? {} : { userText: text }),
        ...(summary === undefined ? {} : { summary }),
        workItemCount: state.items.filter((i) => i.type !== "userMessage").length,
      };
      return [block];
    });
    return { threadId, blocks, page: { nextCursor: start > 0 ? String(start) : null, hasMore: start > 0 } };
  }
}
