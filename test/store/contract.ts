/**
 * The event store contract: what every store promises, as one suite run against each
 * implementation (memory and SQLite in store.test.ts, PostgreSQL in postgres.test.ts), so
 * they cannot drift. Threads, turns in creation order, gap-free per-turn sequences,
 * paging, and params stored exactly; routes in creation order with a compare-and-set
 * update, idempotency keys scoped by operation, and settings; and a turn whose first commit
 * fails is gone with its events, its id free again.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EventStore, RouteRecord, StoredEvent, ThreadRecord } from "../../packages/gateway/src/store/store.js";
import { StoreError } from "../../packages/gateway/src/store/rules.js";

export const RECORDED_AT = "2025-03-04T05:06:07.890Z";

export function thread(id: string, extra: Partial<ThreadRecord> = {}): ThreadRecord {
  return { id, workspace_id: "wsp_1", cwd: "/work/project", mode: "Agent", created_at: "2025-01-01T00:00:00Z", ...extra };
}

/** Appends an event whose params carry the sequence, as every turn event does. */
export function appendDelta(store: EventStore, turnId: string, text = "x"): StoredEvent {
  return store.append(turnId, "item/agent_message/delta", (sequence) => ({ turn_id: turnId, sequence, delta: text }));
}

export type Route = RouteRecord["route"];

/** A route projection shaped like the wire's, with its nulls, nested policy and list. */
export function route(id: string, source: string, extra: Partial<Route> & Record<string, unknown> = {}): Route {
  return {
    route_id: id,
    kind: "execution_bound",
    status: "active",
    allowed_actions: ["send_message", "deliver_result"],
    disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "summary_only" },
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

export function ids(records: RouteRecord[]): [string, number][] {
  return records.map((r) => [r.route.route_id, r.ordinal]);
}

export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw");
}

/** Opens a new, empty store of the implementation under test, with the given clock. */
export type OpenStore = (now?: () => string) => EventStore;

/**
 * Makes every commit of `store` that holds an event whose method is `method` fail, the way
 * that store's commits really fail (a constraint its database checks at COMMIT) or through
 * its own hook for tests; called with nothing uncommitted. Resolves to what undoes that.
 */
export type FailCommitsOf = (store: EventStore, method: string) => Promise<() => void | Promise<void>>;

/** Waits for every write made so far to be committed; resolves to the commit's failure, if it failed. */
export function committed(store: EventStore): Promise<StoreError | undefined> {
  return new Promise((done) => store.afterCommit(done));
}

/** Registers the contract's tests for one implementation, in a describe block named after it. */
export function storeContract(name: string, open: OpenStore, failCommitsOf: FailCommitsOf): void {
  describe(name, () => {
    let store: EventStore;
    beforeEach(() => {
      store = open(() => RECORDED_AT);
    });
    afterEach(() => {
      store.close();
    });

    describe("threads", () => {
      it("gives back a thread as it was stored, with and without its optional fields", () => {
        const full = thread("thr_full", {
          mode: "Chat",
          model_provider: "scripted",
          model: "gpt-test",
          created_at: "2025-01-01T01:02:03.123456+02:00",
        });
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

    describe("generations (fencing tokens)", () => {
      const delta = (turnId: string, text: string, generation?: number) =>
        store.append(
          turnId,
          "item/agent_message/delta",
          (sequence) => ({ thread_id: "thr_a", turn_id: turnId, sequence, item_id: "i", stream: "agent_message", delta: text }),
          generation,
        );

      beforeEach(() => {
        store.createThread(thread("thr_a"));
        store.createTurn("thr_a", "trn_1", "t");
        store.createTurn("thr_a", "trn_2", "t");
      });

      it("gives each claim of a turn a higher generation; a turn's generations are its own", () => {
        const first = store.claimTurn("trn_1", 60_000)!;
        const second = store.claimTurn("trn_1", 60_000)!;
        expect(second).toBeGreaterThan(first);
        expect(store.claimTurn("trn_2", 60_000)).toBe(first);
        expect(() => store.claimTurn("trn_missing", 60_000)).toThrow("turn trn_missing does not exist");
        expect((thrownBy(() => store.claimTurn("trn_1", 0)) as StoreError).kind).toBe("invalid_argument");
      });

      it("refuses a write that carries a generation another claim replaced, and stores nothing of it", async () => {
        const stale = store.claimTurn("trn_1", 60_000)!;
        expect(delta("trn_1", "a", stale).sequence).toBe(1);
        const current = store.claimTurn("trn_1", 60_000)!;
        const refused = thrownBy(() => delta("trn_1", "late", stale)) as StoreError;
        expect(refused).toBeInstanceOf(StoreError);
        expect(refused.kind).toBe("turn_fenced");
        expect(refused.message).toContain(`generation ${stale}`);
        // The current holder's write, and one that carries no generation, go on at the next sequence.
        expect(delta("trn_1", "b", current).sequence).toBe(2);
        expect(delta("trn_1", "c").sequence).toBe(3);
        expect(await committed(store)).toBeUndefined();
        expect(store.events("trn_1").map((e) => e.params.delta)).toEqual(["a", "b", "c"]);
      });

      it("refuses a generation the turn never had", () => {
        expect((thrownBy(() => delta("trn_2", "x", 7)) as StoreError).kind).toBe("turn_fenced");
        expect(store.lastSequence("trn_2")).toBe(0);
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
          {
            thread_id: "thr_a",
            turn_id: "trn_1",
            sequence: 1,
            method: "item/started",
            params: { turn_id: "trn_1", sequence: 1, item_id: "itm_1" },
            paramsJson: '{"turn_id":"trn_1","sequence":1,"item_id":"itm_1"}',
            recorded_at: RECORDED_AT,
          },
          {
            thread_id: "thr_a",
            turn_id: "trn_1",
            sequence: 2,
            method: "item/completed",
            params: { turn_id: "trn_1", sequence: 2, item_id: "itm_2" },
            paramsJson: '{"turn_id":"trn_1","sequence":2,"item_id":"itm_2"}',
            recorded_at: RECORDED_AT,
          },
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
            parts: [
              { text: "héllo wörld ✓ 你好 🧪👩🏽‍💻 e\u0301" },
              { text: "tab\there\nnewline\u0000nul\u2028sep" },
              null,
              true,
              0,
              -1.5e-300,
              9007199254740991,
            ],
            lone_surrogate: "\ud800",
            deep: { a: { b: { c: { d: { e: [[], {}, [[{}]]] } } } } },
            'key with "quotes" and \\ backslash': "",
          },
          large: "0123456789abcdef".repeat(64 * 1024), // 1 MiB
        };
        const returned = store.append("trn_1", "item/completed", () => params);
        expect(returned.params).toStrictEqual(params);
        expect(store.events("trn_1")[0]!.params).toStrictEqual(params);
      });

      it("reads back every event of a long turn exactly, its texts of every size and script", () => {
        const texts = Array.from(
          { length: 600 },
          (_, i) => (i % 3 === 0 ? "ascii " : i % 3 === 1 ? "wörld ✓ 你好 " : "🧪👩🏽‍💻 ").repeat(i % 50) + String(i),
        );
        for (const text of texts) appendDelta(store, "trn_1", text);
        const events = store.events("trn_1");
        expect(events.map((e) => e.params.delta)).toEqual(texts);
        expect(events.map((e) => e.sequence)).toEqual(texts.map((_, i) => i + 1));
        expect(events.every((e) => JSON.stringify(e.params) === e.paramsJson)).toBe(true);
        expect(store.events("trn_1", 590, 20).map((e) => e.params.delta)).toEqual(texts.slice(590));
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
        const given = {
          ...route("rte_1", "exe_a"),
          destination_execution_profile: undefined,
          updated_at: new Date("2025-02-03T04:05:06.000Z"),
        };
        const want = JSON.parse(JSON.stringify(given)) as Route;
        expect(want.updated_at).toBe("2025-02-03T04:05:06.000Z");
        expect(store.insertRoute(given as unknown as Route).route).toStrictEqual(want);
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
        expect(store.allRoutes().map((r) => r.route)).toStrictEqual([
          route("rte_c", "exe_a"),
          route("rte_a", "exe_b"),
          route("rte_b", "exe_a"),
        ]);
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
        expect(() => store.routesBySource("exe_a", 0, Number.NaN)).toThrow(
          "routes of source exe_a: limit must be an integer >= 0, got NaN",
        );
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
        expect(store.routesBySource("exe_a").map((r) => r.route)).toStrictEqual([
          route("rte_0", "exe_a"),
          revoked,
          route("rte_2", "exe_a"),
        ]);
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
          expect((error as StoreError).message).toBe(
            `update route rte_1: the new generation ${generation} must be above the expected generation 2`,
          );
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
          [
            "no route_id",
            { ...route("rte_1", "exe_a"), route_id: undefined },
            "insert route: route_id must be a non-empty string, got nothing",
          ],
          ["an empty route_id", route("", "exe_a"), 'insert route: route_id must be a non-empty string, got ""'],
          [
            "a numeric source",
            route("rte_1", 7 as unknown as string),
            "insert route rte_1: source_execution_id must be a non-empty string, got 7",
          ],
          ["generation 0", route("rte_1", "exe_a", { generation: 0 }), "insert route rte_1: generation must be an integer >= 1, got 0"],
          [
            "a fractional generation",
            route("rte_1", "exe_a", { generation: 1.5 }),
            "insert route rte_1: generation must be an integer >= 1, got 1.5",
          ],
          [
            "a text generation",
            route("rte_1", "exe_a", { generation: "1" as unknown as number }),
            'insert route rte_1: generation must be an integer >= 1, got "1"',
          ],
          [
            "status expired",
            route("rte_1", "exe_a", { status: "expired" }),
            'insert route rte_1: status "expired" is derived on read and never stored',
          ],
          [
            "a bigint",
            route("rte_1", "exe_a", { hop_count: 1n as unknown as number }),
            "insert route rte_1: the route is not JSON-serializable",
          ],
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
        expect(() => store.setMeta("policy_generation", 2 as unknown as string)).toThrow(
          "set meta policy_generation: value must be a string, got number",
        );
        expect(store.getMeta("policy_generation")).toBeUndefined();
      });
    });

    describe("a turn whose first commit fails", () => {
      it("is gone, its id free", async () => {
        store.createThread(thread("thr_a"));
        store.createThread(thread("thr_b"));
        store.createTurn("thr_a", "trn_kept", "2025-01-01T00:00:01Z");
        appendDelta(store, "trn_kept");
        expect(await committed(store)).toBeUndefined();
        const heal = await failCommitsOf(store, "turn/started");
        try {
          // A new turn and its first events, as turn/start writes them: one commit.
          expect(store.createTurn("thr_a", "trn_1", "2025-01-01T00:00:02Z")).toBe(true);
          store.append("trn_1", "turn/started", (sequence) => ({ turn_id: "trn_1", sequence }));
          appendDelta(store, "trn_1");
          expect(store.turnThread("trn_1")).toBe("thr_a");
          const failure = await committed(store);
          expect(failure).toBeInstanceOf(StoreError);
          expect(failure!.kind).toBe("commit_failed");
        } finally {
          await heal();
        }
        expect(store.turnThread("trn_1")).toBeUndefined();
        expect(store.events("trn_1")).toEqual([]);
        expect(store.lastSequence("trn_1")).toBe(0);
        expect(store.turnsOfThread("thr_a").map((t) => t.turn_id)).toEqual(["trn_kept"]);
        expect(store.allTurns().map((t) => t.turn_id)).toEqual(["trn_kept"]);
        expect(store.events("trn_kept").map((e) => e.sequence)).toEqual([1]);
        // The id is free: a turn of another thread takes it, and its events start at 1.
        expect(store.createTurn("thr_b", "trn_1", "2025-01-01T00:00:03Z")).toBe(true);
        expect(store.append("trn_1", "turn/started", (sequence) => ({ turn_id: "trn_1", sequence })).sequence).toBe(1);
        expect(await committed(store)).toBeUndefined();
        expect(store.turnThread("trn_1")).toBe("thr_b");
        expect(store.turnsOfThread("thr_b")).toStrictEqual([{ turn_id: "trn_1", thread_id: "thr_b", created_at: "2025-01-01T00:00:03Z" }]);
        expect(store.events("trn_1").map((e) => [e.sequence, e.method])).toEqual([[1, "turn/started"]]);
      });

      it("loses only the events of the failed commit when the turn was committed before", async () => {
        store.createThread(thread("thr_a"));
        store.createTurn("thr_a", "trn_long", "2025-01-01T00:00:01Z");
        for (let i = 0; i < 60; i++) appendDelta(store, "trn_long", `kept ${i}`);
        expect(await committed(store)).toBeUndefined();
        const before = store.events("trn_long");
        const heal = await failCommitsOf(store, "turn/started");
        try {
          // Ten more in one commit, across the 64th event, one of them doomed.
          for (let i = 0; i < 9; i++) appendDelta(store, "trn_long", `lost ${i}`);
          store.append("trn_long", "turn/started", (sequence) => ({ turn_id: "trn_long", sequence }));
          expect((await committed(store))?.kind).toBe("commit_failed");
        } finally {
          await heal();
        }
        expect(store.lastSequence("trn_long")).toBe(60);
        expect(store.events("trn_long")).toEqual(before);
        expect(appendDelta(store, "trn_long", "after").sequence).toBe(61);
        for (let i = 0; i < 10; i++) appendDelta(store, "trn_long", `more ${i}`);
        expect(await committed(store)).toBeUndefined();
        expect(store.events("trn_long", 58).map((e) => (e.params as { delta?: string }).delta)).toEqual([
          "kept 58",
          "kept 59",
          "after",
          ...Array.from({ length: 10 }, (_, i) => `more ${i}`),
        ]);
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
}
