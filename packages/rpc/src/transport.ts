/**
 * The transport interface every connection speaks: start, send and close, with callbacks
 * for incoming frames, closure and errors. A frame is one serialized JSON-RPC message (or
 * batch): one line on stdio, one WebSocket message.
 */
export interface Transport {
  start(): Promise<void>;
  send(frame: string): Promise<void>;
  close(): Promise<void>;
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
}

class InMemoryTransport implements Transport {
  peer: InMemoryTransport | undefined;
  private started = false;
  private closed = false;
  private queue: string[] = [];
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const pending = this.queue;
    this.queue = [];
    for (const frame of pending) this.deliver(frame);
  }

  async send(frame: string): Promise<void> {
    if (this.closed) throw new Error("in-memory transport is closed");
    const peer = this.peer;
    if (!peer || peer.closed) throw new Error("in-memory transport peer is closed");
    // Delivered on a later microtask so that neither side re-enters the other's handler.
    queueMicrotask(() => peer.receive(frame));
  }

  private receive(frame: string): void {
    if (this.closed) return;
    if (this.started) this.deliver(frame);
    else this.queue.push(frame);
  }

  private deliver(frame: string): void {
    try {
      this.onmessage?.(frame);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
    const peer = this.peer;
    if (peer && !peer.closed) await peer.close();
  }
}

/** Two linked transports: what one sends, the other receives. For tests and embedding. */
export function createInMemoryPair(): [Transport, Transport] {
  const a = new InMemoryTransport();
  const b = new InMemoryTransport();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
