/**
 * What the gateway starts on first use and keeps, one per configured id: an ACP agent's
 * process, a CLI runtime's app-server, an MCP server's connection. A start that fails is
 * not kept, so the next use tries again; one that ends later (its process exited, its
 * connection closed) is forgotten by its owner, and the next use starts another.
 */
export class LazyChildren<T> {
  private readonly started = new Map<string, Promise<T>>();

  /** The child of `id`, started with `start` unless one is kept (or is starting). */
  get(id: string, start: () => Promise<T>): Promise<T> {
    let child = this.started.get(id);
    if (child === undefined) {
      child = start();
      child.catch(() => this.started.delete(id));
      this.started.set(id, child);
    }
    return child;
  }

  /** Whether a child of `id` is kept (or starting). */
  has(id: string): boolean {
    return this.started.has(id);
  }

  /** Forgets the child of `id` (it ended); returns it, for whoever has to close it. */
  forget(id: string): Promise<T> | undefined {
    const child = this.started.get(id);
    this.started.delete(id);
    return child;
  }

  /** Forgets every child and stops those that started, with `stop`; resolves once each has stopped or failed to. */
  async close(stop: (child: T) => unknown): Promise<void> {
    const children = [...this.started.values()];
    this.started.clear();
    await Promise.allSettled(children.map(async (child) => stop(await child)));
  }
}
