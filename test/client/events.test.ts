/** The mapping from notifications to stream events for what the reference gateway does not send yet: context compaction, a blocked turn. */
import { describe, expect, it } from "vitest";
import { emptyItems, streamEventsOf, type TurnNotification } from "../../packages/client/src/index.js";

const ids = { thread_id: "thr", turn_id: "trn" };
const never = () => Promise.reject(new Error("not answered in this test"));

describe("stream events", () => {
  it("reports a compaction with its reason and counts", () => {
    const n: TurnNotification = {
      method: "context/compressed",
      params: {
        ...ids,
        sequence: 2,
        reason: "summarized",
        summarized_messages: 12,
        messages_after: 3,
        summary_preview: "Earlier: set up the project.",
      },
    } as TurnNotification;
    expect(streamEventsOf(emptyItems, n, { respond: never, answer: never }).events).toEqual([
      {
        type: "context_compacted",
        sequence: 2,
        reason: "summarized",
        summarized_messages: 12,
        messages_after: 3,
        summary_preview: "Earlier: set up the project.",
      },
    ]);
  });

  it("reports a blocked turn with its recovery job, then done with status Blocked", () => {
    const turn = {
      id: "trn",
      status: "Blocked",
      prompt_manifest: null,
      permission_profile: { mode: "full_access", source: "defaulted", effective_policy: {} },
      blocked: { reason: "max_tool_calls_per_window", recovery_job_id: "rec_1" },
    };
    const n = {
      method: "turn/blocked",
      params: { ...ids, sequence: 9, turn, reason: "max_tool_calls_per_window", recovery_job_id: "rec_1" },
    } as unknown as TurnNotification;
    expect(streamEventsOf(emptyItems, n, { respond: never, answer: never }).events).toEqual([
      { type: "blocked", sequence: 9, reason: "max_tool_calls_per_window", recoveryJobId: "rec_1" },
      { type: "done", sequence: 9, status: "Blocked", turn },
    ]);
  });
});
