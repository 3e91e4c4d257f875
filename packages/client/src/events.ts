/**
 * The high-level events of a streaming turn: one per step a user would notice (text
 * arriving, a tool starting and producing output, an approval to give, the turn failing
 * or ending), read from the turn's notifications. Every field is a wire value from the
 * generated types; only the grouping is the SDK's own.
 */
import type {
  ContextCompressedNotification,
  ItemDeltaStream,
  Turn,
  TurnFailure,
  TurnItem,
  TurnPermissionApprovalRequest,
  TurnPermissionApprovalResolution,
  TurnPermissionRequestRespondParams,
  TurnPermissionRequestRespondResponse,
  TurnHandoffStartedNotification,
  TurnWalletLinkPromptNotification,
  TurnWalletRevokePromptNotification,
  TurnWalletUpdatePromptNotification,
  TurnQuestion,
  TurnQuestionResolution,
  TurnQuestionRespondResponse,
  TurnStatus,
  TurnUsage,
} from "@turnspec/protocol/types";
import { deliverInvite, type InviteOutcome, type PrivateEdge } from "./cards.js";
import { accumulateItem, type AccumulatedItems } from "./deltas.js";
import type { TurnNotification } from "./turn-feed.js";

/** How an approval can be answered by the client (cancelled and expired are the gateway's). */
export type ApprovalAnswer = TurnPermissionRequestRespondParams["resolution"];

/** Fields every event has: the turn's sequence of the notification it came from. */
interface Base {
  readonly sequence: number;
}

export type TurnStreamEvent =
  /** Answer text arrived; `text` is the message so far. */
  | (Base & { readonly type: "text_delta"; readonly itemId: string; readonly delta: string; readonly text: string })
  /** A reasoning item, whole. */
  | (Base & { readonly type: "reasoning"; readonly itemId: string; readonly text: string })
  /** A tool call started. `name` is the tool's name when the item carries one, else the item's type (e.g. commandExecution). */
  | (Base & { readonly type: "tool_started"; readonly name: string; readonly item: TurnItem })
  /** Output of a running tool (stdout, stderr, file change output, progress). */
  | (Base & { readonly type: "tool_output"; readonly itemId: string; readonly stream: ItemDeltaStream; readonly delta: string })
  /** A tool call ended; `item` is final (its status says how). */
  | (Base & { readonly type: "tool_completed"; readonly name: string; readonly item: TurnItem })
  /** The turn waits for an answer to this request. `respond` sends it, with the request's resolve token unmodified. */
  | (Base & {
      readonly type: "approval_pending";
      readonly request: TurnPermissionApprovalRequest;
      respond(resolution: ApprovalAnswer): Promise<TurnPermissionRequestRespondResponse>;
    })
  /** A request was answered, cancelled or expired. */
  | (Base & { readonly type: "approval_resolved"; readonly requestId: string; readonly resolution: TurnPermissionApprovalResolution })
  /**
   * The model asked the user a question; the turn waits for the answer. `answer` sends the
   * chosen option with the question's answer token unmodified. `alreadySurfaced` is the
   * gateway's `already_surfaced`, passed through: true when the question was delivered before
   * (a replay, a reconnect, after a restart): render a compact reminder, not a second card.
   */
  | (Base & {
      readonly type: "question_pending";
      readonly turnId: string;
      readonly question: TurnQuestion;
      readonly alreadySurfaced: boolean;
      answer(optionId: string): Promise<TurnQuestionRespondResponse>;
    })
  /** A question was answered (with `optionId`), cancelled with the turn, or expired. */
  | (Base & {
      readonly type: "question_resolved";
      readonly callId: string;
      readonly index: number;
      readonly resolution: TurnQuestionResolution;
      readonly optionId?: string;
    })
  /** The turn delegates to a sub-agent: render "delegating…" rather than going silent. Once per delegation. */
  | (Base & { readonly type: "handoff_started" } & Pick<
        TurnHandoffStartedNotification,
        "child_agent_id" | "child_thread_id" | "child_turn_id" | "reason" | "route_id"
      >)
  /**
   * The turn minted an invite for `targetUserId`. `code` is there only on the connection the
   * turn's owner authorised (turn/start's private_delivery), live; elsewhere, and in replays,
   * `redacted` is true. `deliver` hands the code to the target's direct message only, or tells
   * the inviter and delivers nothing (see deliverInvite). Once per turn, just before `done`.
   */
  | (Base & {
      readonly type: "invite_delivery";
      readonly itemId: string;
      readonly targetUserId: string;
      readonly inviterDisplay: string;
      readonly code?: string;
      readonly redacted: boolean;
      deliver(edge: PrivateEdge): Promise<InviteOutcome>;
    })
  /** The link (or renewal) card's data: render it with walletLinkCard. Once per turn, just before `done`. */
  | (Base & { readonly type: "wallet_link_prompt"; readonly itemId: string } & Pick<
        TurnWalletLinkPromptNotification,
        "link_url" | "renewal" | "requested"
      >)
  /** The spending-cap card's data: render it with walletUpdateCard. Once per turn, just before `done`. */
  | (Base & { readonly type: "wallet_update_prompt"; readonly itemId: string } & Pick<
        TurnWalletUpdatePromptNotification,
        "update_url" | "new_limit"
      >)
  /** The revoke card's data: render it with walletRevokeCard. Once per turn, just before `done`. */
  | (Base & { readonly type: "wallet_revoke_prompt"; readonly itemId: string } & Pick<TurnWalletRevokePromptNotification, "revoke_url">)
  /** The thread's history was compacted for this turn: the first event of the turn's output, before any text. */
  | (Base & { readonly type: "context_compacted" } & Pick<
        ContextCompressedNotification,
        "reason" | "summarized_messages" | "messages_after" | "summary_preview"
      >)
  /** The turn stopped in a recoverable state; `turn/resume` continues it. */
  | (Base & { readonly type: "blocked"; readonly reason: string; readonly recoveryJobId: string })
  /** The turn failed or was interrupted: `kind`, `message` and whether starting the work again may succeed. */
  | (Base & { readonly type: "failed" } & TurnFailure)
  /** Always the last event: the turn ended (or blocked) with this status. */
  | (Base & { readonly type: "done"; readonly status: TurnStatus; readonly turn: Turn; readonly usage?: TurnUsage });

/** Item types that are not tool calls; every other item is one. */
const NOT_TOOLS: ReadonlySet<TurnItem["type"]> = new Set(["userMessage", "agentMessage", "reasoning", "systemEvent"]);

/** The name a UI shows for a tool item. */
export function toolName(item: TurnItem): string {
  return "tool_name" in item && typeof item.tool_name === "string" ? item.tool_name : item.type;
}

/** What the stream needs besides the notification: the items so far and how to answer a request. */
export interface StreamContext {
  readonly respond: (request: TurnPermissionApprovalRequest, resolution: ApprovalAnswer) => Promise<TurnPermissionRequestRespondResponse>;
  readonly answer: (threadId: string, turnId: string, question: TurnQuestion, optionId: string) => Promise<TurnQuestionRespondResponse>;
}

/**
 * The events one notification gives, and the items after it. Pure apart from `respond`,
 * which is only called when the caller answers.
 */
export function streamEventsOf(
  items: AccumulatedItems,
  n: TurnNotification,
  context: StreamContext,
): { items: AccumulatedItems; events: TurnStreamEvent[] } {
  const next = accumulateItem(items, n);
  const sequence = n.params.sequence;
  const events: TurnStreamEvent[] = [];
  switch (n.method) {
    case "item/agent_message/delta": {
      const item = next.items[n.params.item_id];
      events.push({
        type: "text_delta",
        sequence,
        itemId: n.params.item_id,
        delta: n.params.delta,
        text: item?.type === "agentMessage" ? item.text : n.params.delta,
      });
      break;
    }
    case "item/command_execution/output_delta":
    case "item/file_change/output_delta":
    case "item/tool/progress":
      events.push({ type: "tool_output", sequence, itemId: n.params.item_id, stream: n.params.stream, delta: n.params.delta });
      break;
    case "item/started":
      if (!NOT_TOOLS.has(n.params.item.type))
        events.push({ type: "tool_started", sequence, name: toolName(n.params.item), item: n.params.item });
      break;
    case "item/completed": {
      const item = n.params.item;
      if (item.type === "reasoning") events.push({ type: "reasoning", sequence, itemId: item.id, text: item.text });
      else if (!NOT_TOOLS.has(item.type)) events.push({ type: "tool_completed", sequence, name: toolName(item), item });
      break;
    }
    case "turn/permission/request/opened": {
      const request = n.params.request;
      events.push({ type: "approval_pending", sequence, request, respond: (resolution) => context.respond(request, resolution) });
      break;
    }
    case "turn/permission/request/resolved":
      events.push({ type: "approval_resolved", sequence, requestId: n.params.request_id, resolution: n.params.resolution });
      break;
    case "turn/question/opened": {
      const { thread_id: threadId, turn_id: turnId, question } = n.params;
      events.push({
        type: "question_pending",
        sequence,
        turnId,
        question,
        // The gateway decides from its log; the schema requires the field, so no guess is made here.
        alreadySurfaced: n.params.already_surfaced,
        answer: (optionId) => context.answer(threadId, turnId, question, optionId),
      });
      break;
    }
    case "turn/question/resolved":
      events.push({
        type: "question_resolved",
        sequence,
        callId: n.params.call_id,
        index: n.params.index,
        resolution: n.params.resolution,
        ...(n.params.option_id === undefined ? {} : { optionId: n.params.option_id }),
      });
      break;
    case "turn/handoff/started": {
      const { child_agent_id, child_thread_id, child_turn_id, reason, route_id } = n.params;
      events.push({
        type: "handoff_started",
        sequence,
        child_agent_id,
        child_thread_id,
        child_turn_id,
        reason,
        ...(route_id === undefined ? {} : { route_id }),
      });
      break;
    }
    case "turn/invite/delivery": {
      const { item_id: itemId, target_user_id: targetUserId, inviter_display: inviterDisplay, delivery } = n.params;
      const code = delivery.kind === "private" ? delivery.code : undefined;
      const invite = { targetUserId, inviterDisplay, redacted: delivery.kind === "redacted", ...(code === undefined ? {} : { code }) };
      events.push({ type: "invite_delivery", sequence, itemId, ...invite, deliver: (edge) => deliverInvite(invite, edge) });
      break;
    }
    case "turn/wallet/link_prompt":
      events.push({
        type: "wallet_link_prompt",
        sequence,
        itemId: n.params.item_id,
        link_url: n.params.link_url,
        renewal: n.params.renewal,
        requested: n.params.requested,
      });
      break;
    case "turn/wallet/update_prompt":
      events.push({
        type: "wallet_update_prompt",
        sequence,
        itemId: n.params.item_id,
        update_url: n.params.update_url,
        new_limit: n.params.new_limit,
      });
      break;
    case "turn/wallet/revoke_prompt":
      events.push({ type: "wallet_revoke_prompt", sequence, itemId: n.params.item_id, revoke_url: n.params.revoke_url });
      break;
    case "context/compressed": {
      const { reason, summarized_messages, messages_after, summary_preview } = n.params;
      events.push({
        type: "context_compacted",
        sequence,
        reason,
        summarized_messages,
        messages_after,
        ...(summary_preview === undefined ? {} : { summary_preview }),
      });
      break;
    }
    case "turn/blocked":
      events.push({ type: "blocked", sequence, reason: n.params.reason, recoveryJobId: n.params.recovery_job_id });
      events.push({ type: "done", sequence, status: n.params.turn.status, turn: n.params.turn });
      break;
    case "turn/failed":
      events.push({ type: "failed", sequence, ...n.params.error });
      events.push({
        type: "done",
        sequence,
        status: n.params.turn.status,
        turn: n.params.turn,
        ...(n.params.turn.usage ? { usage: n.params.turn.usage } : {}),
      });
      break;
    case "turn/completed":
      events.push({
        type: "done",
        sequence,
        status: n.params.turn.status,
        turn: n.params.turn,
        ...(n.params.usage ? { usage: n.params.usage } : {}),
      });
      break;
    default:
      break;
  }
  return { items: next, events };
}
