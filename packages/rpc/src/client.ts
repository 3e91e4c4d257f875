/**
 * One end of a JSON-RPC 2.0 connection, shared by every generated client and by a server
 * that owns its transport: sends requests and correlates their responses (outgoing.ts),
 * dispatches notifications to subscribers, and hands the requests the peer sends to a
 * `Dispatcher` (the same one a server uses), answering with what it returns; a server's end
 * (`answerMalformed`) also answers a frame that is not JSON and an invalid request. Without a dispatcher every incoming request is answered -32601, as JSON-RPC requires.
 */
import { classify, type JsonRpcResponse } from "./envelope.js";
import { LocalError } from "./errors.js";
import { OutgoingRequests, type RequestOptions } from "./outgoing.js";
import type { Transport } from "./transport.js";
import { readParams, wireParams, type ParamsEntry } from "./params.js";
import { formatIssue, type ValidationIssue } from "./validation.js";

export type { RequestOptions } from "./outgoing.js";

/** The validation hooks a generated client passes in; each returns issues or undefined. */
export interface ClientValidators {
  params(method: string, value: unknown): ValidationIssue[] | undefined;
  result(method: string, value: unknown): ValidationIssue[] | undefined;
  notification(method: string, value: unknown): ValidationIssue[] | undefined;
  /** Validates the notifications this side sends, when that differs from `notification` (strict out, tolerant in). */
  outgoingNotification?(method: string, value: unknown): ValidationIssue[] | undefined;
}

/** Answers one request the peer sent: a dispatcher's `handleParsed` bound to its context. */
export type ServeRequest = (request: unknown) => Promise<JsonRpcResponse | JsonRpcResponse[] | undefined>;

export interface RpcClientOptions {
  /** Validate params before sending (default true). */
  readonly validateOutgoing?: boolean;
  /** Validate results and notifications as they arrive (default true). */
  readonly validateIncoming?: boolean;
  /** Milliseconds before a request fails with a local timeout (default: no timeout). */
  readonly requestTimeoutMs?: number;
  /** Called when a notification fails validation or a frame cannot be understood; it is then dropped. */
  readonly onProtocolError?: (error: LocalError, frame: string) => void;
  /** Serves the requests the peer sends to this side; without it they are answered -32601. */
  readonly serve?: ServeRequest;
  /**
   * Answer a frame that is not JSON (-32700, null id) and an invalid request (-32600), as a
   * JSON-RPC server must; a broken response is never answered. For the server's end of a
   * connection (default false: a client only reports them through onProtocolError).
   */
  readonly answerMalformed?: boolean;
  /** Whether the peer may send batches (the protocol's `batches`). Default true; a batch the protocol does not allow is dropped, and answered -32600 by a server's end. */
  readonly batches?: boolean;
  /**
   * What the registry says about each message's params. With it, a notification that leaves
   * out params it must carry is dropped (and reported), the positional params of an
   * "either" notification reach subscribers by name, and an "either" request is sent by
   * position (the form every server of such a method takes).
   */
  readonly entries?: {
    readonly methods?: Readonly<Record<string, ParamsEntry>>;
    readonly notifications?: Readonly<Record<string, ParamsEntry>>;
  };
}

type NotificationHandler = (params: unknown, method: string) => void;

export class RpcClient {
  private readonly outgoing: OutgoingRequests;
  private readonly handlers = new Map<string, Set<NotificationHandler>>();
  private readonly anyHandlers = new Set<NotificationHandler>();
  private closed = false;

  constructor(
    private readonly transport: Transport,
    private readonly validators: ClientValidators,
    private readonly options: RpcClientOptions = {},
  ) {
    this.outgoing = new OutgoingRequests((frame) => this.transport.send(frame), {
      ...(options.validateOutgoing === false
        ? {}
        : { validateParams: (method: string, params: unknown) => validators.params(method, params) }),
      ...(options.validateIncoming === false
        ? {}
        : { validateResult: (method: string, result: unknown) => validators.result(method, result) }),
      ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
      toWire: (method: string, params: unknown) => wireParams(options.entries?.methods?.[method], params),
    });
    transport.onmessage = (frame) => this.receive(frame);
    transport.onclose = () => this.failAll(new LocalError("transport_closed", "the connection closed"));
  }

  /** Starts the underlying transport. */
  start(): Promise<void> {
    return this.transport.start();
  }

  /** Closes the connection; pending requests fail with a local `transport_closed` error. */
  async close(): Promise<void> {
    await this.transport.close();
    this.failAll(new LocalError("transport_closed", "the client was closed"));
  }

  /** Sends a request and resolves with its result, or rejects with an `RpcError` or a `LocalError`. */
  request(method: string, params: unknown, options: RequestOptions = {}): Promise<unknown> {
    return this.outgoing.request(method, params, options);
  }

  /**
   * Sends several requests as one JSON-RPC batch and resolves, once each has its response,
   * with each outcome in order (a result, or the `RpcError`/`LocalError` it failed with).
   */
  batch(
    calls: readonly { readonly method: string; readonly params?: unknown }[],
    options: RequestOptions = {},
  ): Promise<PromiseSettledResult<unknown>[]> {
    return Promise.allSettled(this.outgoing.batch(calls, options));
  }

  /** Sends a notification (no response is expected). */
  async notify(method: string, params: unknown): Promise<void> {
    if (this.closed) throw new LocalError("transport_closed", "the connection is closed");
    if (this.options.validateOutgoing !== false) {
      const issues = (this.validators.outgoingNotification ?? this.validators.notification)(method, params);
      if (issues)
        throw new LocalError(
          "invalid_outgoing",
          `params of notification ${method} are invalid: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`,
          issues,
        );
    }
    await this.transport.send(JSON.stringify({ jsonrpc: "2.0", method, params }));
  }

  /** Subscribes to one notification method; returns the function that unsubscribes. */
  on(method: string, handler: NotificationHandler): () => void {
    let set = this.handlers.get(method);
    if (!set) this.handlers.set(method, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Subscribes to every notification; returns the function that unsubscribes. */
  onAny(handler: NotificationHandler): () => void {
    this.anyHandlers.add(handler);
    return () => this.anyHandlers.delete(handler);
  }

  private failAll(error: LocalError): void {
    this.closed = true;
    this.outgoing.close(error);
  }

  private protocolError(message: string, frame: string, issues: ValidationIssue[] = []): void {
    this.options.onProtocolError?.(new LocalError(issues.length ? "invalid_incoming" : "protocol_violation", message, issues), frame);
  }

  private receive(frame: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(frame);
    } catch (error) {
      this.protocolError("the peer sent a frame that is not JSON", frame);
      // A server's end answers as JSON-RPC requires: -32700 with a null id.
      if (this.options.answerMalformed && !this.closed) {
        const reply = {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32700, message: `Parse error: ${(error as Error).message}`, data: { reason: "parse_error" } },
        };
        this.transport.send(JSON.stringify(reply)).catch(() => undefined);
      }
      return;
    }
    const batch = Array.isArray(parsed);
    if (batch && this.options.batches === false) {
      this.protocolError("the peer sent a batch, and the protocol does not allow JSON-RPC batches", frame);
      if (this.options.answerMalformed && !this.closed) {
        const reply = {
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: "Invalid Request: the protocol does not allow batches", data: { reason: "invalid_request" } },
        };
        this.transport.send(JSON.stringify(reply)).catch(() => undefined);
      }
      return;
    }
    const answers: Promise<JsonRpcResponse | undefined>[] = [];
    for (const message of batch ? (parsed as unknown[]) : [parsed]) {
      const answer = this.receiveOne(message, frame);
      if (answer) answers.push(answer);
    }
    if (answers.length === 0) return;
    // The requests of one batch are answered in one batch, as JSON-RPC asks.
    void Promise.all(answers)
      .then((replies) => {
        const owed = replies.filter((r): r is JsonRpcResponse => r !== undefined);
        if (owed.length === 0 || this.closed) return;
        return this.transport.send(JSON.stringify(batch ? owed : owed[0]));
      })
      .catch(() => undefined);
  }

  /** Handles one message; for a request, resolves to its answer. */
  private receiveOne(message: unknown, frame: string): Promise<JsonRpcResponse | undefined> | undefined {
    const classified = classify(message);
    if (classified.kind === "invalid") {
      this.protocolError(`the peer sent an invalid message: ${classified.reason}`, frame);
      // A server's end answers an invalid request -32600; a broken response is never
      // answered, so that two ends cannot answer each other forever.
      const responseShaped = message !== null && typeof message === "object" && ("result" in message || "error" in message);
      if (this.options.answerMalformed && !responseShaped) {
        return Promise.resolve({
          jsonrpc: "2.0",
          id: classified.id,
          error: { code: -32600, message: `Invalid Request: ${classified.reason}`, data: { reason: "invalid_request" } },
        });
      }
    } else if (classified.kind === "response") {
      this.receiveResponse(classified.message, frame);
    } else if (classified.kind === "notification") {
      const { method, params } = classified.message;
      const entry = this.options.entries?.notifications?.[method];
      if (!entry) this.receiveNotification(method, params ?? {}, frame);
      else {
        const read = readParams(entry, params);
        if (read.ok) this.receiveNotification(method, read.value, frame);
        else
          this.protocolError(
            `notification ${method} is invalid: ${read.issues.map((i) => formatIssue(i, "params")).join("; ")}`,
            frame,
            read.issues,
          );
      }
    } else {
      const { id, method } = classified.message;
      if (this.options.serve) return this.options.serve(classified.message) as Promise<JsonRpcResponse | undefined>;
      return Promise.resolve({
        jsonrpc: "2.0",
        id,
        error: { code: -32601, message: `Method not found: ${method}`, data: { reason: "method_not_found", method } },
      });
    }
    return undefined;
  }

  private receiveResponse(response: JsonRpcResponse, frame: string): void {
    if (this.outgoing.settle(response)) return;
    if (response.id !== null || !("error" in response))
      this.protocolError(`a response with unknown id ${JSON.stringify(response.id)}`, frame);
    else this.protocolError(`the peer reported an error without an id: ${response.error.message}`, frame);
  }

  private receiveNotification(method: string, params: unknown, frame: string): void {
    if (this.options.validateIncoming !== false) {
      const issues = this.validators.notification(method, params);
      if (issues) {
        this.protocolError(`notification ${method} is invalid: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`, frame, issues);
        return;
      }
    }
    for (const handler of this.handlers.get(method) ?? []) handler(params, method);
    for (const handler of this.anyHandlers) handler(params, method);
  }
}
