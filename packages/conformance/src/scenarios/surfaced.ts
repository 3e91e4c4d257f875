/**
 * Scenarios of what a turn surfaces just before it ends (turnspec's own extension): the
 * invite it minted, whose code goes live to the connection that started the turn with
 * private_delivery and to nothing else (not turn/items, not the model), and the wallet cards.
 * Each comes once, after the turn's last item and before its terminal notification.
 */
import type { AnyNotification } from "@turnspec/protocol/registry";
import { Failure, shown, isTerminal, type Scenario, type ScenarioContext } from "../scenario.js";
import { agentTurn } from "./core.js";

const SURFACED = new Set(["turn/invite/delivery", "turn/wallet/link_prompt", "turn/wallet/update_prompt", "turn/wallet/revoke_prompt"]);
const URL_PATTERN = /^https?:\/\/\S+$/;

const named = (ctx: ScenarioContext, turnId: string, method: string) => ctx.ofTurn(turnId).filter((n) => n.method === method);

/** The turn's tool call items as they completed, in order: their status. */
const callStatuses = (ctx: ScenarioContext, turnId: string) =>
  ctx
    .ofTurn(turnId)
    .filter(
      (n): n is Extract<AnyNotification, { method: "item/completed" }> =>
        n.method === "item/completed" && n.params.item.type === "dynamicToolCall",
    )
    .map((n) => n.params.item.status);

/** Where each surfaced notification came, against the turn's last item notification and its terminal. */
function checkLast(ctx: ScenarioContext, turnId: string, expected: readonly string[]): void {
  const live = ctx.ofTurn(turnId);
  const methods = live.map((n) => n.method);
  const lastItem = methods.reduce((last, m, i) => (m.startsWith("item/") ? i : last), -1);
  const terminal = live.findIndex(isTerminal);
  for (const method of expected) {
    const at = methods.flatMap((m, i) => (m === method ? [i] : []));
    if (at.length !== 1) throw new Failure(`turn ${turnId} sent ${method} ${at.length} times, expected once`);
    if (at[0]! < lastItem) throw new Failure(`turn ${turnId} sent ${method} before its last item notification (${methods[lastItem]})`);
    if (terminal === -1 || at[0]! > terminal)
      throw new Failure(
        `turn ${turnId} sent ${method} ${terminal === -1 ? "without a terminal notification" : "after its terminal notification"}`,
      );
  }
}

const invited: Scenario = {
  name: "an invite and a wallet card at the end of a turn",
  checks: ["TURN-ORDER-SURFACED-LAST", "TURN-INVITE-PRIVATE", "TURN-INVITE-NOT-TO-MODEL"],
  async run(ctx) {
    const target = `U${ctx.token.slice(-6)}`;
    const script = ctx.script([
      { reply: { toolCalls: [{ tool: ctx.tool("invite_user"), args: { target_user_id: target } }] } },
      { reply: { toolCalls: [{ tool: ctx.tool("wallet_link"), args: {} }] } },
      { reply: { text: "The invite is on its way." } },
      { reply: { text: "I cannot tell you the code." } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Invite them", {
      ...agentTurn("full_access"),
      private_delivery: { inviter_display: "Certification" },
    });
    const code = await ctx.step("TURN-ORDER-SURFACED-LAST", async () => {
      const end = await ctx.ended(turn.id);
      if (end.turn.status !== "Completed") throw new Failure(`the turn ended ${end.turn.status}`);
      checkLast(ctx, turn.id, ["turn/invite/delivery", "turn/wallet/link_prompt"]);
      const delivery = (named(ctx, turn.id, "turn/invite/delivery")[0]!.params as { delivery: { kind: string; code?: string } }).delivery;
      return delivery.kind === "private" ? delivery.code : undefined;
    });
    await ctx.step("TURN-INVITE-PRIVATE", async () => {
      const live = named(ctx, turn.id, "turn/invite/delivery")[0]!.params as { target_user_id: string; delivery: { kind: string } };
      if (live.target_user_id !== target)
        throw new Failure(`turn/invite/delivery names ${shown(live.target_user_id)}, the model invited ${shown(target)}`);
      if (code === undefined || code === "")
        throw new Failure(
          `the connection that started the turn with private_delivery got delivery ${shown(live.delivery)}, expected the code`,
        );
      const { events } = await ctx.client.turnItems({ thread_id: thread.id, turn_id: turn.id });
      const replayed = events.filter((e) => e.method === "turn/invite/delivery").map((e) => (e.params as { delivery?: unknown }).delivery);
      if (JSON.stringify(replayed) !== JSON.stringify([{ kind: "redacted" }]))
        throw new Failure(`turn/items replays the delivery as ${shown(replayed)}, expected [{"kind":"redacted"}]`);
      if (JSON.stringify(events).includes(code)) throw new Failure("turn/items holds the invite's code");
    });
    await ctx.step("TURN-INVITE-NOT-TO-MODEL", async () => {
      if (code === undefined) throw new Failure("no code was delivered to look for");
      const next = await ctx.startTurn(thread.id, "What was the code?", agentTurn("full_access"));
      await ctx.ended(next.id);
      const sent = script.calls.map((call, i) => [i + 1, JSON.stringify(call)] as const).filter(([, text]) => text.includes(code));
      if (sent.length)
        throw new Failure(`the model was sent the invite's code in call${sent.length === 1 ? "" : "s"} ${sent.map(([n]) => n).join(", ")}`);
      if (script.calls.length < 4)
        throw new Failure(`the model was called ${script.calls.length} times, expected 4 (the second turn included)`);
    });
  },
};

const noChannel: Scenario = {
  name: "an invite without a private channel",
  checks: ["TURN-INVITE-NO-CHANNEL"],
  async run(ctx) {
    const script = ctx.script([
      { reply: { toolCalls: [{ tool: ctx.tool("invite_user"), args: { target_user_id: `U${ctx.token.slice(-5)}` } }] } },
      { reply: { text: "No invite." } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Invite them", agentTurn("full_access"));
    await ctx.step("TURN-INVITE-NO-CHANNEL", async () => {
      await ctx.ended(turn.id);
      if (named(ctx, turn.id, "turn/invite/delivery").length)
        throw new Failure("a turn started without private_delivery sent turn/invite/delivery");
      const statuses = callStatuses(ctx, turn.id);
      if (JSON.stringify(statuses) !== '["failed"]') throw new Failure(`the invite_user call ended ${shown(statuses)}, expected failed`);
      const told = script.calls[1]?.messages.find((m) => m.role === "tool");
      if (!told) throw new Failure("the model was not given a result for the invite_user call");
    });
  },
};

const wallet: Scenario = {
  name: "the wallet cards",
  checks: ["TURN-WALLET-PROMPTS"],
  async run(ctx) {
    ctx.script([
      { reply: { toolCalls: [{ tool: ctx.tool("wallet_link"), args: {} }] } },
      { reply: { toolCalls: [{ tool: ctx.tool("wallet_update_limit"), args: { new_limit: "20" } }] } },
      { reply: { toolCalls: [{ tool: ctx.tool("wallet_unlink"), args: {} }] } },
      { reply: { text: "Cards are on their way." } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Wallet things", agentTurn("full_access"));
    await ctx.step("TURN-WALLET-PROMPTS", async () => {
      await ctx.ended(turn.id);
      const links = named(ctx, turn.id, "turn/wallet/link_prompt").map((n) => n.params as { link_url: string | null; requested: boolean });
      const requested = links.filter((l) => l.requested);
      if (requested.length !== 1)
        throw new Failure(`the wallet_link call surfaced ${requested.length} link prompts with requested true, expected 1`);
      if (requested[0]!.link_url !== null && !URL_PATTERN.test(requested[0]!.link_url))
        throw new Failure(`link_url is ${shown(requested[0]!.link_url)}, expected null or an http(s) URL`);
      const statuses = callStatuses(ctx, turn.id);
      if (statuses.length !== 3) throw new Failure(`the turn completed ${statuses.length} tool calls, expected 3`);
      const updates = named(ctx, turn.id, "turn/wallet/update_prompt").map((n) => n.params as { update_url: string; new_limit: string });
      if (statuses[1] === "completed") {
        if (updates.length !== 1 || updates[0]!.new_limit !== "20" || !URL_PATTERN.test(updates[0]!.update_url))
          throw new Failure(
            `wallet_update_limit completed with update prompts ${shown(updates)}, expected one for "20" with an http(s) URL`,
          );
      } else if (updates.length) throw new Failure("wallet_update_limit failed yet surfaced an update prompt");
      const revokes = named(ctx, turn.id, "turn/wallet/revoke_prompt").map((n) => n.params as { revoke_url: string });
      if (statuses[2] === "completed") {
        if (revokes.length !== 1 || !URL_PATTERN.test(revokes[0]!.revoke_url))
          throw new Failure(`wallet_unlink completed with revoke prompts ${shown(revokes)}, expected one with an http(s) URL`);
      } else if (revokes.length) throw new Failure("wallet_unlink failed yet surfaced a revoke prompt");
      const stray = ctx.ofTurn(turn.id).filter((n) => SURFACED.has(n.method) && n.method === "turn/invite/delivery");
      if (stray.length) throw new Failure("a turn that minted no invite sent turn/invite/delivery");
    });
  },
};

export const surfacedScenarios: readonly Scenario[] = [invited, noChannel, wallet];
