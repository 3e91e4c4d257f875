/**
 * The generated ordering checker on real traffic: a stream recorded from the reference
 * gateway (a supervised turn with a shell call that asks permission, then turn/items)
 * passes, and each edit of it that breaks one rule is caught by that rule alone.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createOrderingChecker, orderingRules } from "../../generated/ordering.js";
import { script, text } from "../gateway/harness.js";
import itemsRequest from "../fixtures/reference/turn_items_request.json" with { type: "json" };
import itemsResult from "../fixtures/reference/turn_items_result.json" with { type: "json" };
import resumeRequest from "../fixtures/reference/turn_resume_request.json" with { type: "json" };
import {
  check,
  duplicated,
  find,
  inserted,
  message,
  moved,
  notification,
  notificationMethod,
  recordSession,
  recordTurn,
  renumbered,
  responseTo,
  without,
  type RecordedFrame,
  type RecordedTurn,
} from "./streams.js";

let recorded: RecordedTurn;
let frames: RecordedFrame[];
let thread: string;
let turn: string;
/** The shell call's item: the one with an output delta. */
let item: string;

beforeAll(async () => {
  recorded = await recordTurn([
    { tool: "shell", args: { command: "echo ordered" } },
    { say: "The command printed one word.", chunks: 3 },
  ]);
  ({ frames, threadId: thread, turnId: turn } = recorded);
  item = message(frames[find(frames, "item/command_execution/output_delta")]!).params!.item_id as string;
}, 30_000);

const ofTurn = () => `turn "${turn}" of thread "${thread}"`;
const rulesOf = (violations: readonly { rule: string }[]) => [...new Set(violations.map((v) => v.rule))];

describe("a stream recorded from the reference gateway", () => {
  it("holds what the rules are about: items with deltas, a permission request and its resolution, a turn/items read", () => {
    const methods = frames.map(notificationMethod);
    for (const method of [
      "turn/started",
      "item/started",
      "item/command_execution/output_delta",
      "item/agent_message/delta",
      "turn/permission/request/opened",
      "turn/permission/request/resolved",
      "turn/completed",
    ]) {
      expect(methods, method).toContain(method);
    }
    const items = message(frames[responseTo(frames, "turn/items")]!).result!.events as unknown[];
    expect(items.length).toBeGreaterThan(5);
  });

  it("passes: no frame is reported while it is fed, nor at the end", () => {
    const checker = createOrderingChecker();
    frames.forEach(({ frame, direction }, i) => expect(checker.accept(frame, direction), `frame ${i}`).toEqual([]));
    expect(checker.end()).toEqual([]);
    expect(checker.violations).toEqual([]);
  });

  it("cut off while the permission request is open: the open turn and request are reported, unless open turns are allowed", () => {
    const cut = frames.slice(0, find(frames, "turn/permission/request/opened") + 1);
    const requestId = (message(cut.at(-1)!).params!.request as { request_id: string }).request_id;
    expect(check(cut).map((v) => [v.rule, v.message])).toEqual([
      [
        "TURN-ORDER-ONE-TERMINAL",
        `${ofTurn()}, first seen at frame ${find(frames, "turn/started")}, has no terminal notification (turn/completed or turn/failed) by the end of the stream`,
      ],
      [
        "PERM-ORDER-RESOLVED-ONCE",
        `request "${requestId}" of ${ofTurn()}, opened by turn/permission/request/opened at frame ${cut.length - 1}, never got its turn/permission/request/resolved`,
      ],
    ]);
    expect(check(cut, { openTurnsAllowed: true })).toEqual([]);
  });

  it("a request left unresolved by an ended turn is reported even when open turns are allowed", () => {
    const edited = renumbered(without(frames, find(frames, "turn/permission/request/resolved")));
    expect(rulesOf(check(edited, { openTurnsAllowed: true }))).toEqual(["PERM-ORDER-RESOLVED-ONCE"]);
  });
});

describe("other streams recorded from the reference gateway", () => {
  it("a turn cancelled while its permission request is open, then a turn whose model call fails, in one thread: both pass", async () => {
    const frames = await recordSession(async (h) => {
      const thread = await h.thread();
      await h.client.turnStart({
        thread_id: thread,
        turn_id: "trn_cancelled",
        permission_profile: { mode: "supervised" },
        input: text(script({ tool: "shell", args: { command: "echo never" } }, { say: "unreachable" })),
      });
      await h.waitFor((n) => n.method === "turn/permission/request/opened");
      await h.client.turnCancel({ thread_id: thread, turn_id: "trn_cancelled" });
      const failed = await h.runTurn({
        thread_id: thread,
        turn_id: "trn_failing",
        input: text(script({ fail: "the model is unavailable" })),
      });
      expect(failed.method).toBe("turn/failed");
      await h.client.turnItems({ thread_id: thread, turn_id: "trn_cancelled" });
      await h.client.turnItems({ thread_id: thread, turn_id: "trn_failing" });
    });
    const methods = frames.map(notificationMethod);
    expect(methods.filter((m) => m === "turn/failed")).toHaveLength(2);
    expect(methods).toContain("turn/permission/request/resolved");
    expect(check(frames)).toEqual([]);
  }, 30_000);
});

interface Edit {
  /** The edited stream; sequences are renumbered unless the edit is about them. */
  readonly edit: (frames: RecordedFrame[]) => RecordedFrame[];
  readonly rule: (typeof orderingRules)[number]["id"];
  /** A message every violation of the edit matches. */
  readonly says: RegExp;
}

const startedOf = (f: RecordedFrame[]) => find(f, "item/started", (p) => p.item_id === item);
const resolvedAt = (f: RecordedFrame[]) => find(f, "turn/permission/request/resolved");
const openedAt = (f: RecordedFrame[]) => find(f, "turn/permission/request/opened");
const completedAt = (f: RecordedFrame[]) => find(f, "turn/completed");
const auditAt = (f: RecordedFrame[]) => find(f, "turn/permission/audit");

const edits: [string, Edit][] = [
  [
    "turn/started dropped",
    {
      edit: (f) => renumbered(without(f, find(f, "turn/started"))),
      rule: "TURN-ORDER-STARTED-FIRST",
      says: /came before its turn\/started$/,
    },
  ],
  [
    "an output delta moved before its item/started",
    {
      edit: (f) => renumbered(moved(f, find(f, "item/command_execution/output_delta"), startedOf(f))),
      rule: "ITEM-ORDER-STARTED-FIRST",
      says: /came before its item\/started$/,
    },
  ],
  [
    "item/completed moved before its item/started",
    {
      edit: (f) =>
        renumbered(
          moved(
            f,
            find(f, "item/completed", (p) => p.item_id === item),
            startedOf(f),
          ),
        ),
      rule: "ITEM-ORDER-STARTED-FIRST",
      says: /^item\/completed for item/,
    },
  ],
  [
    "item/started dropped",
    { edit: (f) => renumbered(without(f, startedOf(f))), rule: "ITEM-ORDER-STARTED-FIRST", says: /came before its item\/started$/ },
  ],
  [
    "turn/completed duplicated",
    {
      edit: (f) => renumbered(duplicated(f, completedAt(f))),
      rule: "TURN-ORDER-ONE-TERMINAL",
      says: /is a second terminal notification: turn\/completed at frame \d+ already ended it$/,
    },
  ],
  [
    "a notification moved after turn/completed",
    {
      edit: (f) => renumbered(moved(f, auditAt(f), completedAt(f) + 1)),
      rule: "TURN-ORDER-ONE-TERMINAL",
      says: /^turn\/permission\/audit for .* came after turn\/completed at frame \d+ had ended it$/,
    },
  ],
  [
    "turn/completed dropped",
    {
      edit: (f) => renumbered(without(f, completedAt(f))),
      rule: "TURN-ORDER-ONE-TERMINAL",
      says: /has no terminal notification \(turn\/completed or turn\/failed\) by the end of the stream$/,
    },
  ],
  [
    "turn/permission/request/resolved duplicated",
    {
      edit: (f) => renumbered(duplicated(f, resolvedAt(f))),
      rule: "PERM-ORDER-RESOLVED-ONCE",
      says: /closed it a second time \(first at frame \d+\)$/,
    },
  ],
  [
    "turn/permission/request/opened duplicated",
    {
      edit: (f) => renumbered(duplicated(f, openedAt(f))),
      rule: "PERM-ORDER-RESOLVED-ONCE",
      says: /opened it a second time \(first at frame \d+\)$/,
    },
  ],
  [
    "turn/permission/request/resolved dropped",
    {
      edit: (f) => renumbered(without(f, resolvedAt(f))),
      rule: "PERM-ORDER-RESOLVED-ONCE",
      says: /never got its turn\/permission\/request\/resolved$/,
    },
  ],
  [
    "turn/permission/request/resolved moved before its request was opened",
    {
      edit: (f) => renumbered(moved(f, resolvedAt(f), openedAt(f))),
      rule: "PERM-ORDER-RESOLVED-ONCE",
      says: /came before its turn\/permission\/request\/opened$|never got its/,
    },
  ],
  [
    "a notification dropped, sequences left as sent",
    { edit: (f) => without(f, auditAt(f)), rule: "TURN-ORDER-SEQUENCE", says: /has \/sequence \d+; expected \d+ after \d+ at frame \d+$/ },
  ],
  [
    "two deltas of one item swapped, sequences left as sent",
    {
      edit: (f) => {
        const first = find(f, "item/agent_message/delta");
        return moved(
          f,
          find(f, "item/agent_message/delta", () => true, first + 1),
          first,
        );
      },
      rule: "TURN-ORDER-SEQUENCE",
      says: /has \/sequence \d+; expected \d+ after \d+ at frame \d+$/,
    },
  ],
  [
    "an event dropped from the turn/items result",
    {
      edit: (f) => {
        const at = responseTo(f, "turn/items");
        const response = message(f[at]!);
        const events = (response.result!.events as unknown[]).filter((_, i) => i !== 2);
        return f.map((frame, i) => (i === at ? { ...frame, frame: { ...response, result: { ...response.result, events } } } : frame));
      },
      rule: "TURN-ORDER-SEQUENCE",
      says: /^turn\/items result for turn .* at frame \d+: \/events\/2\/sequence is 4; expected 3 after 2$/,
    },
  ],
];

describe("each edit that breaks one rule is caught by that rule alone", () => {
  it.each(edits)("%s", (_name, { edit, rule, says }) => {
    const violations = check(edit(frames));
    expect(violations.length, "at least one violation").toBeGreaterThan(0);
    expect(rulesOf(violations)).toEqual([rule]);
    for (const v of violations) {
      expect(v.message).toMatch(says);
      expect(v.requirement).toBe(rule);
    }
  });

  it("names the item, its turn and the frame, and hands back the offending frame", () => {
    const from = find(frames, "item/command_execution/output_delta");
    const edited = renumbered(moved(frames, from, startedOf(frames)));
    const at = startedOf(frames);
    const checker = createOrderingChecker();
    const returned = edited.map(({ frame, direction }) => checker.accept(frame, direction));
    expect(returned[at]).toEqual([
      {
        rule: "ITEM-ORDER-STARTED-FIRST",
        requirement: "ITEM-ORDER-STARTED-FIRST",
        message: `item/command_execution/output_delta for item "${item}" of ${ofTurn()} at frame ${at} came before its item/started`,
        frameIndex: at,
        frame: edited[at]!.frame,
      },
    ]);
    expect(returned.filter((r, i) => i !== at && r.length > 0)).toEqual([]);
  });
});

describe("a blocked turn", () => {
  const blockedAfter = (f: RecordedFrame[]) => find(f, "item/completed") + 1;
  const blocked = () => {
    const started = message(frames[find(frames, "turn/started")]!).params!;
    return notification("turn/blocked", {
      thread_id: thread,
      turn_id: turn,
      sequence: 0,
      turn: started.turn,
      reason: "execution window budget reached",
      recovery_job_id: resumeRequest.params.recovery_job_id,
    });
  };
  const resume = (id: string): RecordedFrame => ({
    direction: "client_to_server",
    frame: { jsonrpc: "2.0", id, method: resumeRequest.method, params: { ...resumeRequest.params, thread_id: thread, turn_id: turn } },
  });
  const resumed = (id: string): RecordedFrame => ({
    direction: "server_to_client",
    frame: {
      jsonrpc: "2.0",
      id,
      result: { turn: message(frames[find(frames, "turn/started")]!).params!.turn, recovery_job_id: resumeRequest.params.recovery_job_id },
    },
  });
  const refused = (id: string): RecordedFrame => ({
    direction: "server_to_client",
    frame: { jsonrpc: "2.0", id, error: { code: -32005, message: "Turn is not blocked", data: { reason: "turn_not_blocked" } } },
  });

  /** Notifications of the recorded turn that carry a sequence: the ones the quiet applies to. */
  const ofThisTurn = (f: RecordedFrame) =>
    notificationMethod(f) !== undefined && message(f).params?.turn_id === turn && typeof message(f).params?.sequence === "number";

  it("may send nothing after turn/blocked while no turn/resume has succeeded", () => {
    const at = blockedAfter(frames);
    const edited = renumbered(inserted(frames, at, blocked()));
    const violations = check(edited);
    expect(rulesOf(violations)).toEqual(["TURN-ORDER-BLOCKED-QUIET"]);
    const quieted = edited.map((f, i) => (i > at && ofThisTurn(f) ? i : -1)).filter((i) => i !== -1);
    expect(violations.map((v) => v.frameIndex)).toEqual(quieted);
    const first = quieted[0]!;
    expect(violations[0]!.message).toBe(
      `${notificationMethod(edited[first]!)} for ${ofTurn()} at frame ${first} came after turn/blocked at frame ${at} and before a successful turn/resume or turn/cancel`,
    );
  });

  it("goes on after the client's turn/resume gets a successful response", () => {
    const at = blockedAfter(frames);
    expect(check(renumbered(inserted(frames, at, blocked(), resume("resume-1"), resumed("resume-1"))))).toEqual([]);
  });

  it("is reported at the response when turn/resume fails, for what the gateway sent while it was pending", () => {
    const at = blockedAfter(frames);
    // blocked, the resume request, three frames of the turn, the refusal, the rest.
    const edited = renumbered([
      ...inserted(frames, at, blocked(), resume("resume-2")).slice(0, at + 5),
      refused("resume-2"),
      ...frames.slice(at + 3),
    ]);
    const refusal = at + 5;
    const checker = createOrderingChecker();
    const returned = edited.map(({ frame, direction }) => checker.accept(frame, direction));
    expect(returned.slice(0, refusal).flat(), "nothing is reported while the resume is pending").toEqual([]);
    const held = [at + 2, at + 3, at + 4].filter((i) => ofThisTurn(edited[i]!));
    expect(held.length).toBeGreaterThan(0);
    expect(returned[refusal]!.map((v) => [v.rule, v.frameIndex])).toEqual(held.map((i) => ["TURN-ORDER-BLOCKED-QUIET", i]));
    // After the refusal, the turn is still quiet: what follows is reported as it comes.
    const later = returned.slice(refusal + 1).flat();
    expect(later.length).toBeGreaterThan(0);
    expect(rulesOf(later)).toEqual(["TURN-ORDER-BLOCKED-QUIET"]);
  });

  it("a resume for another turn does not end the quiet", () => {
    const at = blockedAfter(frames);
    const other = (f: RecordedFrame): RecordedFrame => ({
      ...f,
      frame: { ...(f.frame as object), params: { ...resumeRequest.params, thread_id: thread, turn_id: "trn_other" } },
    });
    const violations = check(renumbered(inserted(frames, at, blocked(), other(resume("resume-3")), resumed("resume-3"))));
    expect(rulesOf(violations)).toEqual(["TURN-ORDER-BLOCKED-QUIET"]);
  });
});

describe("the reference turn/items example", () => {
  const request: RecordedFrame = { direction: "client_to_server", frame: { jsonrpc: "2.0", id: 7, ...itemsRequest } };
  const response = (events: unknown[]): RecordedFrame => ({
    direction: "server_to_client",
    frame: { jsonrpc: "2.0", id: 7, result: { ...itemsResult, events } },
  });
  const event = (sequence: number) => ({ sequence, method: "item/updated", params: {}, recorded_at: "2026-01-01T00:00:00Z" });

  it("passes as given (no events) and with consecutive events", () => {
    expect(check([request, response(itemsResult.events)])).toEqual([]);
    expect(check([request, response([40, 41, 42].map(event))])).toEqual([]);
  });

  it("is caught with a gap or a step back in its events, each reported once", () => {
    const violations = check([request, response([40, 42, 42].map(event))]);
    expect(violations.map((v) => v.message)).toEqual([
      `turn/items result for turn "${itemsRequest.params.turn_id}" of thread "${itemsRequest.params.thread_id}" at frame 1: /events/1/sequence is 42; expected 41 after 40`,
      `turn/items result for turn "${itemsRequest.params.turn_id}" of thread "${itemsRequest.params.thread_id}" at frame 1: /events/2/sequence is 42; expected 43 after 42`,
    ]);
  });

  it("a response to another request id is not taken for the turn/items result", () => {
    const stray: RecordedFrame = {
      direction: "server_to_client",
      frame: { jsonrpc: "2.0", id: 8, result: { ...itemsResult, events: [1, 5].map(event) } },
    };
    expect(check([request, stray])).toEqual([]);
  });
});
