/**
 * What a turn surfaces just before it ends: the invite it minted and the wallet cards, once
 * each, after its last item and before its terminal notification. The invite's code goes to
 * the connection that started the turn with private_delivery and nowhere else: not to a
 * second connection following the thread, not into the log (so not into turn/items), not to
 * the model, not into the gateway's diagnostics.
 */
import { afterEach, describe, expect, it } from "vitest";
import { orderingRules } from "../../generated/ordering.js";
import { ProtocolClient } from "../../generated/client.js";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnStartParams } from "../../generated/types.js";
import { createInMemoryPair, createOrderingEngine } from "../../packages/rpc/src/index.js";
import type { ModelProvider, ProviderRequest, ProviderStream } from "../../packages/gateway/src/providers/provider.js";
import { ScriptedProvider } from "../../packages/gateway/src/providers/scripted.js";
import { startStrictClient } from "../../bench/strict-client.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
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

function violations(ns: readonly AnyNotification[]) {
  const engine = createOrderingEngine(orderingRules);
  for (const n of ns) engine.accept({ jsonrpc: "2.0", method: n.method, params: n.params }, "server_to_client");
  engine.end({ openTurnsAllowed: true });
  return engine.violations.map((v) => v.message);
}

const SURFACED = ["turn/invite/delivery", "turn/wallet/link_prompt", "turn/wallet/update_prompt", "turn/wallet/revoke_prompt"];
const WALLET = {
  state: "usable",
  link_url: "https://wallet.example/link",
  update_url: "https://wallet.example/update?v=1",
  revoke_url: "https://wallet.example/revoke",
} as const;

describe("a turn that mints an invite and asks for every wallet card", () => {
  it("surfaces each once after its last item, the code to the authorised connection only", async () => {
    const provider = new RecordingScripted();
    const diagnostics: string[] = [];
    h = await startHarness({ providers: new Map([["scripted", provider]]), config: { wallet: WALLET }, log: (m) => diagnostics.push(m) });
    const thread = await h.thread();
    // A second client follows the same thread.
    const [clientSide, serverSide] = createInMemoryPair();
    h.gateway.connect(serverSide);
    const other = await startStrictClient(clientSide);
    await other.client.threadGet({ thread_id: thread });

    const steps = script(
      { tool: "invite_user", args: { target_user_id: "U042" } },
      { tool: "wallet_link", args: {} },
      { tool: "wallet_update_limit", args: { new_limit: "20" } },
      { tool: "wallet_unlink", args: {} },
      { say: "Done." },
    );
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_inv",
      input: text(steps),
      private_delivery: { inviter_display: "Ada" },
    });
    expect(end.method).toBe("turn/completed");
    await other.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_inv");

    const mine = ofTurn(h.received, "trn_inv");
    const methods = mine.map((n) => n.method);
    // After the last item, in order, once each, then the terminal notification.
    expect(methods.slice(-5)).toEqual([...SURFACED, "turn/completed"]);
    expect(methods.lastIndexOf("item/completed")).toBeLessThan(methods.indexOf("turn/invite/delivery"));
    expect(violations(h.received)).toEqual([]);

    const invite = mine.find((n) => n.method === "turn/invite/delivery")!.params as {
      delivery: { kind: string; code?: string };
      target_user_id: string;
      inviter_display: string;
    };
    expect(invite).toMatchObject({ target_user_id: "U042", inviter_display: "Ada", delivery: { kind: "private" } });
    const code = invite.delivery.code!;
    expect(code.length).toBeGreaterThanOrEqual(16);

    const link = mine.find((n) => n.method === "turn/wallet/link_prompt")!.params;
    expect(link).toMatchObject({ link_url: WALLET.link_url, renewal: false, requested: true });
    const update = mine.find((n) => n.method === "turn/wallet/update_prompt")!.params as { update_url: string; new_limit: string };
    expect(update.new_limit).toBe("20");
    expect(update.update_url).toMatch(/^https:\/\/wallet\.example\/update\?v=1&ceremony=[\w-]{16}$/);
    const revoke = mine.find((n) => n.method === "turn/wallet/revoke_prompt")!.params as { revoke_url: string };
    expect(revoke.revoke_url).toMatch(/^https:\/\/wallet\.example\/revoke\?ceremony=[\w-]{16}$/);

    // The other connection: the same event at the same sequence, redacted.
    const theirs = ofTurn(other.received, "trn_inv");
    expect(theirs.map((n) => n.method)).toEqual(methods);
    expect(theirs.find((n) => n.method === "turn/invite/delivery")!.params).toEqual({ ...invite, delivery: { kind: "redacted" } });
    expect(JSON.stringify(other.received)).not.toContain(code);
    expect(violations(other.received)).toEqual([]);

    // Replays say it was redacted, to either connection; the store never held the code.
    for (const c of [h.client, other.client]) {
      const { events } = await c.turnItems({ thread_id: thread, turn_id: "trn_inv" });
      expect(events.find((e) => e.method === "turn/invite/delivery")!.params).toMatchObject({ delivery: { kind: "redacted" } });
      expect(JSON.stringify(events)).not.toContain(code);
    }
    expect(JSON.stringify(h.store.events("trn_inv", 0))).not.toContain(code);
    // Nor the model, nor the diagnostics; the model was told the invite was minted.
    expect(JSON.stringify(provider.requests)).not.toContain(code);
    expect(JSON.stringify(provider.requests)).toContain("Invite minted for U042");
    expect(diagnostics.join("\n")).not.toContain(code);
    await other.client.close();
  });
});

describe("an invite without a private channel", () => {
  it("mints nothing: the call fails, the model is told why, and no delivery is surfaced", async () => {
    const provider = new RecordingScripted();
    h = await startHarness({ providers: new Map([["scripted", provider]]) });
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_none",
      input: text(script({ tool: "invite_user", args: { target_user_id: "U7" } }, { say: "Could not." })),
    });
    expect(end.method).toBe("turn/completed");
    const mine = ofTurn(h.received, "trn_none");
    expect(mine.map((n) => n.method)).not.toContain("turn/invite/delivery");
    const call = mine.find((n) => n.method === "item/completed" && n.params.item.type === "dynamicToolCall")!.params as {
      item: { status: string };
    };
    expect(call.item.status).toBe("failed");
    expect(JSON.stringify(provider.requests.at(-1)!.messages)).toContain("no private channel");
  });

  it("mints one invite per turn: a second call fails", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const steps = script(
      { tool: "invite_user", args: { target_user_id: "U1" } },
      { tool: "invite_user", args: { target_user_id: "U2" } },
      { say: "ok" },
    );
    await h.runTurn({ thread_id: thread, turn_id: "trn_two", input: text(steps), private_delivery: { inviter_display: "" } });
    const mine = ofTurn(h.received, "trn_two");
    const invites = mine.filter((n) => n.method === "turn/invite/delivery");
    expect(invites.map((n) => (n.params as { target_user_id: string }).target_user_id)).toEqual(["U1"]);
    const calls = mine
      .filter((n) => n.method === "item/completed" && n.params.item.type === "dynamicToolCall")
      .map((n) => (n.params as { item: { status: string } }).item.status);
    expect(calls).toEqual(["completed", "failed"]);
  });
});

describe("the wallet cards", () => {
  it("without a link URL: the link card carries link_url null", async () => {
    h = await startHarness();
    const thread = await h.thread();
    await h.runTurn({ thread_id: thread, turn_id: "trn_null", input: text(script({ tool: "wallet_link", args: {} }, { say: "ok" })) });
    const link = ofTurn(h.received, "trn_null").filter((n) => n.method === "turn/wallet/link_prompt");
    expect(link.map((n) => n.params)).toEqual([expect.objectContaining({ link_url: null, renewal: false, requested: true })]);
  });

  it("a paid action with an unusable wallet: the renewal card, not requested, and the update refused", async () => {
    h = await startHarness({ config: { wallet: { ...WALLET, state: "unusable" } } });
    const thread = await h.thread();
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_renew",
      input: text(script({ tool: "wallet_update_limit", args: { new_limit: "5.5" } }, { say: "ok" })),
    });
    const mine = ofTurn(h.received, "trn_renew");
    expect(mine.filter((n) => n.method === "turn/wallet/link_prompt").map((n) => n.params)).toEqual([
      expect.objectContaining({ link_url: WALLET.link_url, renewal: true, requested: false }),
    ]);
    expect(mine.map((n) => n.method)).not.toContain("turn/wallet/update_prompt");
  });

  it("without the ceremonies' URLs: update and unlink fail and surface nothing", async () => {
    h = await startHarness({ config: { wallet: { state: "usable" } } });
    const thread = await h.thread();
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_bare",
      input: text(script({ tool: "wallet_update_limit", args: { new_limit: "9" } }, { tool: "wallet_unlink", args: {} }, { say: "ok" })),
    });
    const mine = ofTurn(h.received, "trn_bare");
    expect(mine.map((n) => n.method).filter((m) => SURFACED.includes(m))).toEqual([]);
    const calls = mine
      .filter((n) => n.method === "item/completed" && n.params.item.type === "dynamicToolCall")
      .map((n) => (n.params as { item: { status: string } }).item.status);
    expect(calls).toEqual(["failed", "failed"]);
  });
});

describe("turn/start's private_delivery", () => {
  it("refuses unknown fields in it", async () => {
    h = await startHarness();
    const thread = await h.thread();
    const [clientSide, serverSide] = createInMemoryPair();
    h.gateway.connect(serverSide);
    const loose = new ProtocolClient(clientSide, { validateOutgoing: false });
    await loose.start();
    const params = {
      thread_id: thread,
      turn_id: "trn_bad",
      input: text("hi"),
      private_delivery: { inviter_display: "Ada", channel: "dm" },
    };
    await expect(loose.turnStart(params as unknown as TurnStartParams)).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining("private_delivery"),
    });
    await loose.close();
  });
});
