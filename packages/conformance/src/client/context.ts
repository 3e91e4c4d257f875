/**
 * What a client scenario is and the context it runs in: the client process it drives
 * through the command protocol, and the stage of the suite's gateway it connects to. Steps
 * decide requirements as in the gateway scenarios: what the client got wrong (a wrong
 * answer, a request it never made, a crash, silence past the step's wait) fails the step's
 * requirement; a fault of the suite's own script is an error; what follows a failed step
 * is not reached, and says why.
 */
import type { Outcome } from "../results.js";
import { ClientTimeout, ScriptFault, type Stage } from "./gateway.js";
import { ClientAnswerError, ClientGone, ClientProtocolError, type ClientProcess } from "./process.js";

type Json = Record<string, unknown>;

export interface ClientScenario {
  /** A short name, for messages. */
  readonly name: string;
  /** The requirements this scenario decides. */
  readonly checks: readonly string[];
  run(ctx: ClientContext): Promise<void>;
}

/** The client did something a requirement forbids, or did not do what it demands. */
export class ClientFailure extends Error {
  override readonly name = "ClientFailure";
}

/** Ends a scenario after a failed step. */
class Abort extends Error {
  override readonly name = "Abort";
}

export const isAbort = (error: unknown): boolean => error instanceof Abort;

export interface ClientStepRecord {
  outcome: Outcome;
  message?: string;
  durationMs: number;
}

/** What a client showed of a turn (the run_turn result). */
export interface ShownTurn {
  readonly status: string;
  readonly text: string;
  readonly deltas: readonly string[];
  readonly output: string;
}

export class ClientContext {
  readonly records = new Map<string, ClientStepRecord>();
  /** The requirement of the step that ran last. */
  lastStep: string | undefined;
  private counter = 0;

  constructor(
    readonly client: ClientProcess,
    readonly stage: Stage,
    readonly stepTimeoutMs: number,
    private readonly prefix: string,
  ) {}

  /** A fresh id with this prefix, unique in the run. */
  id(prefix: string): string {
    return `${prefix}_${this.prefix}_${++this.counter}`;
  }

  /** Runs one step for `requirement`; a failure decides it and ends the scenario. */
  async step<T>(requirement: string, fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const record = this.record(requirement);
    this.lastStep = requirement;
    try {
      return await fn();
    } catch (error) {
      if (error instanceof Abort) throw error;
      const { outcome, message } = judge(error);
      if (record.outcome !== "fail") Object.assign(record, { outcome, message });
      throw new Abort(`${requirement}: ${message}`);
    } finally {
      record.durationMs += performance.now() - started;
    }
  }

  /** Checks one condition for `requirement` without ending the scenario. */
  check(requirement: string, condition: boolean, message: string): void {
    const record = this.record(requirement);
    if (!condition && record.outcome !== "fail") Object.assign(record, { outcome: "fail", message });
  }

  /** Marks the scenario's requirements not decided yet as `outcome` with `message`. */
  settle(ids: readonly string[], outcome: Outcome, message: string): void {
    for (const id of ids) if (!this.records.has(id)) this.records.set(id, { outcome, message, durationMs: 0 });
  }

  /** Has the client start a thread; returns its id (one the suite's gateway made). */
  async thread(): Promise<string> {
    const { thread_id: id } = (await this.client.command("start_thread", {}, this.stepTimeoutMs)) as { thread_id: string };
    if (!this.stage.threads.has(id))
      throw new ClientFailure(`the client reports thread ${JSON.stringify(id)}, which thread/start did not return`);
    return id;
  }

  /** Has the client run a turn; resolves with what it showed, rejects with its error answer. */
  runTurn(args: { thread_id: string; turn_id: string; text: string; approvals?: string[]; answers?: number[] }): Promise<ShownTurn> {
    return this.client.command("run_turn", args as unknown as Json, this.stepTimeoutMs) as unknown as Promise<ShownTurn>;
  }

  /** The requests the client made for a method. */
  requests(method: string): Json[] {
    return this.stage.requests.filter((r) => r.method === method).map((r) => r.params);
  }

  private record(id: string): ClientStepRecord {
    let record = this.records.get(id);
    if (!record) this.records.set(id, (record = { outcome: "pass", durationMs: 0 }));
    return record;
  }
}

/** How an error thrown in a step decides its requirement. */
export function judge(error: unknown): { outcome: Outcome; message: string } {
  if (error instanceof ClientFailure || error instanceof ClientTimeout || error instanceof ClientProtocolError)
    return { outcome: "fail", message: error.message };
  if (error instanceof ClientGone) return { outcome: "fail", message: error.message };
  if (error instanceof ClientAnswerError)
    return { outcome: "fail", message: `the client answered with an error: ${error.kind}: ${error.message}` };
  if (error instanceof ScriptFault) return { outcome: "error", message: `harness fault: ${error.message}` };
  return { outcome: "error", message: `harness fault: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}` };
}

/** A value as a message quotes it. */
export function shown(value: unknown): string {
  if (value === undefined) return "nothing";
  return JSON.stringify(value) ?? String(value);
}
