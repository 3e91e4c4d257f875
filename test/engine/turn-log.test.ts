/**
 * The turn log: what it records is checked strictly and folded at once; the fold catches
 * up with events another writer appended; a failed commit is reported to the turn, once,
 * by its next record, and a record made for a request leaves that report to the turn.
 */
import { describe, expect, it } from "vitest";
import { TurnFold } from "../../packages/gateway/src/log/fold.js";
import { TurnLog, jsonString, type MemoisedFold } from "../../packages/gateway/src/log/turn-log.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import { StoreError } from "../../packages/gateway/src/store/rules.js";
import type { Turn } from "../../generated/types.js";

const THREAD = "thr_log";
const TURN = "trn_log";

/** A memory store whose next commit wait can be made to fail. */
class FailingStore extends MemoryEventStore {
  failNext = false;
  override afterCommit(fn: (failure?: StoreError) => void): void {
    if (this.failNext) {
      this.failNext = false;
      fn(new StoreError("commit_failed", "the commit failed (test)"));
    } else super.afterCommit(fn);
  }
}

/**
 * A memory store whose commits end when the test says, in a pipeline as the SQLite store's
 * writer runs them: callbacks wait on the open commit until `seal` starts the next one,
 * and `answer` ends the oldest.
 */
class PipelinedStore extends MemoryEventStore {
  private readonly commits: ((failure?: StoreError) => void)[][] = [[]];
  override afterCommit(fn: (failure?: StoreError) => void): void {
    this.commits[this.commits.length - 1]!.push(fn);
  }
  seal(): void {
    this.commits.push([]);
  }
  answer(failure?: StoreError): void {
    for (const fn of this.commits.shift()!) fn(failure);
    if (this.commits.length === 0) this.commits.push([]);
  }
}

/** The log's memoised fold with nothing but the turn's own: the log keeps whatever fold it is given. */
function turnFold(): MemoisedFold {
  const turn = new TurnFold();
  return { turn, apply: (event) => void turn.apply(event) };
}

function setUp() {
  const store = new FailingStore();
  store.createThread({ id: THREAD, workspace_id: "ws_default", cwd: "/tmp", mode: "Agent", created_at: "2026-01-01T00:00:00.000Z" });
  store.createTurn(THREAD, TURN, "2026-01-01T00:00:00.000Z");
  const lost: string[] = [];
  const log = new TurnLog({ store, newFold: turnFold, clock: { nowIso: () => "2026-01-01T00:00:01.000Z" }, diagnose: () => undefined });
  log.onLost((turnId) => lost.push(turnId));
  return { store, log, lost };
}

const turn: Turn = {
  id: TURN,
  thread_id: THREAD,
  status: "InProgress",
  created_at: "2026-01-01T00:00:00.000Z",
  prompt_manifest: null,
} as Turn;

describe("the turn log", () => {
  it("refuses params their schema refuses, naming the method, and stores nothing", () => {
    const { store, log } = setUp();
    expect(() =>
      log.record(THREAD, TURN, "item/agent_message/delta", { item_id: "i", stream: "agent_message", delta: 7 as unknown as string }),
    ).toThrow(/invalid item\/agent_message\/delta: .*"pointer":"\/delta"/);
    expect(store.lastSequence(TURN)).toBe(0);
  });

  it("stores a new turn's first events as prepared, one text per event, those sharing params included", () => {
    const { store, log } = setUp();
    const item = {
      type: "userMessage",
      id: "u",
      status: "completed",
      content: [{ type: "text", text: 'line one\n"two" \u{1F600}', textElements: [] }],
    };
    const shared = { item_id: "u", item };
    const prepared = log.prepareFirst(THREAD, TURN, [
      ["item/started", shared],
      ["item/completed", shared],
    ]);
    expect(prepared.map((event) => JSON.parse(event.text))).toEqual([
      { thread_id: THREAD, turn_id: TURN, sequence: 1, item_id: "u", item },
      { thread_id: THREAD, turn_id: TURN, sequence: 2, item_id: "u", item },
    ]);
    expect(prepared.map((event) => event.text)).toEqual(prepared.map((event) => JSON.stringify(event.params)));
    for (const event of prepared) log.recordPrepared(event);
    expect(store.events(TURN).map((event) => [event.sequence, event.method, event.paramsJson])).toEqual(
      prepared.map((event, i) => [i + 1, event.method, event.text]),
    );
    // Recorded out of place, a prepared event is refused: its text names another sequence.
    expect(() => log.recordPrepared(prepared[0]!)).toThrow(/params.sequence is 1 but the event's sequence is 3/);
  });

  it("refuses to prepare first events their schema refuses, naming the method", () => {
    const { log } = setUp();
    expect(() => log.prepareFirst(THREAD, TURN, [["item/started", { item_id: "u" }]])).toThrow(/invalid item\/started/);
  });

  it("folds what it records, and catches up with events another writer appended", () => {
    const { store, log } = setUp();
    const started = { ...turn, permission_profile: { mode: "full_access", source: "defaulted", effective_policy: {} } } as unknown as Turn;
    // Built directly on the store, as a second gateway on the same file would.
    store.append(TURN, "turn/started", (sequence) => ({ thread_id: THREAD, turn_id: TURN, sequence, turn: started }));
    expect(log.state(TURN)?.lastSequence).toBe(1);
    store.append(TURN, "item/started", (sequence) => ({
      thread_id: THREAD,
      turn_id: TURN,
      sequence,
      item_id: "m",
      item: { type: "agentMessage", id: "m", status: "in_progress", text: "" },
    }));
    log.record(THREAD, TURN, "item/agent_message/delta", { item_id: "m", stream: "agent_message", delta: "hello" });
    const state = log.state(TURN)!;
    expect(state.lastSequence).toBe(3);
    expect(state.items).toEqual([{ type: "agentMessage", id: "m", status: "in_progress", text: "hello" }]);
    // A state read is a snapshot: a later event does not change it.
    log.record(THREAD, TURN, "item/agent_message/delta", { item_id: "m", stream: "agent_message", delta: " world" });
    expect(state.items[0]).toMatchObject({ text: "hello" });
    expect(log.state(TURN)!.items[0]).toMatchObject({ text: "hello world" });
  });

  it("folds through a given event without asking the store when the fold holds it, and catches up when it does not", () => {
    const { store, log } = setUp();
    const started = { ...turn, permission_profile: { mode: "full_access", source: "defaulted", effective_policy: {} } } as unknown as Turn;
    store.append(TURN, "turn/started", (sequence) => ({ thread_id: THREAD, turn_id: TURN, sequence, turn: started }));
    expect(log.fold(THREAD, TURN).turn.lastSequence).toBe(1);
    // Another writer appends; the fold does not hold it yet.
    store.append(TURN, "item/started", (sequence) => ({
      thread_id: THREAD,
      turn_id: TURN,
      sequence,
      item_id: "m",
      item: { type: "agentMessage", id: "m", status: "in_progress", text: "" },
    }));
    let reads = 0;
    const events = store.events.bind(store);
    store.events = (...args) => {
      reads++;
      return events(...args);
    };
    // Through event 1, which it holds: as it is, without a read.
    expect(log.foldThrough(THREAD, TURN, 1).turn.lastSequence).toBe(1);
    expect(reads).toBe(0);
    // Through event 2, which it does not hold: caught up with the store.
    expect(log.foldThrough(THREAD, TURN, 2).turn.lastSequence).toBe(2);
    expect(reads).toBe(1);
  });

  it("hears of a failed commit that ends after an earlier one of the turn succeeded, as a pipelined store ends them", () => {
    const store = new PipelinedStore();
    store.createThread({ id: THREAD, workspace_id: "ws_default", cwd: "/tmp", mode: "Agent", created_at: "2026-01-01T00:00:00.000Z" });
    store.createTurn(THREAD, TURN, "2026-01-01T00:00:00.000Z");
    const lost: string[] = [];
    const log = new TurnLog({ store, newFold: turnFold, clock: { nowIso: () => "2026-01-01T00:00:01.000Z" }, diagnose: () => undefined });
    log.onLost((turnId) => lost.push(turnId));
    const delta = (text: string) =>
      log.record(THREAD, TURN, "item/agent_message/delta", { item_id: "m", stream: "agent_message", delta: text });
    delta("first commit");
    store.seal();
    // Recorded while the first commit is in flight: in the second.
    delta("second commit");
    delta("second commit too");
    store.answer();
    expect(lost).toEqual([]);
    const failure = new StoreError("commit_failed", "the second commit failed (test)");
    store.answer(failure);
    // Once, however many of its records the failure lost.
    expect(lost).toEqual([TURN]);
    expect(() => delta("after")).toThrow("the second commit failed (test)");
    expect(delta("reported").sequence).toBe(4);
  });

  it("reports a failed commit to the turn once, by its next record; a request's record leaves the report to the turn", () => {
    const { store, log, lost } = setUp();
    store.failNext = true;
    log.record(THREAD, TURN, "item/agent_message/delta", { item_id: "m", stream: "agent_message", delta: "lost" });
    expect(lost).toEqual([TURN]);
    const asRequest = () =>
      log.record(THREAD, TURN, "item/agent_message/delta", { item_id: "m", stream: "agent_message", delta: "x" }, "request");
    expect(asRequest).toThrow("the commit failed (test)");
    expect(asRequest).toThrow("the commit failed (test)");
    expect(() => log.record(THREAD, TURN, "item/agent_message/delta", { item_id: "m", stream: "agent_message", delta: "y" })).toThrow(
      "the commit failed (test)",
    );
    // Reported once: the turn's next record goes through.
    expect(log.record(THREAD, TURN, "item/agent_message/delta", { item_id: "m", stream: "agent_message", delta: "z" }).sequence).toBe(2);
  });

  it("stores a delta as the text JSON.stringify gives for its params, across turns, items and streams", () => {
    const { store, log } = setUp();
    store.createTurn(THREAD, "trn_other", "2026-01-01T00:00:00.000Z");
    const texts = [
      "plain",
      "",
      'a "quoted" \\ back\\slash',
      "line\nbreak\ttab\u0001",
      "ünïcødé — 😀",
      "lone \ud800 surrogate",
      "</script>",
    ];
    const written = texts.flatMap((delta, i) => [
      log.publishDelta(THREAD, TURN, "item/agent_message/delta", `m${i % 2}`, "agent_message", delta),
      log.publishDelta(THREAD, "trn_other", "item/command_execution/output_delta", "cmd", i % 2 ? "stdout" : "stderr", delta),
    ]);
    for (const event of written) {
      expect(event.paramsJson).toBe(JSON.stringify(event.params));
      expect(Object.keys(event.params)).toEqual(["thread_id", "turn_id", "sequence", "item_id", "stream", "delta"]);
    }
    // What a replay reads is the same event.
    const kept = [...store.events(TURN), ...store.events("trn_other")];
    expect(kept.map((e) => e.paramsJson).sort()).toEqual(written.map((e) => e.paramsJson).sort());
    expect(store.events(TURN).map((e) => e.params.delta)).toEqual(texts);
    // The next ordinary event of the store is serialised by the store, not given a delta's text.
    const next = log.record(THREAD, TURN, "item/started", {
      item_id: "r",
      item: { type: "reasoning", id: "r", status: "in_progress", text: "" },
    });
    expect(JSON.parse(next.paramsJson)).toEqual(next.params);
  });

  it("writes a delta's text exactly as JSON.stringify does, whatever characters it holds", () => {
    const characters = [
      ...Array.from({ length: 0x80 }, (_, c) => String.fromCharCode(c)),
      "\u00e9",
      "\u2028",
      "\u2029",
      "\ufeff",
      "\ud83d\ude00",
      "\ud83d",
      "\ude00",
      "\ude00\ud83d",
    ];
    for (const c of characters) {
      for (const text of [c, `word${c}`, `${c}${c} and more`]) expect(jsonString(text)).toBe(JSON.stringify(text));
    }
  });

  it("refuses a delta its schema refuses, naming the method, and stores nothing", () => {
    const { store, log } = setUp();
    expect(() => log.publishDelta(THREAD, TURN, "item/agent_message/delta", "m", "no_such_stream" as "agent_message", "x")).toThrow(
      /invalid item\/agent_message\/delta: .*"pointer":"\/stream"/,
    );
    expect(store.lastSequence(TURN)).toBe(0);
  });
});

describe("a write made for a turn under this instance's hold of it", () => {
  it("carries the generation held, and a refusal by the turn's generation fences the turn off, once", () => {
    const { log } = setUp();
    const fenced: string[] = [];
    log.onFenced((turnId, refusal) => fenced.push(`${turnId}: ${refusal.kind}`));
    // Not held: no generation.
    expect(log.underHold(TURN, (generation) => generation)).toBeUndefined();
    log.hold(TURN, 7);
    expect(log.underHold(TURN, (generation) => generation)).toBe(7);
    const refusal = new StoreError("turn_fenced", "the claim carries generation 7 of the turn, whose current generation is 8");
    expect(() =>
      log.underHold(TURN, () => {
        throw refusal;
      }),
    ).toThrow(refusal);
    expect(fenced).toEqual([`${TURN}: turn_fenced`]);
    expect(log.isFenced(TURN)).toBe(true);
    // Fenced off: the next write is refused without reaching the store.
    let reached = false;
    expect(() => log.underHold(TURN, () => (reached = true))).toThrow(refusal);
    expect(reached).toBe(false);
    expect(fenced).toHaveLength(1);
  });

  it("leaves the hold alone when the write fails otherwise", () => {
    const { log } = setUp();
    log.hold(TURN, 3);
    expect(() =>
      log.underHold(TURN, () => {
        throw new StoreError("commit_failed", "the server went away");
      }),
    ).toThrow("the server went away");
    expect(log.isFenced(TURN)).toBe(false);
    expect(log.underHold(TURN, (generation) => generation)).toBe(3);
  });
});
