/** Scenarios of the core capability: JSON-RPC behaviour, threads, turns and items. */
import { errors as errorRegistry, type AnyNotification } from "@turnspec/protocol/registry";
import type { TurnItem, TurnPermissionMode, TurnStartParams } from "@turnspec/protocol/types";
import { messageText, type ChatRequest } from "../model-server.js";
import { Failure, shown, type Scenario, type ScenarioContext } from "../scenario.js";

type Json = Record<string, unknown>;

/** The item of an item notification. */
export const itemOf = (n: AnyNotification): TurnItem | undefined => (n.params as { item?: TurnItem }).item;

/** An Agent turn under a given permission mode, as the scenarios start them. */
export const agentTurn = (mode: TurnPermissionMode): Partial<TurnStartParams> => ({ mode: "Agent", permission_profile: { mode } });

/** The last message of a model call with `role`. */
const lastOf = (request: ChatRequest, role: string) => [...request.messages].reverse().find((m) => m.role === role);

/** Checks a raw error response: its code, and that the connection answers afterwards. */
function expectCode(response: Json, reason: keyof typeof errorRegistry, what: string): void {
  const error = response.error as { code?: unknown } | undefined;
  if (!error) throw new Failure(`${what}: expected error ${errorRegistry[reason].code} (${reason}), got ${shown(response)}`, response);
  if (error.code !== errorRegistry[reason].code)
    throw new Failure(`${what}: expected error code ${errorRegistry[reason].code} (${reason}), got ${String(error.code)}`, response);
}

const rpc: Scenario = {
  name: "JSON-RPC errors",
  checks: [
    "RPC-METHOD-NOT-FOUND",
    "RPC-INVALID-PARAMS",
    "RPC-PARSE-ERROR",
    "RPC-INVALID-REQUEST",
    "RPC-ERROR-CODES",
    "THREAD-NOT-FOUND",
    "TURN-START-THREAD-NOT-FOUND",
  ],
  async run(ctx) {
    const s = ctx.session;
    await ctx.attempt("RPC-METHOD-NOT-FOUND", async () => {
      const id = s.rawId();
      expectCode(
        await ctx.sendRaw(JSON.stringify({ jsonrpc: "2.0", id, method: "cert/no_such_method", params: {} }), id),
        "method_not_found",
        "an unknown method",
      );
      await ctx.thread();
    });
    await ctx.attempt("RPC-INVALID-PARAMS", async () => {
      const id = s.rawId();
      const params = { thread_id: 7, turn_id: ctx.id("trn"), input: ctx.input("never runs") };
      expectCode(
        await ctx.sendRaw(JSON.stringify({ jsonrpc: "2.0", id, method: "turn/start", params }), id),
        "invalid_params",
        "turn/start with a number as thread_id",
      );
    });
    await ctx.attempt("RPC-PARSE-ERROR", async () => {
      const response = await ctx.sendRaw('{"jsonrpc": "2.0", "id": 1, "method": ', null);
      expectCode(response, "parse_error", "a frame that is not JSON");
      if (response.id !== null) throw new Failure(`the parse error must carry a null id, got ${shown(response.id)}`, response);
      await ctx.thread();
    });
    await ctx.attempt("RPC-INVALID-REQUEST", async () => {
      const id = s.rawId();
      expectCode(
        await ctx.sendRaw(JSON.stringify({ jsonrpc: "2.0", id, method: 42 }), id),
        "invalid_request",
        "a request whose method is a number",
      );
    });
    const missing = ctx.id("thr_missing");
    await ctx.attempt("RPC-ERROR-CODES", async () => {
      const error = await ctx.rejects(ctx.client.threadGet({ thread_id: missing }), "thread_not_found", "thread/get of an unknown thread");
      if (error.code !== errorRegistry.thread_not_found.code)
        throw new Failure(`thread_not_found came with code ${error.code}; the registry gives it ${errorRegistry.thread_not_found.code}`);
    });
    await ctx.attempt("THREAD-NOT-FOUND", async () => {
      await ctx.rejects(ctx.client.threadGet({ thread_id: missing }), "thread_not_found", "thread/get of an unknown thread");
      await ctx.rejects(
        ctx.client.threadTimelinePage({ threadId: missing }),
        "thread_not_found",
        "thread/timeline/page of an unknown thread",
      );
    });
    await ctx.attempt("TURN-START-THREAD-NOT-FOUND", async () => {
      await ctx.rejects(ctx.startTurn(missing, "never runs"), "thread_not_found", "turn/start in an unknown thread");
    });
  },
};

const chatTurn: Scenario = {
  name: "a Chat-mode turn",
  checks: [
    "TURN-START-RESPONSE",
    "TURN-STARTED-NOTIFIED",
    "TURN-COMPLETED-NOTIFIED",
    "TURN-DEFAULT-PROFILE",
    "TURN-CHAT-MODE",
    "TURN-INPUT-TO-MODEL",
    "TURN-USAGE",
    "ITEM-USER-MESSAGE",
    "ITEM-AGENT-MESSAGE",
    "ITEM-REASONING",
    "ITEM-COMPLETED-ONCE",
    "ITEM-DELTA-STREAM",
    "TURN-GET",
    "TURN-ITEMS-REPLAY",
    "TURN-ITEMS-LAST-SEQUENCE",
  ],
  async run(ctx) {
    const answer = `The answer is ${ctx.token.slice(-6)}.`;
    const text = "Say the answer";
    const script = ctx.script([
      { reply: { reasoning: "Thinking it over.", text: answer, chunks: 3, usage: { prompt_tokens: 11, completion_tokens: 7 } } },
    ]);
    const thread = await ctx.thread();
    const turn = await ctx.step("TURN-START-RESPONSE", async () => {
      const turn = await ctx.startTurn(thread.id, text, { mode: "Chat" });
      // The last turn/start sent.
      const expected = ctx.rpcFrames
        .reverse()
        .find((e) => e.direction === "sent" && (e.frame as { method?: unknown } | null)?.method === "turn/start")?.frame as {
        params: { turn_id: string };
      };
      if (turn.id !== expected.params.turn_id) throw new Failure(`the response names turn ${turn.id}, not ${expected.params.turn_id}`);
      if (turn.status !== "InProgress") throw new Failure(`the response says ${turn.status}, expected InProgress`);
      const early = ctx.progressBeforeResponse(turn.id);
      if (early)
        throw new Failure(
          `the gateway streamed ${(early as { method: string }).method} of turn ${turn.id} before answering turn/start`,
          early,
        );
      return turn;
    });
    ctx.check(
      "TURN-DEFAULT-PROFILE",
      turn.permission_profile.mode === "full_access" && turn.permission_profile.source === "defaulted",
      `the turn's profile is ${turn.permission_profile.mode} (source ${turn.permission_profile.source}), expected full_access (defaulted)`,
    );
    await ctx.step("TURN-STARTED-NOTIFIED", () =>
      ctx.waitFor(`turn/started of ${turn.id}`, (n) => n.method === "turn/started" && n.params.turn_id === turn.id),
    );
    const end = await ctx.step("TURN-COMPLETED-NOTIFIED", () => ctx.ended(turn.id));
    if (end.terminal)
      ctx.check(
        "TURN-COMPLETED-NOTIFIED",
        end.terminal.method === "turn/completed",
        `the turn ended with ${end.terminal.method}: ${shown(end.terminal.params)}`,
      );
    const usage = (end.terminal?.method === "turn/completed" ? end.terminal.params.usage : undefined) ?? end.turn.usage;
    ctx.check(
      "TURN-USAGE",
      usage?.input_tokens === 11 && usage.output_tokens === 7,
      `expected usage 11 in / 7 out, got ${usage ? shown(usage) : "no usage: neither turn/completed nor the turn carries one"}`,
    );

    ctx.check("TURN-CHAT-MODE", script.calls.length === 1, `expected one model call, got ${script.calls.length}`);
    ctx.check(
      "TURN-CHAT-MODE",
      !script.calls[0]?.tools?.length,
      `a Chat turn offered the model tools: ${script.calls[0]?.tools?.map((t) => t.function.name).join(", ")}`,
    );
    const user = script.calls[0] && messageText(lastOf(script.calls[0], "user"));
    ctx.check(
      "TURN-INPUT-TO-MODEL",
      user?.includes(text) === true && user.includes(ctx.token),
      `the model's last user message is ${shown(user)}, expected the turn's text`,
    );

    const live = ctx.ofTurn(turn.id);
    const started = live.filter((n) => n.method === "item/started").map(itemOf);
    const first = started[0];
    ctx.check(
      "ITEM-USER-MESSAGE",
      first?.type === "userMessage" && JSON.stringify(first.content).includes(ctx.token),
      `the first item is ${shown(first)}, expected a userMessage with the input`,
    );
    const completed = live.filter((n) => n.method === "item/completed").map(itemOf);
    const message = completed.find((i) => i?.type === "agentMessage");
    const deltas = live.filter((n) => n.method === "item/agent_message/delta");
    const joined = deltas.map((n) => (n.params as { delta: string }).delta).join("");
    ctx.check(
      "ITEM-AGENT-MESSAGE",
      message?.type === "agentMessage" && message.text === answer,
      `the agentMessage item says ${shown(message?.type === "agentMessage" ? message.text : message)}, the model said ${shown(answer)}`,
    );
    ctx.check("ITEM-AGENT-MESSAGE", joined === answer, `the agent-message deltas join up to ${shown(joined)}, expected ${shown(answer)}`);
    const reasoning = completed.find((i) => i?.type === "reasoning");
    ctx.check(
      "ITEM-REASONING",
      reasoning !== undefined && JSON.stringify(reasoning).includes("Thinking it over."),
      "no reasoning item carries the model's reasoning",
    );
    const bad = deltas.find((n) => (n.params as { stream: string }).stream !== "agent_message");
    ctx.check(
      "ITEM-DELTA-STREAM",
      bad === undefined,
      `an agent-message delta names stream ${shown((bad?.params as { stream?: string } | undefined)?.stream)}`,
      bad,
    );

    await ctx.attempt("TURN-GET", async () => {
      const { turn: got } = await ctx.client.turnGet({ thread_id: thread.id, turn_id: turn.id });
      if (got.id !== turn.id || got.status !== "Completed")
        throw new Failure(`turn/get says ${got.id} is ${got.status}, expected ${turn.id} Completed`);
    });
    await checkReplay(ctx, thread.id, turn.id);
  },
};

/**
 * TURN-ITEMS-REPLAY and TURN-ITEMS-LAST-SEQUENCE over one ended turn, from one turn/items
 * call: each decides its own requirement, so that a failure of the call (a gateway
 * without turn/items) is reported under both.
 */
async function checkReplay(ctx: ScenarioContext, threadId: string, turnId: string): Promise<void> {
  const asked = ctx.client.turnItems({ thread_id: threadId, turn_id: turnId });
  // Awaited by each step below; a rejection is theirs to judge, not an unhandled one.
  asked.catch(() => undefined);
  await ctx.attempt("TURN-ITEMS-REPLAY", async () => {
    const { events } = await asked;
    const replayed = events.filter((e) => e.method.startsWith("item/")).map((e) => JSON.stringify({ method: e.method, params: e.params }));
    const live = ctx
      .ofTurn(turnId)
      .filter((n) => n.method.startsWith("item/"))
      .map((n) => JSON.stringify({ method: n.method, params: n.params }));
    const at = replayed.findIndex((r, i) => r !== live[i]);
    if (at !== -1 || replayed.length !== live.length) {
      const i = at === -1 ? Math.min(replayed.length, live.length) : at;
      throw new Failure(
        `turn/items differs from the stream at item event ${i}: replayed ${replayed[i] ?? "nothing"}, streamed ${live[i] ?? "nothing"}`,
      );
    }
  });
  await ctx.attempt("TURN-ITEMS-LAST-SEQUENCE", async () => {
    const { events, last_sequence: last } = await asked;
    if (events.length === 0) throw new Failure(`turn/items returned no events for the ended turn (last_sequence ${last})`);
    if (last !== events.at(-1)!.sequence)
      throw new Failure(`last_sequence is ${last}, the last event's sequence is ${events.at(-1)!.sequence}`);
  });
}

const history: Scenario = {
  name: "history across turns",
  checks: ["TURN-HISTORY"],
  async run(ctx) {
    const first = `First answer ${ctx.token.slice(-4)}`;
    const script = ctx.script([{ reply: { text: first } }, { reply: { text: "Second answer" } }]);
    const thread = await ctx.thread();
    await ctx.step("TURN-HISTORY", async () => {
      const a = await ctx.startTurn(thread.id, "first question", { mode: "Chat" });
      await ctx.ended(a.id);
      const b = await ctx.startTurn(thread.id, "second question", { mode: "Chat" });
      await ctx.ended(b.id);
      const call = script.calls[1];
      if (!call) throw new Failure(`the second turn made no model call (${script.calls.length} calls; ${script.problems.join("; ")})`);
      const texts = call.messages.map((m) => `${m.role}:${messageText(m)}`);
      const q1 = texts.findIndex((t) => t.startsWith("user:") && t.includes("first question"));
      const a1 = texts.findIndex((t) => t.startsWith("assistant:") && t.includes(first));
      const q2 = texts.findIndex((t) => t.startsWith("user:") && t.includes("second question"));
      if (q1 === -1 || a1 === -1 || q2 === -1 || !(q1 < a1 && a1 < q2))
        throw new Failure(
          `the second model call's messages are ${shown(texts)}; expected the first question, its answer, then the second question`,
        );
    });
  },
};

const tools: Scenario = {
  name: "the Agent tool loop",
  checks: ["TURN-TOOL-LOOP", "ITEM-COMMAND-EXECUTION", "ITEM-FILE-CHANGE", "ITEM-TOOL-ERROR", "ITEM-DELTA-STREAM"],
  async run(ctx) {
    const marker = `echoed-${ctx.token.slice(-6)}`;
    const content = `written-${ctx.token.slice(-6)}`;
    const file = `${ctx.id("cert")}.txt`;
    const toolResult = (request: ChatRequest) => lastOf(request, "tool");
    const callId = (request: ChatRequest) => lastOf(request, "assistant")?.tool_calls?.[0]?.id;
    const script = ctx.script([
      { reply: { toolCalls: [{ tool: "shell", args: { command: `echo ${marker}` } }] } },
      { reply: { toolCalls: [{ tool: "write_file", args: { path: file, content } }] } },
      { reply: { toolCalls: [{ tool: "read_file", args: { path: file } }] } },
      { reply: { toolCalls: [{ tool: "shell", args: {} }] } },
      { reply: { text: "All done." } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Use the tools", { mode: "Agent" });
    const end = await ctx.step("TURN-TOOL-LOOP", async () => {
      const end = await ctx.ended(turn.id);
      if (end.turn.status !== "Completed") throw new Failure(`the turn ended ${end.turn.status}: ${shown(end.turn.error ?? {})}`);
      return end;
    });
    void end;
    const [c1, c2, c3, c4, c5] = [0, 1, 2, 3, 4].map((i) => script.calls[i]);
    ctx.check(
      "TURN-TOOL-LOOP",
      script.calls.length === 5,
      `expected 5 model calls, got ${script.calls.length}${script.problems.length ? `: ${script.problems.join("; ")}` : ""}`,
    );
    ctx.check(
      "TURN-TOOL-LOOP",
      !!c1?.tools?.some((t) => t.function.name === ctx.tool("shell")),
      "the first model call did not offer the shell tool",
    );
    ctx.check(
      "TURN-TOOL-LOOP",
      !!c2 && toolResult(c2)?.tool_call_id === callId(c2) && messageText(toolResult(c2)).includes(marker),
      c2
        ? `the second model call does not carry the shell result under the call's id: ${shown(toolResult(c2))}`
        : "the gateway made no second model call to carry the shell result",
    );
    const completed = ctx
      .ofTurn(turn.id)
      .filter((n) => n.method === "item/completed")
      .map(itemOf);
    const commands = completed.filter((i) => i?.type === "commandExecution");
    const command = commands[0];
    const stdout = ctx
      .ofTurn(turn.id)
      .filter(
        (n) =>
          n.method === "item/command_execution/output_delta" && command && n.params.item_id === command.id && n.params.stream === "stdout",
      )
      .map((n) => (n.params as { delta: string }).delta)
      .join("");
    ctx.check(
      "ITEM-COMMAND-EXECUTION",
      command?.type === "commandExecution" &&
        command.status === "completed" &&
        command.exit_code === 0 &&
        (command.stdout ?? "").includes(marker),
      command ? `the shell item is ${shown(command)}` : "no commandExecution item completed for the shell call",
    );
    ctx.check(
      "ITEM-COMMAND-EXECUTION",
      command?.type === "commandExecution" && stdout === command.stdout,
      `the stdout deltas join up to ${shown(stdout)}, the item's stdout is ${shown(command?.type === "commandExecution" ? command.stdout : undefined)}`,
    );
    const badStream = ctx
      .ofTurn(turn.id)
      .find(
        (n) =>
          n.method === "item/command_execution/output_delta" && !["stdout", "stderr"].includes((n.params as { stream: string }).stream),
      );
    ctx.check(
      "ITEM-DELTA-STREAM",
      badStream === undefined,
      `a command-output delta names stream ${shown((badStream?.params as { stream?: string } | undefined)?.stream)}, expected stdout or stderr`,
      badStream,
    );
    const change = completed.find((i) => i?.type === "fileChange");
    ctx.check(
      "ITEM-FILE-CHANGE",
      change?.type === "fileChange" && change.status === "completed",
      change ? `the write_file item is ${shown(change)}` : "no fileChange item completed for the write_file call",
    );
    ctx.check(
      "ITEM-FILE-CHANGE",
      !!c4 && messageText(toolResult(c4)).includes(content),
      c4
        ? `reading the file back gave the model ${shown(messageText(toolResult(c4)))}, expected it to hold ${content}`
        : "the gateway made no fourth model call to carry the file read back",
    );
    const failed = commands[1];
    ctx.check(
      "ITEM-TOOL-ERROR",
      failed?.type === "commandExecution" && failed.status === "failed",
      failed
        ? `the shell call without a command ended ${shown(failed.status)}, expected failed`
        : "no commandExecution item completed for the shell call without a command",
    );
    ctx.check(
      "ITEM-TOOL-ERROR",
      !!c5 && messageText(toolResult(c5)).length > 0 && toolResult(c5)?.tool_call_id === callId(c5),
      "the model did not receive the failed call's error under its call id",
    );
    void c3;
  },
};

const providerFailure: Scenario = {
  name: "a failing model call",
  checks: ["TURN-FAILED-PROVIDER"],
  async run(ctx) {
    ctx.script([{ reply: { error: { status: 400, message: "the scripted model refuses this request" } } }]);
    const thread = await ctx.thread();
    await ctx.step("TURN-FAILED-PROVIDER", async () => {
      const turn = await ctx.startTurn(thread.id, "Fail please", { mode: "Chat" });
      const end = await ctx.ended(turn.id);
      if (end.terminal && end.terminal.method !== "turn/failed")
        throw new Failure(`the turn ended with ${end.terminal.method}, expected turn/failed`);
      const { turn: got } = await ctx.client.turnGet({ thread_id: thread.id, turn_id: turn.id });
      if (got.status !== "Failed") throw new Failure(`turn/get says ${got.status}, expected Failed`);
    });
  },
};

const control: Scenario = {
  name: "turn control: one active turn, duplicate ids, cancel, resume",
  checks: ["TURN-ONE-ACTIVE", "TURN-DUPLICATE-ID", "TURN-CANCEL", "TURN-CANCEL-ENDED", "TURN-RESUME-NOT-BLOCKED"],
  async run(ctx) {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const script = ctx.script([{ reply: { text: "too late", hold } }]);
    try {
      const thread = await ctx.thread();
      const other = await ctx.thread();
      const turn = await ctx.startTurn(thread.id, "Wait for me", { mode: "Chat" });
      await ctx.modelCall(script, 1);
      await ctx.attempt("TURN-ONE-ACTIVE", async () => {
        const error = await ctx.rejects(
          ctx.startTurn(thread.id, "A second turn", { mode: "Chat" }),
          "turn_in_progress",
          "a second turn/start while one runs",
        );
        const active = (error.data as { active_turn_id?: unknown } | undefined)?.active_turn_id;
        if (active !== turn.id) throw new Failure(`turn_in_progress names active turn ${shown(active)}, expected ${turn.id}`);
      });
      await ctx.attempt("TURN-DUPLICATE-ID", () =>
        ctx.rejects(
          ctx.client.turnStart({ thread_id: other.id, turn_id: turn.id, input: ctx.input("same id"), mode: "Chat" }),
          "duplicate_turn_id",
          "turn/start reusing a turn id",
        ),
      );
      await ctx.step("TURN-CANCEL", async () => {
        const { turn: cancelled } = await ctx.client.turnCancel({ thread_id: thread.id, turn_id: turn.id, reason: "certification" });
        if (cancelled.id !== turn.id) throw new Failure(`turn/cancel answered with turn ${cancelled.id}`);
        const end = await ctx.ended(turn.id);
        if (end.terminal && end.terminal.method !== "turn/failed")
          throw new Failure(`the cancelled turn ended with ${end.terminal.method}, expected turn/failed`);
        if (end.turn.status !== "Interrupted" && end.turn.status !== "Failed")
          throw new Failure(`the cancelled turn is ${end.turn.status}`);
      });
      await ctx.attempt("TURN-CANCEL-ENDED", () =>
        ctx.rejects(ctx.client.turnCancel({ thread_id: thread.id, turn_id: turn.id }), "turn_not_active", "cancelling an ended turn"),
      );
      await ctx.attempt("TURN-RESUME-NOT-BLOCKED", () =>
        ctx.rejects(ctx.client.turnResume({ thread_id: thread.id, turn_id: turn.id }), "turn_not_blocked", "resuming an ended turn"),
      );
    } finally {
      release();
    }
  },
};

/** The items of a turn that started and have not completed yet, as the stream says so far. */
export function openItems(ctx: ScenarioContext, turnId: string): TurnItem[] {
  const open = new Map<string, TurnItem>();
  for (const n of ctx.ofTurn(turnId)) {
    if (n.method === "item/started") open.set(n.params.item_id, n.params.item);
    if (n.method === "item/completed") open.delete(n.params.item_id);
  }
  return [...open.values()];
}

/**
 * Waits until the turn has an item of the kind `wanted` open, for as long as the turn keeps
 * sending: a gateway that does not open such an item (a model call that is not streamed
 * opens no answer item while the model holds it) is then cancelled with what it has open.
 */
export async function untilOpen(ctx: ScenarioContext, turnId: string, what: string, wanted: (item: TurnItem) => boolean): Promise<void> {
  const deadline = performance.now() + ctx.stepTimeoutMs;
  for (let seen = -1; seen !== ctx.seen && performance.now() < deadline;) {
    seen = ctx.seen;
    const found = await ctx
      .watchFor(`${what} open in turn ${turnId}`, () => openItems(ctx, turnId).some(wanted), ctx.quietMs)
      .then(
        () => true,
        () => false,
      );
    if (found) return;
  }
}

/**
 * Cancels a running turn and waits for its end, under TURN-CANCEL; `ended` then decides
 * ITEM-COMPLETED-ONCE over everything the turn had open.
 */
export async function cancelAndEnd(ctx: ScenarioContext, threadId: string, turnId: string): Promise<void> {
  await ctx.step("TURN-CANCEL", async () => {
    const { turn } = await ctx.client.turnCancel({
      thread_id: threadId,
      turn_id: turnId,
      reason: "certification: cancelled with an item open",
    });
    if (turn.id !== turnId) throw new Failure(`turn/cancel answered with turn ${turn.id}`);
    const end = await ctx.ended(turnId);
    if (end.terminal && end.terminal.method !== "turn/failed")
      throw new Failure(`the turn cancelled with an item open ended with ${end.terminal.method}, expected turn/failed`);
    if (end.turn.status !== "Interrupted" && end.turn.status !== "Failed")
      throw new Failure(`the turn cancelled with an item open is ${end.turn.status}`);
  });
}

/**
 * Cancelling a turn while an item is open, for each kind of item core covers: an answer
 * whose text is streaming (the model holds the rest of it, reasoning included) and a shell
 * command that is still running. What was open must be completed once before the turn's
 * terminal notification.
 */
const cancelWithItemOpen: Scenario = {
  name: "cancelling a turn with an item open",
  checks: ["TURN-CANCEL", "ITEM-COMPLETED-ONCE"],
  async run(ctx) {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const marker = `running-${ctx.token.slice(-6)}`;
    const script = ctx.script([
      {
        reply: {
          reasoning: "Working it out.",
          text: `Part one, part two, part three, the end ${ctx.token.slice(-4)}.`,
          chunks: 4,
          hold,
          holdAfterPieces: 2,
        },
      },
      { reply: { toolCalls: [{ tool: "shell", args: { command: `echo ${marker}; sleep 30` } }] } },
    ]);
    try {
      const chat = await ctx.thread();
      const streaming = await ctx.startTurn(chat.id, "Answer at your own pace", { mode: "Chat" });
      await ctx.modelCall(script, 1);
      await untilOpen(ctx, streaming.id, "an agentMessage item", (item) => item.type === "agentMessage");
      await cancelAndEnd(ctx, chat.id, streaming.id);

      const agent = await ctx.thread({ mode: "Agent" });
      const running = await ctx.startTurn(agent.id, "Run the long command", agentTurn("full_access"));
      await ctx.modelCall(script, 2);
      await untilOpen(
        ctx,
        running.id,
        "the shell call's item",
        (item) => item.type !== "userMessage" && item.type !== "agentMessage" && item.type !== "reasoning",
      );
      await cancelAndEnd(ctx, agent.id, running.id);
    } finally {
      release();
    }
  },
};

const unknownTurn: Scenario = {
  name: "unknown turns",
  checks: ["TURN-CANCEL-NOT-FOUND", "TURN-GET-NOT-FOUND", "TURN-ITEMS-NOT-FOUND"],
  async run(ctx) {
    const thread = await ctx.thread();
    const missing = { thread_id: thread.id, turn_id: ctx.id("trn_missing") };
    await ctx.attempt("TURN-CANCEL-NOT-FOUND", () =>
      ctx.rejects(ctx.client.turnCancel(missing), "turn_not_found", "turn/cancel of an unknown turn"),
    );
    await ctx.attempt("TURN-GET-NOT-FOUND", () =>
      ctx.rejects(ctx.client.turnGet(missing), "turn_not_found", "turn/get of an unknown turn"),
    );
    await ctx.attempt("TURN-ITEMS-NOT-FOUND", () =>
      ctx.rejects(ctx.client.turnItems(missing), "turn_not_found", "turn/items of an unknown turn"),
    );
  },
};

const threads: Scenario = {
  name: "threads and their timeline",
  checks: ["THREAD-START", "THREAD-TIMELINE-PAGE", "THREAD-TIMELINE-CHANGED"],
  async run(ctx) {
    ctx.script([{ reply: { text: "one" } }, { reply: { text: "two" } }]);
    const thread = await ctx.step("THREAD-START", async () => {
      const thread = await ctx.thread();
      const { thread: got } = await ctx.client.threadGet({ thread_id: thread.id });
      if (got.id !== thread.id || got.workspace_id !== thread.workspace_id)
        throw new Failure(`thread/get returned ${got.id} in ${got.workspace_id}, expected ${thread.id} in ${thread.workspace_id}`);
      return thread;
    });
    const turns: string[] = [];
    for (const text of ["first", "second"]) {
      const turn = await ctx.startTurn(thread.id, text, { mode: "Chat" });
      turns.push(turn.id);
      await ctx.ended(turn.id);
    }
    await ctx.attempt("THREAD-TIMELINE-PAGE", async () => {
      const page = await ctx.client.threadTimelinePage({ threadId: thread.id });
      const listed = page.blocks.map((b) => b.turnId);
      if (JSON.stringify(listed) !== JSON.stringify(turns))
        throw new Failure(`the timeline lists turns ${shown(listed)}, expected ${shown(turns)}`);
    });
    await ctx.attempt("THREAD-TIMELINE-CHANGED", async () => {
      for (const id of turns)
        await ctx.waitFor(
          `thread/timeline/blocks/changed naming turn ${id}`,
          (n) => n.method === "thread/timeline/blocks/changed" && n.params.threadId === thread.id && n.params.turnId === id,
        );
    });
  },
};

export const coreScenarios: readonly Scenario[] = [
  rpc,
  threads,
  chatTurn,
  history,
  tools,
  providerFailure,
  control,
  cancelWithItemOpen,
  unknownTurn,
];
