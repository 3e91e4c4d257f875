/**
 * Scenarios of the streaming view of a turn (turnspec's own extension): questions the
 * model asks with ask_question, answered with signed answer tokens; the handoff notice of a
 * delegation; and compaction before any output of the turn.
 */
import type { AnyNotification } from "@turnspec/protocol/registry";
import type { TurnQuestionOpenedNotification } from "@turnspec/protocol/types";
import { RpcError } from "@turnspec/rpc";
import { messageText } from "../model-server.js";
import { Failure, shown, isTerminal, type Scenario, type ScenarioContext } from "../scenario.js";
import { agentTurn } from "./core.js";

const questionsOf = (ctx: ScenarioContext, turnId: string) =>
  ctx
    .ofTurn(turnId)
    .filter((n): n is Extract<AnyNotification, { method: "turn/question/opened" }> => n.method === "turn/question/opened")
    .map((n) => n.params as TurnQuestionOpenedNotification);

const resolutionsOf = (ctx: ScenarioContext, turnId: string) =>
  ctx
    .ofTurn(turnId)
    .filter((n): n is Extract<AnyNotification, { method: "turn/question/resolved" }> => n.method === "turn/question/resolved")
    .map((n) => n.params);

/** The token with one character of its signature changed. */
function altered(token: string): string {
  const last = token.at(-2) === "A" ? "B" : "A";
  return `${token.slice(0, -2)}${last}${token.slice(-1)}`;
}

const asked: Scenario = {
  name: "questions answered with answer tokens",
  checks: ["TURN-QUESTION-OPEN", "TURN-QUESTION-SURFACED", "TURN-QUESTION-TOKEN", "TURN-QUESTION-ANSWER", "TURN-QUESTION-RESOLVED-ONCE"],
  async run(ctx) {
    const labels = [`Staging-${ctx.token.slice(-4)}`, `Production-${ctx.token.slice(-4)}`];
    const args = {
      questions: [
        { header: "Target", question: "Where should the build go?", options: [{ label: labels[0] }, { label: labels[1] }] },
        {
          header: "Style",
          question: "Which merge style do you prefer?",
          options: [{ label: "Squash" }, { label: "Merge" }, { label: "Rebase" }],
        },
      ],
    };
    const script = ctx.script([{ reply: { toolCalls: [{ tool: ctx.tool("ask_question"), args }] } }, { reply: { text: "Thanks." } }]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Ask me first", agentTurn("full_access"));
    const [first, second] = await ctx.step("TURN-QUESTION-OPEN", async () => {
      await ctx.waitFor("two turn/question/opened", () => questionsOf(ctx, turn.id).length >= 2);
      const opened = questionsOf(ctx, turn.id);
      const indexes = opened.map((q) => q.index);
      if (JSON.stringify(indexes) !== "[0,1]") throw new Failure(`the questions opened have indexes ${shown(indexes)}, expected [0,1]`);
      if (opened[0]!.question.options.length !== 2 || opened[1]!.question.options.length !== 3)
        throw new Failure("the questions do not carry the options the model gave");
      if (opened.some((q) => q.question.answer_token === "" || q.call_id !== opened[0]!.call_id))
        throw new Failure("a question lacks an answer token or names another call");
      const end = ctx.ofTurn(turn.id).find(isTerminal);
      if (end) throw new Failure(`the turn ended with ${end.method} without waiting for the answers`);
      return opened as [TurnQuestionOpenedNotification, TurnQuestionOpenedNotification];
    });
    await ctx.attempt("TURN-QUESTION-SURFACED", async () => {
      const live = [first, second].map((q) => q.already_surfaced);
      if (live.some((v) => v !== false))
        throw new Failure(`the live turn/question/opened say already_surfaced ${shown(live)}, expected false: it is their first delivery`);
      const { events } = await ctx.client.turnItems({ thread_id: thread.id, turn_id: turn.id });
      const replayed = events
        .filter((e) => e.method === "turn/question/opened")
        .map((e) => (e.params as { already_surfaced?: unknown }).already_surfaced);
      if (JSON.stringify(replayed) !== "[true,true]")
        throw new Failure(
          `turn/items replays the open questions with already_surfaced ${shown(replayed)}, expected [true,true]: they were delivered before`,
        );
    });
    const respond = (q: TurnQuestionOpenedNotification, optionId: string, token: string) =>
      ctx.client.turnQuestionRespond({
        thread_id: thread.id,
        turn_id: turn.id,
        call_id: q.call_id,
        index: q.index,
        option_id: optionId,
        answer_token: token,
      });
    const optionOf = (q: TurnQuestionOpenedNotification, n: number) => q.question.options[n]!.id;

    await ctx.attempt("TURN-QUESTION-TOKEN", async () => {
      await ctx.rejects(respond(first, optionOf(first, 1), ""), "unauthorized", "an answer without a token");
      await ctx.rejects(
        respond(first, optionOf(first, 1), altered(first.question.answer_token)),
        "unauthorized",
        "an answer with an altered token",
      );
      await ctx.rejects(
        respond(first, optionOf(first, 1), second.question.answer_token),
        "unauthorized",
        "an answer with another question's token",
      );
      if (resolutionsOf(ctx, turn.id).length) throw new Failure("a refused answer resolved a question");
    });
    await ctx.step("TURN-QUESTION-ANSWER", async () => {
      await respond(first, optionOf(first, 1), first.question.answer_token);
      await respond(second, optionOf(second, 2), second.question.answer_token);
      const end = await ctx.ended(turn.id);
      if (end.turn.status !== "Completed") throw new Failure(`the turn ended ${end.turn.status}`);
      const got = resolutionsOf(ctx, turn.id).map((r) => [r.index, r.resolution, r.option_id]);
      if (
        JSON.stringify(got) !==
        JSON.stringify([
          [0, "answered", optionOf(first, 1)],
          [1, "answered", optionOf(second, 2)],
        ])
      )
        throw new Failure(`the questions were resolved as ${shown(got)}`);
      const told = messageText([...(script.calls[1]?.messages ?? [])].reverse().find((m) => m.role === "tool"));
      if (!told.includes(labels[1]!) || !told.includes("Rebase"))
        throw new Failure(`the model was told ${shown(told.slice(0, 200))}, expected the chosen options`);
    });
    await ctx.attempt("TURN-QUESTION-RESOLVED-ONCE", () =>
      ctx.rejects(respond(first, optionOf(first, 0), first.question.answer_token), "question_resolved", "answering an answered question"),
    );
  },
};

/**
 * A question timeout short enough for a run to wait for a question to expire
 * (TURN-QUESTION-EXPIRE), long enough for the other question scenarios to answer theirs in
 * time on a busy machine: what `{question_timeout_ms}` in a gateway command becomes.
 */
export const QUESTION_TIMEOUT_MS = 6_000;

/** How much earlier than its announced expires_at a gateway's timer may fire (timers are not exact). */
const TIMER_SLACK_MS = 100;

const expired: Scenario = {
  name: "a question left unanswered expires",
  checks: ["TURN-QUESTION-EXPIRE"],
  async run(ctx) {
    const args = {
      questions: [
        {
          header: "Window",
          question: `Which release window suits you (${ctx.token.slice(-4)})?`,
          options: [{ label: "Tonight" }, { label: "Tomorrow" }],
        },
      ],
    };
    const script = ctx.script([
      { reply: { toolCalls: [{ tool: ctx.tool("ask_question"), args }] } },
      { reply: { text: "Going on without an answer." } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Ask me, then go on", agentTurn("full_access"));
    await ctx.step("TURN-QUESTION-EXPIRE", async () => {
      const opened = (
        await ctx.waitFor(
          "turn/question/opened",
          (n) => n.method === "turn/question/opened" && (n.params as { turn_id?: string }).turn_id === turn.id,
        )
      ).params as TurnQuestionOpenedNotification;
      const { created_at: created, expires_at: expires } = opened.question;
      // Both instants are the gateway's: their difference is the timeout it announces, whatever the clocks of the two hosts say.
      const lifetime = Date.parse(expires) - Date.parse(created);
      if (!(lifetime > 0)) throw new Failure(`the question expires at ${expires}, not after it was opened (${created})`);
      if (lifetime > ctx.stepTimeoutMs) {
        // Waiting would outlast the step: not decided, and the reason says how to decide it.
        ctx.settle(
          ["TURN-QUESTION-EXPIRE"],
          "skipped",
          `the gateway's questions expire ${Math.round(lifetime / 1000)} s after they open (question.expires_at), longer than a step of this run may wait (${ctx.stepTimeoutMs / 1000} s); start the gateway with a shorter question timeout to check expiry (for the reference: --question-timeout-ms ${QUESTION_TIMEOUT_MS}, or {question_timeout_ms} in --gateway-cmd, which this run replaces with that number)`,
        );
        return;
      }
      const resolved = await ctx.waitFor(
        "turn/question/resolved (expired)",
        (n) =>
          n.method === "turn/question/resolved" &&
          n.params.turn_id === turn.id &&
          n.params.call_id === opened.call_id &&
          n.params.index === opened.index,
        lifetime + ctx.stepTimeoutMs,
      );
      const { resolution, resolved_at: at } = resolved.params as { resolution: string; resolved_at: string };
      if (resolution !== "expired") throw new Failure(`the unanswered question was resolved ${resolution}, expected expired`);
      if (Date.parse(at) < Date.parse(expires) - TIMER_SLACK_MS)
        throw new Failure(`the question expired at ${at}, before the ${expires} it announced`);
      const end = await ctx.ended(turn.id);
      if (end.turn.status !== "Completed")
        throw new Failure(`after the question expired the turn ended ${end.turn.status}, expected it to go on and complete`);
      if (script.calls.length < 2) throw new Failure("the turn ended without calling the model again after the question expired");
      if (!script.calls[1]!.messages.some((m) => m.role === "tool"))
        throw new Failure("the model call after the expiry carries no tool result for the ask_question call");
      try {
        const answer = await ctx.client.turnQuestionRespond({
          thread_id: thread.id,
          turn_id: turn.id,
          call_id: opened.call_id,
          index: opened.index,
          option_id: opened.question.options[0]!.id,
          answer_token: opened.question.answer_token,
        });
        throw new Failure(`an answer to the expired question was accepted: ${shown(answer)}`);
      } catch (error) {
        // Its token expired with it: either refusal says the answer came too late.
        if (!(error instanceof RpcError)) throw error;
        if (error.reason !== "question_resolved" && error.reason !== "unauthorized")
          throw new Failure(
            `an answer to the expired question was refused with ${error.reason ?? `code ${error.code}`}, expected question_resolved (or unauthorized, for its expired token)`,
          );
      }
    });
  },
};

const cancelled: Scenario = {
  name: "cancelling a turn with a question open",
  checks: ["TURN-QUESTION-CANCEL"],
  async run(ctx) {
    const args = {
      questions: [
        {
          header: "Branch",
          question: `Which branch should the fix go to (${ctx.token.slice(-4)})?`,
          options: [{ label: "main" }, { label: "release" }],
        },
      ],
    };
    ctx.script([{ reply: { toolCalls: [{ tool: ctx.tool("ask_question"), args }] } }]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Ask me, then wait", agentTurn("full_access"));
    await ctx.step("TURN-QUESTION-CANCEL", async () => {
      const opened = (
        await ctx.waitFor(
          "turn/question/opened",
          (n) => n.method === "turn/question/opened" && (n.params as { turn_id?: string }).turn_id === turn.id,
        )
      ).params as TurnQuestionOpenedNotification;
      await ctx.client.turnCancel({ thread_id: thread.id, turn_id: turn.id, reason: "certification: cancelled with a question open" });
      const end = await ctx.ended(turn.id);
      const live = ctx.ofTurn(turn.id);
      const resolved = live.findIndex(
        (n) => n.method === "turn/question/resolved" && n.params.call_id === opened.call_id && n.params.index === opened.index,
      );
      if (resolved === -1)
        throw new Failure(`the turn ended ${end.turn.status} without resolving its open question ${opened.call_id}#${opened.index}`);
      const resolution = (live[resolved]!.params as { resolution: string }).resolution;
      if (resolution !== "cancelled") throw new Failure(`the open question was resolved ${resolution}, expected cancelled`);
      const terminal = live.findIndex(isTerminal);
      if (terminal !== -1 && terminal < resolved) throw new Failure(`the question was resolved after the turn's ${live[terminal]!.method}`);
    });
  },
};

const handoff: Scenario = {
  name: "the handoff notice",
  checks: ["TURN-HANDOFF-NOTICE"],
  async run(ctx) {
    ctx.script([
      { reply: { toolCalls: [{ tool: ctx.tool("spawn_agent"), args: { prompt: `Do the delegated task [${ctx.token}]` } }] } },
      { reply: { text: "child answer" } },
      { reply: { text: "Delegated." } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("TURN-HANDOFF-NOTICE", async () => {
      const turn = await ctx.startTurn(thread.id, "Delegate the task", agentTurn("full_access"));
      await ctx.ended(turn.id);
      const notices = ctx
        .ofTurn(turn.id)
        .filter((n): n is Extract<AnyNotification, { method: "turn/handoff/started" }> => n.method === "turn/handoff/started");
      if (notices.length !== 1) throw new Failure(`the delegating turn sent ${notices.length} turn/handoff/started, expected 1`);
      const child = notices[0]!.params.child_turn_id;
      const task = ctx
        .ofTurn(turn.id)
        .map((n) => (n.params as { item?: { type?: string; child_turn_id?: string } }).item)
        .find((item) => item?.type === "task" && item.child_turn_id !== undefined);
      if (task?.child_turn_id !== child)
        throw new Failure(`turn/handoff/started names child turn ${child}, the task item ${task?.child_turn_id ?? "names none"}`);
    });
  },
};

const compactedFirst: Scenario = {
  name: "compaction before the turn's output",
  checks: ["TURN-ORDER-COMPACTED-FIRST"],
  async run(ctx) {
    const turns = 5;
    const round = [
      { reply: { toolCalls: [{ tool: ctx.tool("read_file"), args: { path: "missing-file.txt" } }] } },
      { reply: { text: "short answer" } },
    ];
    ctx.script([{ reply: { text: "x".repeat(480_000) } }, ...Array.from({ length: turns }, () => round).flat()]);
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("TURN-ORDER-COMPACTED-FIRST", async () => {
      const big = await ctx.startTurn(thread.id, "Answer at length", agentTurn("full_access"));
      await ctx.ended(big.id);
      let compactedTurns = 0;
      for (let i = 0; i < turns; i++) {
        const turn = await ctx.startTurn(thread.id, `Look, then answer (${i + 1})`, agentTurn("full_access"));
        await ctx.ended(turn.id);
        const methods = ctx.ofTurn(turn.id).map((n) => n.method);
        const compacted = methods.filter((m) => m === "context/compressed").length;
        if (compacted === 0) continue;
        compactedTurns++;
        if (compacted > 1) throw new Failure(`turn ${turn.id} sent context/compressed ${compacted} times, expected once`);
        const firstDelta = methods.findIndex((m) => m.endsWith("delta") || m === "item/tool/progress");
        if (firstDelta !== -1 && firstDelta < methods.indexOf("context/compressed"))
          throw new Failure(`in turn ${turn.id}, ${methods[firstDelta]} came before context/compressed`);
      }
      if (compactedTurns === 0) throw new Failure(`none of the ${turns} turns after a 480000-character answer compacted its context`);
    });
  },
};

export const questionScenarios: readonly Scenario[] = [asked, expired, cancelled, handoff, compactedFirst];
