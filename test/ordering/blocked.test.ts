/**
 * Blocked turns on the live reference gateway: a turn blocked by its execution-window total
 * and then resumed, and one blocked and then cancelled, both pass the generated ordering
 * checker; the quiet rule still catches a notification sent while the turn is blocked.
 */
import { describe, expect, it } from "vitest";
import type { ScriptStep } from "../../packages/gateway/src/providers/scripted.js";
import { script, text, type Harness } from "../gateway/harness.js";
import { check, find, inserted, message, notification, recordSession, type RecordedFrame } from "./streams.js";

const shell = (command: string): ScriptStep => ({ tool: "shell", args: { command } });
const blockingConfig = { tools: { execution_windows: { max_agent_rounds_per_window: 1, total: { max_agent_rounds: 1 } } } };

async function blockedTurn(h: Harness, turnId: string): Promise<string> {
  const thread = await h.thread();
  const blocked = h.waitFor((n) => n.method === "turn/blocked" && (n.params as { turn_id: string }).turn_id === turnId);
  await h.client.turnStart({ thread_id: thread, turn_id: turnId, input: text(script(shell("echo 1"), shell("echo 2"), { say: "done" })) });
  await blocked;
  return thread;
}

async function record(then: "resume" | "cancel"): Promise<RecordedFrame[]> {
  return recordSession(
    async (h) => {
      const thread = await blockedTurn(h, `trn_${then}`);
      const ended = h.waitFor(
        (n) => (n.method === "turn/completed" || n.method === "turn/failed") && (n.params as { turn_id: string }).turn_id === `trn_${then}`,
      );
      if (then === "resume") {
        // The total counts again from each resume, so the turn may block once more before it ends.
        const resumeUntilDone = async (): Promise<void> => {
          const from = h.received.length;
          const next = h.waitFor(
            (n) =>
              h.received.indexOf(n) >= from &&
              ["turn/blocked", "turn/completed", "turn/failed"].includes(n.method) &&
              (n.params as { turn_id: string }).turn_id === "trn_resume",
          );
          await h.client.turnResume({ thread_id: thread, turn_id: "trn_resume" });
          if ((await next).method === "turn/blocked") await resumeUntilDone();
        };
        await resumeUntilDone();
      } else {
        await h.client.turnCancel({ thread_id: thread, turn_id: "trn_cancel" });
      }
      await ended;
      await h.client.turnItems({ thread_id: thread, turn_id: `trn_${then}` });
    },
    { config: blockingConfig },
  );
}

describe("blocked turns on the reference gateway", () => {
  it.each(["resume", "cancel"] as const)("blocked, then %s: every rule holds", async (then) => {
    const frames = await record(then);
    expect(frames.some((f) => message(f).method === "turn/blocked")).toBe(true);
    expect(check(frames)).toEqual([]);
  });

  it("a notification of the turn between turn/blocked and the resume is caught by the quiet rule alone", async () => {
    const frames = await record("resume");
    const at = find(frames, "turn/blocked");
    const { thread_id, turn_id, sequence } = message(frames[at]!).params as { thread_id: string; turn_id: string; sequence: number };
    const stray = notification("turn/permission/audit", { thread_id, turn_id, sequence });
    const rules = [...new Set(check(inserted(frames, at + 1, stray)).map((v) => v.rule))];
    expect(rules).toContain("TURN-ORDER-BLOCKED-QUIET");
    expect(rules.filter((r) => r !== "TURN-ORDER-BLOCKED-QUIET" && r !== "TURN-ORDER-SEQUENCE")).toEqual([]);
  });
});
