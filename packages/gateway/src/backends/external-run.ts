/**
 * A turn run by an external runtime (an ACP agent, a CLI runtime), written once: each
 * runtime says how it attaches a turn to its own session and runs it there, and the run
 * around it is the same for all. In order: the runtime's configuration is looked up; a
 * resume is refused, since the runtime kept the turn's conversation in a session of its own,
 * gone with the run; the turn, with its user message, is attached to the thread's session
 * (a runtime that does not start fails the turn); the turn's one execution window opens (the
 * runtime's own loop is not bounded by the gateway's windows); a cancel of the turn is
 * passed on to the runtime; once the runtime is done, the items it left open are closed;
 * and the turn ends Completed, Interrupted or Failed, as the runtime ended it. A stop of the
 * gateway blocks the turn instead (runtime_shutdown_continuation), with the time its window ran.
 */
import type { TurnExecutionWindowLimits, TurnItem, UserInput } from "@turnspec/protocol/types";
import type { Clock, EventLog, ItemIds, ThreadLookup, TurnReader, TurnRun } from "../engine/ports.js";
import type { Approvals } from "../flows/approvals.js";
import type { TurnState } from "../log/fold.js";
import type { GatewayFiles } from "../permissions/own-files.js";
import type { ThreadRecord } from "../store/store.js";
import { reasonOf, zeroUsage } from "../turn/outcome.js";
import { isShutdown, type RecoveryJobs } from "../turn/recovery.js";
import { windowId } from "../turn/windows.js";

/** What an external runtime and its turns' runs are built from. */
export interface RuntimePorts {
  readonly log: EventLog & TurnReader & ItemIds;
  readonly threads: ThreadLookup;
  readonly clock: Clock;
  readonly recovery: Pick<RecoveryJobs, "blockCutOffTurn">;
  /** The permission requests the tool gate opens for what the runtime asks to do. */
  readonly approvals: Pick<Approvals, "ask">;
  /** The gateway's own files, which the runtime's requests never reach. */
  readonly ownFiles?: GatewayFiles;
}

/** How the runtime ended a turn. */
export type RuntimeEnd =
  { readonly status: "completed" } | { readonly status: "interrupted" } | { readonly status: "failed"; readonly message: string };

/** A turn attached to its thread's session on the runtime. */
export interface AttachedTurn {
  /** Runs the turn on the runtime until the runtime ends it; a throw is a failure of the runtime. */
  run(): Promise<RuntimeEnd>;
  /** Passes a cancel of the turn on to the runtime (session/cancel, turn/interrupt). */
  cancel(): void;
  /** Once the run is over: closes the items the runtime left open, as cancelled when the turn was stopped, else as failed. */
  closeOpen(stopped: boolean): void;
}

/** The turn as the run hands it to the runtime. */
export interface TurnToAttach {
  readonly run: TurnRun;
  readonly state: TurnState;
  readonly thread: ThreadRecord;
  /** What the user said: the content of the turn's userMessage. */
  readonly input: readonly UserInput[];
}

/** One kind of external runtime, as the shared run drives it. */
export interface ExternalRuntime<Config> {
  /** The execution backend its turns name. */
  readonly backendType: "acpAgentRuntime" | "cliAgentRuntime";
  /** What the runtime is called in the turn's errors: "ACP agent", "CLI runtime". */
  readonly noun: string;
  /** What it keeps a thread's conversation in: "session", "thread". */
  readonly conversation: string;
  /** The runtime's configuration on this gateway; undefined once it is no longer configured. */
  config(runtimeId: string): Config | undefined;
  /** Starts the runtime (or takes the running one) and attaches the turn to the thread's session; throws when the runtime does not start. */
  attach(config: Config, turn: TurnToAttach): Promise<AttachedTurn>;
}

/** Runs one turn on an external runtime, to its end. */
export async function runExternalTurn<Config>(
  runtime: ExternalRuntime<Config>,
  ports: RuntimePorts,
  windowLimits: TurnExecutionWindowLimits,
  run: TurnRun,
): Promise<void> {
  const { threadId, turnId, signal } = run;
  const state = ports.log.state(turnId)!;
  const backend = state.turn.execution_backend;
  const fail = (message: string) =>
    void run.finish({ status: "Failed", usage: zeroUsage(), error: { kind: "provider_error", message, retryable: false } });
  if (backend?.type !== runtime.backendType) return fail(`the turn has no ${runtime.noun} execution backend`);
  const name = `the ${runtime.noun} ${backend.runtime_id}`;
  const config = runtime.config(backend.runtime_id);
  if (!config) return fail(`${name} is no longer configured on this gateway`);
  if (run.resumed) return fail(`${name} ran this turn in its own ${runtime.conversation}, which cannot be continued; start a new turn`);
  const user = state.items.find((i): i is Extract<TurnItem, { type: "userMessage" }> => i.type === "userMessage");
  let attached: AttachedTurn;
  try {
    attached = await runtime.attach(config, { run, state, thread: ports.threads.thread(threadId), input: user?.content ?? [] });
  } catch (error) {
    return fail(`${name} did not start: ${(error as Error).message}`);
  }
  ports.log.publish(threadId, turnId, "turn/execution_window/started", {
    window_id: windowId(turnId, 0),
    window_index: 0,
    limits: windowLimits,
    status: "running",
  });
  const startedAt = ports.clock.now().getTime();
  const cancel = () => attached.cancel();
  signal.addEventListener("abort", cancel, { once: true });
  let end: RuntimeEnd;
  try {
    end = await attached.run();
  } catch (error) {
    end = { status: "failed", message: `${name} failed: ${(error as Error).message}` };
  } finally {
    signal.removeEventListener("abort", cancel);
  }
  attached.closeOpen(signal.aborted);
  if (signal.aborted) {
    if (isShutdown(signal)) {
      const observed = {
        agent_rounds: 1,
        tool_calls: 0,
        wall_clock_ms: Math.max(0, ports.clock.now().getTime() - startedAt),
        provider_tokens: 0,
      };
      ports.recovery.blockCutOffTurn(threadId, turnId, ports.log.state(turnId)!, observed);
      return;
    }
    run.finish({ status: "Interrupted", usage: zeroUsage(), error: { kind: "cancelled", message: reasonOf(signal), retryable: false } });
    return;
  }
  switch (end.status) {
    case "completed":
      run.finish({ status: "Completed", usage: zeroUsage() });
      return;
    case "interrupted":
      run.finish({
        status: "Interrupted",
        usage: zeroUsage(),
        error: { kind: "cancelled", message: `${name} cancelled the turn`, retryable: false },
      });
      return;
    case "failed":
      fail(end.message);
  }
}
