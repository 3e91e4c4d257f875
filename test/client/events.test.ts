/**
 * The mapping from notifications to stream events for what the reference gateway does not
 * send yet (context compaction, a blocked turn), and a child turn seen by the status fold.
 */
import { describe, expect, it } from "vitest";
import { emptyItems, foldTurnStatus, initialTurnStatus, streamEventsOf, type TurnDomainStatus, type TurnNotification } from "../../client/index.js";
import { script, startHarness, text } from "../gateway/harness.js";

const ids = { thread_id: "thr", turn_id: "trn" };
const never = () => Promise.reject(new Error("not answered in this test"));

describe("stream events", () => {
  it("reports a compaction with its reason and counts", () => {
    const n: TurnNotification = { method: "context/compressed", params: { ...ids, sequence: 2, reason: "summarized", summarized_messages: 12, messages_after: 3, summary_preview: "Earlier: set up the project." } } as TurnNotification;
    expect(streamEventsOf(emptyItems, n, { respond: never }).events).toEqual([
      { type: "context_compacted", sequence: 2, reason: "summarized", summarized_messages: 12, messages_after: 3, summary_preview: "Earlier: set up the project." },
    ]);
  });

  it("reports a blocked turn with its recovery job, then done with status Blocked", () => {
    const turn = { id: "trn", status: "Blocked", prompt_manifest: null, permission_profile: { mode: "full_access", source: "defaulted", effective_policy: {} }, blocked: { reason: "max_tool_calls_per_window", recovery_job_id: "rec_1" } };
    const n = { method: "turn/blocked", params: { ...ids, sequence: 9, turn, reason: "max_tool_calls_per_window", recovery_job_id: "rec_1" } } as unknown as TurnNotification;
    expect(streamEventsOf(emptyItems, n, { respond: never }).events).toEqual([
      { type: "blocked", sequence: 9, reason: "max_tool_calls_per_window", recoveryJobId: "rec_1" },
      { type: "done", sequence: 9, status: "Blocked", turn },
    ]);
  });
});

describe("the status fold on a turn that launches a child turn", () => {
  it("is awaiting_child while the sub-agent runs", async () => {
    const h = await startHarness();
    try {
      const threadId = await h.thread();
      const statuses: TurnDomainStatus[] = [];
      let state = initialTurnStatus;
      h.client.onAny((n) => {
        if (!("turn_id" in n.params) || n.params.turn_id !== "trn_parent") return;
        state = foldTurnStatus(state, n);
        if (statuses.at(-1) !== state.status) statuses.push(state.status);
      });
      const child = script({ say: "child answer" });
      await h.runTurn({ thread_id: threadId, turn_id: "trn_parent", input: text(script({ tool: "spawn_agent", args: { prompt: child } }, { say: "parent answer" })) });
      expect(statuses).toEqual(["running", "awaiting_child", "running", "succeeded"]);
    } finally {
      await h.close();
    }
  });
});
