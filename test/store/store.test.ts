/**
 * The event store contract, run against both implementations: threads, turns in creation
 * order, gap-free per-turn sequences, paging, and params stored exactly. Then what only
 * the SQLite store promises: a reopened file holds everything and continues each turn's
 * sequence, the file is in WAL mode, and a process killed with SIGKILL mid-append loses
 * no event it had reported as committed.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EventStore, StoredEvent, ThreadRecord } from "../../runtime/store/store.js";
import { MemoryEventStore } from "../../runtime/store/memory.js";
import { SCHEMA_VERSION, SqliteEventStore } from "../../runtime/store/sqlite.js";
import { openStore } from "../../runtime/store/open.js";
import { StoreError } from "../../runtime/store/rules.js";

const RECORDED_AT = "2025-03-04T05:06:07.890Z";

function thread(id: string, extra: Partial<ThreadRecord> = {}): ThreadRecord {
  return { id, workspace_id: "wsp_1", cwd: "/work/project", mode: "Agent", created_at: "2025-01-01T00:00:00Z", ...extra };
}

/** Appends an event whose params carry the sequence, as every turn event does. */
function appendDelta(store: EventStore, turnId: string, text = "x"): StoredEvent {
  return store.append(turnId, "item/agent_message/delta", (sequence) => ({ turn_id: turnId, sequence, delta: text }));
}

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw");
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "turnspec-store-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const implementations: [string, (now?: () => string) => EventStore][] = [
  ["MemoryEventStore", (now) => new MemoryEventStore(now === undefined ? {} : { now })],
  // A file under folders that do not exist yet: opening must create them.
  ["SqliteEventStore", (now) => new SqliteEventStore(join(dir, "state", "gateway", "events.db"), now === undefined ? {} : { now })],
];

describe.each(implementations)("%s", (_name, open) => {
  let store: EventStore;
  beforeEach(() => {
    store = open(() => RECORDED_AT);
  });
  afterEach(() => {
    store.close();
  });

  describe("threads", () => {
    it("gives back a thread as it was stored, with and without its optional fields", () => {
      const full = thread("thr_full", { mode: "Chat", model_provider: "scripted", model: "gpt-test", created_at: "2025-01-01T01:02:03.123456+02:00" });
      store.createThread(full);
      store.createThread(thread("thr_bare"));
      expect(store.getThread("thr_full")).toStrictEqual(full);
      // toStrictEqual: an unset optional field is absent, not present as undefined or null.
      expect(store.getThread("thr_bare")).toStrictEqual(thread("thr_bare"));
      expect(store.getThread("thr_missing")).toBeUndefined();
    });

    it("refuses a thread id that exists and keeps the first record", () => {
      store.createThread(thread("thr_1", { cwd: "/first" }));
      expect(() => store.createThread(thread("thr_1", { cwd: "/second" }))).toThrow("thread thr_1 already exists");
      expect(store.getThread("thr_1")?.cwd).toBe("/first");
    });
  });

  describe("turns", () => {
    beforeEach(() => {
      store.createThread(thread("thr_a"));
      store.createThread(thread("thr_b"));
    });

    it("registers a turn once; a reused id returns false, in the same thread or another", () => {
      expect(store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z")).toBe(true);
      expect(store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:02Z")).toBe(false);
      expect(store.createTurn("thr_b", "trn_1", "2025-01-01T00:00:03Z")).toBe(false);
      expect(store.turnThread("trn_1")).toBe("thr_a");
      expect(store.turnsOfThread("thr_a")).toStrictEqual([{ turn_id: "trn_1", thread_id: "thr_a", created_at: "2025-01-01T00:00:01Z" }]);
      expect(store.turnsOfThread("thr_b")).toStrictEqual([]);
    });

    it("refuses a turn in an unknown thread", () => {
      expect(() => store.createTurn("thr_missing", "trn_1", "2025-01-01T00:00:01Z")).toThrow("thread thr_missing does not exist");
      expect(store.turnThread("trn_1")).toBeUndefined();
    });

    it("answers undefined for the thread of an unknown turn", () => {
      expect(store.turnThread("trn_missing")).toBeUndefined();
    });

    it("lists a thread's turns in creation order, not by id or time, with times as given", () => {
      // Creation order c, a, b is neither id order (a, b, c) nor time order (b, a, c).
      store.createTurn("thr_a", "trn_c", "2025-01-01T00:00:09Z");
      store.createTurn("thr_b", "trn_other", "2025-01-01T00:00:05Z");
      store.createTurn("thr_a", "trn_a", "2025-01-01T00:00:08+00:00");
      store.createTurn("thr_a", "trn_b", "2025-01-01T00:00:07.000000001Z");
      expect(store.turnsOfThread("thr_a")).toStrictEqual([
        { turn_id: "trn_c", thread_id: "thr_a", created_at: "2025-01-01T00:00:09Z" },
        { turn_id: "trn_a", thread_id: "thr_a", created_at: "2025-01-01T00:00:08+00:00" },
        { turn_id: "trn_b", thread_id: "thr_a", created_at: "2025-01-01T00:00:07.000000001Z" },
      ]);
      expect(store.turnsOfThread("thr_b").map((t) => t.turn_id)).toEqual(["trn_other"]);
      expect(store.turnsOfThread("thr_missing")).toEqual([]);
    });
  });

  describe("events", () => {
    beforeEach(() => {
      store.createThread(thread("thr_a"));
      store.createThread(thread("thr_b"));
      store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
      store.createTurn("thr_b", "trn_2", "2025-01-01T00:00:02Z");
    });

    it("numbers each turn's events 1, 2, 3… independently when appends interleave", () => {
      const order = ["trn_1", "trn_2", "trn_1", "trn_1", "trn_2", "trn_1"];
      const got = order.map((turnId) => [turnId, appendDelta(store, turnId).sequence]);
      expect(got).toEqual([
        ["trn_1", 1],
        ["trn_2", 1],
        ["trn_1", 2],
        ["trn_1", 3],
        ["trn_2", 2],
        ["trn_1", 4],
      ]);
      expect(store.events("trn_1").map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
      expect(store.events("trn_2").map((e) => e.sequence)).toEqual([1, 2]);
    });

    it("hands build the event's sequence and stores the params it returns", () => {
      const seen: number[] = [];
      const build = (sequence: number) => {
        seen.push(sequence);
        return { turn_id: "trn_1", sequence, item_id: `itm_${sequence}` };
      };
      const first = store.append("trn_1", "item/started", build);
      const second = store.append("trn_1", "item/completed", build);
      expect(seen).toEqual([1, 2]);
      const want: StoredEvent[] = [
        { thread_id: "thr_a", turn_id: "trn_1", sequence: 1, method: "item/started", params: { turn_id: "trn_1", sequence: 1, item_id: "itm_1" }, recorded_at: RECORDED_AT },
        { thread_id: "thr_a", turn_id: "trn_1", sequence: 2, method: "item/completed", params: { turn_id: "trn_1", sequence: 2, item_id: "itm_2" }, recorded_at: RECORDED_AT },
      ];
      expect([first, second]).toStrictEqual(want);
      expect(store.events("trn_1")).toStrictEqual(want);
    });

    it("stores nothing when build throws, and the next append takes the same sequence", () => {
      appendDelta(store, "trn_1");
      expect(() =>
        store.append("trn_1", "item/started", () => {
          throw new Error("model exploded");
        }),
      ).toThrow("model exploded");
      expect(store.lastSequence("trn_1")).toBe(1);
      expect(appendDelta(store, "trn_1").sequence).toBe(2);
      expect(store.events("trn_1").map((e) => e.sequence)).toEqual([1, 2]);
    });

    it("refuses params whose own sequence differs from the event's, and stores nothing", () => {
      expect(() => store.append("trn_1", "item/started", () => ({ sequence: 7 }))).toThrow(
        "append item/started to turn trn_1: params.sequence is 7 but the event's sequence is 1",
      );
      expect(store.lastSequence("trn_1")).toBe(0);
    });

    it("refuses params that are not a JSON object, and stores nothing", () => {
      expect(() => store.append("trn_1", "item/started", (sequence) => ({ sequence, size: 1n }))).toThrow(
        /append item\/started to turn trn_1: params are not JSON-serializable/,
      );
      expect(() => store.append("trn_1", "item/started", () => [1] as unknown as Record<string, unknown>)).toThrow(
        "append item/started to turn trn_1: build must return a params object, got an array",
      );
      expect(store.lastSequence("trn_1")).toBe(0);
    });

    it("refuses an append from inside another append's build", () => {
      expect(() => store.append("trn_1", "item/started", (sequence) => ({ sequence, nested: appendDelta(store, "trn_1") }))).toThrow(
        "append to turn trn_1 was called from inside the build of an append to turn trn_1",
      );
      expect(store.lastSequence("trn_1")).toBe(0);
      expect(appendDelta(store, "trn_1").sequence).toBe(1);
    });

    it("refuses an append to an unknown turn without calling build", () => {
      let called = false;
      expect(() =>
        store.append("trn_x", "item/started", (sequence) => {
          called = true;
          return { sequence };
        }),
      ).toThrow("append item/started: turn trn_x does not exist");
      expect(called).toBe(false);
      const error = thrownBy(() => appendDelta(store, "trn_x"));
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).kind).toBe("unknown_turn");
    });

    it("pages through events: every event once, in order", () => {
      for (let i = 0; i < 25; i++) appendDelta(store, "trn_1", `part ${i}`);
      appendDelta(store, "trn_2");
      const pages: number[][] = [];
      let after = 0;
      for (;;) {
        const page = store.events("trn_1", after, 7);
        if (page.length === 0) break;
        pages.push(page.map((e) => e.sequence));
        after = page[page.length - 1]!.sequence;
      }
      expect(pages).toEqual([
        [1, 2, 3, 4, 5, 6, 7],
        [8, 9, 10, 11, 12, 13, 14],
        [15, 16, 17, 18, 19, 20, 21],
        [22, 23, 24, 25],
      ]);
      expect(store.events("trn_1", 10).map((e) => e.params.delta)).toEqual(Array.from({ length: 15 }, (_, i) => `part ${i + 10}`));
      expect(store.events("trn_1", 25)).toEqual([]);
      expect(store.events("trn_1", 0, 0)).toEqual([]);
      expect(store.events("trn_missing")).toEqual([]);
    });

    it("refuses paging arguments that are not whole numbers >= 0", () => {
      expect(() => store.events("trn_1", -1)).toThrow("events of turn trn_1: afterSequence must be an integer >= 0, got -1");
      expect(() => store.events("trn_1", 0, 2.5)).toThrow("events of turn trn_1: limit must be an integer >= 0, got 2.5");
      expect(() => store.events("trn_1", 0, -1)).toThrow("limit must be an integer >= 0, got -1");
    });

    it("reports the last sequence, 0 for a turn without events or an unknown turn", () => {
      expect(store.lastSequence("trn_1")).toBe(0);
      expect(store.lastSequence("trn_missing")).toBe(0);
      for (let i = 0; i < 3; i++) appendDelta(store, "trn_1");
      appendDelta(store, "trn_2");
      expect(store.lastSequence("trn_1")).toBe(3);
      expect(store.lastSequence("trn_2")).toBe(1);
    });

    it("round-trips params exactly: nesting, unicode, control characters, a large string", () => {
      const params = {
        turn_id: "trn_1",
        sequence: 1,
        item: {
          kind: "agent_message",
          parts: [{ text: "héllo wörld ✓ 你好 🧪👩🏽‍💻 e\u0301" }, { text: "tab\there\nnewline\u0000nul\u2028sep" }, null, true, 0, -1.5e-300, 9007199254740991],
          lone_surrogate: "\ud800",
          deep: { a: { b: { c: { d: { e: [[], {}, [[{}]]] } } } } },
          "key with \"quotes\" and \\ backslash": "",
        },
        large: "0123456789abcdef".repeat(64 * 1024), // 1 MiB
      };
      const returned = store.append("trn_1", "item/completed", () => params);
      expect(returned.params).toStrictEqual(params);
      expect(store.events("trn_1")[0]!.params).toStrictEqual(params);
    });

    it("keeps its own copy: changing the built or the returned params does not change the store", () => {
      const built = { sequence: 1, list: [1, 2] };
      const returned = store.append("trn_1", "item/started", () => built);
      built.list.push(3);
      (returned.params.list as number[]).push(4);
      (store.events("trn_1")[0]!.params.list as number[]).push(5);
      expect(store.events("trn_1")[0]!.params).toStrictEqual({ sequence: 1, list: [1, 2] });
    });
  });

  it("stamps events with the current time by default", () => {
    const plain = open();
    try {
      plain.createThread(thread("thr_a"));
      plain.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
      const before = Date.now();
      const { recorded_at } = appendDelta(plain, "trn_1");
      expect(recorded_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Date.parse(recorded_at)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(recorded_at)).toBeLessThanOrEqual(Date.now());
    } finally {
      plain.close();
    }
  });

  it("refuses every call after close, and closes twice without complaint", () => {
    store.createThread(thread("thr_a"));
    store.close();
    store.close();
    expect(() => store.getThread("thr_a")).toThrow("the event store is closed");
    expect(() => store.lastSequence("trn_1")).toThrow("the event store is closed");
  });
});

describe("SqliteEventStore on disk", () => {
  it("gives a reopened file everything back, and continues each turn's sequence without a gap", () => {
    const file = join(dir, "events.db");
    const first = new SqliteEventStore(file, { now: () => RECORDED_AT });
    first.createThread(thread("thr_a", { model: "gpt-test" }));
    first.createTurn("thr_a", "trn_2", "2025-01-01T00:00:01Z");
    first.createTurn("thr_a", "trn_1", "2025-01-01T00:00:02Z");
    for (let i = 0; i < 5; i++) appendDelta(first, "trn_2", `d${i}`);
    appendDelta(first, "trn_1");
    const before = first.events("trn_2");
    first.close();

    const second = new SqliteEventStore(file, { now: () => RECORDED_AT });
    try {
      expect(second.getThread("thr_a")).toStrictEqual(thread("thr_a", { model: "gpt-test" }));
      expect(second.turnsOfThread("thr_a").map((t) => t.turn_id)).toEqual(["trn_2", "trn_1"]);
      expect(second.turnThread("trn_1")).toBe("thr_a");
      expect(second.events("trn_2")).toStrictEqual(before);
      expect(second.lastSequence("trn_2")).toBe(5);
      expect(appendDelta(second, "trn_2").sequence).toBe(6);
      expect(appendDelta(second, "trn_1").sequence).toBe(2);
      expect(second.createTurn("thr_a", "trn_1", "2025-01-01T00:00:03Z")).toBe(false);
      expect(() => second.createThread(thread("thr_a"))).toThrow("thread thr_a already exists");
      // A turn created after the reopen still sorts after the ones created before it.
      second.createTurn("thr_a", "trn_0", "2025-01-01T00:00:00Z");
      expect(second.turnsOfThread("thr_a").map((t) => t.turn_id)).toEqual(["trn_2", "trn_1", "trn_0"]);
    } finally {
      second.close();
    }
  });

  it("keeps the file in WAL mode at the current schema version", () => {
    const file = join(dir, "events.db");
    new SqliteEventStore(file).close();
    // journal_mode=WAL is persistent in the file, so a fresh plain connection sees it.
    const raw = new RawDatabase(file);
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(raw.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
      expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(1);
    } finally {
      raw.close();
    }
  });

  it("refuses a file written by a newer schema, naming the file and both versions", () => {
    const file = join(dir, "events.db");
    new SqliteEventStore(file).close();
    const raw = new RawDatabase(file);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    expect(() => new SqliteEventStore(file)).toThrow(
      `event store ${file} has schema version ${SCHEMA_VERSION + 1}, newer than the ${SCHEMA_VERSION} this gateway knows`,
    );
  });

  it("refuses a file that is not a database, naming it", () => {
    const file = join(dir, "notes.txt");
    writeFileSync(file, "these are not the pages you are looking for\n".repeat(200));
    expect(() => new SqliteEventStore(file)).toThrow(`cannot open event store ${file}: file is not a database`);
  });

  it("keeps sequences gap-free when two stores append to the same file in turn", () => {
    const file = join(dir, "events.db");
    const one = new SqliteEventStore(file);
    const two = new SqliteEventStore(file);
    try {
      one.createThread(thread("thr_a"));
      two.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
      const got = [one, two, two, one, two].map((store) => appendDelta(store, "trn_1").sequence);
      expect(got).toEqual([1, 2, 3, 4, 5]);
      expect(one.events("trn_1").map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    } finally {
      one.close();
      two.close();
    }
  });

  it("loses no reported event when the appending process is killed with SIGKILL", async () => {
    const file = join(dir, "events.db");
    const setup = new SqliteEventStore(file);
    setup.createThread(thread("thr_a"));
    setup.createTurn("thr_a", "trn_1", "2025-01-01T00:00:01Z");
    for (let i = 0; i < 3; i++) appendDelta(setup, "trn_1");
    setup.close();

    const child = await runUntilKilled(file, "trn_1", 300);
    // If the child had died by itself, it would not prove anything about a kill.
    expect(child.signal, `child exited on its own: ${child.stderr}`).toBe("SIGKILL");
    // The child continued the sequence the parent left at 3, and reported it in order.
    expect(child.reported.slice(0, 3)).toEqual([4, 5, 6]);
    const lastReported = child.reported[child.reported.length - 1]!;
    expect(child.reported).toEqual(Array.from({ length: child.reported.length }, (_, i) => i + 4));

    const reopened = new SqliteEventStore(file);
    try {
      const events = reopened.events("trn_1");
      const sequences = events.map((e) => e.sequence);
      // Every reported event is there; one more may have committed before its line was written.
      expect(sequences.length).toBeGreaterThanOrEqual(lastReported);
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1));
      for (const event of events) expect(event.params.sequence).toBe(event.sequence);
      expect(events[lastReported - 1]!.params.delta).toBe("δ".repeat(2048));
      expect(appendDelta(reopened, "trn_1").sequence).toBe(sequences.length + 1);
    } finally {
      reopened.close();
    }
  });
});

describe("openStore", () => {
  it("opens a memory store or a SQLite store on a file", () => {
    const memory = openStore({ memory: true });
    expect(memory).toBeInstanceOf(MemoryEventStore);
    memory.close();
    const file = join(dir, "deep", "events.db");
    const sqlite = openStore({ file });
    expect(sqlite).toBeInstanceOf(SqliteEventStore);
    expect(existsSync(file)).toBe(true);
    sqlite.close();
  });
});

const CHILD = fileURLToPath(new URL("./append-until-killed.ts", import.meta.url));

interface KilledChild {
  readonly signal: NodeJS.Signals | null;
  readonly reported: number[];
  readonly stderr: string;
}

/** Runs the appending child until it has reported `lines` sequences, then kills it with SIGKILL. */
function runUntilKilled(file: string, turnId: string, lines: number): Promise<KilledChild> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, file, turnId], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let killed = false;
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      if (!killed && stdout.split("\n").length - 1 >= lines) {
        killed = true;
        child.kill("SIGKILL");
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (_code, signal) => {
      // Only whole lines: the kill may cut the last one short.
      const complete = stdout.slice(0, stdout.lastIndexOf("\n") + 1);
      const reported = complete.split("\n").filter((line) => line !== "").map(Number);
      resolvePromise({ signal, reported, stderr });
    });
  });
}

/** A plain better-sqlite3 connection, to look at the file from outside the store. */
interface RawConnection {
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): void;
}
const RawDatabase = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawConnection;
