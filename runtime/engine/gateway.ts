/**
 * The reference gateway: serves the protocol's methods over any transport, keeps every
 * turn in the event log and runs Agent-mode turns through the tool loop.
 *
 * Every notification is appended to the store (with its per-turn sequence) before it is
 * sent, and sent only to connections that have touched its thread. A turn's state is
 * always read back from the log (fold.ts), never kept in a second copy.
 *
 * Nothing is written to a connection before the store has committed what it may report:
 * every frame, notification or response, waits behind the store's durability barrier
 * (`afterCommit`), in the order it was sent. So a client is only ever told about events
 * that are in the log, and a kill can lose only events nobody was sent.
 */
import { randomUUID } from "node:crypto";
import type {
  Turn,
  TurnItem,
  TurnExecutionWindowExhaustionReason,
  TurnPermissionAuditEvent,
  TurnPermissionMode,
  TurnPermissionProfileSnapshot,
} from "../../generated/types.js";
import { createDispatcher, protocolError, type Handlers } from "../../generated/server.js";
import type { ServerNotificationName } from "../../generated/registry.js";
import type { Dispatcher, Transport } from "../../rpc/index.js";
import type { ResolvedConfig } from "../config.js";
import { materializeProfile, policyForMode } from "../permissions/policy.js";
import { securitySnapshot } from "../permissions/security.js";
import { ResolveTokens } from "../permissions/tokens.js";
import type { ModelProvider } from "../providers/provider.js";
import type { EventStore, StoredEvent, ThreadRecord } from "../store/store.js";
import type { StoreError } from "../store/rules.js";
import type { Tool } from "../tools/tool.js";
import { createHash } from "node:crypto";
import { RouteService } from "../routes/service.js";
import { Approvals } from "./approvals.js";
import { isActive, type RecoveryJobState, type TurnState } from "./fold.js";
import { Connections, type Connection } from "./connections.js";
import { TurnLog, type EventParams, type RecordedBy } from "./turn-log.js";
import { DerivedViews } from "./views.js";
import { GatewayShutdown, observedInLog, RecoveryJobs } from "./recovery.js";
import { TurnRunner } from "./turn-runner.js";
import { Threads } from "./threads.js";
import { gatewayHandlers } from "../handlers/index.js";
import { spawnAgentTool } from "./spawn-agent.js";
import type { Clock, EventLog, ParentTurn, TurnOutcome } from "./ports.js";
import { checkpointId, windowId } from "./windows.js";

export interface GatewayOptions {
  readonly store: EventStore;
  readonly config: ResolvedConfig;
  /** Model providers by name. */
  readonly providers: ReadonlyMap<string, ModelProvider>;
  /** Tools the model may call in Agent mode (spawn_agent is added by the gateway). */
  readonly tools: readonly Tool[];
  /** Environment passed to tools' processes. Default: this process's. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly now?: () => Date;
  /** Diagnostics for the operator (stderr in `turnspec serve`). Never sent to clients. */
  readonly log?: (message: string) => void;
}

const micros = (iso: string) => Date.parse(iso) * 1000;

/** How much each mode allows: a child turn may never rank above its parent. */
const MODE_RANK: Record<TurnPermissionMode, number> = { supervised: 0, auto_accept_edits: 1, full_access: 2 };

function profileReason(profile: TurnPermissionProfileSnapshot): string {
  switch (profile.source) {
    case "composer":
      return `the client asked for ${profile.mode}`;
    case "defaulted":
      return "no profile was given: full_access is the default";
    case "inherited_from_parent_turn":
      return `inherited ${profile.mode} from the parent turn`;
    case "task_permission_cap":
      return `capped to the parent turn's ${profile.mode}`;
    default:
      return `set by the ${profile.source}`;
  }
}

export class Gateway {
  readonly dispatcher: Dispatcher<Connection>;
  private readonly connections = new Connections();
  readonly turnLog: TurnLog;
  private readonly running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** Set by close(): a turn stopped from now on (a child turn its parent cancels, say) blocks rather than ends. */
  private stopping = false;
  private readonly runner: TurnRunner;
  readonly approvals: Approvals;
  readonly recovery: RecoveryJobs;
  readonly routes: RouteService;
  private readonly threads: Threads;
  private readonly clock: () => Date;
  private readonly log: (message: string) => void;

  constructor(readonly options: GatewayOptions) {
    this.clock = options.now ?? (() => new Date());
    this.log = options.log ?? (() => undefined);
    this.turnLog = new TurnLog({ store: options.store, workspaceOf: (threadId) => this.thread(threadId).workspace_id, now: this.clock, log: this.log });
    // Observers, in the order a published event reaches them: its own frame first, then what it changed in the views.
    const views = new DerivedViews({ work: (threadId, turnId) => this.turnLog.work(threadId, turnId), notify: (threadId, method, params) => this.connections.notifyThread(threadId, method, params) });
    this.turnLog.observe(this.connections.onEvent);
    this.turnLog.observe(views.onEvent);
    this.turnLog.onLost((turnId) => views.forget(turnId));
    this.threads = new Threads({ store: options.store, defaultCwd: options.config.defaultCwd, nowIso: () => this.nowIso(), turnState: (turnId) => this.turnLog.state(turnId) });
    const tokens = options.config.resolveTokenSecret ? new ResolveTokens(options.config.resolveTokenSecret) : ResolveTokens.random();
    // Each collaborator gets an explicit struct of what it calls, never the gateway itself.
    const log = this.turnLog;
    const eventLog: EventLog = { record: (...a) => log.record(...a), publish: (...a) => log.publish(...a), audit: (...a) => log.audit(...a) };
    const turnState = (turnId: string) => log.state(turnId);
    const clock: Clock = { now: () => this.clock(), nowIso: () => this.clock().toISOString() };
    const thread = (threadId: string) => this.thread(threadId);
    const nextItemId = (turnId: string) => this.nextItemId(turnId);
    this.approvals = new Approvals({ ...eventLog, turnState, thread, ...clock }, options.config, tokens);
    this.recovery = new RecoveryJobs({ ...eventLog, turnState, nextItemId, nowIso: clock.nowIso });
    this.routes = new RouteService(options.store, options.config, () => this.clock(), (id) => options.store.getThread(id) !== undefined);
    // What may run without asking is the permission configuration; a change makes older routes stale.
    const { allowedPaths, requireResolveToken } = options.config;
    this.routes.noteConfiguration(createHash("sha256").update(JSON.stringify({ allowedPaths, requireResolveToken })).digest("hex"));
    const spawnAgent = spawnAgentTool({
      turnState,
      thread,
      createThread: (params) => this.threads.create(params),
      startTurn: (params, parent) => this.startTurn(params, parent),
      cancelTurn: (turnId, reason) => this.cancelTurn(turnId, reason),
      routes: this.routes,
      store: options.store,
      agent: options.config.agent,
    });
    this.runner = new TurnRunner(
      { ...eventLog, turnState, thread, ...clock, nextItemId, finish: (threadId, turnId, outcome) => this.finish(threadId, turnId, outcome), approvals: this.approvals, recovery: this.recovery },
      { config: options.config, providers: options.providers, tools: [...options.tools, spawnAgent], store: options.store, ...(options.env ? { env: options.env } : {}) },
    );
    const handlers = gatewayHandlers({
      threads: this.threads,
      turnState,
      store: options.store,
      work: (threadId, turnId) => log.work(threadId, turnId),
      approvals: this.approvals,
      routes: this.routes,
      lifecycle: { start: (params) => this.startTurn(params), cancel: (turnId, reason) => this.cancelTurn(turnId, reason), resume: (params) => this.resume(params) },
      follow: (connection, threadId) => this.connections.follow(connection, threadId),
      threadExists: (threadId) => options.store.getThread(threadId) !== undefined,
    });
    this.dispatcher = createDispatcher<Connection>(handlers, {
      maxBatchSize: options.config.maxBatchSize,
      onInternalError: (error, method) => this.log(`internal error in ${method}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`),
    });
    this.blockTurnsCutOffByAStop();
  }

  /** Serves one connection over a transport until it closes. */
  connect(transport: Transport): Connection {
    const inFlight = new Set<Promise<void>>();
    const write = (frame: string) => {
      transport.send(frame).catch((error: unknown) => this.log(`send failed on a closed connection: ${(error as Error).message}`));
    };
    const connection: Connection = {
      id: randomUUID(),
      threads: new Set(),
      // A notification whose commit failed reports events the log does not hold: it is dropped.
      send: (frame) =>
        this.options.store.afterCommit((failure) => {
          if (failure === undefined) write(frame);
        }),
      settled: async () => {
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        await this.committed();
      },
    };
    this.connections.add(connection);
    transport.onmessage = (frame) => {
      const handled = this.dispatcher
        .handleFrame(frame, connection)
        .then((reply) => {
          // A reply read what its handler saw, committed or not: it too waits for the commit,
          // and when that fails, the request is answered as the internal error it met.
          if (reply !== undefined) this.options.store.afterCommit((failure) => write(failure === undefined ? reply : this.failedReply(reply, failure)));
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
    this.stopping = true;
    const running = [...this.running.values()];
    for (const run of running) run.abort.abort(new GatewayShutdown());
    await Promise.allSettled(running.map((r) => r.done));
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

  // ---- the event log (turn-log.ts) --------------------------------------------------

  record<N extends ServerNotificationName>(threadId: string, turnId: string, method: N, params: EventParams<N>, by: RecordedBy = "turn"): StoredEvent {
    return this.turnLog.record(threadId, turnId, method, params, by);
  }

  publish<N extends ServerNotificationName>(threadId: string, turnId: string, method: N, params: EventParams<N>, by: RecordedBy = "turn"): StoredEvent {
    return this.turnLog.publish(threadId, turnId, method, params, by);
  }

  audit(threadId: string, turnId: string, fields: Omit<TurnPermissionAuditEvent, "thread_id" | "turn_id" | "sequence" | "audit_id" | "recorded_at">, by: RecordedBy = "turn"): StoredEvent {
    return this.turnLog.audit(threadId, turnId, fields, by);
  }

  turnState(turnId: string): TurnState | undefined {
    return this.turnLog.state(turnId);
  }

  // ---- threads and turns ----------------------------------------------------------

  thread(threadId: string): ThreadRecord {
    return this.threads.thread(threadId);
  }

  /** Starts running a turn whose first events are stored; they are sent after the turn/start (or turn/resume) response. */
  private launch(threadId: string, turnId: string, first: readonly StoredEvent[], depth: number, resumed?: RecoveryJobState): Promise<void> {
    const abort = new AbortController();
    const done = new Promise<void>((resolve) => {
      // setImmediate: the dispatcher sends the turn/start response on a microtask, so the
      // response reaches the client before the first notification of the turn.
      setImmediate(() => {
        // The first events were committed (or lost) by now: lost, they are not sent.
        const lost = this.turnLog.takeLostEvents(turnId);
        if (!lost) for (const event of first) this.turnLog.deliver(event);
        (lost ? Promise.reject(lost) : this.runner.run(threadId, turnId, abort.signal, depth, resumed))
          // The run's last events are not in the log until their commit: if it fails, so did the run.
          .then(() => this.committed())
          .then(() => {
            const failure = this.turnLog.takeLostEvents(turnId);
            if (failure) throw failure;
          })
          .catch((error: unknown) => {
            this.log(`turn ${turnId} crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
            // A gateway bug must not leave the turn InProgress with nothing running it.
            const state = this.turnState(turnId);
            if (state && isActive(state.turn)) {
              try {
                this.finish(threadId, turnId, {
                  status: "Failed",
                  usage: state.turn.usage ?? { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
                  error: { kind: "internal", message: "the gateway failed while running the turn", retryable: false },
                });
              } catch (finishing) {
                this.log(`turn ${turnId} could not be ended: ${(finishing as Error).message}`);
              }
            }
          })
          .finally(() => {
            this.running.delete(turnId);
            resolve();
          });
      });
    });
    this.running.set(turnId, { abort, done });
    return done;
  }

  /** Interrupts a running turn and waits until it has ended; a blocked turn (nothing runs it) ends at once. */
  async cancelTurn(turnId: string, reason: string): Promise<void> {
    const run = this.running.get(turnId);
    if (run) {
      run.abort.abort(this.stopping ? new GatewayShutdown() : new Error(reason));
      await run.done;
      // A run that had just blocked the turn was only winding down (it ends once its last
      // events are committed): the blocked turn is still to be cancelled.
      if (this.stopping) return;
    }
    const state = this.turnState(turnId);
    if (state?.turn.status === "Blocked") {
      this.finish(state.turn.thread_id ?? this.options.store.turnThread(turnId)!, turnId, {
        status: "Interrupted",
        usage: state.turn.usage ?? { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
        error: { kind: "cancelled", message: reason, retryable: false },
      });
    }
  }

  /** The id the next item of a turn gets: unique in the turn, as it names the log position it opens at. */
  nextItemId(turnId: string): string {
    return `${turnId}_item_${this.options.store.lastSequence(turnId) + 1}`;
  }

  /**
   * Creates and starts a turn: turn/start, or spawn_agent for a child turn (`parent`),
   * which inherits the parent's permission mode and never gets more than it.
   */
  startTurn(params: Parameters<Handlers<Connection>["turn/start"]>[0], parent?: ParentTurn): { turn: Turn; done: Promise<void> } {
    const thread = this.thread(params.thread_id);
    const active = this.threads.activeTurn(thread.id);
    if (active) {
      const remedy = active.status === "Blocked" ? "resume it with turn/resume or cancel it with turn/cancel" : "wait for it to finish or cancel it with turn/cancel";
      throw protocolError("turn_in_progress", `Thread ${thread.id} already has turn ${active.id} (${active.status}); a thread runs one turn at a time: ${remedy}`, {
        thread_id: thread.id,
        active_turn_id: active.id,
        active_turn_status: active.status,
      });
    }
    const createdAt = this.nowIso();
    if (!this.options.store.createTurn(thread.id, params.turn_id, createdAt)) {
      throw protocolError("duplicate_turn_id", `Turn id ${params.turn_id} is already used`, { turn_id: params.turn_id });
    }
    const profile = this.profileFor(params, parent);
    const turn: Turn = {
      id: params.turn_id,
      thread_id: thread.id,
      workspace_id: thread.workspace_id,
      status: "InProgress",
      mode: params.mode ?? thread.mode,
      created_at: createdAt,
      model_provider: params.model_provider ?? thread.model_provider ?? this.options.config.defaultProvider,
      model: params.model ?? thread.model ?? this.options.config.defaultModel,
      prompt_manifest: null,
      permission_profile: profile,
      ...(parent?.actor ? { actor: parent.actor } : {}),
      security: securitySnapshot({
        profile,
        cwd: thread.cwd,
        roots: [thread.cwd],
        allowedPaths: profile.effective_policy.allowed_paths ?? [],
        // Restricted modes cap how long a command may run, below the gateway's own bound.
        shellTimeoutCapMs:
          profile.mode === "full_access" ? this.options.config.maxShellTimeoutMs : Math.min(this.options.config.maxShellTimeoutMs, this.options.config.restrictedMaxShellTimeoutMs),
        ...(parent
          ? {
              parentCap: {
                parent_thread_id: parent.turn.thread_id ?? "",
                parent_turn_id: parent.turn.id,
                parent_mode: parent.turn.permission_profile.mode,
                capped_policy: parent.turn.permission_profile.effective_policy,
                source: profile.source,
              },
            }
          : {}),
      }),
    };
    // The turn, its profile and the user's input are in the log before the response is sent.
    const user: TurnItem = { type: "userMessage", id: `${params.turn_id}_user`, status: "completed", content: params.input, ...(params.capabilities ? { capabilities: params.capabilities } : {}) };
    const first = [
      this.record(thread.id, params.turn_id, "turn/started", { turn }),
      this.record(thread.id, params.turn_id, "turn/permission/audit", {
        audit_id: `aud_${randomUUID().replace(/-/g, "")}`,
        kind: "profile_selected",
        profile,
        reason: profileReason(profile),
        recorded_at: createdAt,
      }),
      this.record(thread.id, params.turn_id, "item/started", { item_id: user.id, item: user }),
      this.record(thread.id, params.turn_id, "item/completed", { item_id: user.id, item: user }),
    ];
    return { turn, done: this.launch(thread.id, params.turn_id, first, parent ? parent.depth + 1 : 0) };
  }

  /** The profile a new turn runs under: what the client asked for, or for a child turn, the parent's mode at most. */
  private profileFor(params: Parameters<Handlers<Connection>["turn/start"]>[0], parent: ParentTurn | undefined): TurnPermissionProfileSnapshot {
    const configPaths = this.options.config.allowedPaths;
    const withConfig = (profile: TurnPermissionProfileSnapshot): TurnPermissionProfileSnapshot => {
      const paths = [...(profile.effective_policy.allowed_paths ?? []), ...configPaths];
      return paths.length ? { ...profile, effective_policy: { ...profile.effective_policy, allowed_paths: paths } } : profile;
    };
    if (!parent) return withConfig(materializeProfile(params.permission_profile));
    const parentProfile = parent.turn.permission_profile;
    const requested = parent.requestedMode ?? parentProfile.mode;
    const capped = MODE_RANK[requested] > MODE_RANK[parentProfile.mode];
    const mode = capped ? parentProfile.mode : requested;
    const { allowed_tools, denied_tools, allowed_paths } = parentProfile.effective_policy;
    return withConfig({
      mode,
      source: capped ? "task_permission_cap" : "inherited_from_parent_turn",
      effective_policy: {
        ...policyForMode(mode),
        ...(allowed_tools ? { allowed_tools } : {}),
        ...(denied_tools ? { denied_tools } : {}),
        ...(allowed_paths ? { allowed_paths: allowed_paths.filter((p) => !configPaths.includes(p)) } : {}),
      },
    });
  }

  /** Ends a turn with a terminal notification carrying its final snapshot. */
  finish(threadId: string, turnId: string, outcome: TurnOutcome): Turn {
    const { blocked: _blocked, ...current } = this.turnState(turnId)!.turn;
    const manifest = outcome.promptManifest ? { prompt_manifest: outcome.promptManifest } : {};
    const turn: Turn = { ...current, ...manifest, status: outcome.status, completed_at: this.nowIso(), usage: outcome.usage };
    if (outcome.status === "Completed") {
      this.publish(threadId, turnId, "turn/completed", { turn, usage: outcome.usage });
    } else {
      const failed: Turn = { ...turn, error: outcome.error };
      this.publish(threadId, turnId, "turn/failed", { turn: failed, error: outcome.error });
      return failed;
    }
    return turn;
  }

  /**
   * Turns the log shows as running when the gateway starts were cut off by a stop or a
   * kill: each is made Blocked with a runtime_shutdown_continuation recovery job, so no
   * turn stays InProgress with nothing running it, and turn/resume can continue it.
   */
  private blockTurnsCutOffByAStop(): void {
    for (const ref of this.options.store.allTurns()) {
      const state = this.turnState(ref.turn_id);
      for (const id of state?.requests.keys() ?? []) this.approvals.remember(id, ref.thread_id, ref.turn_id);
      if (state?.turn.status !== "InProgress") continue;
      try {
        this.recovery.blockCutOffTurn(ref.thread_id, ref.turn_id, state, observedInLog(this.options.store.events(ref.turn_id), state));
      } catch (error) {
        // A log this gateway cannot block from must still not leave the turn InProgress.
        this.log(`turn ${ref.turn_id} could not be blocked after the stop: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        this.finish(ref.thread_id, ref.turn_id, {
          status: "Interrupted",
          usage: state.turn.usage ?? { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
          error: { kind: "interrupted", message: "the gateway stopped while the turn was running", retryable: true },
        });
      }
    }
  }

  /**
   * turn/resume: continues a Blocked turn through one of its open recovery jobs in a new
   * execution window. The resume's first events are in the log before the response.
   */
  private async resume(params: Parameters<Handlers<Connection>["turn/resume"]>[0]): Promise<{ turn: Turn; recovery_job_id: string }> {
    // A run that has just blocked the turn may still be winding down.
    const winding = this.running.get(params.turn_id);
    if (winding && this.turnState(params.turn_id)?.turn.status === "Blocked") await winding.done;
    const state = this.threads.turnOf(params.thread_id, params.turn_id);
    const blocked = state.turn.status === "Blocked" ? state.turn.blocked : undefined;
    if (!blocked || this.running.has(params.turn_id)) {
      throw protocolError("turn_not_blocked", `Turn ${params.turn_id} is not blocked (${state.turn.status}); only a blocked turn can be resumed`, {
        turn_id: params.turn_id,
        status: state.turn.status,
      });
    }
    const jobId = params.recovery_job_id ?? blocked.recovery_job_id;
    const job = state.jobs.get(jobId);
    if (!job?.open) {
      const why = job ? "was already used by an earlier resume" : "is not a recovery job of this turn";
      throw protocolError("recovery_job_not_found", `Recovery job ${jobId} ${why}; turn ${params.turn_id} can be resumed through ${blocked.recovery_job_id} (or without recovery_job_id)`, {
        turn_id: params.turn_id,
        recovery_job_id: jobId,
        active_recovery_job_id: blocked.recovery_job_id,
      });
    }
    const { thread_id: threadId, turn_id: turnId } = params;
    const first = [this.record(threadId, turnId, "item/recovery_attached", { item_id: job.item_id, recovery_job_id: job.recovery_job_id, attempt: job.attempts + 1 })];
    const previous = state.windows.at(-1);
    const index = previous ? previous.window_index + 1 : 0;
    if (previous) {
      first.push(
        this.record(threadId, turnId, "turn/execution_window/continued", {
          previous_window_id: previous.window_id,
          window_id: windowId(turnId, index),
          window_index: index,
          checkpoint_id: checkpointId(turnId, previous.window_index),
          reason: job.exhaustion_reason ?? blocked.reason as TurnExecutionWindowExhaustionReason,
        }),
      );
    }
    first.push(this.record(threadId, turnId, "turn/execution_window/started", { window_id: windowId(turnId, index), window_index: index, limits: this.options.config.windowLimits, status: "running" }));
    void this.launch(threadId, turnId, first, this.depthOf(state.turn), job);
    return { turn: this.turnState(turnId)!.turn, recovery_job_id: job.recovery_job_id };
  }

  /** How deep a turn is in a chain of spawn_agent child turns (0 for a client's turn). */
  private depthOf(turn: Turn): number {
    let depth = 0;
    for (let parent = turn.parent_turn_id; parent !== undefined; parent = this.turnState(parent)?.turn.parent_turn_id) depth++;
    return depth;
  }
}
