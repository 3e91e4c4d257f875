/**
 * The reference gateway's composition root: it builds the engine's parts, hands each the
 * narrow ports it uses, and serves connections. Nothing in runtime/ imports it but the
 * `serve` entry point. The path of a frame: transport → dispatcher (rpc/) → a handler
 * slice (runtime/handlers/) → the turn lifecycle (lifecycle.ts) → the turn log
 * (turn-log.ts) → its observers, the connections (connections.ts) and the derived views
 * (views.ts). See docs/gateway-architecture.md.
 *
 * Nothing is written to a connection before the store has committed what it may report:
 * every frame, notification or response, waits behind the store's durability barrier
 * (`afterCommit`), in the order it was sent. So a client is only ever told about events
 * that are in the log, and a kill can lose only events nobody was sent.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { GatewayFiles } from "../permissions/own-files.js";
import { createDispatcher } from "@turnspec/protocol/server";
import type { Dispatcher, Transport } from "@turnspec/rpc";
import type { ResolvedConfig } from "../config.js";
import { AnswerTokens } from "../permissions/answer-tokens.js";
import { ResolveTokens } from "../permissions/tokens.js";
import type { ModelProvider } from "../providers/provider.js";
import { CommitQueue } from "../store/commit-queue.js";
import type { EventStore, StoredEvent } from "../store/store.js";
import type { StoreError } from "../store/rules.js";
import type { Tool } from "../tools/tool.js";
import { RouteService } from "../routes/service.js";
import { Approvals } from "../flows/approvals.js";
import { asNotification, type TurnState } from "../log/fold.js";
import { Connections, type Connection } from "../views/connections.js";
import { TurnLog } from "../log/turn-log.js";
import { DerivedViews } from "../views/derived-views.js";
import { RecoveryJobs } from "../turn/recovery.js";
import { TurnRunner } from "../turn/runner.js";
import { TurnLifecycle } from "../turn/lifecycle.js";
import { Threads } from "../views/threads.js";
import { gatewayHandlers } from "../handlers/index.js";
import { spawnAgentTool } from "../tools/spawn-agent.js";
import { askQuestionTool } from "../tools/ask-question.js";
import { Questions } from "../flows/questions.js";
import { SOLE_INSTANCE, type Clock, type EventLog, type ResolutionPorts } from "./ports.js";
import { TurnBackends } from "../backends/turn-backends.js";
import { AcpAgents } from "../backends/acp.js";
import { CodexRuntimes } from "../backends/codex.js";

export interface GatewayOptions {
  readonly store: EventStore;
  readonly config: ResolvedConfig;
  /** Model providers by name. */
  readonly providers: ReadonlyMap<string, ModelProvider>;
  /** Tools the model may call in Agent mode (spawn_agent is added by the gateway). */
  readonly tools: readonly Tool[];
  /** Execution backends and turn capabilities (MCP servers, skills). Default: those the configuration names. */
  readonly backends?: TurnBackends;
  /** Environment passed to tools' processes. Default: this process's. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly now?: () => Date;
  /** Diagnostics for the operator (stderr in `turnspec serve`). Never sent to clients. */
  readonly log?: (message: string) => void;
  /**
   * On a store shared by several instances: how long a turn's lease lasts unrenewed, in ms
   * (renewed every third of it). Another instance blocks a turn whose owner has been
   * silent this long. Default DEFAULT_LEASE_TIMEOUT_MS.
   */
  readonly leaseTimeoutMs?: number;
  /**
   * The gateway's secrets this process still shows in /proc/<pid>/environ or cmdline
   * (runtime/serve-secrets.ts): each turn's security snapshot lists them as a degradation.
   */
  readonly exposedSecrets?: readonly string[];
  /** The gateway's own files (its store, configuration, token file): no tool may read or write them, in any mode. */
  readonly ownFiles?: GatewayFiles;
}

export const DEFAULT_LEASE_TIMEOUT_MS = 15_000;

/** How often, and how far apart, the events another instance announced are read again when the store could not read them. */
const DELIVERY_ATTEMPTS = 10;
const DELIVERY_RETRY_MS = 250;

export class Gateway {
  readonly dispatcher: Dispatcher<Connection>;
  private readonly connections = new Connections();
  readonly turnLog: TurnLog;
  private readonly lifecycle: TurnLifecycle;
  readonly approvals: Approvals;
  readonly questions: Questions;
  readonly recovery: RecoveryJobs;
  readonly routes: RouteService;
  private readonly threads: Threads;
  readonly backends: TurnBackends;
  private acp: AcpAgents | undefined;
  private codex: CodexRuntimes | undefined;
  private readonly clock: () => Date;
  private readonly log: (message: string) => void;
  /** Per turn, the highest sequence handed to the observers: another instance's events are delivered from there, each once. */
  private readonly delivered = new Map<string, number>();
  private leaseTimer: NodeJS.Timeout | undefined;
  /** Resolves once the gateway hears other instances' commits (at once on a store no other process shares). */
  readonly ready: Promise<void>;

  constructor(readonly options: GatewayOptions) {
    this.clock = options.now ?? (() => new Date());
    this.log = options.log ?? (() => undefined);
    this.turnLog = new TurnLog({ store: options.store, workspaceOf: (threadId) => this.threads.thread(threadId).workspace_id, now: this.clock, log: this.log });
    // Observers, in the order a published event reaches them: its own frame first, then what it changed in the views.
    const views = new DerivedViews({ work: (threadId, turnId) => this.turnLog.work(threadId, turnId), notify: (threadId, method, params) => this.connections.notifyThread(threadId, method, params) });
    // Only a shared store has events from elsewhere to keep in order with this instance's own.
    if (options.store.shared) this.turnLog.observe((event) => this.noteDelivered(event));
    this.turnLog.observe(this.connections.onEvent);
    this.turnLog.observe(views.onEvent);
    this.turnLog.onLost((turnId) => views.forget(turnId));
    this.threads = new Threads({ store: options.store, defaultCwd: options.config.defaultCwd, nowIso: () => this.nowIso(), turnState: (turnId) => this.turnLog.state(turnId) });
    // Instances on one shared store sign with the secret kept there, unless one is configured.
    const secret = options.config.resolveTokenSecret ?? options.store.shared?.tokenSecret();
    const tokens = secret ? new ResolveTokens(secret) : ResolveTokens.random();
    // Each collaborator gets an explicit struct of what it calls, never the gateway itself.
    const log = this.turnLog;
    // Plain forwarding calls: a rest-and-spread wrapper would build an arguments array per event.
    const eventLog: EventLog = {
      record: (threadId, turnId, method, params, by) => log.record(threadId, turnId, method, params, by),
      publish: (threadId, turnId, method, params, by) => log.publish(threadId, turnId, method, params, by),
      publishDelta: (threadId, turnId, method, itemId, stream, delta) => log.publishDelta(threadId, turnId, method, itemId, stream, delta),
      audit: (threadId, turnId, fields, by) => log.audit(threadId, turnId, fields, by),
    };
    const turnState = (turnId: string) => log.state(turnId);
    const clock: Clock = { now: () => this.clock(), nowIso: () => this.clock().toISOString() };
    const thread = (threadId: string) => this.threads.thread(threadId);
    const nextItemId = (turnId: string) => log.nextItemId(turnId);
    // On a shared store, a request of a turn that is running but not here waits on the
    // instance that runs it, and the store decides which instance records its resolution.
    const shared = options.store.shared;
    const resolutions: ResolutionPorts = shared
      ? {
          runsElsewhere: (turnId) => !this.lifecycle.runsHere(turnId) && turnState(turnId)?.turn.status === "InProgress",
          claim: (turnId, subject) => shared.claimResolution(turnId, subject),
          catchUp: (turnId) => this.deliverFromElsewhere(turnId, (this.delivered.get(turnId) ?? 0) + 1),
        }
      : SOLE_INSTANCE;
    this.approvals = new Approvals({ ...eventLog, turnState, thread, ...clock }, options.config, tokens, resolutions);
    // Answer tokens are signed under the same secret; their claims keep them apart from resolve tokens.
    const answerTokens = new AnswerTokens(secret ?? randomBytes(32));
    this.questions = new Questions({ ...eventLog, turnState, thread, ...clock }, options.config.questionTimeoutMs, answerTokens, resolutions);
    this.recovery = new RecoveryJobs({ ...eventLog, turnState, nextItemId, nowIso: clock.nowIso });
    this.routes = new RouteService(options.store, options.config, () => this.clock(), (id) => options.store.getThread(id)?.workspace_id);
    // What may run without asking is the permission configuration; a change makes older routes stale.
    const { allowedPaths, requireResolveToken } = options.config;
    this.routes.noteConfiguration(createHash("sha256").update(JSON.stringify({ allowedPaths, requireResolveToken })).digest("hex"));
    // The runner is built after the lifecycle it ends turns through, so the lifecycle reaches it late.
    let runner: TurnRunner | undefined;
    let acp: AcpAgents | undefined;
    let codex: CodexRuntimes | undefined;
    const lifecycle = new TurnLifecycle({
      log,
      threads: this.threads,
      store: options.store,
      config: options.config,
      clock,
      approvals: this.approvals,
      recovery: this.recovery,
      // A turn on an ACP agent or a CLI runtime is run by it; any other by the agent loop.
      run: (threadId, turnId, signal, depth, resumed) => {
        const backend = log.state(turnId)?.turn.execution_backend?.type;
        if (backend === "acpAgentRuntime") return acp!.run(threadId, turnId, signal, resumed !== undefined);
        if (backend === "cliAgentRuntime") return codex!.run(threadId, turnId, signal, resumed !== undefined);
        return runner!.run(threadId, turnId, signal, depth, resumed);
      },
      diagnose: this.log,
      leaseTimeoutMs: options.leaseTimeoutMs ?? DEFAULT_LEASE_TIMEOUT_MS,
      ...(options.exposedSecrets ? { exposedSecrets: options.exposedSecrets } : {}),
    });
    this.lifecycle = lifecycle;
    const backends = (this.backends = options.backends ?? new TurnBackends(options.config, new Set(options.providers.keys()), this.log));
    const spawnAgent = spawnAgentTool({
      turnState,
      thread,
      createThread: (params) => this.threads.create(params),
      startTurn: (params, parent) => lifecycle.startTurn(params, parent),
      cancelTurn: (turnId, reason) => lifecycle.cancelTurn(turnId, reason),
      routes: this.routes,
      store: options.store,
      agent: options.config.agent,
      maxSpawnDepth: options.config.maxSpawnDepth,
      maxRouteHops: options.config.maxRouteHops,
      handoff: (threadId, turnId, notice) => void log.publish(threadId, turnId, "turn/handoff/started", notice),
    });
    const runnerPorts = { ...eventLog, turnState, thread, ...clock, nextItemId, finish: lifecycle.finish.bind(lifecycle), approvals: this.approvals, recovery: this.recovery, ...(options.ownFiles ? { ownFiles: options.ownFiles } : {}) };
    acp = this.acp = new AcpAgents(runnerPorts, options.config, options.env ?? process.env, this.log);
    codex = this.codex = new CodexRuntimes(runnerPorts, options.config, options.env ?? process.env, this.log);
    runner = new TurnRunner(
      runnerPorts,
      {
        config: options.config,
        providers: options.providers,
        tools: [...options.tools, spawnAgent, askQuestionTool(this.questions)],
        store: options.store,
        extras: (turn, items) => backends.forRun(turn, items),
        ...(options.env ? { env: options.env } : {}),
      },
    );
    const handlers = gatewayHandlers({
      threads: this.threads,
      turnState,
      store: options.store,
      work: (threadId, turnId) => log.work(threadId, turnId),
      approvals: this.approvals,
      questions: this.questions,
      routes: this.routes,
      lifecycle: {
        start: async (params) => {
          const prepared = await backends.prepare(params, this.threads.thread(params.thread_id));
          const started = lifecycle.startTurn(prepared.params, undefined, prepared.capabilities);
          backends.keep(params.turn_id, prepared.extras);
          codex!.remember(params.turn_id, params.cli_runtime_options);
          return started;
        },
        cancel: (turnId, reason) => lifecycle.cancelTurn(turnId, reason),
        resume: (params) => lifecycle.resume(params),
      },
      follow: (connection, threadId) => this.connections.follow(connection, threadId),
      threadExists: (threadId) => options.store.getThread(threadId) !== undefined,
    });
    this.dispatcher = createDispatcher<Connection>(handlers, {
      maxBatchSize: options.config.maxBatchSize,
      onInternalError: (error, method) => this.log(`internal error in ${method}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`),
    });
    this.lifecycle.recoverCutOffTurns();
    this.ready = shared ? shared.watch((turnId, first) => this.deliverFromElsewhere(turnId, first)) : Promise.resolve();
    if (shared) {
      shared.onCancelRequest((turnId, reason) => this.lifecycle.cancelRequested(turnId, reason));
      const leaseTimeoutMs = options.leaseTimeoutMs ?? DEFAULT_LEASE_TIMEOUT_MS;
      this.leaseTimer = setInterval(() => {
        try {
          this.lifecycle.maintainLeases();
        } catch (error) {
          this.log(`could not renew or check turn leases: ${(error as Error).message}`);
        }
      }, Math.max(1, Math.floor(leaseTimeoutMs / 3)));
      this.leaseTimer.unref();
    }
  }

  /**
   * Keeps `delivered` up to date. On a shared store another instance may have appended to
   * a turn this one writes too (an approval's answer): its events, not announced here
   * yet, are handed to the observers first, so they see the turn in sequence order.
   */
  private noteDelivered(event: StoredEvent): void {
    const last = this.delivered.get(event.turn_id);
    if (last !== undefined && event.sequence <= last) return;
    this.delivered.set(event.turn_id, event.sequence);
    if (last === undefined || event.sequence === last + 1 || !this.options.store.shared) return;
    this.delivered.set(event.turn_id, last);
    for (const missing of this.options.store.events(event.turn_id, last, event.sequence - 1 - last)) this.turnLog.deliver(missing);
    this.delivered.set(event.turn_id, event.sequence);
  }

  /**
   * Another instance committed events of a turn from `first` on: the observers (this
   * instance's connections and views) get every event after the last one they were
   * handed, read from the log in sequence order, so each reaches them once and in order.
   */
  private deliverFromElsewhere(turnId: string, first: number, attempt = 0): void {
    try {
      const after = this.delivered.get(turnId) ?? first - 1;
      for (const event of this.options.store.events(turnId, after)) {
        this.turnLog.deliver(event);
        // What the other instance's run waits for, or what this one's may: requests and their answers.
        const n = asNotification(event);
        if (n.method === "turn/permission/request/opened") this.approvals.remember(n.params.request.request_id, event.thread_id, turnId);
        if (n.method === "turn/permission/request/resolved") this.approvals.resolvedElsewhere(n.params.request_id, n.params.resolution);
        if (n.method === "turn/question/resolved") {
          const { call_id, index, resolution, option_id } = n.params;
          this.questions.resolvedElsewhere(turnId, call_id, index, resolution, option_id);
        }
      }
    } catch (error) {
      // The store may be connecting again: what was announced stays in the log, and is read again.
      const again = attempt < DELIVERY_ATTEMPTS;
      this.log(`could not deliver the events of turn ${turnId} from another instance: ${(error as Error).message}${again ? "; trying again" : ""}`);
      if (again) setTimeout(() => this.deliverFromElsewhere(turnId, first, attempt + 1), DELIVERY_RETRY_MS * (attempt + 1)).unref();
    }
  }

  /** Serves one connection over a transport until it closes. */
  connect(transport: Transport): Connection {
    const inFlight = new Set<Promise<void>>();
    // A transport may answer the frames it writes together with one promise: its failure is logged once.
    let watched: Promise<void> | undefined;
    const write = (frame: string) => {
      const sent = transport.send(frame);
      if (sent === watched) return;
      watched = sent;
      sent.catch((error: unknown) => this.log(`send failed on a closed connection: ${(error as Error).message}`));
    };
    // What the connection is sent, in order, each frame once the commit holding what it reports
    // has ended. A notification whose commit failed reports events the log does not hold: it is
    // dropped. A reply read what its handler saw, committed or not: when that commit fails, the
    // request is answered as the internal error it met.
    const outgoing = new CommitQueue<string | { readonly reply: string }>(this.options.store, (frame, failure) => {
      if (typeof frame !== "string") write(failure === undefined ? frame.reply : this.failedReply(frame.reply, failure));
      else if (failure === undefined) write(frame);
    });
    const connection: Connection = {
      id: randomUUID(),
      threads: new Set(),
      send: (frame) => outgoing.push(frame),
      settled: async () => {
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        await this.committed();
      },
    };
    transport.onmessage = (frame) => {
      const handled = this.dispatcher
        .handleFrame(frame, connection)
        .then((reply) => {
          if (reply !== undefined) outgoing.push({ reply });
        })
        .catch((error: unknown) => this.log(`could not handle a frame: ${(error as Error).message}`))
        .finally(() => inFlight.delete(handled));
      inFlight.add(handled);
    };
    transport.onclose = () => this.connections.delete(connection);
    transport.onerror = (error) => this.log(`connection error: ${error.message}`);
    void transport.start();
    return connection;
  }

  /**
   * Stops every running turn and waits for them: each ends Blocked with a
   * runtime_shutdown_continuation recovery job, which turn/resume continues after a restart.
   */
  async close(): Promise<void> {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    await this.lifecycle.close();
    await this.backends.close();
    await this.acp?.close();
    await this.codex?.close();
  }

  now(): Date {
    return this.clock();
  }

  nowIso(): string {
    return this.clock().toISOString();
  }

  /** Resolves once everything written so far is committed (or its commit failed). */
  committed(): Promise<void> {
    return this.turnLog.committed();
  }

  /** The reply to send instead of one whose writes a failed commit lost: internal_error for each request it answers. */
  private failedReply(reply: string, failure: StoreError): string {
    this.log(`a reply is answered internal_error: ${failure.message}`);
    const parsed = JSON.parse(reply) as { id: string | number | null } | { id: string | number | null }[];
    const failed = (response: { id: string | number | null }) => this.dispatcher.errorResponse(response.id, "internal_error", "Internal error");
    return JSON.stringify(Array.isArray(parsed) ? parsed.map(failed) : failed(parsed));
  }

  /** A turn's state as the log's fold has it. */
  turnState(turnId: string): TurnState | undefined {
    return this.turnLog.state(turnId);
  }

  /** Interrupts a running turn and waits until it has ended; a blocked turn (nothing runs it) ends at once. */
  cancelTurn(turnId: string, reason: string): Promise<void> {
    return this.lifecycle.cancelTurn(turnId, reason);
  }

}
