/**
 * The rules both event stores enforce, written once so the memory store used in tests
 * cannot drift from the SQLite store the gateway runs on: the local error they throw,
 * the paging arguments they accept, and how params are turned into stored text.
 */

/** What went wrong in a store call. */
export type StoreErrorKind =
  | "thread_exists"
  | "unknown_thread"
  | "unknown_turn"
  | "invalid_argument"
  | "invalid_params"
  | "reentrant_append"
  | "closed"
  | "open_failed"
  | "schema_version";

/**
 * A local error of the event store; never sent as is. `kind` lets a handler map it to a
 * wire error (an unknown thread, say) without matching on the message.
 */
export class StoreError extends Error {
  readonly kind: StoreErrorKind;

  constructor(kind: StoreErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreError";
    this.kind = kind;
  }
}

/** Checks the paging arguments of `events()`; `limit` undefined means no limit. */
export function checkPaging(turnId: string, afterSequence: number, limit: number | undefined): void {
  if (!Number.isSafeInteger(afterSequence) || afterSequence < 0) {
    throw new StoreError("invalid_argument", `events of turn ${turnId}: afterSequence must be an integer >= 0, got ${String(afterSequence)}`);
  }
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
    throw new StoreError("invalid_argument", `events of turn ${turnId}: limit must be an integer >= 0, got ${String(limit)}`);
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
    throw new StoreError("invalid_params", `append ${method} to turn ${turnId}: build must return a params object, got ${describe(params)}`);
  }
  const own = (params as Record<string, unknown>).sequence;
  if (own !== undefined && own !== sequence) {
    throw new StoreError(
      "invalid_params",
      `append ${method} to turn ${turnId}: params.sequence is ${JSON.stringify(own)} but the event's sequence is ${sequence}`,
    );
  }
  let text: string;
  try {
    text = JSON.stringify(params);
  } catch (error) {
    throw new StoreError("invalid_params", `append ${method} to turn ${turnId}: params are not JSON-serializable: ${(error as Error).message}`);
  }
  return text;
}

export function decodeParams(text: string): Record<string, unknown> {
  return JSON.parse(text) as Record<string, unknown>;
}

/** The default clock for `recorded_at`. */
export function nowRfc3339(): string {
  return new Date().toISOString();
}

export const storeErrors = {
  threadExists: (id: string) => new StoreError("thread_exists", `thread ${id} already exists`),
  unknownThread: (id: string) => new StoreError("unknown_thread", `thread ${id} does not exist`),
  unknownTurn: (id: string, action: string) => new StoreError("unknown_turn", `${action}: turn ${id} does not exist`),
  // build() runs inside append's transaction, before its event is stored: an append to the
  // same turn from inside it would be handed the same sequence.
  reentrant: (id: string, outer: string) =>
    new StoreError("reentrant_append", `append to turn ${id} was called from inside the build of an append to turn ${outer}`),
  closed: () => new StoreError("closed", "the event store is closed"),
};

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}
