/**
 * Values that wait for the commit of what was written before each: `push` one, and it is
 * handed to `release` once the store's commit holding everything written so far has ended
 * (with the StoreError if it failed), in the order pushed.
 *
 * It registers one shared callback per value and keeps the values in a queue: a store runs
 * its afterCommit callbacks in the order registered, so the n-th call is the n-th value's.
 * A stream of events waits for its commits without a closure made per event.
 */
import type { StoreError } from "./errors.js";
import type { EventStore } from "./store.js";

/** How many released slots at its front the queue keeps while values still wait behind them. */
const COMPACT_AFTER = 4096;

export class CommitQueue<T> {
  /** Waiting values at [head, tail); the slots before head are free, and reused once all are released. */
  private readonly values: (T | undefined)[] = [];
  private head = 0;
  private tail = 0;

  constructor(
    private readonly store: Pick<EventStore, "afterCommit">,
    private readonly release: (value: T, failure: StoreError | undefined) => void,
  ) {}

  /** Queues a value behind every write made so far. */
  push(value: T): void {
    this.values[this.tail++] = value;
    this.store.afterCommit(this.next);
  }

  /** Registered once per value: it runs when the commit that value waits for ends. */
  private readonly next = (failure?: StoreError): void => {
    const value = this.values[this.head] as T;
    this.values[this.head++] = undefined;
    if (this.head === this.tail) {
      // All released: the slots are written again from the start, without allocating.
      this.head = 0;
      this.tail = 0;
    } else if (this.head >= COMPACT_AFTER) {
      this.values.copyWithin(0, this.head, this.tail);
      this.tail -= this.head;
      this.head = 0;
      this.values.length = this.tail;
    }
    this.release(value, failure);
  };
}
