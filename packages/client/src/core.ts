/**
 * The part of the client SDK that runs anywhere: no Node built-ins, so the browser entry
 * and the Node entry both re-export it.
 */
export { ProtocolClient, type ClientOptions } from "@turnspec/protocol/client";
export { createInMemoryPair, type Transport } from "@turnspec/rpc";
export { LocalError, RpcError } from "@turnspec/rpc";
export { GatewayConnection, type ConnectionChange, type GatewayConnectionOptions, type ReconnectOptions } from "./connection.js";
export { TurnClientError, type ClientErrorKind } from "./errors.js";
export { accumulateItem, accumulateItems, applyDelta, deltaField, emptyItems, type AccumulatedItems, type DeltaField } from "./deltas.js";
export { streamEventsOf, toolName, type ApprovalAnswer, type TurnStreamEvent } from "./events.js";
export {
  deliverInvite,
  inviteMessage,
  inviteNotDelivered,
  maskInviteCode,
  MASKED_CODE,
  walletLinkCard,
  walletRevokeCard,
  walletUpdateCard,
  type Card,
  type InviteDelivery,
  type InviteOutcome,
  type PrivateEdge,
} from "./cards.js";
export {
  followTurn,
  isTerminal,
  replayedNotifications,
  type FollowOptions,
  type TurnFeed,
  type TurnFeedSink,
  type TurnNotification,
} from "./turn-feed.js";
export { streamExistingTurn, streamTurn, type ResumeStreamParams, type StreamTurnOptions } from "./stream-turn.js";
export {
  foldTurnStatus,
  initialTurnStatus,
  lifecycleWireStatus,
  setWatching,
  turnStatusOf,
  wireStatus,
  type TurnDomainStatus,
  type TurnStatusState,
  type WireTurnStatus,
} from "./status.js";
export { emptyTimeline, reduceTimeline, timelineRows, type TimelineFreshness, type TimelineInput, type TimelineState } from "./timeline.js";
