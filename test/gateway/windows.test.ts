/**
 * Execution windows end to end with the scripted provider over the in-memory pair: each
 * window limit checkpoints the turn and continues it in a new window; a total blocks the
 * turn until turn/resume; the tool-loop budget fails it.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { GatewayConfig } from "../../generated/types.js";
import type { ScriptStep } from "../../packages/gateway/src/providers/scripted.js";
import { flatEvents } from "./events.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
});

type Windows = NonNullable<NonNullable<GatewayConfig["tools"]>["execution_windows"]>;

const WINDOW_METHODS = new Set([
  "turn/execution_window/started",
  "turn/execution_window/exhausted",
  "turn/execution_window/checkpointed",
  "turn/execution_window/continued",
  "turn/execution_window/blocked",
]);
const windowEvents = (ns: readonly AnyNotification[]) => ns.filter((n) => WINDOW_METHODS.has(n.method));
const shell = (command: string): ScriptStep => ({ tool: "shell", args: { command } });

async function turnWith(
  windows: Windows,
  turnId: string,
  steps: ScriptStep[],
): Promise<{ end: AnyNotification; events: AnyNotification[] }> {
  h = await startHarness({ config: { tools: { execution_windows: windows } } });
  const thread = await h.thread();
  const end = await h.runTurn({ thread_id: thread, turn_id: turnId, input: text(script(...steps)) });
  return { end, events: ofTurn(h.received, turnId) };
}

describe("a window limit", () => {
  it.each([
    [
      "max_agent_rounds_per_window",
      { max_agent_rounds_per_window: 2 },
      [shell("true"), shell("true"), { say: "done" }],
      { agent_rounds: 2, tool_calls: 2 },
    ],
    [
      "max_tool_calls_per_window",
      { max_tool_calls_per_window: 2 },
      [
        {
          tools: [
            { tool: "shell", args: { command: "true" } },
            { tool: "shell", args: { command: "true" } },
          ],
        },
        { say: "done" },
      ],
      { agent_rounds: 1, tool_calls: 2 },
    ],
    [
      "max_provider_tokens_per_window",
      { max_provider_tokens_per_window: 10 },
      [{ ...shell("true"), tokens: 12 }, { say: "done" }],
      { agent_rounds: 1, provider_tokens: 12 },
    ],
    [
      "max_wall_clock_ms_per_window",
      { max_wall_clock_ms_per_window: 1 },
      [{ ...shell("true"), delay_ms: 5 }, { say: "done" }],
      { agent_rounds: 1, tool_calls: 1 },
    ],
  ] as const)("%s: exhausted, checkpointed, continued in a new window, and the turn goes on", async (reason, windows, steps, observed) => {
    const { end, events } = await turnWith(windows, "trn_win", [...steps]);
    expect(end.method).toBe("turn/completed");
    const methods = events.map((n) => n.method);
    const at = methods.indexOf("turn/execution_window/exhausted");
    expect(methods.slice(at, at + 4)).toEqual([
      "turn/execution_window/exhausted",
      "turn/execution_window/checkpointed",
      "turn/execution_window/continued",
      "turn/execution_window/started",
    ]);
    const [exhausted, checkpointed, continued, started] = flatEvents(events.slice(at, at + 4), WINDOW_METHODS);
    expect(exhausted).toMatchObject({ window_id: "win_trn_win_0", reason, status: "exhausted", observed });
    expect(checkpointed).toMatchObject({ window_id: "win_trn_win_0", status: "checkpointed" });
    expect(continued).toMatchObject({
      previous_window_id: "win_trn_win_0",
      window_id: "win_trn_win_1",
      window_index: 1,
      checkpoint_id: checkpointed!.checkpoint_id,
      reason,
    });
    expect(started).toMatchObject({
      window_id: "win_trn_win_1",
      window_index: 1,
      status: "running",
      limits: expect.objectContaining(windows) as unknown,
    });
    expect(events.find((n) => n.method === "turn/blocked")).toBeUndefined();
  });

  it("opens the first window with the configured limits before the first provider call", async () => {
    const { events } = await turnWith({ max_agent_rounds_per_window: 3 }, "trn_first", [{ say: "hi" }]);
    expect(windowEvents(events).map((n) => n.params)).toEqual([
      expect.objectContaining({
        window_id: "win_trn_first_0",
        window_index: 0,
        status: "running",
        limits: {
          max_agent_rounds_per_window: 3,
          max_tool_calls_per_window: 40,
          max_wall_clock_ms_per_window: 600_000,
          max_provider_tokens_per_window: 200_000,
        },
      }),
    ]);
  });
});

describe("a turn total", () => {
  it("blocks the turn with a recovery job; nothing follows turn/blocked until turn/resume, which continues in a new window", async () => {
    h = await startHarness({
      config: { tools: { execution_windows: { max_agent_rounds_per_window: 1, total: { max_agent_rounds: 2 } } } },
    });
    const thread = await h.thread();
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_total",
      input: text(script(shell("echo 1"), shell("echo 2"), shell("echo 3"), { say: "all done" })),
    });
    const blocked = await h.waitFor((n) => n.method === "turn/blocked");
    const jobId = (blocked.params as { recovery_job_id: string }).recovery_job_id;
    expect(blocked.params).toMatchObject({
      reason: "max_agent_rounds_per_window",
      turn: { status: "Blocked", blocked: { reason: "max_agent_rounds_per_window", recovery_job_id: jobId } },
    });

    const before = ofTurn(h.received, "trn_total");
    const tail = before.slice(
      before.findIndex(
        (n) => n.method === "turn/execution_window/exhausted" && (n.params as { window_id: string }).window_id === "win_trn_total_1",
      ),
    );
    expect(tail.map((n) => n.method)).toEqual([
      "turn/execution_window/exhausted",
      "turn/execution_window/checkpointed",
      "item/started",
      "item/completed",
      "item/recovery_opened",
      "turn/execution_window/blocked",
      "turn/blocked",
    ]);
    expect(tail[4]!.params).toMatchObject({
      recovery_job_id: jobId,
      reason: "execution_window_exhausted",
      exhaustion_reason: "max_agent_rounds_per_window",
    });
    expect(tail[5]!.params).toMatchObject({
      window_id: "win_trn_total_1",
      reason: "max_agent_rounds_per_window",
      recovery_job_id: jobId,
      totals: { agent_rounds: 2, tool_calls: 2 },
    });

    // A full round trip later, still nothing more for the turn.
    const { turn } = await h.client.turnGet({ thread_id: thread, turn_id: "trn_total" });
    expect(turn.status).toBe("Blocked");
    expect(ofTurn(h.received, "trn_total")).toHaveLength(before.length);

    const done = h.waitFor((n) => n.method === "turn/completed");
    const resumed = await h.client.turnResume({ thread_id: thread, turn_id: "trn_total" });
    expect(resumed).toMatchObject({ recovery_job_id: jobId, turn: { status: "InProgress" } });
    const end = await done;
    expect(end.params).toMatchObject({ turn: { status: "Completed" } });
    const after = ofTurn(h.received, "trn_total").slice(before.length);
    expect(after.slice(0, 3).map((n) => n.method)).toEqual([
      "item/recovery_attached",
      "turn/execution_window/continued",
      "turn/execution_window/started",
    ]);
    expect(after[0]!.params).toMatchObject({ recovery_job_id: jobId, attempt: 1 });
    expect(after[1]!.params).toMatchObject({
      previous_window_id: "win_trn_total_1",
      window_id: "win_trn_total_2",
      reason: "max_agent_rounds_per_window",
    });
    expect(after.map((n) => n.method)).toContain("item/recovery_succeeded");
    // The totals count again from the resume: round 3 and the final answer ran without blocking.
    expect(after.filter((n) => n.method === "turn/blocked")).toEqual([]);
    const items = await h.client.turnItems({ thread_id: thread, turn_id: "trn_total" });
    expect(items.events.map((e) => ({ method: e.method, params: e.params }))).toEqual(
      ofTurn(h.received, "trn_total").map((n) => ({ method: n.method, params: n.params })),
    );
  });
});

describe("the tool-loop budget", () => {
  it.each([
    ["rounds", { max_agent_rounds: 2 }, [shell("true"), shell("true"), shell("true"), { say: "never" }], 2],
    [
      "tool_calls",
      { max_tool_calls: 3 },
      [
        {
          tools: [
            { tool: "shell", args: { command: "true" } },
            { tool: "shell", args: { command: "true" } },
          ],
        },
        shell("true"),
        shell("true"),
        { say: "never" },
      ],
      3,
    ],
  ] as const)("over %s: turn/tool_loop/budget_exceeded, then the turn fails", async (budget, limits, steps, limit) => {
    h = await startHarness({ config: { limits } });
    const thread = await h.thread();
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_budget", input: text(script(...steps)) });
    expect(end.params).toMatchObject({ turn: { status: "Failed" }, error: { kind: "budget_exhausted" } });
    const events = ofTurn(h.received, "trn_budget");
    expect(events.at(-2)).toMatchObject({ method: "turn/tool_loop/budget_exceeded", params: { budget, limit, observed: limit } });
  });
});
