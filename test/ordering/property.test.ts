/**
 * Properties of the ordering checker over streams the reference gateway produced for
 * generated scripts (tool calls, answers, permission modes and decisions): every such
 * stream passes, and moving any item notification in front of its item/started is caught.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ScriptStep } from "../../packages/gateway/src/providers/scripted.js";
import { check, find, message, moved, notificationMethod, recordTurn, renumbered } from "./streams.js";

const word = fc.stringMatching(/^[a-z]{1,8}$/);
const reasoning = fc.option(word, { nil: undefined }).map((r) => (r === undefined ? {} : { reasoning: `thinking about ${r}` }));

const toolStep: fc.Arbitrary<ScriptStep> = fc.oneof(
  fc.tuple(word, reasoning).map(([w, extra]) => ({ tool: "shell", args: { command: `echo ${w}` }, ...extra })),
  fc.tuple(word, word).map(([name, content]) => ({ tool: "write_file", args: { path: `${name}.txt`, content } })),
  fc.tuple(word, word).map(([a, b]) => ({
    tools: [
      { tool: "shell", args: { command: `echo ${a}` } },
      { tool: "write_file", args: { path: `${b}.md`, content: a } },
    ],
  })),
);
const answerStep: fc.Arbitrary<ScriptStep> = fc
  .tuple(fc.array(word, { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 4 }), reasoning)
  .map(([words, chunks, extra]) => {
    const say = words.join(" ");
    // The scripted model streams at most one chunk per character.
    return { say, chunks: Math.min(chunks, say.length), ...extra };
  });

const scenario = fc.record({
  steps: fc.tuple(fc.array(toolStep, { maxLength: 3 }), answerStep).map(([tools, answer]) => [...tools, answer]),
  mode: fc.constantFrom("full_access" as const, "auto_accept_edits" as const, "supervised" as const),
  answer: fc.constantFrom("allow_once" as const, "deny" as const),
});

/** Notifications that must follow their item/started. */
const ITEM_NOTIFICATIONS = new Set([
  "item/agent_message/delta",
  "item/command_execution/output_delta",
  "item/file_change/output_delta",
  "item/tool/progress",
  "item/updated",
  "item/completed",
]);

describe("the ordering checker on reference gateway streams", () => {
  it("finds nothing wrong in any stream the reference gateway produced", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ steps, mode, answer }) => {
        const { frames } = await recordTurn(steps, mode, answer);
        expect(check(frames)).toEqual([]);
      }),
      { numRuns: 20 },
    );
  }, 120_000);

  it("catches any item notification moved anywhere between turn/started and its item/started", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, fc.nat(), fc.nat(), async ({ steps, mode, answer }, pickFrame, pickPlace) => {
        const { frames, turnId } = await recordTurn(steps, mode, answer);
        const candidates = frames.map((f, i) => (ITEM_NOTIFICATIONS.has(notificationMethod(f) ?? "") ? i : -1)).filter((i) => i !== -1);
        const from = candidates[pickFrame % candidates.length]!;
        const itemId = message(frames[from]!).params!.item_id;
        const started = find(frames, "item/started", (p) => p.item_id === itemId);
        const turnStarted = find(frames, "turn/started", (p) => p.turn_id === turnId);
        // Any place after turn/started, up to just before the item's item/started.
        const before = turnStarted + 1 + (pickPlace % (started - turnStarted));
        const edited = renumbered(moved(frames, from, before));
        const violations = check(edited);
        expect(new Set(violations.map((v) => v.rule))).toEqual(new Set(["ITEM-ORDER-STARTED-FIRST"]));
        expect(violations.map((v) => v.frameIndex)).toContain(before);
        expect(violations.find((v) => v.frameIndex === before)?.message).toContain(
          `item ${JSON.stringify(itemId)} of turn ${JSON.stringify(turnId)}`,
        );
      }),
      { numRuns: 20 },
    );
  }, 120_000);
});
