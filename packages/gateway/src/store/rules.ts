/**
 * The rules both event stores enforce, written once so the memory store used in tests
 * cannot drift from the SQLite store the gateway runs on: the local error they throw,
 * the paging arguments they accept, and how params and route projections are turned
 * into stored text.
 */
import type { IdempotencyRecord, RouteRecord } from "./store.js";

export { isTurnFenced, StoreError, type StoreErrorKind } from "./errors.js";
import { StoreError } from "./errors.js";

/**
 * Checks the paging arguments of a read (`events()`, `routesBySource()`); `limit`
 * undefined means no limit. `what` names the read in the message, e.g. "events of turn trn_1".
 */
export function checkPaging(what: string, afterName: string, after: number, limit: number | undefined): void {
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new StoreError("invalid_argument", `${what}: ${afterName} must be an integer >= 0, got ${String(after)}`);
  }
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
    throw new StoreError("invalid_argument", `${what}: limit must be an integer >= 0, got ${String(limit)}`);
  }
}

/**
 * Turns the params `build` returned into the JSON text that is stored. The text, not the
 * object, is the event: `append` hands back its parse, so what is sent live is exactly
 * what a replay reads later (an `undefined` field or a Date would otherwise differ).
 *
 * Not every turn notification has a `sequence` (the projection notifications do not),
 * so a missing one is accepted; a different one is a bug in the caller and is refused.
 */
export function encodeParams(turnId: string, method: string, sequence: number, params: unknown): string {
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    throw new StoreError(
      "invalid_params",
      `append ${method} to turn ${turnId}: build must return a params object, got ${describe(params)}`,
    );
  }
  const own = (params as Record<string, unknown>).sequence;
  if (own !== undefined && own !== sequence) {
    throw new StoreError(
      "invalid_params",
      `append ${method} to turn ${turnId}: params.sequence is ${JSON.stringify(own)} but the event's sequence is ${sequence}`,
    );
  }
  if (params === presetParams) {
    const preset = presetText;
    presetParams = undefined;
    presetText = "";
    return preset;
  }
  let text: string;
  try {
    text = JSON.stringify(params);
  } catch (error) {
    throw new StoreError(
      "invalid_params",
      `append ${method} to turn ${turnId}: params are not JSON-serializable: ${(error as Error).message}`,
    );
  }
  return text;
}

let presetParams: object | undefined;
let presetText = "";

/**
 * Tells the store that `params`, the object a build is about to return, serialise to
 * `text` (which must be exactly what JSON.stringify gives for them): its encodeParams then
 * keeps that text instead of serialising the object again. For a builder that makes the
 * text cheaper than JSON.stringify can, from parts it already holds (TurnLog's deltas).
 * One object at a time: the next build's preset replaces it.
 */
export function presetEncoding<T extends object>(params: T, text: string): T {
  presetParams = params;
  presetText = text;
  return params;
}

export function decodeParams(text: string): Record<string, unknown> {
  return JSON.parse(text) as Record<string, unknown>;
}

/** A route projection as it is stored: its JSON text and the fields a store indexes. */
export interface EncodedRoute {
  readonly route_id: string;
  readonly source_execution_id: string;
  readonly generation: number;
  readonly projection: string;
}

/**
 * Turns a route projection into the JSON text that is stored, like `encodeParams`: the
 * text is the route, and the indexed fields are read from its parse, so a column can
 * never disagree with the projection a later read returns (a `toJSON` or an `undefined`
 * field would otherwise make them differ).
 *
 * `action` is "insert" or "update", for the message.
 */
export function encodeRoute(action: string, route: unknown): EncodedRoute {
  const named = (route as { route_id?: unknown } | null | undefined)?.route_id;
  const where = `${action} route${typeof named === "string" && named !== "" ? ` ${named}` : ""}`;
  let projection: string | undefined;
  try {
    projection = JSON.stringify(route);
  } catch (error) {
    throw new StoreError("invalid_route", `${where}: the route is not JSON-serializable: ${(error as Error).message}`);
  }
  const stored: unknown = projection === undefined ? undefined : JSON.parse(projection);
  if (projection === undefined || typeof stored !== "object" || stored === null || Array.isArray(stored)) {
    throw new StoreError("invalid_route", `${where}: the route must be an object, got ${describe(stored)}`);
  }
  const { route_id, source_execution_id, generation, status } = stored as Record<string, unknown>;
  if (typeof route_id !== "string" || route_id === "") {
    throw new StoreError("invalid_route", `${where}: route_id must be a non-empty string, got ${JSON.stringify(route_id) ?? "nothing"}`);
  }
  if (typeof source_execution_id !== "string" || source_execution_id === "") {
    throw new StoreError(
      "invalid_route",
      `${where}: source_execution_id must be a non-empty string, got ${JSON.stringify(source_execution_id) ?? "nothing"}`,
    );
  }
  if (typeof generation !== "number" || !Number.isSafeInteger(generation) || generation < 1) {
    throw new StoreError("invalid_route", `${where}: generation must be an integer >= 1, got ${JSON.stringify(generation) ?? "nothing"}`);
  }
  // Expiry is a function of the clock, derived whenever a route is read; a stored
  // "expired" would outlive a change of expires_at and could never be told apart.
  if (status === "expired") {
    throw new StoreError("invalid_route", `${where}: status "expired" is derived on read and never stored`);
  }
  return { route_id, source_execution_id, generation, projection };
}

/**
 * Checks the generations of `updateRoute`. The new one must be above the expected one:
 * a write that kept the generation would let a second writer holding the same expected
 * generation succeed as well, and one that went back could make a stale caller's
 * expectation true again, and the compare-and-set would guard nothing.
 */
export function checkUpdateGeneration(route: EncodedRoute, expectedGeneration: number): void {
  if (!Number.isSafeInteger(expectedGeneration) || expectedGeneration < 1) {
    throw new StoreError(
      "invalid_argument",
      `update route ${route.route_id}: expectedGeneration must be an integer >= 1, got ${String(expectedGeneration)}`,
    );
  }
  if (route.generation <= expectedGeneration) {
    throw new StoreError(
      "invalid_route",
      `update route ${route.route_id}: the new generation ${route.generation} must be above the expected generation ${expectedGeneration}`,
    );
  }
}

export function decodeRoute(projection: string): RouteRecord["route"] {
  return JSON.parse(projection) as RouteRecord["route"];
}

/**
 * The record of an idempotency key with only its own fields, after checking they are
 * text: SQLite would turn a number into text where memory kept the number.
 */
export function checkIdempotency(key: string, record: IdempotencyRecord): IdempotencyRecord {
  const fields: [string, unknown][] = [
    ["key", key],
    ["operation", record.operation],
    ["params_digest", record.params_digest],
    ["route_id", record.route_id],
  ];
  for (const [name, value] of fields) {
    if (typeof value !== "string") {
      throw new StoreError("invalid_argument", `put idempotency key ${String(key)}: ${name} must be a string, got ${describe(value)}`);
    }
  }
  return { operation: record.operation, params_digest: record.params_digest, route_id: record.route_id };
}

/** Checks a meta value is text, for the same reason. */
export function checkMetaValue(key: string, value: unknown): void {
  if (typeof value !== "string")
    throw new StoreError("invalid_argument", `set meta ${key}: value must be a string, got ${describe(value)}`);
}

let lastMs = Number.NaN;
let lastText = "";

/** The default clock for `recorded_at`: the text is made once per millisecond, not once per event. */
export function nowRfc3339(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastText = new Date(ms).toISOString();
  }
  return lastText;
}

export const storeErrors = {
  threadExists: (id: string) => new StoreError("thread_exists", `thread ${id} already exists`),
  unknownThread: (id: string) => new StoreError("unknown_thread", `thread ${id} does not exist`),
  unknownTurn: (id: string, action: string) => new StoreError("unknown_turn", `${action}: turn ${id} does not exist`),
  // build() runs inside append's transaction, before its event is stored: an append to the
  // same turn from inside it would be handed the same sequence.
  reentrant: (id: string, outer: string) =>
    new StoreError("reentrant_append", `append to turn ${id} was called from inside the build of an append to turn ${outer}`),
  turnEnded: (id: string, method: string, ended: string, at: number) =>
    new StoreError(
      "turn_fenced",
      `append ${method} to turn ${id}: the turn ended with ${ended} at sequence ${at}, and nothing of a turn follows its end`,
    ),
  staleClaim: (id: string, subject: string, held: number, current: number | undefined) =>
    staleGeneration(`claim the resolution of ${subject} of turn ${id}`, "claim", held, current),
  staleGeneration: (id: string, method: string, held: number, current: number | undefined) =>
    staleGeneration(`append ${method} to turn ${id}`, "write", held, current),
  leaseTakenOver: (id: string) =>
    new StoreError("turn_fenced", `the lease of turn ${id} was taken over by another instance (this one did not renew it in time)`),
  routeExists: (id: string) => new StoreError("route_exists", `route ${id} already exists`),
  closed: () => new StoreError("closed", "the event store is closed"),
};

/** A write carrying a generation of the turn that is no longer its current one: refused, so no turn is run twice. */
function staleGeneration(action: string, noun: "write" | "claim", held: number, current: number | undefined): StoreError {
  return new StoreError(
    "turn_fenced",
    `${action}: the ${noun} carries generation ${held} of the turn, whose current generation is ${current ?? "none"}: another run (another instance that took the turn over) holds it now, and this ${noun} is refused`,
  );
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}

/** Checks a claim's lease time: a positive integer of milliseconds. */
export function checkLeaseTime(turnId: string, ttlMs: number): void {
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0)
    throw new StoreError(
      "invalid_argument",
      `claim of turn ${turnId}: the lease time must be a positive integer of milliseconds, got ${String(ttlMs)}`,
    );
}

/**
 * The generations of the turns of a store one process owns (memory, SQLite): each claim
 * gives a turn a new one, and an append carrying another is refused, as on a shared store.
 * Kept by the process: its runs are the only ones there are, and they end with it.
 */
export class TurnGenerations {
  private readonly current = new Map<string, number>();

  claim(turnId: string, ttlMs: number): number {
    checkLeaseTime(turnId, ttlMs);
    const next = (this.current.get(turnId) ?? 0) + 1;
    this.current.set(turnId, next);
    return next;
  }

  /** Throws "turn_fenced" when `generation` is given and is not the turn's current one. */
  check(turnId: string, method: string, generation: number | undefined): void {
    if (generation === undefined) return;
    const current = this.current.get(turnId);
    if (current !== generation) throw storeErrors.staleGeneration(turnId, method, generation, current);
  }
}
