/** The local error of the event stores: thrown by a store call, never sent as is. */
/** What went wrong in a store call. */
export type StoreErrorKind =
  | "thread_exists"
  | "unknown_thread"
  | "unknown_turn"
  | "invalid_argument"
  | "invalid_params"
  | "reentrant_append"
  | "route_exists"
  | "invalid_route"
  | "closed"
  | "commit_failed"
  | "open_failed"
  /** The database server refused a statement or could not be reached (PostgreSQL). */
  | "database_error"
  | "schema_version"
  /** A stored run of events whose columns do not agree with each other (SQLite): the file was changed by something else. */
  | "corrupt_run"
  /** An append to a turn that has ended, or that another instance took over from this one (PostgreSQL): refused, so no turn is run twice. */
  | "turn_fenced";

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

/** Whether a store call was refused because the turn ended or another instance took it over (kind "turn_fenced"). */
export function isTurnFenced(error: unknown): error is StoreError {
  return error instanceof StoreError && error.kind === "turn_fenced";
}
