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

/** How many released values the queue holds on to before it drops them from its front. */
const COMPACT_AFTER = 4096;

export class CommitQueue<T> {
  private readonly values: T[] = [];
  private head = 0;

  constructor(
    private readonly store: Pick<EventStore, "afterCommit">,
    private readonly release: (value: T, failure: StoreError | undefined) => void,
  ) {}

  /** Queues a value behind every write made so far. */
  push(value: T): void {
    this.values.push(value);
    this.store.afterCommit(this.next);
  }

  /** Registered once per value: it runs when the commit that value waits for ends. */
  private readonly next = (failure?: StoreError): void => {
    const value = this.values[this.head++]!;
    if (this.head === this.values.length) {
      this.values.length = 0;
      this.head = 0;
    } else if (this.head >= COMPACT_AFTER) {
      this.values.splice(0, this.head);
      this.head = 0;
    }
    this.release(value, failure);
  };
}
