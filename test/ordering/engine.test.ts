/**
 * The ordering engine of @turnspec/rpc with rules of a made-up job protocol: the rule kinds
 * are protocol-neutral, and the frame handling (batches, stray frames, matching responses
 * to requests by id and side) does not depend on the turn protocol's rules.
 */
import { describe, expect, it } from "vitest";
import { createOrderingEngine, type FrameDirection, type OrderingRule } from "../../packages/rpc/src/index.js";

const job = [{ name: "job", pointer: "/job" }];
const base = (id: string) => ({ id, requirement: `REQ-${id}`, description: `${id} holds`, scope: job });

const rules: OrderingRule[] = [
  { ...base("STARTED-FIRST"), kind: "precedes", first: "job/started", then: ["job/progress", "job/done"] },
  { ...base("ONE-END"), kind: "single_terminal", terminals: ["job/done"], after: ["job/started", "job/progress", "job/paused"] },
  {
    ...base("PAUSED-QUIET"),
    kind: "quiet_after",
    notification: "job/paused",
    quiet: ["job/progress", "job/done"],
    until: ["job/continue"],
  },
  {
    ...base("LOCK-PAIRED"),
    kind: "paired",
    subject: "lock",
    open: { notification: "job/locked", key: "/lock" },
    close: { notification: "job/unlocked", key: "/lock" },
  },
  {
    ...base("STEP-SEQUENCE"),
    kind: "sequence",
    field: "/step",
    notifications: ["job/progress"],
    results: [{ method: "job/log", items: "/entries" }],
  },
];

const note = (method: string, params: Record<string, unknown>) => ({ jsonrpc: "2.0", method, params });
const up: FrameDirection = "client_to_server";
const down: FrameDirection = "server_to_client";
type Step = [unknown, FrameDirection];

function run(steps: Step[], options?: { openTurnsAllowed?: boolean }) {
  const engine = createOrderingEngine(rules);
  const returned = steps.map(([frame, direction]) => engine.accept(frame, direction));
  const atEnd = engine.end(options);
  return { returned, atEnd, all: engine.violations.map((v) => [v.rule, v.frameIndex]) };
}

describe("the ordering engine", () => {
  it("checks each message of a batch frame, under the frame's index", () => {
    const { returned } = run([
      [[note("job/progress", { job: "a", step: 1 }), note("job/started", { job: "a" }), note("job/progress", { job: "a", step: 2 })], down],
    ]);
    expect(returned[0]!.map((v) => [v.rule, v.requirement, v.frameIndex, v.message])).toEqual([
      ["STARTED-FIRST", "REQ-STARTED-FIRST", 0, 'job/progress for job "a" at frame 0 came before its job/started'],
    ]);
  });

  it("skips frames that are not JSON-RPC messages and messages without the scope keys, counting them as frames", () => {
    const { all } = run([
      ["not a message", down],
      [null, down],
      [{ hello: "world" }, down],
      [note("job/progress", { step: 1 }), down],
      [note("job/progress", { job: "b", step: 1 }), down],
    ]);
    expect(all).toEqual([
      ["STARTED-FIRST", 4],
      ["ONE-END", 4],
    ]);
  });

  it("ends the quiet only with a successful response from the other side to the same request id", () => {
    const started = note("job/started", { job: "a" });
    const paused = note("job/paused", { job: "a" });
    const request = { jsonrpc: "2.0", id: 5, method: "job/continue", params: { job: "a" } };
    const progress = note("job/progress", { job: "a", step: 1 });
    const done = note("job/done", { job: "a" });
    // The client answering its own id, and the gateway answering another id, do not count.
    const wrongSide: Step = [{ jsonrpc: "2.0", id: 5, result: {} }, up];
    const otherId: Step = [{ jsonrpc: "2.0", id: 6, result: {} }, down];
    const success: Step = [{ jsonrpc: "2.0", id: 5, result: {} }, down];

    expect(run([[started, down], [paused, down], [request, up], success, [progress, down], [done, down]]).all).toEqual([]);
    expect(
      run([[started, down], [paused, down], [request, up], wrongSide, otherId, [progress, down], [done, down]]).all,
      "held until the end, then reported",
    ).toEqual([
      ["PAUSED-QUIET", 5],
      ["PAUSED-QUIET", 6],
    ]);
  });

  it("a request sent before the pause does not end it", () => {
    const steps: Step[] = [
      [note("job/started", { job: "a" }), down],
      [{ jsonrpc: "2.0", id: 1, method: "job/continue", params: { job: "a" } }, up],
      [note("job/paused", { job: "a" }), down],
      [{ jsonrpc: "2.0", id: 1, result: {} }, down],
      [note("job/done", { job: "a" }), down],
    ];
    expect(run(steps).all).toEqual([["PAUSED-QUIET", 4]]);
  });

  it("reports the end of the stream once", () => {
    const engine = createOrderingEngine(rules);
    engine.accept(note("job/started", { job: "a" }), down);
    expect(engine.end().map((v) => v.rule)).toEqual(["ONE-END"]);
    expect(engine.end()).toEqual([]);
    expect(engine.violations).toHaveLength(1);
  });

  it("pairs by scope and key: the same key in another scope is another pair", () => {
    const steps: Step[] = [
      [note("job/locked", { job: "a", lock: 1 }), down],
      [note("job/locked", { job: "b", lock: 1 }), down],
      [note("job/unlocked", { job: "a", lock: 1 }), down],
    ];
    const { atEnd } = run(steps);
    expect(atEnd.map((v) => v.message)).toEqual(['lock 1 of job "b", opened by job/locked at frame 1, never got its job/unlocked']);
  });

  it("with open scopes allowed, leaves out scopes that never reached a terminal and what is open in them", () => {
    const steps: Step[] = [
      [note("job/started", { job: "a" }), down],
      [note("job/locked", { job: "a", lock: "l" }), down],
      [note("job/started", { job: "b" }), down],
      [note("job/locked", { job: "b", lock: "l" }), down],
      [note("job/done", { job: "b" }), down],
    ];
    expect(run(steps).atEnd.map((v) => [v.rule, v.frameIndex])).toEqual([
      ["ONE-END", 0],
      ["LOCK-PAIRED", 1],
      ["LOCK-PAIRED", 3],
    ]);
    expect(run(steps, { openTurnsAllowed: true }).atEnd.map((v) => [v.rule, v.frameIndex])).toEqual([["LOCK-PAIRED", 3]]);
  });

  it("checks a result's array only for a successful response to the listed method", () => {
    const log = (id: number, method: string): Step => [{ jsonrpc: "2.0", id, method, params: { job: "a" } }, up];
    const entries = { entries: [{ step: 3 }, { step: 5 }] };
    const steps: Step[] = [
      log(1, "job/log"),
      [{ jsonrpc: "2.0", id: 1, result: entries }, down],
      log(2, "job/status"),
      [{ jsonrpc: "2.0", id: 2, result: entries }, down],
      log(3, "job/log"),
      [{ jsonrpc: "2.0", id: 3, error: { code: -32000, message: "no" } }, down],
    ];
    const { all, returned } = run(steps);
    expect(all).toEqual([["STEP-SEQUENCE", 1]]);
    expect(returned[1]![0]!.message).toBe('job/log result for job "a" at frame 1: /entries/1/step is 5; expected 4 after 3');
  });
});
