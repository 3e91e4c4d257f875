/**
 * A connection to a gateway that survives drops: it owns the transport factory, builds a
 * `ProtocolClient` over each transport, and, when the transport closes without being
 * asked to, opens a new one and says so. What was missed while disconnected is caught up
 * per turn by `followTurn` (turn-feed.ts), which listens for these changes.
 *
 * Transport-agnostic and free of Node built-ins, so the browser entry uses it as it is.
 */
import { ProtocolClient, type ClientOptions } from "@turnspec/protocol/client";
import type { TurnStartParams } from "@turnspec/protocol/types";
import type { Transport } from "@turnspec/rpc";
import { TurnClientError } from "./errors.js";
import type { TurnStreamEvent } from "./events.js";
import { streamExistingTurn, streamTurn, type ResumeStreamParams, type StreamTurnOptions } from "./stream-turn.js";

export type ConnectionChange =
  /** The transport closed unexpectedly; a reconnect follows when enabled. */
  | { readonly type: "disconnected" }
  /** A new connection is open; `client` is its client (subscribe before anything is sent on it). */
  | { readonly type: "reconnected"; readonly client: ProtocolClient }
  /** The connection is closed for good: by `close()`, or because reconnecting gave up (`error`). */
  | { readonly type: "closed"; readonly error?: TurnClientError };

export interface ReconnectOptions {
  /** Milliseconds to wait before each attempt; the last value repeats. Default [100, 250, 500, 1000, 2000]. */
  readonly delaysMs?: readonly number[] | undefined;
  /** Attempts before giving up. Default 10. */
  readonly maxAttempts?: number | undefined;
}

export interface GatewayConnectionOptions extends ClientOptions {
  /** Opens a transport to the gateway (not yet started). Called again for each reconnect. */
  readonly connect: () => Transport | Promise<Transport>;
  /** Reconnect after an unexpected close: true for the defaults, an object to tune them, false (default) not to. */
  readonly reconnect?: boolean | ReconnectOptions | undefined;
}

const DEFAULT_DELAYS_MS = [100, 250, 500, 1000, 2000];
const DEFAULT_MAX_ATTEMPTS = 10;

export class GatewayConnection {
  private current: ProtocolClient;
  private readonly listeners = new Set<(change: ConnectionChange) => void>();
  private closing = false;
  private closedError: TurnClientError | undefined;
  private state: "open" | "reconnecting" | "closed" = "open";

  private constructor(
    private readonly options: GatewayConnectionOptions,
    client: ProtocolClient,
  ) {
    this.current = client;
  }

  /** Opens the first connection; rejects when it cannot be opened. */
  static async open(options: GatewayConnectionOptions): Promise<GatewayConnection> {
    // eslint-disable-next-line prefer-const -- the callback may run while the client opens, before the connection exists: it then finds none
    let connection: GatewayConnection | undefined;
    const client = await openClient(options, (dropped) => connection?.dropped(dropped));
    connection = new GatewayConnection(options, client);
    return connection;
  }

  /** The client of the connection that is open now (a new one after each reconnect). */
  get client(): ProtocolClient {
    return this.current;
  }

  /** "open", "reconnecting" while a dropped connection is being re-established, or "closed". */
  get status(): "open" | "reconnecting" | "closed" {
    return this.state;
  }

  /** Why the connection closed for good, when it was not closed by `close()`. */
  get error(): TurnClientError | undefined {
    return this.closedError;
  }

  /** Listens for disconnects, reconnects and the final close; returns the function that stops listening. */
  onChange(listener: (change: ConnectionChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts a turn and yields its events until `done`; see `streamTurn`. */
  streamTurn(params: TurnStartParams, options?: StreamTurnOptions): AsyncGenerator<TurnStreamEvent, void, undefined> {
    return streamTurn(this, params, options);
  }

  /** Yields the events of a turn that already started, after `after_sequence`, until `done`; see `streamExistingTurn`. */
  streamExistingTurn(params: ResumeStreamParams, options?: StreamTurnOptions): AsyncGenerator<TurnStreamEvent, void, undefined> {
    return streamExistingTurn(this, params, options);
  }

  /** Closes the connection for good; no reconnect follows. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.current.close();
    this.finish(undefined);
  }

  private emit(change: ConnectionChange): void {
    for (const listener of [...this.listeners]) listener(change);
  }

  private finish(error: TurnClientError | undefined): void {
    if (this.state === "closed") return;
    this.state = "closed";
    this.closedError = error;
    this.emit(error ? { type: "closed", error } : { type: "closed" });
  }

  private dropped(client: ProtocolClient): void {
    // Only the connection in use counts: an older one closing late changes nothing.
    if (this.closing || this.state !== "open" || client !== this.current) return;
    const reconnect = this.options.reconnect;
    if (!reconnect) {
      this.finish(new TurnClientError("connection_lost", "the connection to the gateway closed"));
      return;
    }
    this.state = "reconnecting";
    this.emit({ type: "disconnected" });
    void this.reconnect(reconnect === true ? {} : reconnect);
  }

  private async reconnect(options: ReconnectOptions): Promise<void> {
    const delays = options.delaysMs?.length ? options.delaysMs : DEFAULT_DELAYS_MS;
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    let lastError: unknown;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, delays[Math.min(attempt, delays.length - 1)]));
      if (this.closing) return;
      try {
        // The listeners subscribe on the new client before it starts, so no frame is missed.
        const client = await openClient(
          this.options,
          (dropped) => this.dropped(dropped),
          (fresh) => {
            this.current = fresh;
            this.state = "open";
            this.emit({ type: "reconnected", client: fresh });
          },
        );
        if (this.closing) await client.close();
        return;
      } catch (error) {
        lastError = error;
      }
    }
    const reason = lastError instanceof Error ? lastError.message : String(lastError);
    this.finish(
      new TurnClientError("connection_lost", `could not reconnect to the gateway after ${maxAttempts} attempts: ${reason}`, {
        cause: lastError,
      }),
    );
  }
}

/** Opens a transport and starts a client over it; `beforeStart` sees the client before any frame is read. */
async function openClient(
  options: GatewayConnectionOptions,
  onDrop: (client: ProtocolClient) => void,
  beforeStart?: (client: ProtocolClient) => void,
): Promise<ProtocolClient> {
  const { connect, reconnect: _reconnect, ...clientOptions } = options;
  const transport = await connect();
  const client = new ProtocolClient(transport, clientOptions);
  // The JSON-RPC client has set its own close handler (it fails pending requests); ours runs after it.
  const clientOnClose = transport.onclose;
  transport.onclose = () => {
    clientOnClose?.();
    onDrop(client);
  };
  beforeStart?.(client);
  await client.start();
  return client;
}
