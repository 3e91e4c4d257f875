/**
 * The cards an edge shows for what a turn surfaces just before it ends, written once so
 * that every edge says the same thing: the invite's message to its target (and, when it
 * cannot be delivered privately, the notice to the inviter), and the wallet cards. The
 * events carry data only; the words are here.
 *
 * An invite's code is a secret: deliverInvite hands it to the target's direct message and
 * nowhere else, and fails closed, telling the inviter and delivering nothing, when this
 * connection was not given the code or cannot reach the target privately.
 */
import type {
  TurnWalletLinkPromptNotification,
  TurnWalletRevokePromptNotification,
  TurnWalletUpdatePromptNotification,
} from "@turnspec/protocol/types";

/** A card an edge renders: a title, a body and at most one button. */
export interface Card {
  readonly title: string;
  readonly body: string;
  readonly button?: { readonly label: string; readonly url: string };
}

/** What an invite delivery event carries (the SDK's invite_delivery event). */
export interface InviteDelivery {
  readonly targetUserId: string;
  readonly inviterDisplay: string;
  /** The single-use code: present only on the connection authorised for private delivery, and only live. */
  readonly code?: string;
  /** True when the gateway withheld the code from this connection (another edge delivers it, or this is a replay). */
  readonly redacted: boolean;
}

/** What an edge gives deliverInvite: a way to reach a person privately, and a way to tell the inviter. */
export interface PrivateEdge {
  /**
   * Opens the direct message of `userId` and returns a function that posts there, or
   * undefined when the edge cannot reach that person privately. Never a shared channel.
   */
  openDirectMessage(userId: string): Promise<((text: string) => Promise<void>) | undefined>;
  /** Tells the inviter (in the conversation the turn ran in) what happened. No code is ever passed here. */
  tellInviter(text: string): Promise<void>;
}

/** How an invite delivery ended. */
export type InviteOutcome = "delivered" | "not_delivered";

/** The message the target reads in their direct message. */
export function inviteMessage(invite: Pick<InviteDelivery, "inviterDisplay">, code: string): string {
  const who = invite.inviterDisplay.trim() === "" ? "You have been invited" : `${invite.inviterDisplay.trim()} invited you`;
  return `${who}. Your single-use invite code is: ${code}\nIt works once; do not share it.`;
}

/** The notice the inviter reads when the code could not be delivered privately from here. */
export function inviteNotDelivered(invite: Pick<InviteDelivery, "targetUserId" | "redacted">): string {
  return invite.redacted
    ? `The invite for ${invite.targetUserId} was not delivered from here: this client was not given its code. Invite them from the client that can message them directly.`
    : `The invite for ${invite.targetUserId} was not delivered: they could not be reached by direct message. Nothing was posted anywhere else.`;
}

/** Delivers an invite's code to its target's direct message only; otherwise tells the inviter and delivers nothing. */
export async function deliverInvite(invite: InviteDelivery, edge: PrivateEdge): Promise<InviteOutcome> {
  if (invite.code === undefined || invite.redacted) {
    await edge.tellInviter(inviteNotDelivered(invite));
    return "not_delivered";
  }
  let post: ((text: string) => Promise<void>) | undefined;
  try {
    post = await edge.openDirectMessage(invite.targetUserId);
  } catch {
    post = undefined;
  }
  if (post === undefined) {
    await edge.tellInviter(inviteNotDelivered(invite));
    return "not_delivered";
  }
  await post(inviteMessage(invite, invite.code));
  await edge.tellInviter(`The invite for ${invite.targetUserId} was sent to them by direct message.`);
  return "delivered";
}

/** The link card: a secure link when the deployment has one, else a pointer to an admin. */
export function walletLinkCard(prompt: Pick<TurnWalletLinkPromptNotification, "link_url" | "renewal" | "requested">): Card {
  const title = prompt.requested ? "Link a wallet" : prompt.renewal ? "Renew wallet access" : "Link a wallet to continue";
  const body = prompt.requested
    ? "Here is a secure link to link (or replace) your wallet."
    : prompt.renewal
      ? "Your linked wallet can no longer pay for this: its access expired or was revoked. Renew access to continue."
      : "This needs a linked wallet, and you have none yet. Set one up to continue.";
  if (prompt.link_url === null) return { title, body: `${body} Ask an admin of this workspace for the wallet link.` };
  return { title, body, button: { label: prompt.renewal && !prompt.requested ? "Renew access" : "Link a wallet", url: prompt.link_url } };
}

/** The spending-cap card. */
export function walletUpdateCard(prompt: Pick<TurnWalletUpdatePromptNotification, "update_url" | "new_limit">): Card {
  return {
    title: "Update spending cap",
    body: `Confirm a new daily spending cap of ${prompt.new_limit}. The link works once.`,
    button: { label: "Update spending cap", url: prompt.update_url },
  };
}

/** The revoke card. */
export function walletRevokeCard(prompt: Pick<TurnWalletRevokePromptNotification, "revoke_url">): Card {
  return {
    title: "Revoke access",
    body: "Your wallet was unlinked. Revoke the access it had delegated to finish. The link works once.",
    button: { label: "Revoke access", url: prompt.revoke_url },
  };
}

/** What a masked invite code reads as: enough to show there was one, nothing of it. */
export const MASKED_CODE = "••••••";

/**
 * A JSON-RPC message with an invite's code masked: for anything that shows or keeps messages
 * (an inspector's frame list and export, a transcript). Every other message is returned as
 * it is; the masked one is still valid against the schemas.
 */
export function maskInviteCode<T>(message: T): T {
  const m = message as { method?: unknown; params?: { delivery?: { kind?: unknown; code?: unknown } } } | null;
  if (m === null || typeof m !== "object" || m.method !== "turn/invite/delivery" || m.params?.delivery?.kind !== "private") return message;
  return { ...m, params: { ...m.params, delivery: { ...m.params.delivery, code: MASKED_CODE } } } as T;
}
