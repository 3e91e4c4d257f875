/**
 * The two error families of turnspec.
 *
 * Wire errors cross the connection as JSON-RPC error objects: `RpcError` carries the
 * numeric code, message and data exactly as sent or received, and `DomainError` is what
 * a handler throws to answer with a registered reason (the dispatcher looks its code up
 * in the error registry). Local errors (`LocalError`) describe something that went
 * wrong on this side of the connection and are never serialized.
 */
import type { ValidationIssue } from "./validation.js";

/** A JSON-RPC error object as it appears on the wire. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** An error response received from, or to be sent to, the peer. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = data;
  }

  /** The registered reason the peer put in `error.data.reason`, when there is one. */
  get reason(): string | undefined {
    const data = this.data as { reason?: unknown } | undefined;
    return typeof data?.reason === "string" ? data.reason : undefined;
  }

  toJSON(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

/**
 * Thrown by a method handler to answer with a registered domain error. The dispatcher
 * maps `reason` to its code from the registry and sends `{ reason, ...data }` as
 * `error.data`.
 */
export class DomainError extends Error {
  readonly reason: string;
  readonly data: Record<string, unknown> | undefined;

  constructor(reason: string, message: string, data?: Record<string, unknown>) {
    super(message);
    this.name = "DomainError";
    this.reason = reason;
    this.data = data;
  }
}

/** What went wrong locally. */
export type LocalErrorKind = "transport_closed" | "timeout" | "aborted" | "invalid_outgoing" | "invalid_incoming" | "protocol_violation";

/** An error that never crosses the wire: a closed transport, a timeout, a message that failed validation. */
export class LocalError extends Error {
  readonly kind: LocalErrorKind;
  readonly issues: readonly ValidationIssue[];

  constructor(kind: LocalErrorKind, message: string, issues: readonly ValidationIssue[] = []) {
    super(message);
    this.name = "LocalError";
    this.kind = kind;
    this.issues = issues;
  }
}

/** One thing wrong with a request's params: where (a JSON pointer into the params), what, and the value received. */
export interface InvalidParam {
  readonly pointer: string;
  readonly message: string;
  readonly received?: unknown;
}

/**
 * The invalid-params error (-32602) a handler throws for params that pass their schema but
 * not the handler's own rules (a cursor it did not issue, say): shaped like the
 * dispatcher's own, `Invalid params for METHOD: WHY`, with `data.errors` naming each place.
 */
export function invalidParams(method: string, why: string, errors: readonly InvalidParam[]): RpcError {
  return new RpcError(-32602, `Invalid params for ${method}: ${why}`, { reason: "invalid_params", errors });
}
