/**
 * The narrow ports the engine's collaborators receive. Each collaborator (the turn runner,
 * approvals, recovery jobs, spawn_agent) is built from an explicit struct of the functions
 * it calls, never from the gateway: none of them can reach what it was not given, and none
 * imports the composition root (gateway.ts).
 */
import type {
  AgentActorRef,
  PromptManifest,
  ThreadStartParams,
  Turn,
  TurnFailure,
  TurnPermissionMode,
  TurnStartParams,
  TurnUsage,
} from "@turnspec/protocol/types";
import type { ThreadRecord } from "../store/store.js";
import type { TurnState } from "../log/fold.js";
import type { TurnLog } from "../log/turn-log.js";

/** Writing to the turn log: record, publish (publishDelta for deltas), audit. */
export type EventLog = Pick<TurnLog, "record" | "publish" | "publishDelta" | "audit">;

/** Reading a turn's state (the memoised fold of its log). */
export interface TurnReader {
  turnState(turnId: string): TurnState | undefined;
}

/** The gateway's clock. */
export interface Clock {
  now(): Date;
  nowIso(): string;
}

/** Looking a thread up; throws thread_not_found for an unknown id. */
export interface ThreadLookup {
  thread(threadId: string): ThreadRecord;
}

/** The id the next item of a turn gets. */
export interface ItemIds {
  nextItemId(turnId: string): string;
}

/** How a turn ends, with the manifest of its last compiled prompt to record on the final snapshot. */
export type TurnOutcome = ({ status: "Completed"; usage: TurnUsage } | { status: "Failed" | "Interrupted"; error: TurnFailure; usage: TurnUsage }) & {
  readonly promptManifest?: PromptManifest;
};

/** The turn a child turn is started from (spawn_agent), and the mode the child asked for. */
export interface ParentTurn {
  readonly turn: Turn;
  readonly depth: number;
  readonly requestedMode?: TurnPermissionMode;
  /** Who authors the child turn: the agent, as it presents itself now (kept with the turn). */
  readonly actor?: AgentActorRef;
}

/** The turn lifecycle, as a collaborator may drive it. */
export interface Lifecycle {
  /** Ends a turn with a terminal notification carrying its final snapshot. */
  finish(threadId: string, turnId: string, outcome: TurnOutcome): Turn;
  /** Creates and starts a turn (a child turn when `parent` is given). */
  startTurn(params: TurnStartParams, parent?: ParentTurn): { turn: Turn; done: Promise<void> };
  /** Interrupts a turn and waits until it has ended. */
  cancelTurn(turnId: string, reason: string): Promise<void>;
}

/** Creating a thread. */
export interface ThreadCreation {
  createThread(params: Pick<ThreadStartParams, "workspace_id" | "cwd" | "model_provider" | "model" | "mode">): ThreadRecord;
}

/**
 * Deciding a request's resolution (a permission request, a question) when several
 * instances share the store; on a store one process owns, every answer is taken here.
 */
export interface ResolutionPorts {
  /** Whether another instance runs the turn: its waiting call is there, and an answer here is recorded for it. */
  runsElsewhere(turnId: string): boolean;
  /** True for the one caller, on any instance, that records the resolution of `subject`; false once another did. */
  claim(turnId: string, subject: string): boolean;
  /** Hands this instance's observers what other instances committed of the turn (the resolution that won, say). */
  catchUp(turnId: string): void;
}

/** Ports for a gateway whose store no other process shares. */
export const SOLE_INSTANCE: ResolutionPorts = { runsElsewhere: () => false, claim: () => true, catchUp: () => undefined };
