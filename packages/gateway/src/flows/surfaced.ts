/**
 * What a turn surfaces just before its terminal notification: the invite it minted
 * (turn/invite/delivery) and the wallet cards its wallet tools asked for
 * (turn/wallet/link_prompt, update_prompt, revoke_prompt), each at most once per turn,
 * after the turn's last item. The tools queue them here while the turn runs; the lifecycle
 * surfaces them when it ends the turn.
 *
 * An invite's code is the one secret of these events, and it is never stored: the log (so
 * the store, every connection but one, every turn/items replay and every other instance)
 * holds the delivery redacted. The code is kept in memory from the tool call until the turn
 * ends, and then sent, in the frame of that same event, to the connection the turn's owner
 * authorised with turn/start's private_delivery, if it is still open, and to nobody else.
 */
import { randomBytes } from "node:crypto";
import type { NotificationParamsOf } from "@turnspec/protocol/registry";
import type { TurnInviteDeliveryNotification } from "@turnspec/protocol/types";
import { notificationIssues, strictNotificationValidators } from "@turnspec/protocol/validators";
import type { EventParams, TurnLog } from "../log/turn-log.js";
import type { Connection, Connections } from "../views/connections.js";

/** The connection a turn's owner authorised to receive its private deliveries, and the owner's display name. */
interface PrivateChannel {
  readonly connection: Connection;
  readonly inviterDisplay: string;
}

/** An invite minted by a turn, waiting for the turn's end. */
interface PendingInvite {
  readonly itemId: string;
  readonly targetUserId: string;
  readonly code: string;
  readonly channel: PrivateChannel;
}

type WalletPrompt = "turn/wallet/link_prompt" | "turn/wallet/update_prompt" | "turn/wallet/revoke_prompt";

/** What a turn has queued, in the order it is surfaced. */
interface Pending {
  invite?: PendingInvite;
  prompts: Map<WalletPrompt, EventParams<WalletPrompt>>;
}

/** The order the events are surfaced in: the invite first, then the wallet cards. */
const WALLET_ORDER: readonly WalletPrompt[] = ["turn/wallet/link_prompt", "turn/wallet/update_prompt", "turn/wallet/revoke_prompt"];

export interface SurfacedPorts {
  readonly log: Pick<TurnLog, "record" | "publish" | "deliver">;
  readonly connections: Pick<Connections, "isOpen" | "sendPrivately">;
}

/** Why an invite was not minted, for the model. */
export type InviteRefusal = "no_private_channel" | "already_minted";

export class Surfaced {
  private readonly channels = new Map<string, PrivateChannel>();
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly ports: SurfacedPorts) {}

  /** turn/start's private_delivery: the connection that started the turn receives its private deliveries, and no other. */
  authorise(turnId: string, connection: Connection, inviterDisplay: string): void {
    this.channels.set(turnId, { connection, inviterDisplay });
  }

  /**
   * Mints an invite for the turn's end: its code exists only here until the turn surfaces it.
   * Refused (nothing minted) when no open connection of the turn may receive it privately, or
   * when the turn already minted one.
   */
  mintInvite(
    turnId: string,
    itemId: string,
    targetUserId: string,
  ): { readonly ok: true } | { readonly ok: false; readonly refusal: InviteRefusal } {
    const channel = this.channels.get(turnId);
    if (channel === undefined || !this.ports.connections.isOpen(channel.connection)) return { ok: false, refusal: "no_private_channel" };
    const pending = this.pendingOf(turnId);
    if (pending.invite) return { ok: false, refusal: "already_minted" };
    pending.invite = { itemId, targetUserId, code: randomBytes(15).toString("base64url"), channel };
    return { ok: true };
  }

  /** Queues a wallet card for the turn's end; false when the turn already has one of this kind (the first is kept). */
  queuePrompt<P extends WalletPrompt>(turnId: string, method: P, params: EventParams<P>): boolean {
    const pending = this.pendingOf(turnId);
    if (pending.prompts.has(method)) return false;
    pending.prompts.set(method, params);
    return true;
  }

  /**
   * Publishes what the turn queued, each once, and forgets the turn: called by the lifecycle
   * after the turn's last item and just before its terminal notification.
   */
  surface(threadId: string, turnId: string): void {
    const pending = this.pending.get(turnId);
    this.forget(turnId);
    if (pending === undefined) return;
    if (pending.invite) this.deliverInvite(threadId, turnId, pending.invite);
    for (const method of WALLET_ORDER) {
      const params = pending.prompts.get(method);
      if (params) this.ports.log.publish(threadId, turnId, method, params);
    }
  }

  /** Drops what a turn queued and its authorisation (the turn ended, or crashed). */
  forget(turnId: string): void {
    this.pending.delete(turnId);
    this.channels.delete(turnId);
  }

  /**
   * The delivery is recorded redacted; the frame of that event that goes to the authorised
   * connection carries the code, checked against the schema as every event is.
   */
  private deliverInvite(threadId: string, turnId: string, invite: PendingInvite): void {
    const event = this.ports.log.record(threadId, turnId, "turn/invite/delivery", {
      item_id: invite.itemId,
      target_user_id: invite.targetUserId,
      inviter_display: invite.channel.inviterDisplay,
      delivery: { kind: "redacted" },
    });
    if (this.ports.connections.isOpen(invite.channel.connection)) {
      const params: TurnInviteDeliveryNotification = {
        ...(event.params as unknown as NotificationParamsOf<"turn/invite/delivery">),
        delivery: { kind: "private", code: invite.code },
      };
      if (!strictNotificationValidators["turn/invite/delivery"](params)) {
        // The issues name fields, never values: the code stays out of the message.
        throw new Error(
          `the gateway built an invalid turn/invite/delivery: ${(notificationIssues("turn/invite/delivery", params, "strict") ?? []).map((i) => i.pointer).join(", ")}`,
        );
      }
      this.ports.connections.sendPrivately(
        event,
        invite.channel.connection,
        JSON.stringify({ jsonrpc: "2.0", method: "turn/invite/delivery", params }),
      );
    }
    this.ports.log.deliver(event);
  }

  private pendingOf(turnId: string): Pending {
    let pending = this.pending.get(turnId);
    if (pending === undefined) this.pending.set(turnId, (pending = { prompts: new Map() }));
    return pending;
  }
}
