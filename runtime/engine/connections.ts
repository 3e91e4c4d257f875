/**
 * The connections a gateway serves and the threads each follows: a published event goes,
 * as the frame of its stored JSON text, to every connection following its thread.
 */
import type { NotificationName } from "../../generated/registry.js";
import type { StoredEvent } from "../store/store.js";

/** One client connection: the threads whose notifications it receives. */
export interface Connection {
  readonly id: string;
  readonly threads: Set<string>;
  /** Writes a frame once the store has committed everything written before it (see EventStore.afterCommit); dropped if that commit failed. */
  send(frame: string): void;
  /** Resolves once every frame received so far has been answered. */
  settled(): Promise<void>;
}

/**
 * The notification frame of a stored event: its params are the JSON text the store holds,
 * spliced in as they are. What is stored is what is sent, and it is serialised once.
 */
export function eventFrame(event: StoredEvent): string {
  return `{"jsonrpc":"2.0","method":${JSON.stringify(event.method)},"params":${event.paramsJson}}`;
}

export class Connections {
  private readonly open = new Set<Connection>();

  add(connection: Connection): void {
    this.open.add(connection);
  }

  delete(connection: Connection): void {
    this.open.delete(connection);
  }

  /** Subscribes a connection to a thread's notifications. */
  follow(connection: Connection, threadId: string): void {
    connection.threads.add(threadId);
  }

  /** Sends a frame to every connection following the thread. */
  sendToThread(threadId: string, frame: string): void {
    for (const connection of this.open) if (connection.threads.has(threadId)) connection.send(frame);
  }

  /** Sends a notification that is not in the log (a derived view's) to the thread's connections. */
  notifyThread(threadId: string, method: NotificationName, params: unknown): void {
    this.sendToThread(threadId, JSON.stringify({ jsonrpc: "2.0", method, params }));
  }

  /** The observer that sends each published event to the connections of its thread. */
  readonly onEvent = (event: StoredEvent): void => this.sendToThread(event.thread_id, eventFrame(event));
}
