/**
 * The event store: the reference gateway's single source of truth. Threads are records;
 * everything that happens in a turn is an event, appended with a per-turn sequence that
 * is strictly increasing without gaps, before it is sent to any client. A turn's state is
 * a fold of its events (see log/fold.ts), so a restart, `turn/items` and the live
 * stream agree by construction.
 *
 * The API is synchronous: SQLite (better-sqlite3) and memory both answer at once, and
 * appends from one process are serialized by the event loop.
 *
 * Writes become durable at a commit, which need not be the call that made them: the
 * SQLite store commits the appends of one turn of the event loop together (group
 * commit). Reads through the same store see a write at once. What tells anyone else
 * about a write (a frame to a client) waits for `afterCommit`.
 */

import type { AgentDelegationRouteProjection, Thread } from "@turnspec/protocol/types";
import type { StoreError } from "./errors.js";

/** A thread as stored: the wire `Thread` without what is derived from its turns (the active turn). */
export type ThreadRecord = Readonly<Omit<Thread, "active_turn_id">>;

/** One persisted event of a turn: a notification exactly as it was (or will be) sent. */
export interface StoredEvent {
  readonly thread_id: string;
  readonly turn_id: string;
  /** 1, 2, 3, … per turn, without gaps. */
  readonly sequence: number;
  /** The notification method, e.g. `item/agent_message/delta`. */
  readonly method: string;
  /** The notification params, including their own `sequence` field. */
  readonly params: Record<string, unknown>;
  /** The params as the JSON text that is stored: what a frame carries, never serialised again. */
  readonly paramsJson: string;
  /** RFC 3339 time the event was appended. */
  readonly recorded_at: string;
}

/** The turns of a thread in creation order, with the time each was created. */
export interface TurnRef {
  readonly turn_id: string;
  readonly thread_id: string;
  readonly created_at: string;
}

/** A delegation route as stored: its projection (status as last written) and where it sits. */
export interface RouteRecord {
  /** The projection as last written (the wire type); `status` "expired" is derived on read, never stored. */
  readonly route: AgentDelegationRouteProjection;
  /** Creation order, 1, 2, 3, … across all routes: the stable order of agent/route/list. */
  readonly ordinal: number;
}

/** What an idempotency key was first used for. */
export interface IdempotencyRecord {
  /** `agent/route/create` or `agent/route/revoke`. */
  readonly operation: string;
  /** A digest of the request's params (without the key), to tell a repeat from a conflict. */
  readonly params_digest: string;
  /** The route the first request created or revoked. */
  readonly route_id: string;
}

/**
 * What a store shared by several gateway processes (PostgreSQL) adds: the live events of
 * the other instances, decisions about a thread taken one instance at a time, and leases
 * saying which instance runs a turn. A store one process owns (memory, SQLite) has none.
 */
export interface SharedStore {
  /** This process's id among the instances sharing the store, unique per opening. */
  readonly instanceId: string;
  /**
   * The secret the instances sign resolve and answer tokens with, the same for all of
   * them (drawn once and kept in the store), so a token minted by one checks on another.
   */
  tokenSecret(): string;
  /**
   * Decides, once for all instances, who records the resolution of a request or question
   * (`subject`) of a turn: true for the first caller, false for every later one, even
   * while the first is not yet committed. Held with this instance's writes: a failed
   * commit frees it again. With `generation` (the claimer runs the turn under it), a claim
   * whose generation is no longer the turn's current one is refused (StoreError
   * "turn_fenced") under the same lock, and the subject stays free for the turn's holder.
   */
  claimResolution(turnId: string, subject: string, generation?: number): boolean;
  /**
   * Calls `listener` for each commit of another instance, per turn it appended to, with
   * the first and last sequence it appended (a commit of many events may come as several
   * consecutive ranges), in commit order. Resolves once it listens: a commit after that is
   * never missed while the connection holds.
   */
  watch(listener: CommitListener): Promise<void>;
  /**
   * Holds other instances off the thread until the writes this one made so far are
   * committed: an instance deciding the same thing (has the thread an active turn?) waits
   * for this one's decision, and then reads it.
   */
  lockThread(threadId: string): void;
  /**
   * Holds other instances off the routes of a workspace until this instance's writes so
   * far are committed: a route create reads the live routes (cycle check, per-source
   * limit) and writes its route as one decision, which another instance's create waits for.
   */
  lockRoutes(workspaceId: string): void;
  /**
   * Renews the leases of `turnIds` this instance holds; returns those it still holds (a
   * lease another instance took over is gone). A lease of a turn not named, one nothing
   * here runs any more, is left to expire, and another instance then blocks its turn.
   */
  renewLeases(ttlMs: number, turnIds: readonly string[]): string[];
  /** Gives a turn's lease up, when this instance no longer runs it. */
  releaseTurn(turnId: string): void;
  /** Turns whose lease has expired: the instance that ran them stopped renewing (it died). */
  expiredLeases(): string[];
  /** Asks every other instance to cancel a turn (the one running it does); sent once this instance's writes so far are committed. */
  requestCancel(turnId: string, reason: string): void;
  /** Calls `listener` for each cancel another instance asked for. */
  onCancelRequest(listener: (turnId: string, reason: string) => void): void;
}

/**
 * Told of events another instance committed: the turn and the range of sequences, with
 * the events themselves when the announcement carried them (then no read is needed).
 */
export type CommitListener = (turnId: string, first: number, last: number, events?: readonly StoredEvent[]) => void;

export interface EventStore {
  /** Present when several gateway processes share the store. */
  readonly shared?: SharedStore;

  /** Stores a new thread. Throws if the id exists. */
  createThread(thread: ThreadRecord): void;
  getThread(id: string): ThreadRecord | undefined;

  /**
   * Registers a new turn in a thread; returns false (and changes nothing) if the turn id is
   * already used anywhere. Durable at the same commit as the events appended right after
   * it: a commit that fails loses the turn with its first events, and its id is free again.
   */
  createTurn(threadId: string, turnId: string, createdAt: string): boolean;
  /** The thread a turn belongs to, or undefined for an unknown turn. */
  turnThread(turnId: string): string | undefined;
  /** The turns of a thread, oldest first. */
  turnsOfThread(threadId: string): TurnRef[];
  /** Every turn of every thread, oldest first (a gateway walks them once at start-up). */
  allTurns(): TurnRef[];

  /**
   * Appends the next event of a turn. `build` receives the sequence the event gets and
   * returns its params (which carry that sequence); the event is stored atomically with
   * it. Throws for an unknown turn. The event is durable once `afterCommit` says so; a
   * commit that fails loses it (and every write it grouped), and its sequence is given
   * again by the next append to the turn. With `generation` (see claimTurn) the append is
   * refused, "turn_fenced", unless it is the turn's current one; without, it is not fenced
   * by generation (a write made for a request, not by a run). The event returned carries, as its params, the
   * very object `build` returned (its JSON text is what is stored): the caller must not
   * change it afterwards.
   */
  append(turnId: string, method: string, build: (sequence: number) => Record<string, unknown>, generation?: number): StoredEvent;
  /**
   * Takes a turn for a run of this process and returns the run's generation, its fencing
   * token: higher than every generation the turn had before. Every write the run makes
   * carries it (append's `generation`), and the store refuses one whose generation is no
   * longer the turn's current one (StoreError "turn_fenced") in the same step that would
   * store it, so a run another claim replaced writes nothing more, however late it wakes.
   * On a shared store the claim is the turn's lease, taken for `ttlMs` and kept by
   * SharedStore.renewLeases: undefined while another instance holds an unexpired one; a
   * claim by the lease's holder renews it and still gives a new generation. A store one
   * process owns has no other claimant, so its claims always succeed (and never expire).
   */
  claimTurn(turnId: string, ttlMs: number): number | undefined;
  /**
   * The durability barrier: runs `fn` once every write made so far is committed, at once
   * when none is waiting, and callbacks in the order they were registered. When that
   * commit failed, `fn` gets its error (a StoreError "commit_failed") and the writes it
   * held are gone: nothing that reports them may be sent.
   */
  afterCommit(fn: (failure?: StoreError) => void): void;
  /**
   * Which commit a callback registered now with afterCommit would wait for: a value that is
   * the same for callbacks that run together, with one outcome, and between which no other
   * callback runs but those registered in between; undefined when a callback registered
   * now would run at once, or when the store does not say. A CommitQueue waits once per
   * such commit, however many values it queues behind it.
   */
  pendingCommit?(): object | undefined;
  /** Events of a turn with a sequence above `afterSequence` (default 0), oldest first, at most `limit`. */
  events(turnId: string, afterSequence?: number, limit?: number): StoredEvent[];
  /** The highest sequence of a turn, 0 when it has none. */
  lastSequence(turnId: string): number;

  /** Stores a new route; throws if its id exists. Returns it with its ordinal. */
  insertRoute(route: RouteRecord["route"]): RouteRecord;
  /**
   * Replaces a route if its stored generation is still `expectedGeneration`; returns
   * false (and changes nothing) otherwise. The compare and the write are one atomic step.
   */
  updateRoute(route: RouteRecord["route"], expectedGeneration: number): boolean;
  getRoute(routeId: string): RouteRecord | undefined;
  /** Routes of one source execution in creation order, after `afterOrdinal` (default 0), at most `limit`. */
  routesBySource(sourceExecutionId: string, afterOrdinal?: number, limit?: number): RouteRecord[];
  /** Every route, in creation order (the graph validator reads the live ones). */
  allRoutes(): RouteRecord[];

  /** The record of an idempotency key, scoped by operation, or undefined when unused. */
  getIdempotency(operation: string, key: string): IdempotencyRecord | undefined;
  /** Records a key's first use; returns false (and changes nothing) if the key was already recorded for the operation. */
  putIdempotency(key: string, record: IdempotencyRecord): boolean;

  /** A small persisted setting of the gateway (policy generations, configuration digests), or undefined. */
  getMeta(key: string): string | undefined;
  setMeta(key: string, value: string): void;

  close(): void;
}
