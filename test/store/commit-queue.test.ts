/**
 * CommitQueue: each value is released when the commit it waits for ends, in the order
 * pushed, with that commit's failure, across compaction and pushes made while releasing.
 */
import { describe, expect, it } from "vitest";
import { CommitQueue } from "../../packages/gateway/src/store/commit-queue.js";
import { StoreError } from "../../packages/gateway/src/store/errors.js";

/** A store whose commits end when the test says: `end` runs the callbacks registered so far. */
class HeldCommits {
  private waiting: ((failure?: StoreError) => void)[] = [];
  afterCommit(fn: (failure?: StoreError) => void): void {
    this.waiting.push(fn);
  }
  end(failure?: StoreError, count = this.waiting.length): void {
    const now = this.waiting.splice(0, count);
    for (const fn of now) fn(failure);
  }
}

describe("CommitQueue", () => {
  it("releases values in the order pushed, each with the outcome of its own commit", () => {
    const store = new HeldCommits();
    const released: string[] = [];
    const queue = new CommitQueue<string>(store, (value, failure) => released.push(`${value}:${failure ? failure.kind : "ok"}`));
    queue.push("a");
    queue.push("b");
    store.end();
    queue.push("c");
    expect(released).toEqual(["a:ok", "b:ok"]);
    store.end(new StoreError("commit_failed", "lost"));
    queue.push("d");
    store.end();
    expect(released).toEqual(["a:ok", "b:ok", "c:commit_failed", "d:ok"]);
  });

  it("keeps its order across compaction of a long backlog, and for values pushed while releasing", () => {
    const store = new HeldCommits();
    const released: number[] = [];
    const queue: CommitQueue<number> = new CommitQueue<number>(store, (value) => {
      released.push(value);
      // A release that sends something more queues it behind what already waits.
      if (value === 4500) queue.push(-1);
    });
    for (let i = 0; i < 10_000; i++) queue.push(i);
    store.end(undefined, 5000);
    expect(released).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    store.end();
    store.end();
    expect(released.slice(5000)).toEqual([...Array.from({ length: 5000 }, (_, i) => 5000 + i), -1]);
  });

  it("waits once per commit on a store that says which one a callback waits for, and keeps the order", () => {
    // Commits in a pipeline: callbacks wait on the open one until `seal` opens the next.
    const commits: { waiting: ((failure?: StoreError) => void)[] }[] = [{ waiting: [] }];
    const store = {
      afterCommit: (fn: (failure?: StoreError) => void) => void commits[commits.length - 1]!.waiting.push(fn),
      pendingCommit: () => commits[commits.length - 1],
    };
    const end = (failure?: StoreError) => {
      const commit = commits[0]!;
      // By index, as the stores run them: a callback registered meanwhile runs after the rest.
      for (let i = 0; i < commit.waiting.length; i++) commit.waiting[i]!(failure);
      commits.shift();
      if (commits.length === 0) commits.push({ waiting: [] });
    };
    const released: string[] = [];
    const queue: CommitQueue<string> = new CommitQueue<string>(store, (value, failure) => {
      released.push(`${value}:${failure ? "lost" : "ok"}`);
      if (value === "b") queue.push("after b");
    });
    for (const value of ["a", "b", "c"]) queue.push(value);
    expect(commits[0]!.waiting).toHaveLength(1);
    commits.push({ waiting: [] });
    queue.push("d");
    queue.push("e");
    expect(commits[1]!.waiting).toHaveLength(1);
    end();
    // "after b" was pushed while the first commit's callbacks ran: it waits behind the open commit's values.
    expect(released).toEqual(["a:ok", "b:ok", "c:ok"]);
    end(new StoreError("commit_failed", "lost"));
    expect(released).toEqual(["a:ok", "b:ok", "c:ok", "d:lost", "e:lost", "after b:lost"]);
  });

  it("releases at once on a store that has nothing waiting", () => {
    const released: string[] = [];
    const queue = new CommitQueue<string>({ afterCommit: (fn) => fn() }, (value) => released.push(value));
    queue.push("x");
    queue.push("y");
    expect(released).toEqual(["x", "y"]);
  });
});
