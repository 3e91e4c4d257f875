/**
 * The reference gateway's composition root: it builds the engine's parts, in the order
 * they depend on one another, and hands each the narrow ports it uses (ports.ts). It
 * decides nothing and holds no behaviour; nothing in the gateway imports it but the
 * `serve` entry point. The path of a frame, which does not pass through here: transport →
 * connections (views/connections.ts) → dispatcher (rpc) → a handler slice (handlers/) →
 * the turn lifecycle (turn/lifecycle.ts) and the execution backends (backends/execution.ts)
 * → the turn log (log/turn-log.ts) → its observers, the connections and the derived views
 * (views/). See docs/gateway-architecture.md.
 */
import { randomBytes } from "node:crypto";
import { createDispatcher } from "@turnspec/protocol/server";
import type { Dispatcher, Transport } from "@turnspec/rpc";
import type { ResolvedConfig } from "../config.js";
import { AcpAgents } from "../backends/acp.js";
import { CodexRuntimes } from "../backends/codex.js";
import { TurnExecutions } from "../backends/execution.js";
import { TurnBackends } from "../backends/turn-backends.js";
import { Approvals } from "../flows/approvals.js";
import { Questions } from "../flows/questions.js";
import { sharedResolutions } from "../flows/resolutions.js";
import { gatewayHandlers } from "../handlers/index.js";
import { SharedDelivery } from "../log/delivery.js";
import type { TurnState } from "../log/fold.js";
import { TurnLog } from "../log/turn-log.js";
import { AnswerTokens } from "../permissions/answer-tokens.js";
import type { GatewayFiles } from "../permissions/own-files.js";
import { ResolveTokens } from "../permissions/tokens.js";
import type { ModelProvider } from "../providers/provider.js";
import { RouteService } from "../routes/service.js";
import type { EventStore } from "../store/store.js";
import { askQuestionTool } from "../tools/ask-question.js";
import { spawnAgentTool } from "../tools/spawn-agent.js";
import type { Tool } from "../tools/tool.js";
import { TurnLifecycle } from "../turn/lifecycle.js";
import { RecoveryJobs } from "../turn/recovery.js";
import { TurnRunner } from "../turn/runner.js";
import { TurnRuns } from "../turn/runs.js";
import { Connections, type Connection } from "../views/connections.js";
import { DerivedViews } from "../views/derived-views.js";
import { Threads } from "../views/threads.js";
import { workFoldOf, type WorkFold } from "../views/work.js";
import { clockOf, SOLE_INSTANCE } from "./ports.js";

export interface GatewayOptions {
  readonly store: EventStore;
  readonly config: ResolvedConfig;
  /** Model providers by name. */
  readonly providers: ReadonlyMap<string, ModelProvider>;
  /** Tools the model may call in Agent mode (spawn_agent and ask_question are added by the gateway). */
  readonly tools: readonly Tool[];
  /** Environment passed to tools' processes. Default: this process's. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly now?: () => Date;
  /** Diagnostics for the operator (stderr in `turnspec serve`). Never sent to clients. */
  readonly log?: (message: string) => void;
  /**
   * On a store shared by several instances: how long a turn's lease lasts unrenewed, in ms
   * (renewed every third of it). Another instance blocks a turn whose owner has been
   * silent this long. Default: the configuration's (config.leaseTimeoutMs).
   */
  readonly leaseTimeoutMs?: number;
  /**
   * The gateway's secrets this process still shows in /proc/<pid>/environ or cmdline
   * (serve-secrets.ts): each turn's security snapshot lists them as a degradation.
   */
  readonly exposedSecrets?: readonly string[];
  /** The gateway's own files (its store, configuration, token file): no tool may read or write them, in any mode. */
  readonly ownFiles?: GatewayFiles;
}

export class Gateway {
  readonly dispatcher: Dispatcher<Connection>;
  readonly approvals: Approvals;
  readonly questions: Questions;
  /** Resolves once the gateway hears other instances' commits (at once on a store no other process shares). */
  readonly ready: Promise<void>;
  private readonly log: TurnLog<WorkFold>;
  private readonly connections: Connections;
  private readonly lifecycle: TurnLifecycle;
  private readonly execution: TurnExecutions;

  constructor(readonly options: GatewayOptions) {
    const { store, config } = options;
    const shared = store.shared;
    const diagnose = options.log ?? (() => undefined);
    const clock = clockOf(options.now);
    const env = options.env ?? process.env;
    const ownFiles = options.ownFiles ? { ownFiles: options.ownFiles } : {};

    // The log, and its observers in the order a published event reaches them: on a shared
    // store, the record of what was delivered; the event's own frame; what it changed in the views.
    const log = (this.log = new TurnLog({ store, clock, diagnose, newFold: workFoldOf }));
    const connections = (this.connections = new Connections({ store, diagnose }));
    const views = new DerivedViews({ log, connections });
    const delivery = new SharedDelivery({ log, store, diagnose });
    if (shared) log.observe(delivery.onPublished);
    log.observe(connections.onEvent);
    log.observe(views.onEvent);
    log.onLost(views.forget);
    const threads = new Threads({ log, clock, store, defaultCwd: config.defaultCwd });

    // The request flows. Instances on one shared store sign with the secret kept there, unless
    // one is configured; answer tokens are signed under the same secret, their claims keep them apart.
    const secret = config.resolveTokenSecret ?? shared?.tokenSecret();
    const runs = new TurnRuns();
    const resolutions = shared ? sharedResolutions({ shared, runs, log, delivery }) : SOLE_INSTANCE;
    const approvals = (this.approvals = new Approvals(
      { log, threads, clock },
      config,
      secret ? new ResolveTokens(secret) : ResolveTokens.random(),
      resolutions,
    ));
    const questions = (this.questions = new Questions(
      { log, threads, clock },
      config.questionTimeoutMs,
      new AnswerTokens(secret ?? randomBytes(32)),
      resolutions,
    ));
    delivery.observeForeign(approvals.onForeignEvent);
    delivery.observeForeign(questions.onForeignEvent);
    const recovery = new RecoveryJobs({ log, clock });
    const routes = new RouteService(store, config, clock);
    routes.noteConfiguration();

    // How turns execute: the round loop with its tools, the ACP agents and the CLI runtimes, behind one port.
    const runnerPorts = { log, threads, clock, approvals, recovery, ...ownFiles };
    const spawnAgent = spawnAgentTool({
      log,
      threads,
      routes,
      store,
      agent: config.agent,
      maxSpawnDepth: config.maxSpawnDepth,
      maxRouteHops: config.maxRouteHops,
    });
    const tools = [...options.tools, spawnAgent, askQuestionTool(questions)];
    const execution = (this.execution = new TurnExecutions({
      log,
      backends: new TurnBackends(config, new Set(options.providers.keys()), diagnose),
      native: new TurnRunner(runnerPorts, {
        config,
        providers: options.providers,
        tools,
        store,
        ...(options.env ? { env: options.env } : {}),
      }),
      acp: new AcpAgents(runnerPorts, config, env, diagnose),
      codex: new CodexRuntimes(runnerPorts, config, env, diagnose),
    }));
    const lifecycle = (this.lifecycle = new TurnLifecycle({
      log,
      threads,
      store,
      config,
      clock,
      approvals,
      recovery,
      execution,
      runs,
      diagnose,
      leaseTimeoutMs: options.leaseTimeoutMs ?? config.leaseTimeoutMs,
      ...(options.exposedSecrets ? { exposedSecrets: options.exposedSecrets } : {}),
    }));

    const handlers = gatewayHandlers({ threads, log, store, approvals, questions, routes, lifecycle, connections });
    this.dispatcher = createDispatcher<Connection>(handlers, {
      maxBatchSize: config.maxBatchSize,
      onInternalError: (error, method) =>
        diagnose(`internal error in ${method}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`),
    });
    lifecycle.open();
    this.ready = shared ? shared.watch(delivery.deliver) : Promise.resolve();
  }

  /** Serves one connection over a transport until it closes. */
  connect(transport: Transport): Connection {
    return this.connections.serve(transport, this.dispatcher);
  }

  /**
   * Stops every running turn and waits for them: each ends Blocked with a
   * runtime_shutdown_continuation recovery job, which turn/resume continues after a restart.
   * Then what the execution backends started is stopped.
   */
  async close(): Promise<void> {
    await this.lifecycle.close();
    await this.execution.close();
  }

  /** A turn's state as the log's fold has it. */
  turnState(turnId: string): TurnState | undefined {
    return this.log.state(turnId);
  }

  /** Interrupts a running turn and waits until it has ended; a blocked turn (nothing runs it) ends at once. */
  cancelTurn(turnId: string, reason: string): Promise<void> {
    return this.lifecycle.cancelTurn(turnId, reason);
  }
}
