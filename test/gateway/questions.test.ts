/**
 * ask_question end to end over the in-memory pair: the turn waits on the questions as on
 * an approval, the chosen options reach the model as the tool result, answer tokens are
 * refused when missing, altered, expired or misdirected, and every opened question is
 * resolved exactly once (answered, expired, or cancelled with the turn).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnQuestionOpenedNotification } from "../../generated/types.js";
import { orderingRules } from "../../generated/ordering.js";
import { createOrderingEngine } from "../../packages/rpc/src/index.js";
import type { ModelProvider, ProviderStream, ProviderRequest } from "../../packages/gateway/src/providers/provider.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
/** SQLite files opened by a test, released once its gateway is closed. */
const stores: SqliteEventStore[] = [];
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
  for (const store of stores.splice(0)) store.close();
});

class RecordingScripted implements ModelProvider {
  readonly name = "scripted";
  readonly requests: ProviderRequest[] = [];
  private readonly inner = new ScriptedProvider();
  stream(request: ProviderRequest): ProviderStream {
    this.requests.push(request);
    return this.inner.stream(request);
  }
}

const deploy = {
  header: "Target",
  question: "Where should the build be deployed?",
  options: [{ label: "Staging" }, { label: "Production", description: "Live traffic" }],
};
const style = {
  header: "Style",
  question: "Which commit style do you prefer?",
  options: [{ label: "Squash" }, { label: "Merge" }, { label: "Rebase" }],
};

const opened = (ns: readonly AnyNotification[]) =>
  ns.filter((n) => n.method === "turn/question/opened").map((n) => n.params as TurnQuestionOpenedNotification);

function orderingViolations(ns: readonly AnyNotification[]) {
  const engine = createOrderingEngine(orderingRules);
  for (const n of ns) engine.accept({ jsonrpc: "2.0", method: n.method, params: n.params }, "server_to_client");
  engine.end({ openTurnsAllowed: true });
  return engine.violations.map((v) => v.message);
}

describe("ask_question", () => {
  it("opens each question with a signed answer token, waits, and returns the chosen options to the model", async () => {
    const provider = new RecordingScripted();
    h = await startHarness({ providers: new Map([["scripted", provider]]) });
    const thread = await h.thread();
    const end = h.runTurn({
      thread_id: thread,
      turn_id: "trn_q",
      input: text(script({ tool: "ask_question", args: { questions: [deploy, style] } }, { say: "ok" })),
    });
    await h.waitFor((n) => n.method === "turn/question/opened" && (n.params as TurnQuestionOpenedNotification).index === 1);
    const [first, second] = opened(h.received);
    expect(first).toMatchObject({
      thread_id: thread,
      turn_id: "trn_q",
      call_id: "call_0_0",
      index: 0,
      already_surfaced: false,
      question: {
        header: "Target",
        question: deploy.question,
        options: [
          { id: "a", label: "Staging" },
          { id: "b", label: "Production", description: "Live traffic" },
        ],
      },
    });
    expect(JSON.parse(first!.question.args_json)).toEqual({ questions: [deploy, style] });
    expect(first!.question.answer_token).not.toBe(second!.question.answer_token);
    // Still waiting: no approval was asked for the question, and the turn has not ended.
    expect(h.received.some((n) => n.method === "turn/permission/request/opened")).toBe(false);

    const ask = (index: number, option: string, token: string) =>
      h.client.turnQuestionRespond({
        thread_id: thread,
        turn_id: "trn_q",
        call_id: "call_0_0",
        index,
        option_id: option,
        answer_token: token,
      });
    await expect(ask(0, "b", second!.question.answer_token)).rejects.toMatchObject({
      reason: "unauthorized",
      data: { detail: "wrong_question" },
    });
    await expect(ask(0, "z", first!.question.answer_token)).rejects.toMatchObject({ code: -32602 });
    expect(await ask(0, "b", first!.question.answer_token)).toMatchObject({ option_id: "b", index: 0 });
    await expect(ask(0, "a", first!.question.answer_token)).rejects.toMatchObject({
      reason: "question_resolved",
      data: { resolution: "answered" },
    });
    await ask(1, "c", second!.question.answer_token);
    expect((await end).method).toBe("turn/completed");

    const tool = provider.requests.at(-1)!.messages.find((m) => m.role === "tool")!;
    expect(tool.content).toBe('Target: the user chose "Production"\nStyle: the user chose "Rebase"');
    const resolved = ofTurn(h.received, "trn_q")
      .filter((n) => n.method === "turn/question/resolved")
      .map((n) => n.params);
    expect(resolved).toEqual([
      expect.objectContaining({ index: 0, resolution: "answered", option_id: "b" }),
      expect.objectContaining({ index: 1, resolution: "answered", option_id: "c" }),
    ]);
    expect(orderingViolations(h.received)).toEqual([]);
  });

  it("refuses a missing or altered token and an unknown question, leaving the question open", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const end = h.runTurn({
      thread_id: thread,
      turn_id: "trn_t",
      input: text(script({ tool: "ask_question", args: { questions: [deploy] } }, { say: "ok" })),
    });
    const { question } = (await h.waitFor((n) => n.method === "turn/question/opened")).params as TurnQuestionOpenedNotification;
    const respond = (fields: { index?: number; answer_token: string }) =>
      h.client.turnQuestionRespond({
        thread_id: thread,
        turn_id: "trn_t",
        call_id: question.call_id,
        index: fields.index ?? 0,
        option_id: "a",
        answer_token: fields.answer_token,
      });
    await expect(respond({ answer_token: "" })).rejects.toMatchObject({ code: -32030, data: { detail: "missing" } });
    const [claims, mac] = question.answer_token.split(".");
    const forged = Buffer.from(Buffer.from(claims!, "base64url").toString("utf8").replace('"index":0', '"index":1')).toString("base64url");
    await expect(respond({ answer_token: `${forged}.${mac}` })).rejects.toMatchObject({ code: -32030, data: { detail: "bad_signature" } });
    await expect(respond({ index: 2, answer_token: question.answer_token })).rejects.toMatchObject({
      code: -32012,
      reason: "question_not_found",
    });
    await expect(
      h.client.turnQuestionRespond({
        thread_id: "thr_nope",
        turn_id: "trn_t",
        call_id: question.call_id,
        index: 0,
        option_id: "a",
        answer_token: question.answer_token,
      }),
    ).rejects.toMatchObject({ reason: "thread_not_found" });
    await respond({ answer_token: question.answer_token });
    expect((await end).method).toBe("turn/completed");
  });

  it("expires an unanswered question: the turn goes on, the model is told, a late answer is refused", async () => {
    const provider = new RecordingScripted();
    h = await startHarness({ providers: new Map([["scripted", provider]]), config: { questions: { timeout_ms: 50 } } });
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_e",
      input: text(script({ tool: "ask_question", args: { questions: [deploy] } }, { say: "ok" })),
    });
    expect(end.method).toBe("turn/completed");
    const resolved = ofTurn(h.received, "trn_e").filter((n) => n.method === "turn/question/resolved");
    expect(resolved.map((n) => n.params)).toEqual([expect.objectContaining({ index: 0, resolution: "expired" })]);
    expect(provider.requests.at(-1)!.messages.find((m) => m.role === "tool")!.content).toBe("Target: no answer: the question expired");
    const [question] = opened(h.received);
    // The expiry the question announced is the one configured.
    expect(Date.parse(question!.question.expires_at) - Date.parse(question!.question.created_at)).toBe(50);
    await expect(
      h.client.turnQuestionRespond({
        thread_id: thread,
        turn_id: "trn_e",
        call_id: question!.call_id,
        index: 0,
        option_id: "a",
        answer_token: question!.question.answer_token,
      }),
    ).rejects.toMatchObject({ reason: "question_resolved", data: { resolution: "expired" } });
    expect(orderingViolations(h.received)).toEqual([]);
  });

  it("cancels the open questions with the turn", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const end = h.runTurn({
      thread_id: thread,
      turn_id: "trn_c",
      input: text(script({ tool: "ask_question", args: { questions: [deploy, style] } }, { say: "ok" })),
    });
    await h.waitFor((n) => n.method === "turn/question/opened" && (n.params as TurnQuestionOpenedNotification).index === 1);
    await h.client.turnCancel({ thread_id: thread, turn_id: "trn_c" });
    expect((await end).method).toBe("turn/failed");
    const resolved = ofTurn(h.received, "trn_c")
      .filter((n) => n.method === "turn/question/resolved")
      .map((n) => n.params);
    expect(resolved).toEqual([
      expect.objectContaining({ index: 0, resolution: "cancelled" }),
      expect.objectContaining({ index: 1, resolution: "cancelled" }),
    ]);
    expect(orderingViolations(h.received)).toEqual([]);
  });

  it.each([
    ["no questions", { questions: [] }, "questions"],
    ["four questions", { questions: [deploy, deploy, deploy, deploy] }, "questions"],
    ["one option", { questions: [{ ...deploy, options: [{ label: "Only" }] }] }, "options"],
    ["five options", { questions: [{ ...deploy, options: ["a", "b", "c", "d", "e"].map((label) => ({ label })) }] }, "options"],
    ["no header", { questions: [{ question: deploy.question, options: deploy.options }] }, "header"],
    ["two sentences", { questions: [{ ...deploy, question: "Deploy now. Or later?" }] }, "one sentence"],
    ["the same option twice", { questions: [{ ...deploy, options: [{ label: "Yes" }, { label: "yes" }] }] }, "mutually exclusive"],
  ])("refuses a call with %s, telling the model what was wrong and opening nothing", async (_name, args, words) => {
    const provider = new RecordingScripted();
    h = await startHarness({ providers: new Map([["scripted", provider]]) });
    const thread = await h.thread();
    expect(
      (await h.runTurn({ thread_id: thread, turn_id: "trn_bad", input: text(script({ tool: "ask_question", args }, { say: "ok" })) }))
        .method,
    ).toBe("turn/completed");
    expect(opened(h.received)).toEqual([]);
    const tool = provider.requests.at(-1)!.messages.find((m) => m.role === "tool")!;
    expect(tool.content).toMatch(/^arguments for ask_question/);
    expect(tool.content).toContain(words);
  });
});

describe("already_surfaced", () => {
  const openedIn = (events: readonly { method: string; params: unknown }[]) =>
    events.filter((e) => e.method === "turn/question/opened").map((e) => e.params as TurnQuestionOpenedNotification);

  it("is false on the live delivery and true on every replay: turn/items, another connection, a gateway restarted on the log", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-questions-")), "gateway.sqlite");
    const store = new SqliteEventStore(file);
    stores.push(store);
    h = await startHarness({ store });
    const thread = await h.thread();
    void h.runTurn({
      thread_id: thread,
      turn_id: "trn_s",
      input: text(script({ tool: "ask_question", args: { questions: [deploy, style] } }, { say: "ok" })),
    });
    await h.waitFor((n) => n.method === "turn/question/opened" && (n.params as TurnQuestionOpenedNotification).index === 1);
    expect(opened(h.received).map((q) => q.already_surfaced)).toEqual([false, false]);

    // Still open, read back from the log: delivered before, so a reminder.
    const replay = await h.client.turnItems({ thread_id: thread, turn_id: "trn_s" });
    const replayed = openedIn(replay.events);
    expect(replayed.map((q) => [q.index, q.already_surfaced])).toEqual([
      [0, true],
      [1, true],
    ]);
    // Nothing else of the event changes: the token still answers the question.
    const { already_surfaced: _live, ...live } = opened(h.received)[0]!;
    const { already_surfaced: _replayed, ...again } = replayed[0]!;
    expect(again).toEqual(live);
    // A reconnect: a new gateway on the same file, as after a kill, knows nothing in memory of what was sent.
    const restarted = await startHarness({ store: new SqliteEventStore(file) });
    try {
      const after = await restarted.client.turnItems({ thread_id: thread, turn_id: "trn_s" });
      expect(openedIn(after.events).map((q) => [q.index, q.already_surfaced])).toEqual([
        [0, true],
        [1, true],
      ]);
      expect(restarted.protocolErrors).toEqual([]);
    } finally {
      await restarted.close();
      restarted.store.close();
    }
  });
});
