/**
 * The scenarios of the client capability: the suite's gateway streams turns at the client
 * under test and watches what the client does (the requests it sends) and what it shows
 * (its answers to run_turn): deltas joined once each, approvals and questions answered with
 * their tokens, a dropped connection resumed from turn/items, what it does not know
 * tolerated, a broken stream or an error reported.
 */
import type { TurnItem } from "@turnspec/protocol/types";
import { protocolError } from "@turnspec/protocol/server";
import { approvalRequest, question, turnOf, type Stage, type TurnLog } from "./gateway.js";
import { ClientAnswerError } from "./process.js";
import { ClientFailure, shown, type ClientContext, type ClientScenario, type ShownTurn } from "./context.js";

type Json = Record<string, unknown>;
type Item = Omit<TurnItem, "id">;

const agentMessage = (text: string, status = "completed"): Item => ({ type: "agentMessage", status, text }) as Item;
const command = (line: string, status: string, stdout?: string): Item =>
  ({
    type: "commandExecution",
    status,
    command: line,
    cwd: "/srv/cert",
    arguments: { command: line },
    ...(stdout === undefined ? {} : { stdout, stderr: "", exit_code: 0 }),
  }) as Item;

/** Streams an answer in `deltas` as one agentMessage item. */
function answer(log: TurnLog, deltas: readonly string[], options: { extra?: Json } = {}): void {
  const id = log.open(agentMessage("", "in_progress"), options);
  for (const delta of deltas) log.emit("item/agent_message/delta", { item_id: id, stream: "agent_message", delta }, options);
  log.complete(id, agentMessage(deltas.join("")), options);
}

/** Scripts turn/start: the turn is answered InProgress, then `stream` runs once the response is out. */
function onTurnStart(stage: Stage, stream: (log: TurnLog, params: Json) => void): void {
  stage.behaviour.turnStart = (params) => {
    const log = stage.turn(params.thread_id as string, params.turn_id as string);
    stage.afterResponse(() => stream(log, params));
    return turnOf(log.turnId, "InProgress");
  };
}

/** The text of a turn/start's input, joined. */
const inputText = (params: Json) => ((params.input as { text?: string }[] | undefined) ?? []).map((i) => i.text ?? "").join("");

/** Expects the turn shown to be Completed with this text and these deltas, for `requirement`. */
function expectShown(ctx: ClientContext, requirement: string, shownTurn: ShownTurn, text: string, deltas: readonly string[]): void {
  ctx.check(
    requirement,
    shownTurn.status === "Completed",
    `the client reports the turn ${shown(shownTurn.status)}, the gateway ended it Completed`,
  );
  ctx.check(
    requirement,
    JSON.stringify(shownTurn.deltas) === JSON.stringify(deltas),
    `the client showed the deltas ${shown(shownTurn.deltas)}, the gateway sent ${shown(deltas)}, each once`,
  );
  ctx.check(requirement, shownTurn.text === text, `the client shows the answer ${shown(shownTurn.text)}, the gateway's is ${shown(text)}`);
}

const streamed: ClientScenario = {
  name: "a streamed turn",
  checks: ["CLIENT-TURN-FOLLOWED", "CLIENT-DELTA-ACCUMULATION"],
  async run(ctx) {
    const first = ["The answer ", "comes in ", "three pieces."];
    const second = [" All done."];
    const output = ["line one\n", "line two\n"];
    onTurnStart(ctx.stage, (log, params) => {
      log.started();
      log.userMessage(inputText(params));
      answer(log, first);
      const item = log.open(command("printf 'line one\\nline two\\n'", "in_progress"));
      for (const delta of output) log.emit("item/command_execution/output_delta", { item_id: item, stream: "stdout", delta });
      log.complete(item, command("printf 'line one\\nline two\\n'", "completed", output.join("")));
      answer(log, second);
      log.completed();
    });
    const thread = await ctx.step("CLIENT-TURN-FOLLOWED", () => ctx.thread());
    const turnId = ctx.id("trn");
    const text = `Say it in pieces ${turnId}`;
    const result = await ctx.step("CLIENT-TURN-FOLLOWED", async () => {
      const result = await ctx.runTurn({ thread_id: thread, turn_id: turnId, text });
      const start = ctx.requests("turn/start")[0];
      if (!start) throw new ClientFailure("the client reported the turn without sending turn/start");
      if (start.thread_id !== thread || start.turn_id !== turnId)
        throw new ClientFailure(
          `turn/start names thread ${shown(start.thread_id)} and turn ${shown(start.turn_id)}, the command ${shown(thread)} and ${shown(turnId)}`,
        );
      if (!inputText(start).includes(text))
        throw new ClientFailure(`turn/start carries the input ${shown(start.input)}, not the command's text ${shown(text)}`);
      if (result.status !== "Completed")
        throw new ClientFailure(`the client reports the turn ${shown(result.status)}; turn/completed said Completed`);
      return result;
    });
    expectShown(ctx, "CLIENT-DELTA-ACCUMULATION", result, [...first, ...second].join(""), [...first, ...second]);
    ctx.check(
      "CLIENT-DELTA-ACCUMULATION",
      result.output === output.join(""),
      `the client shows the command's output ${shown(result.output)}, the gateway streamed ${shown(output.join(""))}`,
    );
  },
};

const approvals: ClientScenario = {
  name: "approvals answered with their tokens",
  checks: ["CLIENT-APPROVAL-TOKEN"],
  async run(ctx) {
    const stage = ctx.stage;
    const sent = new Map<string, { token: string; item: string; line: string }>();
    const ask = (log: TurnLog, n: number) => {
      const line = `echo approved-${n}`;
      const item = log.open(command(line, "in_progress"));
      const request = approvalRequest(log, n, line);
      sent.set(request.request_id, { token: request.resolve_token!, item, line });
      log.emit("turn/permission/request/opened", { request: { ...request, item_id: item } });
    };
    let turn: TurnLog | undefined;
    onTurnStart(stage, (log, params) => {
      turn = log;
      log.started();
      log.userMessage(inputText(params));
      ask(log, 1);
    });
    stage.behaviour.permissionRespond = (params) => {
      const request = sent.get(params.request_id as string);
      const log = turn!;
      if (!request)
        throw protocolError("permission_request_not_found", `no approval request ${shown(params.request_id)}`, {
          request_id: params.request_id,
        });
      const resolution = params.resolution as string;
      const resolvedAt = new Date().toISOString();
      stage.afterResponse(() => {
        log.emit("turn/permission/request/resolved", { request_id: params.request_id, resolution, resolved_at: resolvedAt });
        log.complete(
          request.item,
          resolution === "deny" ? command(request.line, "declined") : command(request.line, "completed", `${request.line.slice(5)}\n`),
        );
        if (params.request_id === `req_${log.turnId}_1`) return ask(log, 2);
        answer(log, ["One ran, one was declined."]);
        log.completed();
      });
      return { request_id: params.request_id, thread_id: log.threadId, turn_id: log.turnId, resolution, resolved_at: resolvedAt };
    };
    const thread = await ctx.step("CLIENT-APPROVAL-TOKEN", () => ctx.thread());
    await ctx.step("CLIENT-APPROVAL-TOKEN", async () => {
      const running = ctx.runTurn({
        thread_id: thread,
        turn_id: ctx.id("trn"),
        text: "Run two commands",
        approvals: ["allow_once", "deny"],
      });
      running.catch(() => undefined);
      await Promise.race([
        stage.until(
          "answered both approval requests with turn/permission/request/respond",
          () => ctx.requests("turn/permission/request/respond").length >= 2,
          ctx.stepTimeoutMs,
        ),
        running.then(() => undefined),
      ]);
      const answers = ctx.requests("turn/permission/request/respond");
      const want = [...sent].map(([id, { token }], i) => ({ request_id: id, resolution: ["allow_once", "deny"][i], resolve_token: token }));
      for (const [i, expected] of want.entries()) {
        const got = answers[i];
        if (!got) throw new ClientFailure(`the client never answered approval request ${expected.request_id}`);
        if (got.request_id !== expected.request_id)
          throw new ClientFailure(`answer ${i + 1} names request ${shown(got.request_id)}, the request opened was ${expected.request_id}`);
        if (got.resolution !== expected.resolution)
          throw new ClientFailure(
            `answer ${i + 1} resolves ${expected.request_id} ${shown(got.resolution)}; the user chose ${expected.resolution}`,
          );
        if (got.resolve_token !== expected.resolve_token) {
          throw new ClientFailure(
            `the answer to ${expected.request_id} carries ${got.resolve_token === undefined ? "no resolve_token" : `the resolve_token ${shown(got.resolve_token)}`}; the request's is ${shown(expected.resolve_token)}, to be sent back unmodified`,
          );
        }
      }
      const result = await running;
      if (result.status !== "Completed")
        throw new ClientFailure(`the client reports the turn ${shown(result.status)}; turn/completed said Completed`);
    });
  },
};

const questions: ClientScenario = {
  name: "questions answered with their tokens",
  checks: ["CLIENT-QUESTION-TOKEN"],
  async run(ctx) {
    const stage = ctx.stage;
    const asked: ReturnType<typeof question>[] = [];
    let turn: TurnLog | undefined;
    onTurnStart(stage, (log, params) => {
      turn = log;
      log.started();
      log.userMessage(inputText(params));
      const callId = `call_${log.turnId}`;
      asked.push(question(log, callId, 0, ["Staging", "Production"]), question(log, callId, 1, ["Squash", "Merge", "Rebase"]));
      for (const q of asked) log.emit("turn/question/opened", { call_id: q.call_id, index: q.index, question: q, already_surfaced: false });
    });
    let answered = 0;
    stage.behaviour.questionRespond = (params) => {
      const log = turn!;
      const q = asked.find((x) => x.call_id === params.call_id && x.index === params.index);
      if (!q)
        throw protocolError("question_not_found", `no question ${shown(params.call_id)}#${shown(params.index)}`, {
          call_id: params.call_id,
          index: params.index,
        });
      const resolvedAt = new Date().toISOString();
      stage.afterResponse(() => {
        log.emit("turn/question/resolved", {
          call_id: q.call_id,
          index: q.index,
          resolution: "answered",
          option_id: params.option_id,
          resolved_at: resolvedAt,
        });
        if (++answered < asked.length) return;
        answer(log, ["Going to production with a squash."]);
        log.completed();
      });
      return {
        thread_id: log.threadId,
        turn_id: log.turnId,
        call_id: q.call_id,
        index: q.index,
        option_id: params.option_id,
        resolved_at: resolvedAt,
      };
    };
    const thread = await ctx.step("CLIENT-QUESTION-TOKEN", () => ctx.thread());
    await ctx.step("CLIENT-QUESTION-TOKEN", async () => {
      const turnId = ctx.id("trn");
      const running = ctx.runTurn({ thread_id: thread, turn_id: turnId, text: "Ask me two things", answers: [1, 0] });
      running.catch(() => undefined);
      await Promise.race([
        stage.until(
          "answered both questions with turn/question/respond",
          () => ctx.requests("turn/question/respond").length >= 2,
          ctx.stepTimeoutMs,
        ),
        running.then(() => undefined),
      ]);
      const answers = ctx.requests("turn/question/respond");
      for (const [i, q] of asked.entries()) {
        const got = answers.find((a) => a.call_id === q.call_id && a.index === q.index);
        if (!got)
          throw new ClientFailure(
            `the client never answered question ${q.call_id}#${q.index} (${answers.length} answers: ${shown(answers)})`,
          );
        const option = q.options[[1, 0][i]!]!;
        const wrong = [
          got.thread_id !== thread && `thread_id ${shown(got.thread_id)}, expected ${thread}`,
          got.turn_id !== turnId && `turn_id ${shown(got.turn_id)}, expected ${turnId}`,
          got.option_id !== option.id &&
            `option_id ${shown(got.option_id)}, expected ${option.id} (option ${[1, 0][i]}, "${option.label}")`,
          got.answer_token !== q.answer_token &&
            `answer_token ${shown(got.answer_token)}, expected the question's ${shown(q.answer_token)} unmodified`,
        ].filter((w): w is string => typeof w === "string");
        if (wrong.length) throw new ClientFailure(`the answer to question ${q.call_id}#${q.index}: ${wrong.join("; ")}`);
      }
      const result = await running;
      if (result.status !== "Completed")
        throw new ClientFailure(`the client reports the turn ${shown(result.status)}; turn/completed said Completed`);
    });
  },
};

const reconnect: ClientScenario = {
  name: "a reconnect in the middle of a turn",
  checks: ["CLIENT-RECONNECT-RESUME"],
  async run(ctx) {
    const stage = ctx.stage;
    const before = ["Part one, ", "part two, "];
    const away = ["part three, ", "the end."];
    let item = "";
    let resumed: Promise<void> | undefined;
    onTurnStart(stage, (log, params) => {
      log.started();
      log.userMessage(inputText(params));
      item = log.open(agentMessage("", "in_progress"));
      for (const delta of before) log.emit("item/agent_message/delta", { item_id: item, stream: "agent_message", delta });
      resumed = (async () => {
        await stage.drop();
        // While the client is away the turn goes on: its log grows, nothing reaches the client.
        for (const delta of away) log.emit("item/agent_message/delta", { item_id: item, stream: "agent_message", delta }, { live: false });
        await stage.until(
          "reconnected after the gateway closed the connection",
          () => stage.connections.length >= 2 && stage.current !== undefined,
          ctx.stepTimeoutMs,
        );
        // The live stream goes on at once, and sends again an event the client already has.
        log.resend(log.lastSequence);
        await stage.until(
          "read turn/items for the turn after reconnecting",
          () => stage.requests.some((r) => r.method === "turn/items" && r.connection >= 1 && r.params.turn_id === log.turnId),
          ctx.stepTimeoutMs,
        );
        log.resend(log.lastSequence - away.length);
        log.complete(item, agentMessage([...before, ...away].join("")));
        log.completed();
      })();
      resumed.catch(() => undefined);
    });
    const thread = await ctx.step("CLIENT-RECONNECT-RESUME", () => ctx.thread());
    await ctx.step("CLIENT-RECONNECT-RESUME", async () => {
      const running = ctx.runTurn({ thread_id: thread, turn_id: ctx.id("trn"), text: "Answer slowly" });
      running.catch(() => undefined);
      // The gateway's own waits name what the client did not do (reconnect, read turn/items).
      await stage.until("started the turn", () => resumed !== undefined, ctx.stepTimeoutMs);
      await Promise.race([resumed, running.then(() => resumed)]);
      const result = await running;
      expectShown(ctx, "CLIENT-RECONNECT-RESUME", result, [...before, ...away].join(""), [...before, ...away]);
    });
  },
};

const unknownNotifications: ClientScenario = {
  name: "notifications no schema names",
  checks: ["CLIENT-UNKNOWN-NOTIFICATION"],
  async run(ctx) {
    const deltas = ["Still ", "here."];
    onTurnStart(ctx.stage, (log, params) => {
      log.started();
      log.userMessage(inputText(params));
      // Outside the protocol, on purpose: a method no schema names, with and without params.
      ctx.stage.notify("cert/unknown_notification", {
        thread_id: log.threadId,
        turn_id: log.turnId,
        note: "a notification from a later version of the protocol",
      });
      ctx.stage.notify("turn/cert_future_event", undefined);
      answer(log, deltas);
      log.completed();
    });
    const thread = await ctx.step("CLIENT-UNKNOWN-NOTIFICATION", () => ctx.thread());
    const result = await ctx.step("CLIENT-UNKNOWN-NOTIFICATION", () =>
      ctx.runTurn({ thread_id: thread, turn_id: ctx.id("trn"), text: "Ignore what you do not know" }),
    );
    expectShown(ctx, "CLIENT-UNKNOWN-NOTIFICATION", result, deltas.join(""), deltas);
  },
};

const unknownFields: ClientScenario = {
  name: "fields no schema names",
  checks: ["CLIENT-UNKNOWN-FIELDS"],
  async run(ctx) {
    const deltas = ["Fields ", "from later."];
    const extra = { x_cert_later_field: { added_in: "a later version", values: [1, 2] } };
    ctx.stage.resultExtras["thread/start"] = extra;
    ctx.stage.resultExtras["turn/start"] = extra;
    onTurnStart(ctx.stage, (log, params) => {
      log.emit("turn/started", { turn: turnOf(log.turnId, "InProgress") }, { extra });
      log.userMessage(inputText(params));
      answer(log, deltas, { extra });
      log.emit("turn/completed", { turn: turnOf(log.turnId, "Completed") }, { extra });
    });
    const thread = await ctx.step("CLIENT-UNKNOWN-FIELDS", () => ctx.thread());
    const result = await ctx.step("CLIENT-UNKNOWN-FIELDS", () =>
      ctx.runTurn({ thread_id: thread, turn_id: ctx.id("trn"), text: "Keep what you know" }),
    );
    expectShown(ctx, "CLIENT-UNKNOWN-FIELDS", result, deltas.join(""), deltas);
  },
};

const ordering: ClientScenario = {
  name: "a turn whose events cannot be put in order",
  checks: ["CLIENT-ORDERING-REPORTED"],
  async run(ctx) {
    let turns = 0;
    onTurnStart(ctx.stage, (log, params) => {
      log.started();
      log.userMessage(inputText(params));
      if (++turns > 1) {
        answer(log, ["In order this time."]);
        return log.completed();
      }
      // One delta lost: never sent, and missing from turn/items, which has everything after it.
      const id = log.open(agentMessage("", "in_progress"));
      log.emit("item/agent_message/delta", { item_id: id, stream: "agent_message", delta: "Some of " }, { live: false, lost: true });
      log.emit("item/agent_message/delta", { item_id: id, stream: "agent_message", delta: "this answer." });
      log.complete(id, agentMessage("Some of this answer."));
      log.completed();
    });
    const thread = await ctx.step("CLIENT-ORDERING-REPORTED", () => ctx.thread());
    await ctx.step("CLIENT-ORDERING-REPORTED", async () => {
      let result: ShownTurn;
      try {
        result = await ctx.runTurn({ thread_id: thread, turn_id: ctx.id("trn"), text: "Answer out of order" });
      } catch (error) {
        if (error instanceof ClientAnswerError) return;
        throw error;
      }
      throw new ClientFailure(
        `the client showed the turn ${result.status} with the answer ${shown(result.text)}, although event 5 of the turn never arrived and turn/items does not have it; it must report an error for the turn`,
      );
    });
    await ctx.step("CLIENT-ORDERING-REPORTED", async () => {
      const next = await ctx.runTurn({ thread_id: thread, turn_id: ctx.id("trn"), text: "Now in order" });
      if (next.status !== "Completed" || next.text !== "In order this time.")
        throw new ClientFailure(
          `after reporting the broken turn, the client shows the next turn ${shown(next.status)} with ${shown(next.text)}; expected Completed with "In order this time."`,
        );
    });
  },
};

const gatewayErrors: ClientScenario = {
  name: "an error answer",
  checks: ["CLIENT-ERROR-REPORTED"],
  async run(ctx) {
    let refused = false;
    const stage = ctx.stage;
    const stream = (log: TurnLog, params: Json) => {
      log.started();
      log.userMessage(inputText(params));
      answer(log, ["Done after all."]);
      log.completed();
    };
    stage.behaviour.turnStart = (params) => {
      if (!refused) {
        refused = true;
        throw protocolError("turn_in_progress", "A turn is already in progress in this thread", {
          active_turn_id: "trn_cert_running",
          active_turn_status: "InProgress",
        });
      }
      const log = stage.turn(params.thread_id as string, params.turn_id as string);
      stage.afterResponse(() => stream(log, params));
      return turnOf(log.turnId, "InProgress");
    };
    const thread = await ctx.step("CLIENT-ERROR-REPORTED", () => ctx.thread());
    await ctx.step("CLIENT-ERROR-REPORTED", async () => {
      try {
        const result = await ctx.runTurn({ thread_id: thread, turn_id: ctx.id("trn"), text: "This one is refused" });
        throw new ClientFailure(`the client showed a turn the gateway refused (turn_in_progress) as ${shown(result.status)}`);
      } catch (error) {
        if (!(error instanceof ClientAnswerError)) throw error;
        if (error.reason !== "turn_in_progress" && !error.message.includes("turn_in_progress")) {
          throw new ClientFailure(
            `the client reported the refused turn/start as ${error.kind}: ${error.message}, without its reason turn_in_progress`,
          );
        }
      }
      const next = await ctx.runTurn({ thread_id: thread, turn_id: ctx.id("trn"), text: "This one runs" });
      if (next.status !== "Completed")
        throw new ClientFailure(`after the error, the client shows the next turn ${shown(next.status)}, expected Completed`);
    });
  },
};

/** Every client scenario, in the order they run. */
export const clientScenarios: readonly ClientScenario[] = [
  streamed,
  approvals,
  questions,
  reconnect,
  unknownFields,
  unknownNotifications,
  ordering,
  gatewayErrors,
];

export type { Stage };
