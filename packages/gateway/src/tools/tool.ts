/**
 * A tool the agent loop can run for the model. Each tool declares the JSON Schema of its
 * arguments (the model sees it), and runs with a context that lets it stream output and
 * be cancelled. A tool error (missing file, non-zero exit, bad arguments) is a result the
 * model sees, never a gateway failure. Tools are written with defineTool (arguments.ts),
 * which types their arguments from that schema.
 */
import type { AgentActorRef, PermissionActionKind, Turn, TurnPermissionMode, TurnStartParams } from "@turnspec/protocol/types";
import type { ToolSpec } from "../providers/provider.js";
import type { Sandbox } from "../sandbox/command.js";
import type { GatewayFiles } from "../permissions/own-files.js";
import type { FileConfinement } from "./confined-open.js";

/** Where and how a tool runs. */
export interface ToolContext {
  /** The thread's working directory: relative paths resolve against it. */
  readonly cwd: string;
  /** Aborted when the turn is cancelled: running processes must be killed. */
  readonly signal: AbortSignal;
  /** Streams a piece of output (stdout, stderr, progress or a file change's output). */
  readonly emit: (stream: "stdout" | "stderr" | "tool_progress" | "file_change", delta: string) => void;
  /** Environment for processes the tool starts. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The OS sandbox processes run in, when the turn has one (absent: processes run unconfined). */
  readonly sandbox?: Sandbox;
  /** Where file tools may reach in this call (absent: anywhere, as under full_access). */
  readonly files?: FileConfinement;
  /** The gateway's own files, which file tools refuse in every mode. */
  readonly ownFiles?: GatewayFiles;
  /** Upper bound for `timeout_ms` (a tool's own default applies below it). */
  readonly maxTimeoutMs: number;
  /** Publishes fields learned while the tool runs (e.g. a child turn's ids) as item/updated. */
  readonly update?: (fields: Record<string, unknown>) => void;
  /** The turn the call belongs to; `depth` is 0 for a client's turn and grows with each spawn_agent level. */
  readonly turn?: { readonly thread_id: string; readonly turn_id: string; readonly depth: number };
  /** The model's id of this tool call, and the id of the item that shows it. */
  readonly callId?: string;
  readonly itemId?: string;
  /** Starts and cancels child turns of the turn the call belongs to (spawn_agent). */
  readonly children?: ChildTurns;
}

/** The turn a child turn is started from (spawn_agent), and the mode the child asked for. */
export interface ParentTurn {
  readonly turn: Turn;
  readonly depth: number;
  readonly requestedMode?: TurnPermissionMode;
  /** Who authors the child turn: the agent, as it presents itself now (kept with the turn). */
  readonly actor?: AgentActorRef;
}

/** Child turns of a running turn, as the turn lifecycle starts and cancels them. */
export interface ChildTurns {
  /** Creates and starts a child turn of `parent`, which it never gets more permissions than. */
  startTurn(params: TurnStartParams, parent: ParentTurn): { turn: Turn; done: Promise<void> };
  /** Interrupts a turn and waits until it has ended. */
  cancelTurn(turnId: string, reason: string): Promise<void>;
}

/**
 * What a tool produced. `content` is the text the model sees as the tool result;
 * `item` holds the fields the gateway puts on the tool's TurnItem (stdout, exit_code,
 * diff, …, in the wire names of that item type).
 */
export interface ToolResult {
  readonly ok: boolean;
  readonly content: string;
  readonly item: Record<string, unknown>;
  /** A failure that may not recur (a network error, a server error): the gateway retries the call under its tool retry policy. */
  readonly retryable?: boolean;
  /** Set when the call ran past its deadline: the deadline it had and how long it ran, in milliseconds. */
  readonly timeout?: { readonly deadline_ms: number; readonly elapsed_ms: number };
}

/**
 * What an approval request for a call names beyond the call's arguments, when the tool
 * can say more than they do (spawn_agent over a route: the destination thread and agent
 * the child would run as). Worked out before the gate asks; none when nothing is known.
 */
export interface ApprovalContext {
  /** The request's one-line summary, in place of the gate's own. */
  readonly summary: string;
  /** Appended to the request's reason. */
  readonly reason: string;
  /** Merged into the request's details. */
  readonly details: Record<string, unknown>;
  readonly preview?: { readonly title: string; readonly text: string };
  /**
   * What, beyond the tool's name, the approval's scope is bound to: an allow_for_turn
   * answer then covers later calls with the same key only (the same destination).
   */
  readonly scopeKey: string;
}

/** A tool as the round loop holds it: the type of its arguments is the tool's own business, known from its schema. */
export interface Tool {
  readonly spec: ToolSpec;
  /** The TurnItem `type` this tool's calls are shown as (`commandExecution`, `fileChange`, `webFetch`, …). */
  readonly itemType: "commandExecution" | "fileChange" | "webFetch" | "dynamicToolCall" | "task";
  /** The permission kind of every call, for a tool the built-in classification does not know (MCP and skill tools). */
  readonly permissionAction?: PermissionActionKind;
  /** The call is itself a question to the user (ask_question): the permission gate does not ask about asking. */
  readonly asksUser?: boolean;
  /** Checks a call's arguments against `spec.parameters`: a call that conforms is bound to them, else what is wrong, for the model. */
  bind(args: Record<string, unknown>): { readonly ok: true; readonly call: BoundToolCall } | { readonly ok: false; readonly error: string };
}

/** A call of a tool, bound to arguments its schema accepted. */
export interface BoundToolCall {
  /** Item fields known before the tool runs (e.g. `command`, `cwd`, `path`, `url`). */
  describe(ctx: Pick<ToolContext, "cwd">): Record<string, unknown>;
  /** What an approval of the call names beyond its arguments (see ApprovalContext). */
  approvalContext(turn: { readonly thread_id: string; readonly turn_id: string }): ApprovalContext | undefined;
  run(ctx: ToolContext): Promise<ToolResult>;
}
