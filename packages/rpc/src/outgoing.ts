/**
 * Requests this side sends and the responses that settle them: ids, timeouts, aborts and
 * the validation of params before sending and of results as they arrive. Either end uses
 * it: a client for the methods a server serves, a server for the methods its client serves
 * (sampling in MCP, `window/showMessageRequest` in LSP), on whatever sends its frames.
 */
import type { JsonRpcId, JsonRpcResponse } from "./envelope.js";
import { LocalError, RpcError } from "./errors.js";
import { formatIssue, type ValidationIssue } from "./validation.js";

export interface RequestOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

export interface OutgoingRequestsOptions {
  /** Validates a request's params before it is sent; undefined when valid. */
  readonly validateParams?: (method: string, params: unknown) => ValidationIssue[] | undefined;
  /** Validates a result as it arrives; an invalid one rejects the request with a local `invalid_incoming` error. */
  readonly validateResult?: (method: string, result: unknown) => ValidationIssue[] | undefined;
  /** Milliseconds before a request fails with a local timeout (default: no timeout). */
  readonly requestTimeoutMs?: number;
  /** The params as the frame carries them, from the params as validated (an "either" message's named params sent by position). */
  readonly toWire?: (method: string, params: unknown) => unknown;
}

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(error: Error): void;
  cleanup(): void;
}

export class OutgoingRequests {
  private nextId = 1;
  private readonly pending = new Map<JsonRpcId, Pending>();
  private closedBy: LocalError | undefined;

  constructor(
    private readonly send: (frame: string) => Promise<void> | void,
    private readonly options: OutgoingRequestsOptions = {},
  ) {}

  /** Sends a request and resolves with its result, or rejects with an `RpcError` or a `LocalError`. */
  async request(method: string, params: unknown, options: RequestOptions = {}): Promise<unknown> {
    if (this.closedBy) throw new LocalError("transport_closed", this.closedBy.message);
    const issues = this.options.validateParams?.(method, params);
    if (issues)
      throw new LocalError(
        "invalid_outgoing",
        `params of ${method} are invalid: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`,
        issues,
      );
    // An already-aborted signal is a local abort like any other, not the signal's DOMException.
    if (options.signal?.aborted) throw new LocalError("aborted", `${method} was aborted`);
    let wire: unknown;
    try {
      wire = this.options.toWire ? this.options.toWire(method, params) : params;
    } catch (error) {
      throw new LocalError("invalid_outgoing", `params of ${method} cannot be sent: ${(error as Error).message}`);
    }
    const id = this.nextId++;
    // Params left out (undefined) are not in the frame.
    const frame = JSON.stringify({ jsonrpc: "2.0", id, method, params: wire });
    return new Promise<unknown>((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs;
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              this.take(id)?.reject(new LocalError("timeout", `${method} got no response within ${timeoutMs} ms`));
            }, timeoutMs);
      const onAbort = () => this.take(id)?.reject(new LocalError("aborted", `${method} was aborted`));
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        method,
        resolve,
        reject,
        cleanup: () => {
          if (timer) clearTimeout(timer);
          options.signal?.removeEventListener("abort", onAbort);
        },
      });
      Promise.resolve()
        .then(() => this.send(frame))
        .catch((error: unknown) => {
          this.take(id)?.reject(new LocalError("transport_closed", `could not send ${method}: ${(error as Error).message}`));
        });
    });
  }

  /**
   * Sends several requests in one frame, a JSON-RPC batch, and returns one promise per
   * request, settled like `request`'s. Every request is validated before anything is sent;
   * one that is invalid fails the whole batch with a local error naming it.
   */
  batch(calls: readonly { readonly method: string; readonly params?: unknown }[], options: RequestOptions = {}): Promise<unknown>[] {
    if (this.closedBy) throw new LocalError("transport_closed", this.closedBy.message);
    if (calls.length === 0) throw new LocalError("invalid_outgoing", "a batch needs at least one request");
    const messages = calls.map(({ method, params }, index) => {
      const issues = this.options.validateParams?.(method, params);
      if (issues)
        throw new LocalError(
          "invalid_outgoing",
          `request ${index} of the batch (${method}) has invalid params: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`,
          issues,
        );
      let wire: unknown;
      try {
        wire = this.options.toWire ? this.options.toWire(method, params) : params;
      } catch (error) {
        throw new LocalError("invalid_outgoing", `request ${index} of the batch (${method}) cannot be sent: ${(error as Error).message}`);
      }
      return { jsonrpc: "2.0", id: this.nextId++, method, params: wire };
    });
    const promises = messages.map(
      (message) =>
        new Promise<unknown>((resolve, reject) => {
          const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs;
          const timer =
            timeoutMs === undefined
              ? undefined
              : setTimeout(
                  () =>
                    this.take(message.id)?.reject(new LocalError("timeout", `${message.method} got no response within ${timeoutMs} ms`)),
                  timeoutMs,
                );
          this.pending.set(message.id, { method: message.method, resolve, reject, cleanup: () => timer && clearTimeout(timer) });
        }),
    );
    Promise.resolve()
      .then(() => this.send(JSON.stringify(messages)))
      .catch((error: unknown) => {
        for (const message of messages)
          this.take(message.id)?.reject(new LocalError("transport_closed", `could not send the batch: ${(error as Error).message}`));
      });
    return promises;
  }

  /**
   * Settles the request a response answers. False when it answers none that is waiting
   * (an unknown id, or one that already timed out): the caller decides how to report that.
   */
  settle(response: JsonRpcResponse): boolean {
    const entry = response.id === null ? undefined : this.take(response.id);
    if (!entry) return false;
    if ("error" in response) {
      entry.reject(new RpcError(response.error.code, response.error.message, response.error.data));
      return true;
    }
    const issues = this.options.validateResult?.(entry.method, response.result);
    if (issues) {
      entry.reject(
        new LocalError(
          "invalid_incoming",
          `the result of ${entry.method} is invalid: ${issues.map((i) => formatIssue(i, "result")).join("; ")}`,
          issues,
        ),
      );
      return true;
    }
    entry.resolve(response.result);
    return true;
  }

  /** Fails every waiting request with `error`; later requests fail at once. */
  close(error: LocalError): void {
    this.closedBy ??= error;
    for (const id of [...this.pending.keys()]) this.take(id)?.reject(error);
  }

  /** How many requests wait for their response. */
  get waiting(): number {
    return this.pending.size;
  }

  private take(id: JsonRpcId): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    entry.cleanup();
    return entry;
  }
}
