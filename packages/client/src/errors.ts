/**
 * The one error type of the client SDK's higher layers. A gateway's own answer is kept as
 * the `cause` (an `RpcError` with its code and `data.reason`, or the `LocalError` of the
 * JSON-RPC client), so nothing a caller could branch on is lost.
 */

/** What went wrong. */
export type ClientErrorKind =
  /** The gateway answered a request with an error (the cause is the `RpcError`). */
  | "rpc_error"
  /** The connection is gone and could not be re-established. */
  | "connection_lost"
  /** The caller aborted before the turn was started. */
  | "aborted"
  /** The gateway sent something this client cannot accept (the message names it). */
  | "invalid_event";

export class TurnClientError extends Error {
  readonly kind: ClientErrorKind;

  constructor(kind: ClientErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TurnClientError";
    this.kind = kind;
  }
}
