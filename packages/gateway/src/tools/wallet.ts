/**
 * The wallet tools: `wallet_link` (the caller asks to link or replace a wallet),
 * `wallet_update_limit` (a new daily spending cap, through a one-time ceremony) and
 * `wallet_unlink` (unlinking, with a one-time hard-revoke ceremony for the delegated key).
 * The reference gateway runs no wallet service: the wallet's state and the ceremonies' URLs
 * come from the configuration (its wallet section). Each tool queues the card a wallet
 * service would have the edge show (flows/surfaced.ts), which the turn surfaces once, just
 * before it ends; the tool result tells the model what the user will see.
 */
import { randomBytes } from "node:crypto";
import type { WalletConfig } from "../config.js";
import type { Surfaced } from "../flows/surfaced.js";
import type { ToolResult } from "./tool.js";
import { defineTool } from "./arguments.js";

type Queue = Pick<Surfaced, "queuePrompt">;

const NO_ARGUMENTS = { type: "object", additionalProperties: false, properties: {} } as const;

const UPDATE_PARAMETERS = {
  type: "object",
  additionalProperties: false,
  required: ["new_limit"],
  properties: {
    new_limit: {
      type: "string",
      pattern: "^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,6})?$",
      description: 'The new daily spending cap, in the settlement currency\'s units, as a decimal number (e.g. "20").',
    },
  },
} as const;

const failed = (content: string): ToolResult => ({ ok: false, content, item: { error: { message: content } } });

/** A one-time ceremony URL: the configured one, with a fresh ceremony id. */
function ceremonyUrl(base: string): string {
  const url = new URL(base);
  url.searchParams.set("ceremony", randomBytes(12).toString("base64url"));
  return url.toString();
}

/** The turn and item of a call; undefined outside a turn. */
function callOf(ctx: { readonly turn?: { readonly turn_id: string }; readonly itemId?: string }) {
  return ctx.turn && ctx.itemId ? { turnId: ctx.turn.turn_id, itemId: ctx.itemId } : undefined;
}

/** Queues the link card: the configured URL or null, renewal when the linked wallet is no longer usable. */
function queueLink(queue: Queue, wallet: WalletConfig, turnId: string, itemId: string, requested: boolean): boolean {
  return queue.queuePrompt(turnId, "turn/wallet/link_prompt", {
    item_id: itemId,
    link_url: wallet.linkUrl ?? null,
    renewal: wallet.state === "unusable",
    requested,
  });
}

const ALREADY = "(a card of this kind is already waiting for the end of this turn; it is shown once)";

export function walletTools(queue: Queue, wallet: WalletConfig) {
  const link = defineTool({
    spec: {
      name: "wallet_link",
      description:
        "Show the user a card with a secure link to link (or replace) their wallet, when they ask for it. The card appears after this turn.",
      parameters: NO_ARGUMENTS,
    },
    itemType: "dynamicToolCall",
    describe: () => ({}),
    run(_args, ctx) {
      const call = callOf(ctx);
      if (!call) return Promise.resolve(failed("wallet_link can only run inside a turn"));
      const queued = queueLink(queue, wallet, call.turnId, call.itemId, true);
      const where = wallet.linkUrl
        ? "a secure link to link a wallet"
        : "no link (this deployment has none configured): it points the user at an admin";
      return Promise.resolve({
        ok: true,
        content: `The user is shown a card after this turn with ${where}.${queued ? "" : ` ${ALREADY}`}`,
        item: {},
      });
    },
  });

  const update = defineTool({
    spec: {
      name: "wallet_update_limit",
      description:
        "Start a one-time ceremony that changes the user's daily spending cap to new_limit. The user confirms it through a card shown after this turn.",
      parameters: UPDATE_PARAMETERS,
    },
    itemType: "dynamicToolCall",
    describe: () => ({}),
    run(args, ctx) {
      const call = callOf(ctx);
      if (!call) return Promise.resolve(failed("wallet_update_limit can only run inside a turn"));
      if (wallet.state !== "usable") {
        // A paid action without a usable wallet: the link (or renewal) card, not asked for by the user.
        queueLink(queue, wallet, call.turnId, call.itemId, false);
        return Promise.resolve(
          failed(
            `the spending cap was not changed: the user has ${wallet.state === "none" ? "no linked wallet" : "a linked wallet that is no longer usable"}; they are shown a card to ${wallet.state === "none" ? "link one" : "renew access"} after this turn`,
          ),
        );
      }
      if (!wallet.updateUrl)
        return Promise.resolve(
          failed("the spending cap was not changed: this gateway has no spending-limit-update ceremony configured (wallet.update_url)"),
        );
      const queued = queue.queuePrompt(call.turnId, "turn/wallet/update_prompt", {
        item_id: call.itemId,
        update_url: ceremonyUrl(wallet.updateUrl),
        new_limit: args.new_limit,
      });
      if (!queued) return Promise.resolve(failed(`no new ceremony was started ${ALREADY}`));
      return Promise.resolve({
        ok: true,
        content: `A ceremony to set the daily spending cap to ${args.new_limit} was started; the user confirms it through a card shown after this turn.`,
        item: {},
      });
    },
  });

  const unlink = defineTool({
    spec: {
      name: "wallet_unlink",
      description:
        "Unlink the user's wallet and start the one-time ceremony that revokes its delegated key. The user completes it through a card shown after this turn.",
      parameters: NO_ARGUMENTS,
    },
    itemType: "dynamicToolCall",
    describe: () => ({}),
    run(_args, ctx) {
      const call = callOf(ctx);
      if (!call) return Promise.resolve(failed("wallet_unlink can only run inside a turn"));
      if (wallet.state === "none") return Promise.resolve(failed("nothing was unlinked: the user has no linked wallet"));
      if (!wallet.revokeUrl)
        return Promise.resolve(failed("nothing was unlinked: this gateway has no hard-revoke ceremony configured (wallet.revoke_url)"));
      const queued = queue.queuePrompt(call.turnId, "turn/wallet/revoke_prompt", {
        item_id: call.itemId,
        revoke_url: ceremonyUrl(wallet.revokeUrl),
      });
      if (!queued) return Promise.resolve(failed(`no new ceremony was started ${ALREADY}`));
      return Promise.resolve({
        ok: true,
        content: "The wallet was unlinked; the user revokes its delegated key through a card shown after this turn.",
        item: {},
      });
    },
  });

  return [link, update, unlink];
}
