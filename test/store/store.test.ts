/**
 * The event store contract, run against both implementations: threads, turns in creation
 * order, gap-free per-turn sequences, paging, and params stored exactly; routes in
 * creation order with a compare-and-set update, idempotency keys scoped by operation, and
 * settings. Then what only the SQLite store promises: a reopened file holds everything and
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
import type { EventStore, RouteRecord, StoredEvent, ThreadRecord } from "../../runtime/store/store.js";
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

type Route = RouteRecord["route"];

/** A route projection shaped like the wire's, with its nulls, nested policy and list. */
function route(id: string, source: string, extra: Partial<Route> & Record<string, unknown> = {}): Route {
  return {
    route_id: id,
    kind: "execution_bound",
    status: "active",
    allowed_actions: ["send_message", "deliver_result"],
    disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "summary" },
    generation: 1,
    source_policy_generation: 3,
    destination_policy_generation: 1,
    hop_count: 0,
    max_hops: 2,
    grant_fingerprint: `gfp_${id}`,
    expires_at: null,
    return_route_id: null,
    source_execution_id: source,
    source_capsule_id: "cap_src",
    source_thread_id: "thr_src",
    source_workspace_id: "wsp_1",
    source_gateway_id: "gw_1",
    destination_execution_id: null,
    destination_capsule_id: null,
    destination_thread_id: "thr_dst",
    destination_workspace_id: "wsp_1",
    destination_gateway_id: "gw_1",
    created_at: "2025-01-01T00:00:00Z",
    updated_at: "2025-01-01T00:00:00Z",
    ...extra,
  };
}

function ids(records: RouteRecord[]): [string, number][] {
  return records.map((r) => [r.route.route_id, r.ordinal]);
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
        { thread_id: "thr_a", turn_id: "trn_1", sequence: 1, method: "item/started", params: { turn_id: "trn_1", sequence: 1, item_id: "itm_1" }, paramsJson: '{"turn_id":"trn_1","sequence":1,"item_id":"itm_1"}', recorded_at: RECORDED_AT },
        { thread_id: "thr_a", turn_id: "trn_1", sequence: 2, method: "item/completed", params: { turn_id: "trn_1", sequence: 2, item_id: "itm_2" }, paramsJson: '{"turn_id":"trn_1","sequence":2,"item_id":"itm_2"}', recorded_at: RECORDED_AT },
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

  describe("routes", () => {
    it("stores a route and gives it back exactly, with ordinal 1 for the first", () => {
      const given = route("rte_1", "exe_a", {
        grant_fingerprint: "gfp:héllo ✓ 🧪 \u0000\u2028",
        destination_identity_id: "idn_7",
        expires_at: "2025-01-01T01:02:03.123456+02:00",
      });
      const inserted = store.insertRoute(given);
      expect(inserted).toStrictEqual({ route: given, ordinal: 1 });
      expect(store.getRoute("rte_1")).toStrictEqual({ route: given, ordinal: 1 });
      expect(store.getRoute("rte_missing")).toBeUndefined();
    });

    it("stores the JSON of the projection: what insert returns is what a later read gives", () => {
      // An undefined field is not JSON and a Date becomes its text: both stores keep the text.
      const given = { ...route("rte_1", "exe_a"), destination_execution_profile: undefined, updated_at: new Date("2025-02-03T04:05:06.000Z") };
      const want = JSON.parse(JSON.stringify(given)) as Route;
      expect(want.updated_at).toBe("2025-02-03T04:05:06.000Z");
      expect(store.insertRoute(given).route).toStrictEqual(want);
      expect(store.getRoute("rte_1")!.route).toStrictEqual(want);
    });

    it("keeps its own copy: changing the given or a returned route does not change the store", () => {
      const given = route("rte_1", "exe_a");
      const inserted = store.insertRoute(given);
      (given.allowed_actions as string[]).push("start_agent");
      (inserted.route.allowed_actions as string[]).push("create_task");
      (store.getRoute("rte_1")!.route.allowed_actions as string[]).push("schedule_task");
      (store.allRoutes()[0]!.route.allowed_actions as string[]).push("review_task_result");
      expect(store.getRoute("rte_1")!.route.allowed_actions).toEqual(["send_message", "deliver_result"]);
    });

    it("refuses a route id that exists, keeps the first route and gives the next route the next ordinal", () => {
      store.insertRoute(route("rte_1", "exe_a", { grant_fingerprint: "first" }));
      const error = thrownBy(() => store.insertRoute(route("rte_1", "exe_b", { grant_fingerprint: "second" })));
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).kind).toBe("route_exists");
      expect((error as StoreError).message).toBe("route rte_1 already exists");
      expect(store.getRoute("rte_1")).toStrictEqual({ route: route("rte_1", "exe_a", { grant_fingerprint: "first" }), ordinal: 1 });
      expect(store.routesBySource("exe_b")).toEqual([]);
      expect(store.insertRoute(route("rte_2", "exe_b")).ordinal).toBe(2);
    });

    it("numbers routes 1, 2, 3 in creation order across sources, and lists them all in that order", () => {
      // Creation order c, a, b is not id order; the sources interleave.
      const got = [route("rte_c", "exe_a"), route("rte_a", "exe_b"), route("rte_b", "exe_a")].map((r) => store.insertRoute(r).ordinal);
      expect(got).toEqual([1, 2, 3]);
      expect(ids(store.allRoutes())).toEqual([
        ["rte_c", 1],
        ["rte_a", 2],
        ["rte_b", 3],
      ]);
      expect(store.allRoutes().map((r) => r.route)).toStrictEqual([route("rte_c", "exe_a"), route("rte_a", "exe_b"), route("rte_b", "exe_a")]);
    });

    it("answers an empty list while there are no routes", () => {
      expect(store.allRoutes()).toEqual([]);
      expect(store.routesBySource("exe_a")).toEqual([]);
    });

    it("pages through one source's routes: each once, in creation order, none of another source", () => {
      // exe_a's 10 routes are interleaved with exe_b's, so their ordinals have holes.
      for (let i = 1; i <= 10; i++) {
        store.insertRoute(route(`rte_a${i}`, "exe_a"));
        if (i % 3 === 0) store.insertRoute(route(`rte_b${i}`, "exe_b"));
      }
      const pages: string[][] = [];
      let after = 0;
      // Bounded, so a store that ignored afterOrdinal fails here instead of looping forever.
      for (let i = 0; i < 10; i++) {
        const page = store.routesBySource("exe_a", after, 4);
        if (page.length === 0) break;
        pages.push(page.map((r) => r.route.route_id));
        after = page[page.length - 1]!.ordinal;
      }
      expect(pages).toEqual([
        ["rte_a1", "rte_a2", "rte_a3", "rte_a4"],
        ["rte_a5", "rte_a6", "rte_a7", "rte_a8"],
        ["rte_a9", "rte_a10"],
      ]);
      expect(store.routesBySource("exe_a").map((r) => r.ordinal)).toEqual([1, 2, 3, 5, 6, 7, 9, 10, 11, 13]);
      // afterOrdinal may name another source's ordinal: the page starts after it all the same.
      expect(ids(store.routesBySource("exe_a", 4, 2))).toEqual([
        ["rte_a4", 5],
        ["rte_a5", 6],
      ]);
      expect(ids(store.routesBySource("exe_b"))).toEqual([
        ["rte_b3", 4],
        ["rte_b6", 8],
        ["rte_b9", 12],
      ]);
      expect(store.routesBySource("exe_a", 13)).toEqual([]);
      expect(store.routesBySource("exe_a", 0, 0)).toEqual([]);
      expect(store.routesBySource("exe_missing")).toEqual([]);
    });

    it("refuses paging arguments that are not whole numbers >= 0, naming the source", () => {
      expect(() => store.routesBySource("exe_a", -1)).toThrow("routes of source exe_a: afterOrdinal must be an integer >= 0, got -1");
      expect(() => store.routesBySource("exe_a", 1.5)).toThrow("routes of source exe_a: afterOrdinal must be an integer >= 0, got 1.5");
      expect(() => store.routesBySource("exe_a", 0, -1)).toThrow("routes of source exe_a: limit must be an integer >= 0, got -1");
      expect(() => store.routesBySource("exe_a", 0, Number.NaN)).toThrow("routes of source exe_a: limit must be an integer >= 0, got NaN");
    });

    it("replaces a route only while its generation is the expected one", () => {
      store.insertRoute(route("rte_0", "exe_a"));
      const first = store.insertRoute(route("rte_1", "exe_a"));
      store.insertRoute(route("rte_2", "exe_a"));
      const revoked = route("rte_1", "exe_a", { status: "revoked", generation: 2, updated_at: "2025-01-01T00:05:00Z" });
      const stale = route("rte_1", "exe_a", { status: "prepared", generation: 3 });

      // A caller that saw generation 1 wins once; one that still believes 1 afterwards loses.
      expect(store.updateRoute(revoked, 1)).toBe(true);
      expect(store.getRoute("rte_1")).toStrictEqual({ route: revoked, ordinal: first.ordinal });
      expect(store.updateRoute(stale, 1)).toBe(false);
      expect(store.getRoute("rte_1")).toStrictEqual({ route: revoked, ordinal: first.ordinal });

      // The update keeps the route's place, before the one created after it: same ordinal,
      // same order in both lists.
      expect(ids(store.allRoutes())).toEqual([
        ["rte_0", 1],
        ["rte_1", 2],
        ["rte_2", 3],
      ]);
      expect(store.routesBySource("exe_a").map((r) => r.route)).toStrictEqual([route("rte_0", "exe_a"), revoked, route("rte_2", "exe_a")]);
      expect(store.updateRoute(stale, 2)).toBe(true);
      expect(store.getRoute("rte_1")!.route).toStrictEqual(stale);
    });

    it("answers false for an update of an unknown route, and creates nothing", () => {
      expect(store.updateRoute(route("rte_missing", "exe_a", { generation: 2 }), 1)).toBe(false);
      expect(store.getRoute("rte_missing")).toBeUndefined();
      expect(store.allRoutes()).toEqual([]);
    });

    it("refuses an update that does not move the generation forward, and changes nothing", () => {
      store.insertRoute(route("rte_1", "exe_a", { generation: 2 }));
      // Keeping the generation would let every writer holding it win; going back would let a stale one win again.
      for (const generation of [2, 1]) {
        const error = thrownBy(() => store.updateRoute(route("rte_1", "exe_a", { generation, status: "revoked" }), 2));
        expect((error as StoreError).kind).toBe("invalid_route");
        expect((error as StoreError).message).toBe(`update route rte_1: the new generation ${generation} must be above the expected generation 2`);
      }
      expect(() => store.updateRoute(route("rte_1", "exe_a", { generation: 3 }), 0)).toThrow(
        "update route rte_1: expectedGeneration must be an integer >= 1, got 0",
      );
      expect(() => store.updateRoute(route("rte_1", "exe_a", { generation: 3 }), 1.5)).toThrow(
        "update route rte_1: expectedGeneration must be an integer >= 1, got 1.5",
      );
      expect(store.getRoute("rte_1")!.route).toStrictEqual(route("rte_1", "exe_a", { generation: 2 }));
    });

    it("refuses a projection it could not index or keep, naming the route, and stores nothing", () => {
      const bad: [string, unknown, string][] = [
        ["an array", [route("rte_1", "exe_a")], "insert route: the route must be an object, got an array"],
        ["null", null, "insert route: the route must be an object, got null"],
        ["no route_id", { ...route("rte_1", "exe_a"), route_id: undefined }, "insert route: route_id must be a non-empty string, got nothing"],
        ["an empty route_id", route("", "exe_a"), 'insert route: route_id must be a non-empty string, got ""'],
        ["a numeric source", route("rte_1", 7 as unknown as string), "insert route rte_1: source_execution_id must be a non-empty string, got 7"],
        ["generation 0", route("rte_1", "exe_a", { generation: 0 }), "insert route rte_1: generation must be an integer >= 1, got 0"],
        ["a fractional generation", route("rte_1", "exe_a", { generation: 1.5 }), "insert route rte_1: generation must be an integer >= 1, got 1.5"],
        ["a text generation", route("rte_1", "exe_a", { generation: "1" as unknown as number }), 'insert route rte_1: generation must be an integer >= 1, got "1"'],
        ["status expired", route("rte_1", "exe_a", { status: "expired" }), 'insert route rte_1: status "expired" is derived on read and never stored'],
        ["a bigint", route("rte_1", "exe_a", { hop_count: 1n }), "insert route rte_1: the route is not JSON-serializable"],
      ];
      for (const [name, given, message] of bad) {
        const error = thrownBy(() => store.insertRoute(given as Route));
        expect(error, name).toBeInstanceOf(StoreError);
        expect((error as StoreError).kind, name).toBe("invalid_route");
        expect((error as StoreError).message, name).toContain(message);
      }
      expect(store.allRoutes()).toEqual([]);

      store.insertRoute(route("rte_1", "exe_a"));
      expect(() => store.updateRoute(route("rte_1", "exe_a", { status: "expired", generation: 2 }), 1)).toThrow(
        'update route rte_1: status "expired" is derived on read and never stored',
      );
      expect(store.getRoute("rte_1")).toStrictEqual({ route: route("rte_1", "exe_a"), ordinal: 1 });
    });
  });

  describe("idempotency keys", () => {
    const create = { operation: "agent/route/create", params_digest: "sha256:aaa", route_id: "rte_1" };
    const revoke = { operation: "agent/route/revoke", params_digest: "sha256:bbb", route_id: "rte_2" };

    it("records a key's first use and gives it back, undefined for an unused key", () => {
      expect(store.getIdempotency("agent/route/create", "key_1")).toBeUndefined();
      expect(store.putIdempotency("key_1", create)).toBe(true);
      expect(store.getIdempotency("agent/route/create", "key_1")).toStrictEqual(create);
      expect(store.getIdempotency("agent/route/create", "key_2")).toBeUndefined();
    });

    it("scopes a key by operation: the same key for another operation is a separate record", () => {
      expect(store.putIdempotency("key_1", create)).toBe(true);
      expect(store.getIdempotency("agent/route/revoke", "key_1")).toBeUndefined();
      expect(store.putIdempotency("key_1", revoke)).toBe(true);
      expect(store.getIdempotency("agent/route/create", "key_1")).toStrictEqual(create);
      expect(store.getIdempotency("agent/route/revoke", "key_1")).toStrictEqual(revoke);
    });

    it("refuses a second use of a key for the same operation and keeps the first record", () => {
      expect(store.putIdempotency("key_1", create)).toBe(true);
      expect(store.putIdempotency("key_1", { ...create, params_digest: "sha256:ccc", route_id: "rte_9" })).toBe(false);
      expect(store.putIdempotency("key_1", create)).toBe(false);
      expect(store.getIdempotency("agent/route/create", "key_1")).toStrictEqual(create);
    });

    it("keeps only the record's own fields, as its own copy", () => {
      const given = { ...create, extra: "not stored" };
      store.putIdempotency("key_1", given);
      given.route_id = "rte_changed";
      const read = store.getIdempotency("agent/route/create", "key_1")!;
      expect(read).toStrictEqual(create);
      (read as { route_id: string }).route_id = "rte_changed_too";
      expect(store.getIdempotency("agent/route/create", "key_1")).toStrictEqual(create);
    });

    it("refuses a record whose fields are not text, naming the key", () => {
      expect(() => store.putIdempotency("key_1", { ...create, route_id: 7 as unknown as string })).toThrow(
        "put idempotency key key_1: route_id must be a string, got number",
      );
      expect(store.getIdempotency("agent/route/create", "key_1")).toBeUndefined();
    });
  });

  describe("settings", () => {
    it("gives back a setting, the last one written, undefined for one never written", () => {
      expect(store.getMeta("policy_generation")).toBeUndefined();
      store.setMeta("policy_generation", "1");
      store.setMeta("config_digest", "");
      expect(store.getMeta("policy_generation")).toBe("1");
      expect(store.getMeta("config_digest")).toBe("");
      store.setMeta("policy_generation", "2");
      expect(store.getMeta("policy_generation")).toBe("2");
      expect(store.getMeta("config_digest")).toBe("");
    });

    it("refuses a value that is not text, naming the key", () => {
      expect(() => store.setMeta("policy_generation", 2 as unknown as string)).toThrow("set meta policy_generation: value must be a string, got number");
      expect(store.getMeta("policy_generation")).toBeUndefined();
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
    const calls: [string, () => unknown][] = [
      ["insertRoute", () => store.insertRoute(route("rte_1", "exe_a"))],
      ["updateRoute", () => store.updateRoute(route("rte_1", "exe_a", { generation: 2 }), 1)],
      ["getRoute", () => store.getRoute("rte_1")],
      ["routesBySource", () => store.routesBySource("exe_a")],
      ["allRoutes", () => store.allRoutes()],
      ["getIdempotency", () => store.getIdempotency("agent/route/create", "key_1")],
      ["putIdempotency", () => store.putIdempotency("key_1", { operation: "agent/route/create", params_digest: "d", route_id: "rte_1" })],
      ["getMeta", () => store.getMeta("k")],
      ["setMeta", () => store.setMeta("k", "v")],
    ];
    for (const [name, call] of calls) {
      const error = thrownBy(call);
      expect((error as StoreError).kind, name).toBe("closed");
    }
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
      raw.prepare(`INSERT INTO threads (id, workspace_id, cwd, mode, model_provider, model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
        .run("thr_a", "wsp_1", "/work/project", "Agent", null, "gpt-test", "2025-01-01T00:00:00Z");
      raw.prepare(`INSERT INTO turns (turn_id, thread_id, created_at, ordinal) VALUES (?, ?, ?, ?)`).run("trn_1", "thr_a", "2025-01-01T00:00:01Z", 1);
      const insertEvent = raw.prepare(
        `INSERT INTO events (turn_id, sequence, thread_id, method, params, recorded_at) VALUES (?, ?, ?, ?, ?, ?)`,
      );
      for (const sequence of [1, 2]) {
        insertEvent.run("trn_1", sequence, "thr_a", "item/agent_message/delta", JSON.stringify({ turn_id: "trn_1", sequence, delta: `d${sequence}` }), RECORDED_AT);
      }
    } finally {
      raw.close();
    }

    const store = new SqliteEventStore(file);
    try {
      expect(store.getThread("thr_a")).toStrictEqual(thread("thr_a", { model: "gpt-test" }));
      expect(store.turnsOfThread("thr_a").map((t) => t.turn_id)).toEqual(["trn_1"]);
      expect(store.events("trn_1").map((e) => e.params.delta)).toEqual(["d1", "d2"]);
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
  prepare(sql: string): { run(...params: unknown[]): unknown };
  close(): void;
}
const RawDatabase = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawConnection;
