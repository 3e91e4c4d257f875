/**
 * The serving half of JSON-RPC 2.0, shared by every generated dispatcher (a server's for the
 * methods its clients call, a client's for the methods its server calls back): parses frames,
 * handles batches and notifications, validates params before a handler sees them, and
 * turns whatever a handler throws into the right error response.
 */
import { classify, type JsonRpcId, type JsonRpcResponse } from "./envelope.js";
import { DomainError, RpcError, type JsonRpcErrorObject } from "./errors.js";
import { readParams, type ParamsEntry } from "./params.js";
import type { ValidationIssue } from "./validation.js";

/** A registered error: its code and default message. */
export interface RegisteredError {
  readonly code: number;
  readonly message: string;
  /** The type of the error's data, when the registry describes it: the data is then sent as the handler gave it, without the reason. */
  readonly data?: string;
}

/** The standard codes every dispatcher answers with. */
export const StandardErrors = {
  parse_error: { code: -32700, message: "Parse error" },
  invalid_request: { code: -32600, message: "Invalid Request" },
  method_not_found: { code: -32601, message: "Method not found" },
  invalid_params: { code: -32602, message: "Invalid params" },
  internal_error: { code: -32603, message: "Internal error" },
} as const;

export type AnyHandler<Ctx> = (params: never, ctx: Ctx) => unknown;

export interface DispatcherOptions<Ctx> {
  /** The methods this side serves (those the peer may call), by name. */
  readonly methods: ReadonlySet<string>;
  /** The handler of each served method. */
  readonly handlers: Readonly<Record<string, AnyHandler<Ctx>>>;
  /** Validates a method's params; returns the issues, or undefined when valid. */
  readonly validateParams: (method: string, params: unknown) => ValidationIssue[] | undefined;
  /** Validates a handler's result before it is sent; a failure answers -32603 and is reported. */
  readonly validateResult?: (method: string, result: unknown) => ValidationIssue[] | undefined;
  /** The error registry, by reason. */
  readonly errors: Readonly<Record<string, RegisteredError>>;
  /** Called with every error that is answered as -32603, for logging. Never sent to the peer. */
  readonly onInternalError?: (error: unknown, method: string) => void;
  /** The notifications the peer may send this side, by name. Others are ignored. */
  readonly notifications?: ReadonlySet<string>;
  /** Validates a notification's params; an invalid notification is ignored (no reply is ever sent). */
  readonly validateNotification?: (method: string, params: unknown) => ValidationIssue[] | undefined;
  /** Called for each valid notification from the peer. */
  readonly onNotification?: (method: string, params: unknown, ctx: Ctx) => void;
  /**
   * Called for responses from the peer: answers to the requests this side sent it (hand them
   * to the `OutgoingRequests` of the connection in `ctx`). Without it they are dropped.
   */
  readonly onResponse?: (response: JsonRpcResponse, ctx: Ctx) => void;
  /** Most messages one batch may hold. Default 1000. */
  readonly maxBatchSize?: number;
  /** Whether a frame may be a batch (the protocol's `batches`). Default true, as JSON-RPC 2.0 has it; a batch the protocol does not allow is answered -32600. */
  readonly batches?: boolean;
  /**
   * What the registry says about each message's params (left out, none, by name, by
   * position, either). With it, params the frame leaves out are refused unless the message
   * may leave them out, and the positional params of an "either" message reach the handler
   * by name; without it, left-out params are read as an empty object.
   */
  readonly entries?: {
    readonly methods?: Readonly<Record<string, ParamsEntry>>;
    readonly notifications?: Readonly<Record<string, ParamsEntry>>;
  };
}

export class Dispatcher<Ctx = void> {
  constructor(private readonly options: DispatcherOptions<Ctx>) {}

  /** Handles one frame of text; resolves to the frame to send back, or undefined when nothing is owed. */
  async handleFrame(frame: string, ctx: Ctx): Promise<string | undefined> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(frame);
    } catch (error) {
      return JSON.stringify(this.errorResponse(null, "parse_error", `Parse error: ${(error as Error).message}`));
    }
    const reply = await this.handleParsed(parsed, ctx);
    if (reply === undefined) return undefined;
    return Array.isArray(reply) ? `[${reply.map((r) => this.serialize(r)).join(",")}]` : this.serialize(reply);
  }

  /**
   * One response as text. An error's data may echo what the peer sent (the received value
   * of a validation issue), and a value nested deeper than JSON.stringify can recurse
   * parses fine but cannot be written back: then the echoed values are left out, so the
   * request is still answered. A result that cannot be written is answered -32603.
   */
  private serialize(response: JsonRpcResponse): string {
    try {
      return JSON.stringify(response);
    } catch (error) {
      if (!("error" in response)) {
        this.options.onInternalError?.(error, "(serializing a result)");
        return JSON.stringify(this.errorResponse(response.id, "internal_error", "Internal error"));
      }
      const { data } = response.error;
      const issues =
        data !== null && typeof data === "object" && Array.isArray((data as { errors?: unknown }).errors)
          ? (data as { errors: ValidationIssue[] }).errors
          : undefined;
      const trimmed = issues?.map(({ received: _received, ...issue }) => issue);
      const reason = (data as { reason?: unknown } | undefined)?.reason;
      return JSON.stringify({ ...response, error: { ...response.error, data: { ...(trimmed ? { errors: trimmed } : {}), reason } } });
    }
  }

  /** Handles one parsed message or batch. */
  async handleParsed(parsed: unknown, ctx: Ctx): Promise<JsonRpcResponse | JsonRpcResponse[] | undefined> {
    if (!Array.isArray(parsed)) return this.handleOne(parsed, ctx);
    if (this.options.batches === false)
      return this.errorResponse(null, "invalid_request", "Invalid Request: the protocol does not allow batches");
    if (parsed.length === 0) return this.errorResponse(null, "invalid_request", "Invalid Request: an empty batch");
    const limit = this.options.maxBatchSize ?? 1000;
    if (parsed.length > limit) {
      return this.errorResponse(null, "invalid_request", `Invalid Request: a batch holds at most ${limit} messages`);
    }
    const replies = await Promise.all(parsed.map((message) => this.handleOne(message, ctx)));
    const owed = replies.filter((r): r is JsonRpcResponse => r !== undefined);
    return owed.length === 0 ? undefined : owed;
  }

  private async handleOne(message: unknown, ctx: Ctx): Promise<JsonRpcResponse | undefined> {
    const classified = classify(message);
    switch (classified.kind) {
      case "invalid":
        return this.errorResponse(classified.id, "invalid_request", `Invalid Request: ${classified.reason}`);
      case "response":
        this.options.onResponse?.(classified.message, ctx);
        return undefined;
      case "notification": {
        const { method, params } = classified.message;
        // A notification never gets a reply, not even an error.
        const known = this.options.notifications?.has(method) ?? false;
        if (!known || !this.options.onNotification) return undefined;
        const entry = this.options.entries?.notifications?.[method];
        const read = entry ? readParams(entry, params) : { ok: true as const, value: params ?? {} };
        if (read.ok && (read.value === undefined || !this.options.validateNotification?.(method, read.value)))
          this.options.onNotification(method, read.value, ctx);
        return undefined;
      }
      case "request":
        return this.handleRequest(classified.message.id, classified.message.method, classified.message.params, ctx);
    }
  }

  private async handleRequest(id: JsonRpcId, method: string, rawParams: unknown, ctx: Ctx): Promise<JsonRpcResponse> {
    const handler = this.options.methods.has(method) ? this.options.handlers[method] : undefined;
    if (!handler) {
      return this.errorResponse(id, "method_not_found", `Method not found: ${method}`, { method });
    }
    const entry = this.options.entries?.methods?.[method];
    const read = entry ? readParams(entry, rawParams) : { ok: true as const, value: rawParams ?? {} };
    if (!read.ok)
      return this.errorResponse(id, "invalid_params", `Invalid params for ${method}: ${describe(read.issues)}`, { errors: read.issues });
    const params = read.value;
    const issues = params === undefined ? undefined : this.options.validateParams(method, params);
    if (issues) {
      return this.errorResponse(id, "invalid_params", `Invalid params for ${method}: ${describe(issues)}`, { errors: issues });
    }
    try {
      const result = await handler(params as never, ctx);
      const resultIssues = this.options.validateResult?.(method, result);
      if (resultIssues) {
        this.options.onInternalError?.(new Error(`result of ${method} does not match its schema: ${describe(resultIssues)}`), method);
        return this.errorResponse(id, "internal_error", "Internal error");
      }
      return { jsonrpc: "2.0", id, result: result === undefined ? null : result };
    } catch (error) {
      return { jsonrpc: "2.0", id, error: this.toErrorObject(error, method) };
    }
  }

  private toErrorObject(error: unknown, method: string): JsonRpcErrorObject {
    if (error instanceof DomainError) {
      const registered = this.options.errors[error.reason];
      if (registered?.data !== undefined)
        return { code: registered.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) };
      if (registered) return { code: registered.code, message: error.message, data: { ...error.data, reason: error.reason } };
      this.options.onInternalError?.(new Error(`unregistered error reason "${error.reason}": ${error.message}`), method);
      return this.registered("internal_error", "Internal error");
    }
    if (error instanceof RpcError) return error.toJSON();
    this.options.onInternalError?.(error, method);
    return this.registered("internal_error", "Internal error");
  }

  private registered(reason: keyof typeof StandardErrors, message: string, data?: Record<string, unknown>): JsonRpcErrorObject {
    const code = this.options.errors[reason]?.code ?? StandardErrors[reason].code;
    return { code, message, data: { ...data, reason } };
  }

  errorResponse(
    id: JsonRpcId | null,
    reason: keyof typeof StandardErrors,
    message: string,
    data?: Record<string, unknown>,
  ): JsonRpcResponse {
    return { jsonrpc: "2.0", id, error: this.registered(reason, message, data) };
  }
}

function describe(issues: readonly ValidationIssue[]): string {
  return issues.map((i) => `${i.pointer || "(params)"} ${i.message}`).join("; ");
}
