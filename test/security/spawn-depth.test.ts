/**
 * Hole 6: max_spawn_depth holds where spawn_agent is called, not only where the tools are
 * listed. Each level's script calls spawn_agent with the next level's script as the
 * prompt, as a model ignoring the tool list would; the default limit is 2.
 */
import { afterEach, describe, expect, it } from "vitest";
import { script, startHarness, text, type Harness } from "../gateway/harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors).toEqual([]);
  await h.close();
});

/** A script that spawns `levels` more levels of sub-agents below itself. */
function nested(levels: number): string {
  return levels === 0
    ? script({ say: "bottom" })
    : script({ tool: "spawn_agent", args: { prompt: nested(levels - 1) } }, { say: `above ${levels}` });
}

describe("spawn_agent past max_spawn_depth", () => {
  it("is refused at the call, so no turn runs deeper than the limit", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_depth",
      permission_profile: { mode: "full_access" },
      input: text(nested(6)),
    });
    expect(end.method).toBe("turn/completed");
    // The client's turn (depth 0), its child (1) and grandchild (2); depth 3 is never started.
    const turns = h.store.allTurns();
    expect(turns).toHaveLength(3);
    const tasks = turns.flatMap((t) => h.gateway.turnState(t.turn_id)!.items.filter((i) => i.type === "task"));
    expect(tasks.map((t) => t.status)).toEqual(expect.arrayContaining(["completed", "completed", "failed"]));
    expect(JSON.stringify(tasks.find((t) => t.status === "failed"))).toMatch(/nest at most 2 levels/);
  });
});
