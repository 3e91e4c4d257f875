/**
 * Group commit in the SQLite store: the appends of one turn of the event loop are one
 * batch, which ends on setImmediate or every GROUP_COMMIT_LIMIT appends and is committed
 * by the writer thread while the next one fills; `afterCommit` runs what waited for it, in
 * order, once it is committed, or with the error when its commit failed and lost it. A
 * second connection to the file (as another process would have) is what tells a committed
 * write from one that is not.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import { StoreError } from "../../packages/gateway/src/store/rules.js";
import { GROUP_COMMIT_LIMIT, SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";
import type { EventStore } from "../../packages/gateway/src/store/store.js";

interface RawConnection {
  exec(sql: string): unknown;
  prepare(sql: string): { get(...params: unknown[]): unknown; all(...params: unknown[]): unknown[]; run(...params: unknown[]): unknown };
  close(): void;
}
const RawDatabase = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawConnection;

/** Resolves once everything written so far is committed, to the commit's failure if it failed. */
const commit = (store: EventStore) => new Promise<StoreError | undefined>((done) => store.afterCommit(done));

const appendTo = (store: EventStore, turnId: string, delta: string) =>
  store.append(turnId, "item/agent_message/delta", (sequence) => ({ turn_id: turnId, sequence, delta }));
const appendDelta = (store: EventStore, delta: string) => appendTo(store, "trn_1", delta);

/**
 * Makes every commit holding a delta with the text "boom" fail, the way a real commit
 * fails: a deferred foreign key, checked at COMMIT, that the row it inserts breaks.
 */
const DOOM = `
  CREATE TABLE doomed (turn_id TEXT REFERENCES turns (turn_id) DEFERRABLE INITIALLY DEFERRED);
  CREATE TRIGGER doom AFTER INSERT ON event_runs WHEN instr(NEW.params, '"delta":"boom"') > 0
  BEGIN INSERT INTO doomed VALUES ('no such turn'); END;
`;

let dir: string;
let file: string;
let store: SqliteEventStore;
let raw: RawConnection;

/** Events of trn_1 a second connection to the file sees: the committed ones. */
const committed = (turnId = "trn_1") =>
  (
    raw.prepare(`SELECT IFNULL(SUM(last_sequence - first_sequence + 1), 0) AS n FROM event_runs WHERE turn_id = ?`).get(turnId) as {
      n: number;
    }
  ).n;

/** The sequences of a turn a second connection to the file sees. */
const sequencesInFile = (turnId: string) => {
  const runs = raw
    .prepare(`SELECT first_sequence AS first, last_sequence AS last FROM event_runs WHERE turn_id = ? ORDER BY last_sequence`)
    .all(turnId) as { first: number; last: number }[];
  return JSON.stringify(runs.flatMap(({ first, last }) => Array.from({ length: last - first + 1 }, (_, i) => first + i)));
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "turnspec-group-"));
  file = join(dir, "events.db");
  store = new SqliteEventStore(file);
  store.createThread({ id: "thr_a", workspace_id: "wsp_1", cwd: "/work/project", mode: "Agent", created_at: "2025-01-01T00:00:00Z" });
  store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
  store.createTurn("thr_a", "trn_2", "2025-01-01T00:00:02Z");
  // The turns are registered in a batch of their own (a new turn commits with its first
  // events); each test starts once it is committed.
  await new Promise<void>((done) => store.afterCommit(() => done()));
  raw = new RawDatabase(file);
});

afterEach(() => {
  raw.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("group commit in the SQLite store", () => {
  it("commits the appends of one turn of the event loop as one transaction, then runs what waited, in order", async () => {
    const ran: string[] = [];
    store.afterCommit(() => ran.push("before any append"));
    expect(ran).toEqual(["before any append"]);

    for (const delta of ["a", "b", "c", "d", "e"]) appendDelta(store, delta);
    store.afterCommit((failure) => ran.push(`first ${failure === undefined ? "committed" : "failed"}, ${committed()} in the file`));
    store.afterCommit(() => ran.push("second"));
    // The file holds none of them yet: the batch ends on setImmediate.
    expect(committed()).toBe(0);
    expect(ran).toEqual(["before any append"]);

    await commit(store);
    expect(ran).toEqual(["before any append", "first committed, 5 in the file", "second"]);
    store.afterCommit(() => ran.push("after the commit"));
    expect(ran.at(-1)).toBe("after the commit");
  });

  it("ends a batch every GROUP_COMMIT_LIMIT appends of a burst that never yields, and commits them in order while the next fills", async () => {
    const ran: [number, string, number][] = [];
    const total = 2 * GROUP_COMMIT_LIMIT + 3;
    for (let i = 1; i <= total; i++) {
      appendDelta(store, `d${i}`);
      // What the file holds when each batch's last callback runs.
      if (i % GROUP_COMMIT_LIMIT === 0 || i === total)
        store.afterCommit((failure) => ran.push([i, failure?.kind ?? "committed", committed()]));
    }
    // The burst never yielded: the writer's answers wait for the event loop.
    expect(ran).toEqual([]);
    await commit(store);
    // In order, each once its batch was committed (the writer may be done with the next one too by then).
    expect(ran.map(([i, outcome]) => [i, outcome])).toEqual([
      [GROUP_COMMIT_LIMIT, "committed"],
      [2 * GROUP_COMMIT_LIMIT, "committed"],
      [total, "committed"],
    ]);
    for (const [i, , inFile] of ran) expect(inFile).toBeGreaterThanOrEqual(i);
    expect(sequencesInFile("trn_1")).toBe(JSON.stringify(Array.from({ length: total }, (_, i) => i + 1)));
  });

  it("runs a callback registered by another while a commit's callbacks run after the rest of them", async () => {
    const ran: string[] = [];
    appendDelta(store, "a");
    store.afterCommit(() => {
      ran.push("one");
      store.afterCommit(() => ran.push("registered by one"));
    });
    store.afterCommit(() => ran.push("two"));
    await commit(store);
    expect(ran).toEqual(["one", "two", "registered by one"]);
  });

  it("loses the whole batch when its commit fails, reports it to every callback, and gives the sequences again", async () => {
    appendDelta(store, "kept");
    await commit(store);
    raw.exec(DOOM);

    const failures: (StoreError | undefined)[] = [];
    appendDelta(store, "lost");
    appendDelta(store, "boom");
    store.afterCommit((failure) => failures.push(failure));
    store.afterCommit((failure) => failures.push(failure));
    await commit(store);

    expect(failures).toHaveLength(2);
    expect(failures[0]).toBeInstanceOf(StoreError);
    expect(failures[0]!.kind).toBe("commit_failed");
    expect(failures[0]!.message).toContain(`event store ${file}: a commit failed and its writes are lost: FOREIGN KEY constraint failed`);
    expect(failures[1]).toBe(failures[0]);
    expect(committed()).toBe(1);
    expect(store.lastSequence("trn_1")).toBe(1);

    // The store goes on: the next batch starts from what is committed.
    raw.exec(`DROP TRIGGER doom`);
    expect(appendDelta(store, "again").sequence).toBe(2);
    expect(await commit(store)).toBeUndefined();
    expect(store.events("trn_1").map((e) => [e.sequence, e.params.delta])).toEqual([
      [1, "kept"],
      [2, "again"],
    ]);
  });

  it("fails, of pipelined batches, the one whose commit fails and the later ones of the same turn, and commits those of other turns", async () => {
    raw.exec(DOOM);
    const outcome: string[] = [];
    const failures = new Set<StoreError>();
    const batch = (name: string, turnId: string, deltas: string[]) => {
      for (const delta of deltas) appendTo(store, turnId, delta);
      store.afterCommit((failure) => {
        outcome.push(`${name}: ${failure === undefined ? "committed" : failure.message}`);
        if (failure) failures.add(failure);
      });
    };
    const fill = (from: number, n: number) => Array.from({ length: n }, (_, i) => `d${from + i}`);
    // Each ends at the limit, so all four are posted before the first is answered.
    batch("A, trn_1", "trn_1", fill(1, GROUP_COMMIT_LIMIT));
    batch("B, trn_1, doomed", "trn_1", ["boom", ...fill(GROUP_COMMIT_LIMIT + 2, GROUP_COMMIT_LIMIT - 1)]);
    batch("C, trn_2", "trn_2", fill(1, GROUP_COMMIT_LIMIT));
    batch("D, trn_1 after B", "trn_1", fill(2 * GROUP_COMMIT_LIMIT + 1, GROUP_COMMIT_LIMIT));
    expect(outcome).toEqual([]);
    await commit(store);
    const lost = `event store ${file}: a commit failed and its writes are lost:`;
    expect(outcome).toEqual([
      "A, trn_1: committed",
      `B, trn_1, doomed: ${lost} FOREIGN KEY constraint failed`,
      "C, trn_2: committed",
      // D continues what B lost: it fails with B, with B's error (the writer would refuse it too).
      `D, trn_1 after B: ${lost} FOREIGN KEY constraint failed`,
    ]);
    expect(failures.size).toBe(1);
    expect(committed("trn_1")).toBe(GROUP_COMMIT_LIMIT);
    expect(committed("trn_2")).toBe(GROUP_COMMIT_LIMIT);
    // The turn goes on from what the file holds, without a gap.
    raw.exec(`DROP TRIGGER doom`);
    expect(store.lastSequence("trn_1")).toBe(GROUP_COMMIT_LIMIT);
    expect(appendDelta(store, "after").sequence).toBe(GROUP_COMMIT_LIMIT + 1);
    expect(await commit(store)).toBeUndefined();
    expect(sequencesInFile("trn_1")).toBe(JSON.stringify(Array.from({ length: GROUP_COMMIT_LIMIT + 1 }, (_, i) => i + 1)));
  });

  it("fails a batch that another writer of the file got ahead of, naming the turn and both sequences", async () => {
    for (const delta of ["a", "b", "c"]) appendDelta(store, delta);
    await commit(store);
    const outcome: (string | undefined)[] = [];
    // The store hands out 4 and 5 from what it read; another process appends 4 before the batch commits.
    appendDelta(store, "d");
    appendDelta(store, "e");
    store.afterCommit((failure) => outcome.push(failure?.message));
    // A row of another turn in the same batch is lost with it.
    appendTo(store, "trn_2", "same batch");
    raw
      .prepare(
        `INSERT INTO event_runs (turn_id, last_sequence, first_sequence, thread_id, methods, recorded_at, ends, params)
         VALUES ('trn_1', 4, 4, 'thr_a', '[["item/agent_message/delta",1]]', '[["now",1]]', '[]', '{"sequence":4}')`,
      )
      .run();
    await commit(store);
    expect(outcome).toEqual([
      `event store ${file}: a commit failed and its writes are lost: turn trn_1 would get sequence 4 but the file holds it up to 4: another writer appended to the turn`,
    ]);
    // The batch after it, of another turn, commits.
    appendTo(store, "trn_2", "next batch");
    expect(await commit(store)).toBeUndefined();
    expect(committed("trn_2")).toBe(1);
    // Neither 4 twice nor a gap: trn_1 continues after the other writer's event.
    expect(appendDelta(store, "f").sequence).toBe(5);
    expect(await commit(store)).toBeUndefined();
    expect(sequencesInFile("trn_1")).toBe("[1,2,3,4,5]");
  });

  it("reads its own writes while they are in flight, flushing only where what it knows is not exact", async () => {
    store.createTurn("thr_a", "trn_new", "2025-01-01T00:00:03Z");
    for (let i = 1; i <= GROUP_COMMIT_LIMIT + 2; i++) appendDelta(store, `d${i}`);
    appendTo(store, "trn_new", "first");
    let answered = false;
    store.afterCommit(() => (answered = true));
    // Exact from what the store knows: no wait for the writer, whose answers wait for the event loop.
    expect(store.lastSequence("trn_1")).toBe(GROUP_COMMIT_LIMIT + 2);
    expect(store.events("trn_1", GROUP_COMMIT_LIMIT + 2)).toEqual([]);
    expect(store.turnThread("trn_new")).toBe("thr_a");
    expect(store.lastSequence("trn_new")).toBe(1);
    expect(answered).toBe(false);
    // Events the store does not hold in memory: it posts what is queued and waits, so the file has them.
    expect(store.events("trn_1", GROUP_COMMIT_LIMIT).map((e) => e.params.delta)).toEqual([
      `d${GROUP_COMMIT_LIMIT + 1}`,
      `d${GROUP_COMMIT_LIMIT + 2}`,
    ]);
    expect(answered).toBe(true);
    expect(committed()).toBe(GROUP_COMMIT_LIMIT + 2);
    // A new turn in flight is listed.
    store.createTurn("thr_a", "trn_newer", "2025-01-01T00:00:04Z");
    expect(store.turnsOfThread("thr_a").map((t) => t.turn_id)).toEqual(["trn_1", "trn_2", "trn_new", "trn_newer"]);
    expect(store.allTurns().map((t) => t.turn_id)).toEqual(["trn_1", "trn_2", "trn_new", "trn_newer"]);
  });

  it("fails what the writer held when it dies mid-stream, and goes on writing on its own connection without a gap", async () => {
    const outcome: (string | undefined)[] = [];
    let killed = false;
    for (let burst = 0; burst < 12; burst++) {
      for (let i = 0; i < 100; i++) appendDelta(store, `b${burst}.${i}`);
      store.afterCommit((failure) => outcome.push(failure?.message));
      if (burst === 5) {
        // A writer that dies: what it was given and had not answered is lost with it.
        const writer = (store as unknown as { writer: { worker: Worker } }).writer.worker;
        const exited = new Promise((done) => writer.once("exit", done));
        await writer.terminate();
        await exited;
        killed = true;
      }
      await new Promise((done) => setImmediate(done));
    }
    await commit(store);
    expect(killed).toBe(true);
    expect(outcome).toHaveLength(12);
    const failed = outcome.filter((message) => message !== undefined);
    for (const message of failed)
      expect(message).toMatch(
        new RegExp(`^event store ${file}: a commit failed and its writes are lost: the writer thread (exited|failed)`),
      );
    // After the writer, the bursts commit on the main connection.
    expect(outcome.slice(6)).toEqual(Array(6).fill(undefined));
    // Every burst told it committed is in the file, and the file's sequences have no gap.
    const sequences = JSON.parse(sequencesInFile("trn_1")) as number[];
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1));
    expect(sequences.length).toBeGreaterThanOrEqual(100 * outcome.filter((message) => message === undefined).length);
    expect(store.lastSequence("trn_1")).toBe(sequences.length);
  });

  it("commits everything on close: the open batch and the ones in flight, running what waited, in order", () => {
    const ran: string[] = [];
    const total = 2 * GROUP_COMMIT_LIMIT + 1;
    for (let i = 1; i <= total; i++) {
      appendDelta(store, `d${i}`);
      if (i % GROUP_COMMIT_LIMIT === 0 || i === total) store.afterCommit((failure) => ran.push(`${i}: ${failure?.kind ?? "committed"}`));
    }
    store.close();
    expect(ran).toEqual([`${GROUP_COMMIT_LIMIT}: committed`, `${2 * GROUP_COMMIT_LIMIT}: committed`, `${total}: committed`]);
    expect(committed()).toBe(total);
  });
});

describe("group commit without a writer thread (:memory:)", () => {
  it("commits on the event loop: the append that fills a batch whose commit fails throws it, and so does every callback", () => {
    const own = new SqliteEventStore(":memory:");
    try {
      own.createThread({ id: "thr_a", workspace_id: "wsp_1", cwd: "/work/project", mode: "Agent", created_at: "2025-01-01T00:00:00Z" });
      own.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
      (own as unknown as { db: RawConnection }).db.exec(DOOM);
      const failures: (StoreError | undefined)[] = [];
      appendDelta(own, "boom");
      own.afterCommit((failure) => failures.push(failure));
      for (let i = 2; i < GROUP_COMMIT_LIMIT; i++) appendDelta(own, `d${i}`);
      expect(() => appendDelta(own, "last")).toThrow(StoreError);
      expect(failures.map((f) => f?.kind)).toEqual(["commit_failed"]);
      expect(own.lastSequence("trn_1")).toBe(0);
      // The turn's registration was in the lost batch too.
      expect(own.turnThread("trn_1")).toBeUndefined();
    } finally {
      own.close();
    }
  });
});

describe("afterCommit on the memory store", () => {
  it("runs at once: every write is committed when its call returns", () => {
    const memory = new MemoryEventStore();
    memory.createThread({ id: "thr_a", workspace_id: "wsp_1", cwd: "/work/project", mode: "Agent", created_at: "2025-01-01T00:00:00Z" });
    memory.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
    appendDelta(memory, "a");
    const ran: (StoreError | undefined)[] = [];
    memory.afterCommit((failure) => ran.push(failure));
    expect(ran).toEqual([undefined]);
  });
});
