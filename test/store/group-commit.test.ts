/**
 * Group commit in the SQLite store: the appends of one turn of the event loop are one
 * transaction, which commits on setImmediate or every GROUP_COMMIT_LIMIT appends;
 * `afterCommit` runs what waited for it, in order, once it is committed, or with the
 * error when the commit failed and lost the group. A second connection to the file (as
 * another process would have) is what tells a committed write from one that is not.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryEventStore } from "../../runtime/store/memory.js";
import { StoreError } from "../../runtime/store/rules.js";
import { GROUP_COMMIT_LIMIT, SqliteEventStore } from "../../runtime/store/sqlite.js";
import type { EventStore } from "../../runtime/store/store.js";

interface RawConnection {
  exec(sql: string): unknown;
  prepare(sql: string): { get(...params: unknown[]): unknown };
  close(): void;
}
const RawDatabase = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawConnection;

/** One turn of the event loop: everything appended before it is committed after it. */
const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

const appendDelta = (store: EventStore, delta: string) =>
  store.append("trn_1", "item/agent_message/delta", (sequence) => ({ turn_id: "trn_1", sequence, delta }));

/**
 * Makes every commit holding a delta with the text "boom" fail, the way a real commit
 * fails: a deferred foreign key, checked at COMMIT, that the row it inserts breaks.
 */
const DOOM = `
  CREATE TABLE doomed (turn_id TEXT REFERENCES turns (turn_id) DEFERRABLE INITIALLY DEFERRED);
  CREATE TRIGGER doom AFTER INSERT ON events WHEN json_extract(NEW.params, '$.delta') = 'boom'
  BEGIN INSERT INTO doomed VALUES ('no such turn'); END;
`;

let dir: string;
let file: string;
let store: SqliteEventStore;
let raw: RawConnection;

/** Events of trn_1 a second connection to the file sees: the committed ones. */
const committed = () => (raw.prepare(`SELECT COUNT(*) AS n FROM events WHERE turn_id = 'trn_1'`).get() as { n: number }).n;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "turnspec-group-"));
  file = join(dir, "events.db");
  store = new SqliteEventStore(file);
  store.createThread({ id: "thr_a", workspace_id: "wsp_1", cwd: "/work/project", mode: "Agent", created_at: "2025-01-01T00:00:00Z" });
  store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
  // The turn is registered in a group of its own (a new turn commits with its first
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
    store.afterCommit((failure) => ran.push(`first ${failure === undefined ? "committed" : "failed"}`));
    store.afterCommit(() => ran.push("second"));
    // The store reads its own writes; the file holds none of them yet.
    expect(store.lastSequence("trn_1")).toBe(5);
    expect(store.events("trn_1").map((e) => e.params.delta)).toEqual(["a", "b", "c", "d", "e"]);
    expect(committed()).toBe(0);
    expect(ran).toEqual(["before any append"]);

    await nextTick();
    expect(committed()).toBe(5);
    expect(ran).toEqual(["before any append", "first committed", "second"]);
    store.afterCommit(() => ran.push("after the commit"));
    expect(ran.at(-1)).toBe("after the commit");
  });

  it("commits every GROUP_COMMIT_LIMIT appends of a burst that never yields", () => {
    const ran: number[] = [];
    for (let i = 1; i <= GROUP_COMMIT_LIMIT + 3; i++) {
      appendDelta(store, `d${i}`);
      store.afterCommit(() => ran.push(i));
    }
    expect(committed()).toBe(GROUP_COMMIT_LIMIT);
    expect(ran).toEqual(Array.from({ length: GROUP_COMMIT_LIMIT - 1 }, (_, i) => i + 1).concat(GROUP_COMMIT_LIMIT));
    store.close();
    expect(committed()).toBe(GROUP_COMMIT_LIMIT + 3);
    expect(ran).toHaveLength(GROUP_COMMIT_LIMIT + 3);
  });

  it("runs a callback registered by another while a commit's callbacks run after the rest of them", async () => {
    const ran: string[] = [];
    appendDelta(store, "a");
    store.afterCommit(() => {
      ran.push("one");
      store.afterCommit(() => ran.push("registered by one"));
    });
    store.afterCommit(() => ran.push("two"));
    await nextTick();
    expect(ran).toEqual(["one", "two", "registered by one"]);
  });

  it("loses the whole group when its commit fails, reports it to every callback, and gives the sequences again", async () => {
    appendDelta(store, "kept");
    await nextTick();
    raw.exec(DOOM);

    const failures: (StoreError | undefined)[] = [];
    appendDelta(store, "lost");
    appendDelta(store, "boom");
    store.afterCommit((failure) => failures.push(failure));
    store.afterCommit((failure) => failures.push(failure));
    await nextTick();

    expect(failures).toHaveLength(2);
    expect(failures[0]).toBeInstanceOf(StoreError);
    expect(failures[0]!.kind).toBe("commit_failed");
    expect(failures[0]!.message).toContain(`event store ${file}: a commit failed and its writes are lost`);
    expect(failures[1]).toBe(failures[0]);
    expect(committed()).toBe(1);
    expect(store.lastSequence("trn_1")).toBe(1);

    // The store goes on: the next group starts from what is committed.
    raw.exec(`DROP TRIGGER doom`);
    expect(appendDelta(store, "again").sequence).toBe(2);
    const after: (StoreError | undefined)[] = [];
    store.afterCommit((failure) => after.push(failure));
    await nextTick();
    expect(after).toEqual([undefined]);
    expect(store.events("trn_1").map((e) => [e.sequence, e.params.delta])).toEqual([
      [1, "kept"],
      [2, "again"],
    ]);
  });

  it("fails the append that fills a group whose commit then fails", () => {
    raw.exec(DOOM);
    const failures: (StoreError | undefined)[] = [];
    appendDelta(store, "boom");
    store.afterCommit((failure) => failures.push(failure));
    for (let i = 2; i < GROUP_COMMIT_LIMIT; i++) appendDelta(store, `d${i}`);
    expect(() => appendDelta(store, "last")).toThrow(StoreError);
    expect(failures.map((f) => f?.kind)).toEqual(["commit_failed"]);
    expect(committed()).toBe(0);
    expect(store.lastSequence("trn_1")).toBe(0);
  });

  it("commits the open group on close", () => {
    const ran: string[] = [];
    appendDelta(store, "a");
    store.afterCommit(() => ran.push("committed"));
    store.close();
    expect(ran).toEqual(["committed"]);
    expect(committed()).toBe(1);
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
