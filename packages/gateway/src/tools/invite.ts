/**
 * `invite_user`: the model invites a person (named by the provider-native user id of a
 * mention) and the gateway mints a single-use invite code for them. The code never reaches
 * the model: the tool result says only that the invite was minted, and the turn surfaces
 * the code just before it ends, to the connection its owner authorised for private
 * delivery alone (flows/surfaced.ts). Without such a connection nothing is minted.
 */
import type { InviteRefusal, Surfaced } from "../flows/surfaced.js";
import { defineTool } from "./arguments.js";

const PARAMETERS = {
  type: "object",
  additionalProperties: false,
  required: ["target_user_id"],
  properties: {
    target_user_id: {
      type: "string",
      minLength: 1,
      maxLength: 256,
      description: "The invited person's user id, as the mention in the conversation gives it.",
    },
  },
} as const;

const REFUSALS: Record<InviteRefusal, string> = {
  no_private_channel:
    "no invite was minted: this conversation has no private channel to deliver an invite code through (the turn was not started with private_delivery, or that connection closed); tell the user to invite from a client that can message people directly",
  already_minted: "no invite was minted: this turn already minted one; one invite per turn",
};

export function inviteTool(surfaced: Pick<Surfaced, "mintInvite">) {
  return defineTool({
    spec: {
      name: "invite_user",
      description:
        "Invite a person by their user id. The gateway mints a single-use invite code and the client delivers it to that person's direct message after this turn; the code is never shown to you or in the conversation.",
      parameters: PARAMETERS,
    },
    itemType: "dynamicToolCall",
    describe: () => ({}),
    run(args, ctx) {
      const turn = ctx.turn;
      if (!turn || !ctx.itemId)
        return Promise.resolve({ ok: false, content: "invite_user can only run inside a turn", item: { error: { message: "no turn" } } });
      const target = args.target_user_id.trim();
      if (target === "")
        return Promise.resolve({
          ok: false,
          content: "arguments for invite_user: target_user_id is blank",
          item: { error: { message: "target_user_id is blank" } },
        });
      const minted = surfaced.mintInvite(turn.turn_id, ctx.itemId, target);
      if (!minted.ok)
        return Promise.resolve({ ok: false, content: REFUSALS[minted.refusal], item: { error: { message: REFUSALS[minted.refusal] } } });
      return Promise.resolve({
        ok: true,
        content: `Invite minted for ${target}. Its code is delivered to them privately after this turn; it is not shown here, and you cannot see or repeat it.`,
        item: {},
      });
    },
  });
}
