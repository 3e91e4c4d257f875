/**
 * The client half of JSON-RPC 2.0, shared by every generated client: correlates
 * responses with requests, dispatches notifications to subscribers, and validates what
 * it sends and receives when asked to.
 */
import { classify, type JsonRpcId, type JsonRpcResponse } from "./envelope.js";
import { LocalError, RpcError } from "./errors.js";
import type { Transport } from "./transport.js";
import { formatIssue, type ValidationIssue } from "./validation.js";

/** The validation hooks a generated client passes in; each returns issues or undefined. */
export interface ClientValidators {
  params(method: string, value: unknown): ValidationIssue[] | undefined;
  result(method: string, value: unknown): ValidationIssue[] | undefined;
  notification(method: string, value: unknown): ValidationIssue[] | undefined;
}

export interface RpcClientOptions {
  /** Validate params before sending (default true). */
  readonly validateOutgoing?: boolean;
  /** Validate results and notifications as they arrive (default true). */
  readonly validateIncoming?: boolean;
  /** Milliseconds before a request fails with a local timeout (default: no timeout). */
  readonly requestTimeoutMs?: number;
  /** Called when a notification fails validation or a frame cannot be understood; it is then dropped. */
  readonly onProtocolError?: (error: LocalError, frame: string) => void;
}

export interface RequestOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

type NotificationHandler = (params: unknown, method: string) => void;

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(error: Error): void;
  cleanup(): void;
}

export class RpcClient {
  private nextId = 1;
  private readonly pending = new Map<JsonRpcId, Pending>();
  private readonly handlers = new Map<string, Set<NotificationHandler>>();
  private readonly anyHandlers = new Set<NotificationHandler>();
  private closed = false;

  constructor(
    private readonly transport: Transport,
    private readonly validators: ClientValidators,
    private readonly options: RpcClientOptions = {},
  ) {
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
  async request(method: string, params: unknown, options: RequestOptions = {}): Promise<unknown> {
    if (this.closed) throw new LocalError("transport_closed", "the connection is closed");
    if (this.options.validateOutgoing !== false) {
      const issues = this.validators.params(method, params);
      if (issues) throw new LocalError("invalid_outgoing", `params of ${method} are invalid: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`, issues);
    }
    // An already-aborted signal is a local abort like any other, not the signal's DOMException.
    if (options.signal?.aborted) throw new LocalError("aborted", `${method} was aborted`);
    const id = this.nextId++;
    const frame = JSON.stringify({ jsonrpc: "2.0", id, method, params });
    return new Promise<unknown>((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs;
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
        this.settle(id)?.reject(new LocalError("timeout", `${method} got no response within ${timeoutMs} ms`));
      }, timeoutMs);
      const onAbort = () => this.settle(id)?.reject(new LocalError("aborted", `${method} was aborted`));
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
      this.transport.send(frame).catch((error: unknown) => {
        this.settle(id)?.reject(new LocalError("transport_closed", `could not send ${method}: ${(error as Error).message}`));
      });
    });
  }

  /** Sends a notification (no response is expected). */
  async notify(method: string, params: unknown): Promise<void> {
    if (this.options.validateOutgoing !== false) {
      const issues = this.validators.notification(method, params);
      if (issues) throw new LocalError("invalid_outgoing", `params of notification ${method} are invalid: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`, issues);
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

  private settle(id: JsonRpcId): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    entry.cleanup();
    return entry;
  }

  private failAll(error: LocalError): void {
    this.closed = true;
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(error);
  }

  private protocolError(message: string, frame: string, issues: ValidationIssue[] = []): void {
    this.options.onProtocolError?.(new LocalError(issues.length ? "invalid_incoming" : "protocol_violation", message, issues), frame);
  }

  private receive(frame: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(frame);
    } catch {
      this.protocolError("the peer sent a frame that is not JSON", frame);
      return;
    }
    for (const message of Array.isArray(parsed) ? parsed : [parsed]) this.receiveOne(message, frame);
  }

  private receiveOne(message: unknown, frame: string): void {
    const classified = classify(message);
    if (classified.kind === "invalid") {
      this.protocolError(`the peer sent an invalid message: ${classified.reason}`, frame);
    } else if (classified.kind === "response") {
      this.receiveResponse(classified.message, frame);
    } else if (classified.kind === "notification") {
      this.receiveNotification(classified.message.method, classified.message.params ?? {}, frame);
    } else {
      // This client serves no methods: answer as JSON-RPC requires.
      const { id, method } = classified.message;
      void this.transport
        .send(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${method}`, data: { reason: "method_not_found", method } } }))
        .catch(() => undefined);
    }
  }

  private receiveResponse(response: JsonRpcResponse, frame: string): void {
    const entry = response.id === null ? undefined : this.settle(response.id);
    if (!entry) {
      if (response.id !== null || !("error" in response)) this.protocolError(`a response with unknown id ${JSON.stringify(response.id)}`, frame);
      else this.protocolError(`the peer reported an error without an id: ${response.error.message}`, frame);
      return;
    }
    if ("error" in response) {
      entry.reject(new RpcError(response.error.code, response.error.message, response.error.data));
      return;
    }
    if (this.options.validateIncoming !== false) {
      const issues = this.validators.result(entry.method, response.result);
      if (issues) {
        entry.reject(new LocalError("invalid_incoming", `the result of ${entry.method} is invalid: ${issues.map((i) => formatIssue(i, "result")).join("; ")}`, issues));
        return;
      }
    }
    entry.resolve(response.result);
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
