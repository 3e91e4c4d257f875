/**
 * The event store contract (contract.ts) run against the memory and SQLite stores. Then
 * what only the SQLite store promises: a reopened file holds everything and
 * continues each turn's sequence and the route ordinals, the file is in WAL mode, a file
 * of the previous schema version is migrated on open, two connections to one file share
 * ordinals and the compare-and-set, and a process killed with SIGKILL mid-append loses no
 * event it had reported as committed.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EventStore, RouteRecord, StoredEvent, ThreadRecord } from "../../packages/gateway/src/store/store.js";
import { CHUNK, MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import { SCHEMA_VERSION, SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";
import { openStore } from "../../packages/gateway/src/store/open.js";
import { StoreError } from "../../packages/gateway/src/store/rules.js";
import { RECORDED_AT, appendDelta, committed, ids, route, storeContract, thread, thrownBy } from "./contract.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "turnspec-store-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

storeContract(
  "MemoryEventStore",
  (now) => new MemoryEventStore(now === undefined ? {} : { now }),
  async (store, method) => (store as MemoryEventStore).failCommitsOf(method),
);
// A file under folders that do not exist yet: opening must create them.
const contractFile = () => join(dir, "state", "gateway", "events.db");
storeContract(
  "SqliteEventStore",
  (now) => new SqliteEventStore(contractFile(), now === undefined ? {} : { now }),
  // A real failure of SQLite's COMMIT: a deferred foreign key, broken by a trigger on the event.
  async (_store, method) => {
    const raw = new RawDatabase(contractFile());
    raw.exec(`
      CREATE TABLE doomed (turn_id TEXT REFERENCES turns (turn_id) DEFERRABLE INITIALLY DEFERRED);
      CREATE TRIGGER doom AFTER INSERT ON event_runs WHEN instr(NEW.methods, '"${method}"') > 0
      BEGIN INSERT INTO doomed VALUES ('no such turn'); END;
    `);
    return () => {
      raw.exec(`DROP TRIGGER doom; DROP TABLE doomed;`);
      raw.close();
    };
  },
);

// ":memory:" cannot be opened by a second connection: the store has no writer thread and
// commits on its own connection, as a file store does once its writer has failed. The
// trigger goes on that connection.
storeContract(
  "SqliteEventStore without a writer thread (:memory:)",
  (now) => new SqliteEventStore(":memory:", now === undefined ? {} : { now }),
  async (store, method) => {
    const own = (store as unknown as { db: RawConnection }).db;
    own.exec(`
      CREATE TABLE doomed (turn_id TEXT REFERENCES turns (turn_id) DEFERRABLE INITIALLY DEFERRED);
      CREATE TRIGGER doom AFTER INSERT ON event_runs WHEN instr(NEW.methods, '"${method}"') > 0
      BEGIN INSERT INTO doomed VALUES ('no such turn'); END;
    `);
    return () => {
      own.exec(`DROP TRIGGER doom; DROP TABLE doomed;`);
    };
  },
);

describe("MemoryEventStore", () => {
  it("undoes a failed commit's events across the point where a turn's texts were joined, and keeps the rest exact", async () => {
    const store = new MemoryEventStore({ now: () => RECORDED_AT });
    store.createThread(thread("thr_a"));
    store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:00Z");
    for (let i = 1; i < CHUNK; i++) appendDelta(store, "trn_1", `d${i}`);
    expect(await committed(store)).toBeUndefined();
    // Events CHUNK (which joins the turn's texts), CHUNK + 1 and one the commit fails on.
    store.failCommitsOf("item/completed");
    appendDelta(store, "trn_1", "lost");
    appendDelta(store, "trn_1", "lost too");
    store.append("trn_1", "item/completed", (sequence) => ({ turn_id: "trn_1", sequence, item_id: "itm_1" }));
    expect(await committed(store)).toBeInstanceOf(StoreError);
    expect(store.lastSequence("trn_1")).toBe(CHUNK - 1);
    expect(store.events("trn_1").map((e) => e.params.delta)).toEqual(Array.from({ length: CHUNK - 1 }, (_, i) => `d${i + 1}`));
    // The turn goes on from there, and its texts are joined as before.
    for (let i = CHUNK; i <= CHUNK + 2; i++) expect(appendDelta(store, "trn_1", `d${i}`).sequence).toBe(i);
    expect(store.events("trn_1", CHUNK - 2).map((e) => [e.sequence, e.params.delta])).toEqual([
      [CHUNK - 1, `d${CHUNK - 1}`],
      [CHUNK, `d${CHUNK}`],
      [CHUNK + 1, `d${CHUNK + 1}`],
      [CHUNK + 2, `d${CHUNK + 2}`],
    ]);
  });
});

describe("MemoryEventStore texts", () => {
  it("gives back every event's text exactly, by any stretch, in chunks of ASCII and of other text alike", async () => {
    const store = new MemoryEventStore({ now: () => RECORDED_AT });
    store.createThread(thread("thr_a"));
    store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:00Z");
    // Three chunks of ASCII, then chunks mixing two- to four-byte characters and escapes, then an open chunk.
    const texts = Array.from({ length: CHUNK * 6 + 5 }, (_, i) =>
      i < CHUNK * 3 ? `d${i} ` : i % 3 === 0 ? `é${i}😀` : i % 3 === 1 ? `中文${i}\n"q"` : `plain ${i}`,
    );
    const appended = texts.map((text) => appendDelta(store, "trn_1", text));
    expect(await committed(store)).toBeUndefined();
    const all = store.events("trn_1");
    expect(all.map((e) => e.paramsJson)).toEqual(appended.map((e) => e.paramsJson));
    expect(all.map((e) => e.params.delta)).toEqual(texts);
    for (const [after, limit] of [
      [CHUNK * 3 - 1, 3],
      [CHUNK * 4 + 7, CHUNK + 2],
      [CHUNK * 6 - 1, 10],
    ] as const) {
      expect(store.events("trn_1", after, limit).map((e) => [e.sequence, e.params.delta])).toEqual(
        texts.slice(after, after + limit).map((text, k) => [after + k + 1, text]),
      );
    }
    // An undo across the point where a chunk of other text was closed gives its texts back as they were.
    const more = new MemoryEventStore({ now: () => RECORDED_AT });
    more.createThread(thread("thr_a"));
    more.createTurn("thr_a", "trn_2", "2025-01-01T00:00:00Z");
    for (let i = 1; i < CHUNK; i++) appendDelta(more, "trn_2", `ü${i}😀`);
    expect(await committed(more)).toBeUndefined();
    more.failCommitsOf("item/completed");
    appendDelta(more, "trn_2", "lost ü");
    more.append("trn_2", "item/completed", (sequence) => ({ turn_id: "trn_2", sequence, item_id: "itm_1" }));
    expect(await committed(more)).toBeInstanceOf(StoreError);
    expect(more.events("trn_2").map((e) => e.params.delta)).toEqual(Array.from({ length: CHUNK - 1 }, (_, i) => `ü${i + 1}😀`));
    expect(appendDelta(more, "trn_2", "kept ü").sequence).toBe(CHUNK);
    expect(more.events("trn_2", CHUNK - 2).map((e) => e.params.delta)).toEqual([`ü${CHUNK - 1}😀`, "kept ü"]);
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

  it("stores a batch's events of a turn as one run, and reads any stretch of it back exactly", () => {
    const file = join(dir, "events.db");
    let time = 0;
    const first = new SqliteEventStore(file, { now: () => `2025-01-01T00:00:0${Math.floor(time++ / 2)}.000Z` });
    first.createThread(thread("thr_a"));
    first.createTurn("thr_a", "trn_1", "2025-01-01T00:00:00Z");
    // Texts outside the Basic Multilingual Plane: offsets count UTF-16 code units, as JavaScript does.
    const texts = ["a", "🙂🙂", "", "ünïcödé", "z"];
    for (const text of texts) appendDelta(first, "trn_1", text);
    first.append("trn_1", "item/completed", (sequence) => ({ turn_id: "trn_1", sequence, item_id: "itm_1" }));
    const written = first.events("trn_1");
    first.close();

    const raw = new RawDatabase(file);
    try {
      expect(
        raw.prepare(`SELECT first_sequence, last_sequence, methods, recorded_at FROM event_runs WHERE turn_id = 'trn_1'`).all(),
      ).toEqual([
        {
          first_sequence: 1,
          last_sequence: 6,
          methods: '[["item/agent_message/delta",5],["item/completed",1]]',
          recorded_at: '[["2025-01-01T00:00:00.000Z",2],["2025-01-01T00:00:01.000Z",2],["2025-01-01T00:00:02.000Z",2]]',
        },
      ]);
    } finally {
      raw.close();
    }
    const second = new SqliteEventStore(file);
    try {
      expect(second.events("trn_1")).toStrictEqual(written);
      expect(written.map((e) => [e.method, e.params.delta, e.recorded_at])).toEqual([
        ["item/agent_message/delta", "a", "2025-01-01T00:00:00.000Z"],
        ["item/agent_message/delta", "🙂🙂", "2025-01-01T00:00:00.000Z"],
        ["item/agent_message/delta", "", "2025-01-01T00:00:01.000Z"],
        ["item/agent_message/delta", "ünïcödé", "2025-01-01T00:00:01.000Z"],
        ["item/agent_message/delta", "z", "2025-01-01T00:00:02.000Z"],
        ["item/completed", undefined, "2025-01-01T00:00:02.000Z"],
      ]);
      expect(second.events("trn_1", 2, 3)).toStrictEqual(written.slice(2, 5));
      expect(second.events("trn_1", 6)).toEqual([]);
      expect(second.lastSequence("trn_1")).toBe(6);
    } finally {
      second.close();
    }
  });

  it("refuses to read a run whose columns do not agree with each other, naming the turn and its sequences", () => {
    const file = join(dir, "events.db");
    const store = new SqliteEventStore(file);
    store.createThread(thread("thr_a"));
    store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:00Z");
    for (const text of ["a", "b", "c"]) appendDelta(store, "trn_1", text);
    store.close();
    const raw = new RawDatabase(file);
    try {
      raw.prepare(`UPDATE event_runs SET ends = '[5]' WHERE turn_id = 'trn_1'`).run();
    } finally {
      raw.close();
    }
    const reopened = new SqliteEventStore(file);
    try {
      const error = thrownBy(() => reopened.events("trn_1"));
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ kind: "corrupt_run" });
      expect((error as Error).message).toBe(
        `event store ${file}: the run of turn trn_1 holding sequences 1 to 3 does not agree with itself (2 texts, 3 methods, 3 times for 3 events)`,
      );
    } finally {
      reopened.close();
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

  it("gives a reopened file its routes, idempotency keys and settings back, and continues the ordinals", () => {
    const file = join(dir, "events.db");
    const first = new SqliteEventStore(file);
    first.insertRoute(route("rte_1", "exe_a"));
    first.insertRoute(route("rte_2", "exe_b"));
    first.insertRoute(route("rte_3", "exe_a"));
    const revoked = route("rte_3", "exe_a", { status: "revoked", generation: 2 });
    expect(first.updateRoute(revoked, 1)).toBe(true);
    const create = { operation: "agent/route/create", params_digest: "sha256:aaa", route_id: "rte_1" };
    first.putIdempotency("key_1", create);
    first.setMeta("policy_generation", "4");
    const before = first.allRoutes();
    first.close();

    const second = new SqliteEventStore(file);
    try {
      expect(second.allRoutes()).toStrictEqual(before);
      expect(second.getRoute("rte_3")).toStrictEqual({ route: revoked, ordinal: 3 });
      expect(ids(second.routesBySource("exe_a"))).toEqual([
        ["rte_1", 1],
        ["rte_3", 3],
      ]);
      expect(second.getIdempotency("agent/route/create", "key_1")).toStrictEqual(create);
      expect(second.putIdempotency("key_1", { ...create, route_id: "rte_2" })).toBe(false);
      expect(second.getMeta("policy_generation")).toBe("4");
      // The generation the first store wrote is the one the compare-and-set sees.
      expect(second.updateRoute(route("rte_3", "exe_a", { generation: 3 }), 1)).toBe(false);
      expect(second.updateRoute(route("rte_3", "exe_a", { generation: 3 }), 2)).toBe(true);
      expect(() => second.insertRoute(route("rte_2", "exe_b"))).toThrow("route rte_2 already exists");
      expect(second.insertRoute(route("rte_4", "exe_b")).ordinal).toBe(4);
    } finally {
      second.close();
    }
  });

  it("shares route ordinals, the compare-and-set and idempotency keys between two stores on one file", () => {
    const file = join(dir, "events.db");
    const one = new SqliteEventStore(file);
    const two = new SqliteEventStore(file);
    try {
      const got = [one, two, two, one].map((store, i) => store.insertRoute(route(`rte_${i + 1}`, "exe_a")).ordinal);
      expect(got).toEqual([1, 2, 3, 4]);
      expect(() => two.insertRoute(route("rte_1", "exe_b"))).toThrow("route rte_1 already exists");

      // Both read generation 1; the first to write wins, the other is refused and sees the winner.
      expect(one.getRoute("rte_2")!.route.generation).toBe(1);
      expect(two.getRoute("rte_2")!.route.generation).toBe(1);
      const byOne = route("rte_2", "exe_a", { status: "revoked", generation: 2, grant_fingerprint: "one" });
      expect(one.updateRoute(byOne, 1)).toBe(true);
      expect(two.updateRoute(route("rte_2", "exe_a", { status: "revoked", generation: 2, grant_fingerprint: "two" }), 1)).toBe(false);
      expect(two.getRoute("rte_2")).toStrictEqual({ route: byOne, ordinal: 2 });

      const create = { operation: "agent/route/create", params_digest: "sha256:aaa", route_id: "rte_1" };
      expect(one.putIdempotency("key_1", create)).toBe(true);
      expect(two.putIdempotency("key_1", { ...create, route_id: "rte_3" })).toBe(false);
      expect(two.getIdempotency("agent/route/create", "key_1")).toStrictEqual(create);
      two.setMeta("policy_generation", "9");
      expect(one.getMeta("policy_generation")).toBe("9");
    } finally {
      one.close();
      two.close();
    }
  });

  it("migrates a file of schema version 1 on open, keeping its threads, turns and events", () => {
    const file = join(dir, "events.db");
    const raw = new RawDatabase(file);
    try {
      raw.pragma("journal_mode = WAL");
      raw.exec(SCHEMA_V1);
      raw.pragma("user_version = 1");
      raw
        .prepare(`INSERT INTO threads (id, workspace_id, cwd, mode, model_provider, model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
        .run("thr_a", "wsp_1", "/work/project", "Agent", null, "gpt-test", "2025-01-01T00:00:00Z");
      raw
        .prepare(`INSERT INTO turns (turn_id, thread_id, created_at, ordinal) VALUES (?, ?, ?, ?)`)
        .run("trn_1", "thr_a", "2025-01-01T00:00:01Z", 1);
      const insertEvent = raw.prepare(
        `INSERT INTO events (turn_id, sequence, thread_id, method, params, recorded_at) VALUES (?, ?, ?, ?, ?, ?)`,
      );
      for (const sequence of [1, 2]) {
        insertEvent.run(
          "trn_1",
          sequence,
          "thr_a",
          "item/agent_message/delta",
          JSON.stringify({ turn_id: "trn_1", sequence, delta: `d${sequence} 🙂` }),
          RECORDED_AT,
        );
      }
    } finally {
      raw.close();
    }

    const store = new SqliteEventStore(file);
    try {
      expect(store.getThread("thr_a")).toStrictEqual(thread("thr_a", { model: "gpt-test" }));
      expect(store.turnsOfThread("thr_a").map((t) => t.turn_id)).toEqual(["trn_1"]);
      expect(store.events("trn_1").map((e) => [e.sequence, e.method, e.params.delta, e.recorded_at])).toEqual([
        [1, "item/agent_message/delta", "d1 🙂", RECORDED_AT],
        [2, "item/agent_message/delta", "d2 🙂", RECORDED_AT],
      ]);
      expect(store.events("trn_1", 1).map((e) => e.sequence)).toEqual([2]);
      expect(appendDelta(store, "trn_1").sequence).toBe(3);
      expect(store.insertRoute(route("rte_1", "exe_a")).ordinal).toBe(1);
      expect(store.updateRoute(route("rte_1", "exe_a", { generation: 2 }), 1)).toBe(true);
      expect(store.putIdempotency("key_1", { operation: "agent/route/create", params_digest: "d", route_id: "rte_1" })).toBe(true);
      store.setMeta("policy_generation", "1");
    } finally {
      store.close();
    }

    const check = new RawDatabase(file);
    try {
      expect(check.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
    } finally {
      check.close();
    }
    // Opening the migrated file again runs no step twice and finds everything.
    const reopened = new SqliteEventStore(file);
    try {
      expect(reopened.getRoute("rte_1")!.route.generation).toBe(2);
      expect(reopened.getMeta("policy_generation")).toBe("1");
      expect(reopened.lastSequence("trn_1")).toBe(3);
    } finally {
      reopened.close();
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
      // Every reported event is there; more may have committed before their lines were written.
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
    const child = spawn(
      process.execPath,
      ["--import", new URL("../../scripts/from-source.mjs", import.meta.url).href, CHILD, file, turnId],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
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
      const reported = complete
        .split("\n")
        .filter((line) => line !== "")
        .map(Number);
      resolvePromise({ signal, reported, stderr });
    });
  });
}

/**
 * Schema version 1 exactly as a released gateway created it (step 1 of sqlite.ts's
 * migrations when version 2 was added). Frozen on purpose: it stands for files already on
 * disk, so it must not follow later edits of the migrations.
 */
const SCHEMA_V1 = `
  CREATE TABLE threads (
    id             TEXT NOT NULL PRIMARY KEY,
    workspace_id   TEXT NOT NULL,
    cwd            TEXT NOT NULL,
    mode           TEXT NOT NULL,
    model_provider TEXT,
    model          TEXT,
    created_at     TEXT NOT NULL
  ) STRICT;
  CREATE TABLE turns (
    turn_id    TEXT NOT NULL PRIMARY KEY,
    thread_id  TEXT NOT NULL REFERENCES threads (id),
    created_at TEXT NOT NULL,
    ordinal    INTEGER NOT NULL UNIQUE
  ) STRICT;
  CREATE INDEX turns_of_thread ON turns (thread_id, ordinal);
  CREATE TABLE events (
    turn_id     TEXT NOT NULL REFERENCES turns (turn_id),
    sequence    INTEGER NOT NULL CHECK (sequence > 0),
    thread_id   TEXT NOT NULL,
    method      TEXT NOT NULL,
    params      TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (turn_id, sequence)
  ) WITHOUT ROWID, STRICT;
`;

/** A plain better-sqlite3 connection, to look at the file from outside the store. */
interface RawConnection {
  pragma(source: string, options?: { simple?: boolean }): unknown;
  exec(sql: string): unknown;
  prepare(sql: string): { run(...params: unknown[]): unknown; all(...params: unknown[]): unknown[] };
  close(): void;
}
const RawDatabase = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawConnection;
