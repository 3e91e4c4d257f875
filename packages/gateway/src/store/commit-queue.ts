/**
 * Values that wait for the commit of what was written before each: `push` one, and it is
 * handed to `release` once the store's commit holding everything written so far has ended
 * (with the StoreError if it failed), in the order pushed.
 *
 * It keeps the values in a queue and registers one shared callback per commit they wait
 * for: a store runs its afterCommit callbacks in the order registered, and one that says
 * which commit a callback would wait for (EventStore.pendingCommit) lets the values pushed
 * while that commit is the same share a callback. A stream of events waits for its commits
 * without a closure, or a callback, per event.
 */
import type { StoreError } from "./errors.js";
import type { EventStore } from "./store.js";

/** How many released slots at its front a queue keeps while values still wait behind them. */
const COMPACT_AFTER = 4096;

/** A queue of values with a free front: slots before `head` are released, reused once all are. */
class Slots<T> {
  private readonly items: (T | undefined)[] = [];
  private head = 0;
  private tail = 0;

  get size(): number {
    return this.tail - this.head;
  }

  push(item: T): void {
    this.items[this.tail++] = item;
  }

  /** Adds to the newest item (a count). */
  add(this: Slots<number>, n: number): void {
    this.items[this.tail - 1]! += n;
  }

  shift(): T {
    const item = this.items[this.head] as T;
    this.items[this.head++] = undefined;
    if (this.head === this.tail) {
      this.head = 0;
      this.tail = 0;
    } else if (this.head >= COMPACT_AFTER) {
      this.items.copyWithin(0, this.head, this.tail);
      this.tail -= this.head;
      this.head = 0;
      this.items.length = this.tail;
    }
    return item;
  }
}

export class CommitQueue<T> {
  private readonly values = new Slots<T>();
  /** How many values each registered callback releases, oldest first. */
  private readonly counts = new Slots<number>();
  /** The commit the newest registered callback waits for, until it runs (undefined if unknown). */
  private newest: object | undefined;

  constructor(
    private readonly store: Pick<EventStore, "afterCommit" | "pendingCommit">,
    private readonly release: (value: T, failure: StoreError | undefined) => void,
  ) {}

  /** Queues a value behind every write made so far. */
  push(value: T): void {
    this.values.push(value);
    const pending = this.store.pendingCommit?.();
    if (pending !== undefined && pending === this.newest) {
      this.counts.add(1);
      return;
    }
    this.newest = pending;
    this.counts.push(1);
    this.store.afterCommit(this.next);
  }

  /** The shared callback: it runs when the commit its values wait for ends, and releases them. */
  private readonly next = (failure?: StoreError): void => {
    let count = this.counts.shift();
    // The newest callback is running: a value pushed from here on waits on a callback of its own.
    if (this.counts.size === 0) this.newest = undefined;
    if (count === 1) {
      this.release(this.values.shift(), failure);
      return;
    }
    // Taken out first: a release may push, and a callback that runs at once would take from the front.
    const released: T[] = [];
    while (count-- > 0) released.push(this.values.shift());
    for (const value of released) this.release(value, failure);
  };
}
