/**
 * Provider retries and recovery end to end with the scripted provider (`fail_attempts`)
 * over the in-memory pair: a retryable failure is retried with backoff under a recovery
 * job; when the attempts run out the turn blocks, and turn/resume attaches a new attempt
 * to the same job.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import { flatEvents } from "./events.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
});

const RECOVERY = new Set([
  "item/recovery_opened",
  "item/recovery_attached",
  "item/retry_scheduled",
  "item/retry_attempt_started",
  "item/recovery_succeeded",
  "item/recovery_exhausted",
  "turn/blocked",
]);
const recoveryEvents = (ns: readonly AnyNotification[]) => flatEvents(ns, RECOVERY);

const retry = { max_attempts: 3, initial_delay_ms: 2, backoff_multiplier: 3, max_delay_ms: 5 };

describe("a retryable provider failure", () => {
  it("is retried with exponential backoff under one recovery job until an attempt succeeds", async () => {
    h = await startHarness({ config: { providers: { retry } } });
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_retry",
      input: text(script({ say: "third time lucky", fail_attempts: 2, fail_message: "rate limited" })),
    });
    expect(end.params).toMatchObject({ turn: { status: "Completed" } });
    const events = recoveryEvents(ofTurn(h.received, "trn_retry"));
    const opened = events[0] as { item_id: string; recovery_job_id: string };
    const common = { item_id: opened.item_id };
    expect(events).toEqual([
      expect.objectContaining({ method: "item/recovery_opened", ...common, reason: "provider_failure" }),
      expect.objectContaining({
        method: "item/retry_scheduled",
        ...common,
        attempt: 2,
        max_attempts: 3,
        delay_ms: 2,
        error: "rate limited",
      }),
      expect.objectContaining({ method: "item/retry_attempt_started", ...common, attempt: 2 }),
      expect.objectContaining({
        method: "item/retry_scheduled",
        ...common,
        attempt: 3,
        max_attempts: 3,
        delay_ms: 5,
        error: "rate limited",
      }),
      expect.objectContaining({ method: "item/retry_attempt_started", ...common, attempt: 3 }),
      expect.objectContaining({ method: "item/recovery_succeeded", ...common, attempt: 3, recovery_job_id: opened.recovery_job_id }),
    ]);
    const scheduled = ofTurn(h.received, "trn_retry").find((n) => n.method === "item/retry_scheduled")!.params as {
      next_attempt_at: string;
    };
    expect(Number.isNaN(Date.parse(scheduled.next_attempt_at))).toBe(false);
    // The job hangs on a systemEvent notice in the timeline.
    const notice = ofTurn(h.received, "trn_retry").find((n) => n.method === "item/completed" && n.params.item.id === opened.item_id);
    expect(notice?.params).toMatchObject({ item: { type: "systemEvent", level: "warning", code: "provider_retry" } });
  });

  it("blocks the turn with provider_failure_continuation when the attempts run out; turn/resume attaches to the job and recovers", async () => {
    h = await startHarness({ config: { providers: { retry: { ...retry, max_attempts: 2 } } } });
    const thread = await h.thread();
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_exhaust",
      input: text(script({ say: "back again", fail_attempts: 3, fail_message: "service unavailable" })),
    });
    const blocked = await h.waitFor((n) => n.method === "turn/blocked");
    const before = recoveryEvents(ofTurn(h.received, "trn_exhaust"));
    const { item_id: itemId, recovery_job_id: jobId } = before[0] as { item_id: string; recovery_job_id: string };
    expect(before.map((e) => e.method)).toEqual([
      "item/recovery_opened",
      "item/retry_scheduled",
      "item/retry_attempt_started",
      "item/recovery_exhausted",
      "turn/blocked",
    ]);
    expect(before[3]).toMatchObject({ item_id: itemId, attempts: 2, error: "service unavailable", recovery_job_id: jobId });
    expect(blocked.params).toMatchObject({
      reason: "provider_failure_continuation",
      recovery_job_id: jobId,
      turn: { status: "Blocked", blocked: { reason: "provider_failure_continuation", recovery_job_id: jobId } },
    });
    const window = ofTurn(h.received, "trn_exhaust").find((n) => n.method === "turn/execution_window/exhausted");
    expect(window?.params).toMatchObject({ reason: "provider_failure_continuation", status: "failed" });

    const done = h.waitFor((n) => n.method === "turn/completed");
    const resumed = await h.client.turnResume({ thread_id: thread, turn_id: "trn_exhaust", recovery_job_id: jobId });
    expect(resumed.recovery_job_id).toBe(jobId);
    await done;
    const after = recoveryEvents(ofTurn(h.received, "trn_exhaust")).slice(before.length);
    // Attempt 3 (the first after the resume) still fails; attempt 4 succeeds, under the same job.
    expect(after).toEqual([
      expect.objectContaining({ method: "item/recovery_attached", item_id: itemId, recovery_job_id: jobId, attempt: 3 }),
      expect.objectContaining({ method: "item/retry_scheduled", item_id: itemId, attempt: 4, max_attempts: 4 }),
      expect.objectContaining({ method: "item/retry_attempt_started", item_id: itemId, attempt: 4 }),
      expect.objectContaining({ method: "item/recovery_succeeded", item_id: itemId, attempt: 4, recovery_job_id: jobId }),
    ]);
    const continued = ofTurn(h.received, "trn_exhaust").find((n) => n.method === "turn/execution_window/continued");
    expect(continued?.params).toMatchObject({ reason: "provider_failure_continuation", window_index: 1 });
  });

  it("is not retried when the provider says it is not retryable: the turn fails", async () => {
    h = await startHarness({ config: { providers: { retry } } });
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_final",
      input: text(script({ fail: "bad request", retryable: false })),
    });
    expect(end.params).toMatchObject({
      turn: { status: "Failed" },
      error: { kind: "provider_error", message: "bad request", retryable: false },
    });
    expect(recoveryEvents(ofTurn(h.received, "trn_final"))).toEqual([]);
  });

  it("stops waiting for a retry when the turn is cancelled", async () => {
    h = await startHarness({ config: { providers: { retry: { max_attempts: 3, initial_delay_ms: 60_000 } } } });
    const thread = await h.thread();
    await h.client.turnStart({ thread_id: thread, turn_id: "trn_wait", input: text(script({ say: "never", fail_attempts: 1 })) });
    await h.waitFor((n) => n.method === "item/retry_scheduled");
    const { turn } = await h.client.turnCancel({ thread_id: thread, turn_id: "trn_wait", reason: "no time" });
    expect(turn).toMatchObject({ status: "Interrupted", error: { kind: "cancelled", message: "no time" } });
  });
});
