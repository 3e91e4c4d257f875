/**
 * The connections a gateway serves and the threads each follows: a published event goes,
 * as the frame of its stored JSON text, to every connection following its thread.
 */
import type { NotificationName } from "@turnspec/protocol/registry";
import type { StoredEvent } from "../store/store.js";

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

export class Connections {
  /** The connections following each thread: a thread's event reaches its followers without a look at the others. */
  private readonly followers = new Map<string, Set<Connection>>();

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
