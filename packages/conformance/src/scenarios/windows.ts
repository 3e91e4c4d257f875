/**
 * Scenarios of the windows and recovery capabilities. The model's reported usage drives
 * the windows: an answer that reports more provider tokens than a window allows exhausts
 * it, one that reports more than the turn's total blocks the turn. The token counts are
 * set above the limits each window announces, so a gateway's own limits are respected.
 */
import type { NotificationName, NotificationParamsOf } from "@turnspec/protocol/registry";
import type { TurnExecutionWindowStartedNotification } from "@turnspec/protocol/types";
import { Failure, shown, type Scenario, type ScenarioContext } from "../scenario.js";
import { agentTurn } from "./core.js";

/** A usage report that goes past `tokens` provider tokens. */
const usageOver = (tokens: number) => ({ prompt_tokens: tokens + 1, completion_tokens: 1 });

/** The params of every `method` notification of a turn, in order. */
const of = <M extends NotificationName>(ctx: ScenarioContext, turnId: string, method: M): NotificationParamsOf<M>[] =>
  ctx
    .ofTurn(turnId)
    .filter((n) => n.method === method)
    .map((n) => n.params as NotificationParamsOf<M>);

/** The per-window provider-token limit the first window of `turnId` announces. */
async function windowLimit(ctx: ScenarioContext, turnId: string): Promise<TurnExecutionWindowStartedNotification> {
  const started = await ctx.waitFor(
    `turn/execution_window/started of turn ${turnId}`,
    (n) => n.method === "turn/execution_window/started" && n.params.turn_id === turnId,
  );
  return started.params as TurnExecutionWindowStartedNotification;
}

const continued: Scenario = {
  name: "a window exhausted and continued",
  checks: ["WIN-STARTED", "WIN-EXHAUSTED", "WIN-CONTINUED"],
  async run(ctx) {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const limits = { tokens: 0 };
    const script = ctx.script([
      {
        reply: {
          toolCalls: [{ tool: "shell", args: { command: "echo window" } }],
          hold,
          get usage() {
            return usageOver(limits.tokens);
          },
        },
      },
      { reply: { text: "Done after a new window." } },
    ]);
    try {
      const thread = await ctx.thread({ mode: "Agent" });
      const turn = await ctx.startTurn(thread.id, "Work across windows", agentTurn("full_access"));
      const first = await ctx.step("WIN-STARTED", async () => {
        const first = await windowLimit(ctx, turn.id);
        if (first.window_index !== 0) throw new Failure(`the first window has index ${first.window_index}`);
        return first;
      });
      limits.tokens = first.limits.max_provider_tokens_per_window;
      await ctx.modelCall(script, 1);
      release();
      const exhausted = await ctx.step("WIN-EXHAUSTED", async () => {
        const n = await ctx.waitFor(
          "turn/execution_window/exhausted",
          (n) => n.method === "turn/execution_window/exhausted" && n.params.turn_id === turn.id,
        );
        const p = n.params as { window_id: string; reason: string; observed: { provider_tokens: number } };
        if (
          p.window_id !== first.window_id ||
          p.reason !== "max_provider_tokens_per_window" ||
          p.observed.provider_tokens <= limits.tokens
        ) {
          throw new Failure(
            `window ${p.window_id} was exhausted by ${p.reason} at ${p.observed.provider_tokens} provider tokens; expected ${first.window_id} by max_provider_tokens_per_window past ${limits.tokens}`,
          );
        }
        return p;
      });
      await ctx.step("WIN-CONTINUED", async () => {
        const end = await ctx.ended(turn.id);
        if (end.turn.status !== "Completed") throw new Failure(`the turn ended ${end.turn.status}`);
        const checkpoint = of(ctx, turn.id, "turn/execution_window/checkpointed").find((c) => c.window_id === exhausted.window_id);
        const next = of(ctx, turn.id, "turn/execution_window/continued").find((c) => c.previous_window_id === exhausted.window_id);
        const second = of(ctx, turn.id, "turn/execution_window/started").find((s) => s.window_index === 1);
        if (!checkpoint) throw new Failure("no turn/execution_window/checkpointed for the exhausted window");
        if (!next || next.checkpoint_id !== checkpoint.checkpoint_id)
          throw new Failure(
            `turn/execution_window/continued is ${shown(next)}, expected it to continue from checkpoint ${checkpoint.checkpoint_id}`,
          );
        if (!second || second.window_id !== next.window_id) throw new Failure("window 1 was not started as the continued window");
      });
    } finally {
      release();
    }
  },
};

const blocked: Scenario = {
  name: "a turn blocked by its total budget, then resumed",
  checks: ["WIN-BLOCKED", "REC-RESUME"],
  async run(ctx) {
    const total = { tokens: 0 };
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    ctx.script([
      {
        reply: {
          toolCalls: [{ tool: "shell", args: { command: "echo budget" } }],
          hold,
          get usage() {
            return usageOver(total.tokens);
          },
        },
      },
      { reply: { text: "Done after resuming." } },
    ]);
    try {
      const thread = await ctx.thread({ mode: "Agent" });
      const turn = await ctx.startTurn(thread.id, "Spend the budget", agentTurn("full_access"));
      const first = await windowLimit(ctx, turn.id);
      // More than any window and any total a gateway announces: the total is reached in one round.
      total.tokens = Math.max(first.limits.max_provider_tokens_per_window * 1000, 10_000_000);
      release();
      const job = await ctx.step("WIN-BLOCKED", async () => {
        const end = await ctx.ended(turn.id);
        if (end.turn.status !== "Blocked" || end.terminal?.method !== "turn/blocked")
          throw new Failure(`the turn ended ${end.turn.status} with ${end.terminal?.method ?? "no notification"}, expected turn/blocked`);
        const job = (end.terminal.params as { recovery_job_id: string }).recovery_job_id;
        const opened = of(ctx, turn.id, "item/recovery_opened").find((o) => o.recovery_job_id === job);
        const windowBlocked = of(ctx, turn.id, "turn/execution_window/blocked").find((b) => b.recovery_job_id === job);
        if (!opened || !windowBlocked)
          throw new Failure(
            `recovery job ${job}: item/recovery_opened ${opened ? "sent" : "missing"}, turn/execution_window/blocked ${windowBlocked ? "sent" : "missing"}`,
          );
        const { turn: got } = await ctx.client.turnGet({ thread_id: thread.id, turn_id: turn.id });
        if (got.status !== "Blocked") throw new Failure(`turn/get says ${got.status}, expected Blocked`);
        return job;
      });
      await ctx.step("REC-RESUME", async () => {
        const mark = ctx.seen;
        const resumed = await ctx.client.turnResume({ thread_id: thread.id, turn_id: turn.id });
        if (resumed.turn.id !== turn.id || resumed.recovery_job_id !== job)
          throw new Failure(
            `turn/resume answered turn ${resumed.turn.id} with job ${resumed.recovery_job_id}, expected ${turn.id} with ${job}`,
          );
        await ctx.waitFor(
          `item/recovery_attached for ${job}`,
          (n) => n.method === "item/recovery_attached" && n.params.recovery_job_id === job,
        );
        const end = await ctx.ended(turn.id, mark);
        if (end.turn.status !== "Completed") throw new Failure(`the resumed turn ended ${end.turn.status}`);
      });
    } finally {
      release();
    }
  },
};

const retry: Scenario = {
  name: "a retried model call",
  checks: ["REC-RETRY", "REC-RECOVERY-JOB"],
  async run(ctx) {
    const script = ctx.script([
      { reply: { error: { status: 500, message: "the scripted model fails once on purpose" } } },
      { reply: { text: "Second time lucky." } },
    ]);
    const thread = await ctx.thread();
    const turn = await ctx.startTurn(thread.id, "Try again", { mode: "Chat" });
    await ctx.step("REC-RETRY", async () => {
      const end = await ctx.ended(turn.id);
      const scheduled = ctx.ofTurn(turn.id).findIndex((n) => n.method === "item/retry_scheduled");
      const started = ctx.ofTurn(turn.id).findIndex((n) => n.method === "item/retry_attempt_started");
      if (scheduled === -1 || started === -1 || started < scheduled)
        throw new Failure(`item/retry_scheduled at ${scheduled}, item/retry_attempt_started at ${started}; expected both, in that order`);
      if (script.calls.length !== 2 || end.turn.status !== "Completed")
        throw new Failure(`${script.calls.length} model calls and the turn ${end.turn.status}; expected 2 and Completed`);
    });
    await ctx.attempt("REC-RECOVERY-JOB", async () => {
      const opened = of(ctx, turn.id, "item/recovery_opened")[0];
      if (!opened) throw new Failure("no item/recovery_opened for the failed call");
      const succeeded = of(ctx, turn.id, "item/recovery_succeeded").find(
        (s) => s.recovery_job_id === undefined || s.recovery_job_id === opened.recovery_job_id,
      );
      if (!succeeded) throw new Failure(`recovery job ${opened.recovery_job_id} was not closed with item/recovery_succeeded`);
    });
  },
};

const timeout: Scenario = {
  name: "a tool past its deadline",
  checks: ["REC-TIMEOUT"],
  async run(ctx) {
    ctx.script([
      { reply: { toolCalls: [{ tool: "shell", args: { command: "sleep 5", timeout_ms: 300 } }] } },
      { reply: { text: "It timed out." } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("REC-TIMEOUT", async () => {
      const turn = await ctx.startTurn(thread.id, "Wait too long", agentTurn("full_access"));
      const detected = await ctx.waitFor(
        "item/timeout_detected",
        (n) => n.method === "item/timeout_detected" && n.params.turn_id === turn.id,
      );
      const item = (detected.params as { item_id: string }).item_id;
      if (!ctx.ofTurn(turn.id).some((n) => n.method === "item/started" && n.params.item_id === item))
        throw new Failure(`item/timeout_detected names item ${item}, which the turn never started`);
      await ctx.ended(turn.id);
    });
  },
};

const toolRetry: Scenario = {
  name: "a retried fetch",
  checks: ["REC-TOOL-RETRY"],
  async run(ctx) {
    const text = `page-${ctx.token.slice(-6)}`;
    const page = ctx.model.flakyPage(1, text);
    const script = ctx.script([
      { reply: { toolCalls: [{ tool: "web_fetch", args: { url: page.url } }] } },
      { reply: { text: "Fetched." } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("REC-TOOL-RETRY", async () => {
      const turn = await ctx.startTurn(thread.id, "Fetch the page", agentTurn("full_access"));
      await ctx.ended(turn.id);
      const scheduled = of(ctx, turn.id, "item/tool/retry_scheduled")[0];
      const resolved = of(ctx, turn.id, "item/tool/retry_resolved")[0];
      if (!scheduled) throw new Failure(`no item/tool/retry_scheduled (the page was asked ${page.requests()} times)`);
      if (resolved?.outcome !== "succeeded" || resolved.item_id !== scheduled.item_id)
        throw new Failure(`the retry episode ended ${shown(resolved)}`);
      const told = script.calls[1]?.messages.at(-1);
      if (!JSON.stringify(told ?? "").includes(text)) throw new Failure("the page's text did not reach the model");
    });
  },
};

const loopBudget: Scenario = {
  name: "the tool-loop budget",
  checks: ["REC-LOOP-BUDGET"],
  async run(ctx) {
    // Calls to a tool no gateway has are the cheapest rounds: each fails at once and the loop goes on.
    const round = { reply: { toolCalls: [{ tool: "cert_no_such_tool", args: {} }] } };
    // Enough tool-calling answers for any budget this suite can wait for.
    const script = ctx.script(Array.from({ length: 1000 }, () => round));
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("REC-LOOP-BUDGET", async () => {
      const turn = await ctx.startTurn(thread.id, "Loop until stopped", agentTurn("full_access"));
      let mark = 0;
      for (let resumes = 0; ; resumes++) {
        const end = await ctx.ended(turn.id, mark);
        if (end.turn.status !== "Blocked") break;
        if (resumes >= 20) throw new Failure("the turn kept blocking: 20 resumes without reaching a tool-loop budget");
        mark = ctx.seen;
        await ctx.client.turnResume({ thread_id: thread.id, turn_id: turn.id });
      }
      const exceeded = ctx.ofTurn(turn.id).findIndex((n) => n.method === "turn/tool_loop/budget_exceeded");
      const failed = ctx.ofTurn(turn.id).findIndex((n) => n.method === "turn/failed");
      if (exceeded === -1 || failed < exceeded)
        throw new Failure(
          `after ${script.calls.length} model calls the turn ended without turn/tool_loop/budget_exceeded before turn/failed`,
        );
    });
  },
};

const compression: Scenario = {
  name: "history compression",
  checks: ["REC-CONTEXT-COMPRESSION"],
  async run(ctx) {
    const turns = 6;
    ctx.script([{ reply: { text: "x".repeat(480_000) } }, ...Array.from({ length: turns - 1 }, () => ({ reply: { text: "short" } }))]);
    const thread = await ctx.thread();
    await ctx.step("REC-CONTEXT-COMPRESSION", async () => {
      const ids: string[] = [];
      for (let i = 0; i < turns; i++) {
        const turn = await ctx.startTurn(thread.id, `Turn ${i + 1}`, { mode: "Chat" });
        ids.push(turn.id);
        await ctx.ended(turn.id);
      }
      const seen = ids
        .flatMap((id) => ctx.ofTurn(id))
        .map((n) => n.method)
        .filter((m) => m.startsWith("context/"));
      const at = seen.indexOf("context/compressing");
      if (at === -1 || seen.indexOf("context/compressed", at) === -1)
        throw new Failure(`the turns sent ${shown(seen)}, expected context/compressing then context/compressed`);
    });
  },
};

export const windowScenarios: readonly Scenario[] = [continued, blocked];
export const recoveryScenarios: readonly Scenario[] = [retry, timeout, toolRetry, loopBudget, compression];
