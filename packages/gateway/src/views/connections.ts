/**
 * The connections a gateway serves and the threads each follows: a frame read from a
 * connection goes to the dispatcher, and a published event goes, as the frame of its stored
 * JSON text, to every connection following its thread.
 *
 * Nothing is written to a connection before the store has committed what it may report:
 * every frame, notification or response, waits behind the store's durability barrier
 * (`afterCommit`), in the order it was sent. So a client is only ever told about events
 * that are in the log, and a kill can lose only events nobody was sent.
 */
import { randomUUID } from "node:crypto";
import type { NotificationName } from "@turnspec/protocol/registry";
import type { Dispatcher, Transport } from "@turnspec/rpc";
import { CommitQueue } from "../store/commit-queue.js";
import type { StoreError } from "../store/errors.js";
import type { EventStore, StoredEvent } from "../store/store.js";

/** One client connection: the threads whose notifications it receives. */
export interface Connection {
  readonly id: string;
  /** The threads it follows (Connections.follow adds to it). */
  readonly threads: Set<string>;
  /** Writes a frame once the store has committed everything written before it (see EventStore.afterCommit); dropped if that commit failed. */
  send(frame: string): void;
  /** Resolves once every frame received so far has been answered. */
  settled(): Promise<void>;
}

/**
 * The notification frame of a stored event: its params are the JSON text the store holds,
 * spliced in as they are. What is stored is what is sent, and it is serialised once. The
 * frame is left in its parts, the params' text among them: the transport joins the frames
 * it writes together, which copies each once (see StdioTransport's compactJson).
 */
export function eventFrame(event: StoredEvent): string {
  if (event.method !== lastHead.method) {
    let head = FRAME_HEADS.get(event.method);
    if (head === undefined) FRAME_HEADS.set(event.method, (head = `{"jsonrpc":"2.0","method":${JSON.stringify(event.method)},"params":`));
    lastHead = { method: event.method, head };
  }
  return `${lastHead.head}${event.paramsJson}}`;
}

/** The text before the params of each method's frame, made once per method. */
const FRAME_HEADS = new Map<string, string>();
/** The head of the last frame made: a turn's events come in runs of one method (its deltas). */
let lastHead = { method: "", head: "" };

export interface ConnectionPorts {
  /** The store whose commits the frames wait for. */
  readonly store: Pick<EventStore, "afterCommit" | "pendingCommit">;
  /** Diagnostics for the operator. */
  readonly diagnose: (message: string) => void;
}

export class Connections {
  /** The connections following each thread: a thread's event reaches its followers without a look at the others. */
  private readonly followers = new Map<string, Set<Connection>>();

  constructor(private readonly ports: ConnectionPorts) {}

  /** Serves one connection over a transport until it closes: its frames go to `dispatcher`, its answers back in order. */
  serve(transport: Transport, dispatcher: Dispatcher<Connection>): Connection {
    const inFlight = new Set<Promise<void>>();
    // A transport may answer the frames it writes together with one promise: its failure is logged once.
    let watched: Promise<void> | undefined;
    const write = (frame: string) => {
      const sent = transport.send(frame);
      if (sent === watched) return;
      watched = sent;
      sent.catch((error: unknown) => this.ports.diagnose(`send failed on a closed connection: ${(error as Error).message}`));
    };
    // What the connection is sent, in order, each frame once the commit holding what it reports
    // has ended. A notification whose commit failed reports events the log does not hold: it is
    // dropped. A reply read what its handler saw, committed or not: when that commit fails, the
    // request is answered as the internal error it met.
    const outgoing = new CommitQueue<string | { readonly reply: string }>(this.ports.store, (frame, failure) => {
      if (typeof frame !== "string") write(failure === undefined ? frame.reply : this.failedReply(dispatcher, frame.reply, failure));
      else if (failure === undefined) write(frame);
    });
    const connection: Connection = {
      id: randomUUID(),
      threads: new Set(),
      send: (frame) => outgoing.push(frame),
      settled: async () => {
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        await new Promise<void>((resolve) => this.ports.store.afterCommit(() => resolve()));
      },
    };
    transport.onmessage = (frame) => {
      const handled = dispatcher
        .handleFrame(frame, connection)
        .then((reply) => {
          if (reply !== undefined) outgoing.push({ reply });
        })
        .catch((error: unknown) => this.ports.diagnose(`could not handle a frame: ${(error as Error).message}`))
        .finally(() => inFlight.delete(handled));
      inFlight.add(handled);
    };
    transport.onclose = () => this.delete(connection);
    transport.onerror = (error) => this.ports.diagnose(`connection error: ${error.message}`);
    void transport.start();
    return connection;
  }

  /** The reply to send instead of one whose writes a failed commit lost: internal_error for each request it answers. */
  private failedReply(dispatcher: Dispatcher<Connection>, reply: string, failure: StoreError): string {
    this.ports.diagnose(`a reply is answered internal_error: ${failure.message}`);
    const parsed = JSON.parse(reply) as { id: string | number | null } | { id: string | number | null }[];
    const failed = (response: { id: string | number | null }) => dispatcher.errorResponse(response.id, "internal_error", "Internal error");
    return JSON.stringify(Array.isArray(parsed) ? parsed.map(failed) : failed(parsed));
  }

  /** Forgets a closed connection. */
  delete(connection: Connection): void {
    for (const threadId of connection.threads) {
      const followers = this.followers.get(threadId);
      followers?.delete(connection);
      if (followers?.size === 0) this.followers.delete(threadId);
    }
  }

  /** Subscribes a connection to a thread's notifications. */
  follow(connection: Connection, threadId: string): void {
    connection.threads.add(threadId);
    let followers = this.followers.get(threadId);
    if (followers === undefined) this.followers.set(threadId, (followers = new Set()));
    followers.add(connection);
  }

  /** Sends a frame to every connection following the thread. */
  sendToThread(threadId: string, frame: string): void {
    const followers = this.followers.get(threadId);
    if (followers) for (const connection of followers) connection.send(frame);
  }

  /** Sends a notification that is not in the log (a derived view's) to the thread's connections. */
  notifyThread(threadId: string, method: NotificationName, params: unknown): void {
    if (this.followers.has(threadId)) this.sendToThread(threadId, JSON.stringify({ jsonrpc: "2.0", method, params }));
  }

  /** The observer that sends each published event to the connections of its thread. */
  readonly onEvent = (event: StoredEvent): void => {
    const followers = this.followers.get(event.thread_id);
    if (followers === undefined) return;
    const frame = eventFrame(event);
    for (const connection of followers) connection.send(frame);
  };
}
