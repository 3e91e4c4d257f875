/**
 * The SQLite store inserts a group's appends in multi-row statements: an append is kept
 * until a batch is full, a read of this connection or the commit. Whatever the batching,
 * a read sees every append before it, in order, and the commit stores every one.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createRequire } from "node:module";
import { CHECKPOINT_EVERY, GROUP_COMMIT_LIMIT, RESTART_FRAMES, SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";

// better-sqlite3 ships no types: the little the log test reads is declared here.
const RawDatabase = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => {
  pragma(source: string): unknown;
  close(): void;
};

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

let dir: string;
let file: string;
let store: SqliteEventStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "turnspec-batch-"));
  file = join(dir, "events.db");
  store = new SqliteEventStore(file);
  store.createThread({ id: "thr_a", workspace_id: "wsp_1", cwd: "/w", mode: "Agent", created_at: "2025-01-01T00:00:00Z" });
  store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
  store.createTurn("thr_a", "trn_2", "2025-01-01T00:00:02Z");
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const append = (turnId: string, n: number) =>
  store.append(turnId, "item/agent_message/delta", (sequence) => ({ turn_id: turnId, sequence, delta: `d${n}` }));

describe("batched inserts of the SQLite store", () => {
  it("reads every append of the open group, in order, at any count", () => {
    for (const count of [1, 63, 64, 65, 130]) {
      const before = store.lastSequence("trn_1");
      for (let i = 0; i < count; i++) append("trn_1", before + i + 1);
      expect(store.lastSequence("trn_1")).toBe(before + count);
      const events = store.events("trn_1", before);
      expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: count }, (_, i) => before + i + 1));
      expect(events.map((e) => (e.params as { delta: string }).delta)).toEqual(
        Array.from({ length: count }, (_, i) => `d${before + i + 1}`),
      );
    }
  });

  it("keeps interleaved turns apart and stores every append at the commit", async () => {
    const total = GROUP_COMMIT_LIMIT + 70;
    for (let i = 1; i <= total; i++) append(i % 3 === 0 ? "trn_2" : "trn_1", i);
    await nextTick();
    store.close();
    store = new SqliteEventStore(file);
    const one = store.events("trn_1");
    const two = store.events("trn_2");
    expect(one.length + two.length).toBe(total);
    expect(two.map((e) => (e.params as { delta: string }).delta)).toEqual(
      Array.from({ length: Math.floor(total / 3) }, (_, i) => `d${(i + 1) * 3}`),
    );
    expect(one.map((e) => e.sequence)).toEqual(Array.from({ length: one.length }, (_, i) => i + 1));
  });

  it("returns from append the event as it will be stored", async () => {
    const event = append("trn_1", 1);
    await nextTick();
    const [stored] = store.events("trn_1");
    expect(stored).toMatchObject({
      thread_id: "thr_a",
      turn_id: "trn_1",
      sequence: 1,
      method: "item/agent_message/delta",
      recorded_at: event.recorded_at,
    });
    expect(stored!.params).toEqual(event.params);
  });
});

describe("checkpoints of the SQLite store", () => {
  it("copies the log back into the file off the event loop, once a file has taken many appends", async () => {
    const sizeOfFile = () => statSync(file).size;
    const before = sizeOfFile();
    // Two rounds of CHECKPOINT_EVERY appends: the first starts the checkpointing thread,
    // the second is checkpointed by it. Neither the writer's connection nor the main one
    // would checkpoint until some 50,000 pages had piled up in the log, far more than these
    // appends fill.
    const appends = 2 * CHECKPOINT_EVERY;
    for (let i = 1; i <= appends; i++) {
      append("trn_1", i);
      if (i % GROUP_COMMIT_LIMIT === 0) await nextTick();
    }
    await new Promise<void>((done) => store.afterCommit(() => done()));
    const deadline = Date.now() + 10_000;
    while (sizeOfFile() <= before + 100_000 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sizeOfFile()).toBeGreaterThan(before + 100_000);
    // And the events read back as appended, from this store and from a new one on the file.
    expect(store.lastSequence("trn_1")).toBe(appends);
    store.close();
    store = new SqliteEventStore(file);
    expect(store.events("trn_1").map((e) => e.sequence)).toEqual(Array.from({ length: appends }, (_, i) => i + 1));
  });
});

describe("the log of the SQLite store", () => {
  it("is started over while appends go on, so it does not grow without end", async () => {
    // About 330 bytes an event: the log takes a frame of 4 KiB for every dozen appends
    // and commits, so these appends would fill several times RESTART_FRAMES unchecked.
    const text = "x".repeat(300);
    const appends = 40 * CHECKPOINT_EVERY;
    for (let i = 1; i <= appends; i++) {
      store.append("trn_1", "item/agent_message/delta", (sequence) => ({ turn_id: "trn_1", sequence, delta: text }));
      if (i % GROUP_COMMIT_LIMIT === 0) await nextTick();
    }
    await new Promise<void>((done) => store.afterCommit(() => done()));
    const raw = new RawDatabase(file);
    try {
      // PASSIVE answers how many frames the log holds now, since it last started over.
      const [{ log }] = raw.pragma("wal_checkpoint(PASSIVE)") as [{ log: number }];
      expect(log).toBeLessThan(2 * RESTART_FRAMES);
    } finally {
      raw.close();
    }
    expect(store.lastSequence("trn_1")).toBe(appends);
  });
});

describe("the threads of the SQLite store", () => {
  it("keep no process alive: a process that leaves its store open ends once its writes are committed", () => {
    const child = spawnSync(
      process.execPath,
      [
        "--import",
        new URL("../../scripts/from-source.mjs", import.meta.url).href,
        fileURLToPath(new URL("./append-and-leave.ts", import.meta.url)),
        join(dir, "left-open.db"),
      ],
      {
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    // A process held alive would be killed by the timeout (SIGTERM, no status).
    expect(child.signal, child.stderr).toBeNull();
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout).toBe("committed\n");
    const reopened = new SqliteEventStore(join(dir, "left-open.db"));
    try {
      expect(reopened.lastSequence("trn_1")).toBe(2 * CHECKPOINT_EVERY);
    } finally {
      reopened.close();
    }
  });
});
