/**
 * What the PostgreSQL store keeps of committed events (CommittedEvents): the events of
 * recently read turns, and the end of each ended turn, noted as it commits and kept after
 * its events are let go.
 */
import { describe, expect, it } from "vitest";
import { CommittedEvents } from "../../packages/gateway/src/store/postgres-events.js";
import type { StoredEvent } from "../../packages/gateway/src/store/store.js";

const ENDS = new Set(["turn/completed", "turn/failed"]);

function events(turnId: string, methods: readonly string[], first = 1): StoredEvent[] {
  return methods.map((method, i) => {
    const params = { thread_id: "thr_a", turn_id: turnId, sequence: first + i };
    return {
      thread_id: "thr_a",
      turn_id: turnId,
      sequence: first + i,
      method,
      params,
      paramsJson: JSON.stringify(params),
      recorded_at: "t",
    };
  });
}

describe("CommittedEvents", () => {
  it("remembers where a turn ended after its events are let go", () => {
    const kept = new CommittedEvents(ENDS, 3);
    kept.add("trn_1", events("trn_1", ["turn/started", "item/agent_message/delta", "turn/completed"]));
    expect(kept.endedAt("trn_1")).toBe(3);
    // Three events of another turn push the first one's out.
    kept.add("trn_2", events("trn_2", ["turn/started", "item/agent_message/delta", "item/agent_message/delta"]));
    expect(kept.read("trn_1", 0, undefined)).toEqual([]);
    expect(kept.endedAt("trn_1")).toBe(3);
    // A turn that has not ended has no end.
    expect(kept.endedAt("trn_2")).toBeUndefined();
  });

  it("notes where a turn ended from its last events without keeping them", () => {
    const kept = new CommittedEvents(ENDS);
    kept.noteEnd("trn_1", events("trn_1", ["turn/started", "item/agent_message/delta"]));
    expect(kept.endedAt("trn_1")).toBeUndefined();
    kept.noteEnd("trn_1", events("trn_1", ["item/agent_message/delta", "turn/completed"], 3));
    expect(kept.endedAt("trn_1")).toBe(4);
    expect(kept.last("trn_1")).toBe(0);
    expect(kept.read("trn_1", 0, undefined)).toEqual([]);
    kept.noteEnd("trn_2", []);
    expect(kept.endedAt("trn_2")).toBeUndefined();
  });

  it("learns an end from events that do not continue what it keeps, and keeps those events out", () => {
    const kept = new CommittedEvents(ENDS);
    kept.add("trn_1", events("trn_1", ["audit", "turn/failed"], 7));
    expect(kept.endedAt("trn_1")).toBe(8);
    expect(kept.read("trn_1", 0, undefined)).toEqual([]);
  });

  it("forgets the oldest ends past its limit of them", () => {
    const kept = new CommittedEvents(ENDS, 100, 2);
    for (const turnId of ["trn_1", "trn_2", "trn_3"]) kept.add(turnId, events(turnId, ["turn/completed"]));
    expect([kept.endedAt("trn_1"), kept.endedAt("trn_2"), kept.endedAt("trn_3")]).toEqual([undefined, 1, 1]);
  });
});
