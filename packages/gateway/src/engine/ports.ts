/**
 * The narrow ports the engine's collaborators receive. Each collaborator (the round loop,
 * the external runtimes, approvals, questions, recovery jobs, spawn_agent) is built from an
 * explicit struct of what it calls, never from the gateway: none of them can reach what it
 * was not given, and none imports the composition root (gateway.ts). A port is the object
 * that does the work (the turn log, the threads), typed down to the methods a collaborator
 * may call, so a call goes straight to it.
 */
import type {
  CliRuntimeOptions,
  PromptManifest,
  Turn,
  TurnCapabilityResolution,
  TurnFailure,
  TurnStartParams,
  TurnUsage,
} from "@turnspec/protocol/types";
import type { ThreadRecord } from "../store/store.js";
import type { RecoveryJobState } from "../log/fold.js";
import type { TurnLog } from "../log/turn-log.js";
import type { Skill } from "../skills/catalog.js";
import type { ChildTurns, Tool } from "../tools/tool.js";

/** Writing to the turn log: record, publish (publishDelta for deltas), audit. */
export type EventLog = Pick<TurnLog, "record" | "publish" | "publishDelta" | "audit">;

/** Reading a turn's state (the memoised fold of its log). */
export type TurnReader = Pick<TurnLog, "state">;

/** The id the next item of a turn gets. */
export type ItemIds = Pick<TurnLog, "nextItemId">;

/** The gateway's clock. */
export interface Clock {
  now(): Date;
  nowIso(): string;
}

/** The clock that reads `now` (by default, the system's). */
export function clockOf(now: () => Date = () => new Date()): Clock {
  return { now, nowIso: () => now().toISOString() };
}

/** Looking a thread up; throws thread_not_found for an unknown id. */
export interface ThreadLookup {
  thread(threadId: string): ThreadRecord;
}

/** How a turn ends, with the manifest of its last compiled prompt to record on the final snapshot. */
export type TurnOutcome = (
  { status: "Completed"; usage: TurnUsage } | { status: "Failed" | "Interrupted"; error: TurnFailure; usage: TurnUsage }
) & {
  readonly promptManifest?: PromptManifest;
};

/** What a turn's run adds to the built-in tools and the prompt: the tools and skills of its accepted capabilities. */
export interface TurnExtras {
  readonly tools: readonly Tool[];
  readonly skills: readonly Skill[];
}

/** A turn/start the execution backends checked and resolved, as the lifecycle creates the turn from it. */
export interface PreparedTurn {
  readonly params: TurnStartParams;
  /** How the turn's requested capabilities were resolved, when it requested any. */
  readonly capabilities?: TurnCapabilityResolution[];
  /** The tools and skills the start resolved, handed to the turn's first run (a later run resolves them again). */
  readonly extras: TurnExtras;
  /** The options of a turn run by a CLI runtime. */
  readonly cliRuntimeOptions?: CliRuntimeOptions;
}

/** One run of a turn: what the lifecycle hands whatever executes it (the round loop, an ACP agent, a CLI runtime). */
export interface TurnRun {
  readonly threadId: string;
  readonly turnId: string;
  /** Aborted when the turn is cancelled, or with GatewayShutdown when the gateway stops. */
  readonly signal: AbortSignal;
  /** How deep the turn is in a chain of spawn_agent child turns (0 for a client's turn). */
  readonly depth: number;
  /** The recovery job a turn/resume continues through; absent for a turn's first run. */
  readonly resumed?: RecoveryJobState;
  /** The start a client's new turn was prepared from; absent for a resumed run and for a child turn. */
  readonly prepared?: PreparedTurn;
  /** Ends the turn with a terminal notification carrying its final snapshot. */
  finish(outcome: TurnOutcome): Turn;
  /** Starts and cancels child turns of this one (spawn_agent). */
  readonly children: ChildTurns;
}

/**
 * How turns execute, chosen behind this one port: a turn/start is checked and its
 * capabilities resolved before the turn exists (a backend this gateway does not serve
 * refuses the start), and each run of a started turn goes to its backend.
 */
export interface TurnExecution {
  /** Checks the backend a turn/start asks for and resolves its capabilities; throws execution_backend_unavailable. */
  prepare(params: TurnStartParams, thread: ThreadRecord): Promise<PreparedTurn>;
  /** Runs a started (or resumed) turn to its end. */
  run(run: TurnRun): Promise<void>;
  /** Stops what the backends started (agent processes, runtimes, MCP connections). */
  close(): Promise<void>;
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
