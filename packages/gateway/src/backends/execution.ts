/**
 * How a turn executes, chosen here and nowhere else (the TurnExecution port the lifecycle
 * calls): a turn on an ACP agent runs there, one on a CLI runtime runs there (the two share
 * one run, external-run.ts), and any other runs in the gateway's own round loop with the
 * tools and skills of its capabilities.
 */
import type { ThreadRecord } from "../store/store.js";
import type { PreparedTurn, TurnExecution, TurnReader, TurnRun } from "../engine/ports.js";
import type { TurnStartParams } from "@turnspec/protocol/types";
import type { TurnRunner } from "../turn/runner.js";
import type { AcpAgents } from "./acp.js";
import type { CodexRuntimes } from "./codex.js";
import type { TurnBackends } from "./turn-backends.js";

export interface ExecutionPorts {
  readonly log: TurnReader;
  /** What a turn/start may run on, and the capabilities it resolves. */
  readonly backends: Pick<TurnBackends, "prepare" | "extrasOf" | "close">;
  /** The gateway's own round loop. */
  readonly native: Pick<TurnRunner, "run">;
  readonly acp: Pick<AcpAgents, "run" | "close">;
  readonly codex: Pick<CodexRuntimes, "run" | "close">;
}

export class TurnExecutions implements TurnExecution {
  constructor(private readonly ports: ExecutionPorts) {}

  prepare(params: TurnStartParams, thread: ThreadRecord): Promise<PreparedTurn> {
    return this.ports.backends.prepare(params, thread);
  }

  run(run: TurnRun): Promise<void> {
    const { log, backends, native, acp, codex } = this.ports;
    const state = log.state(run.turnId)!;
    switch (state.turn.execution_backend?.type) {
      case "acpAgentRuntime":
        return acp.run(run);
      case "cliAgentRuntime":
        return codex.run(run);
      default: {
        // What the start resolved goes to its first run; a later run resolves the turn's capabilities again.
        const prepared = run.prepared?.extras;
        return native.run(run, () => (prepared ? Promise.resolve(prepared) : backends.extrasOf(state.turn, state.items)));
      }
    }
  }

  async close(): Promise<void> {
    await this.ports.backends.close();
    await this.ports.acp.close();
    await this.ports.codex.close();
  }
}
