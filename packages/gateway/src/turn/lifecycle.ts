/**
 * The turn lifecycle: a turn is created and started (turn/start, or spawn_agent for a child
 * turn), run by its execution backend (the TurnExecution port: the round loop, an ACP agent
 * or a CLI runtime), ended with its terminal snapshot, cancelled, blocked by a stop and
 * resumed. Turns the log shows running when the gateway starts were cut off by a stop or a
 * kill, and are blocked for turn/resume; on a shared store, the leases of the turns this
 * instance runs are kept, and turns whose owner died are blocked likewise.
 */
import { randomUUID } from "node:crypto";
import type { ServerNotificationName } from "@turnspec/protocol/registry";
import { protocolError } from "@turnspec/protocol/server";
import { invalidParams } from "@turnspec/rpc";
import { MAX_INPUT_DEPTH, tooDeep } from "../input-depth.js";
import type {
  Turn,
  TurnExecutionWindowExhaustionReason,
  TurnItem,
  TurnPermissionMode,
  TurnPermissionProfileSnapshot,
  TurnResumeParams,
  TurnStartParams,
} from "@turnspec/protocol/types";
import type { ResolvedConfig } from "../config.js";
import { materializeProfile, policyForMode } from "../permissions/policy.js";
import { childRoots } from "../permissions/roots.js";
import { securitySnapshot } from "../permissions/security.js";
import { releaseTurnSandbox, sandboxForNewTurn, sandboxMissing } from "../sandbox/turn.js";
import { storeErrors } from "../store/rules.js";
import type { EventStore, StoredEvent } from "../store/store.js";
import type { Approvals } from "../flows/approvals.js";
import type { Surfaced } from "../flows/surfaced.js";
import { isActive, type RecoveryJobState } from "../log/fold.js";
import type { Clock, PreparedTurn, TurnExecution, TurnOutcome, TurnRun } from "../engine/ports.js";
import type { ChildTurns, ParentTurn } from "../tools/tool.js";
import { zeroUsage } from "./outcome.js";
import { GatewayShutdown, observedInLog, type RecoveryJobs } from "./recovery.js";
import type { TurnRuns } from "./runs.js";
import type { Threads } from "../views/threads.js";
import type { PreparedEvent, TurnLog } from "../log/turn-log.js";
import { checkpointId, windowId } from "./windows.js";

export interface LifecyclePorts {
  readonly log: Pick<
    TurnLog,
    | "record"
    | "publish"
    | "deliver"
    | "takeLostEvents"
    | "committed"
    | "state"
    | "prepareFirst"
    | "recordPrepared"
    | "hold"
    | "letGo"
    | "fence"
    | "isFenced"
    | "onFenced"
  >;
  readonly threads: Pick<Threads, "thread" | "activeTurn" | "turnOf">;
  readonly store: Pick<EventStore, "createTurn" | "claimTurn" | "allTurns" | "events" | "turnThread" | "lastSequence" | "shared">;
  /** How turns execute: a client's start is prepared there, and every run goes there. */
  readonly execution: Pick<TurnExecution, "prepare" | "run">;
  /** The turns this instance runs. */
  readonly runs: TurnRuns;
  /** How long a turn's lease lasts unrenewed, on a store shared by several instances. */
  readonly leaseTimeoutMs: number;
  readonly config: ResolvedConfig;
  readonly clock: Clock;
  readonly approvals: Pick<Approvals, "remember">;
  readonly recovery: Pick<RecoveryJobs, "blockCutOffTurn">;
  /** What a turn surfaces after its last item, before its terminal notification (invites, wallet cards). */
  readonly surfaced: Pick<Surfaced, "surface" | "forget">;
  /** Diagnostics for the operator. */
  readonly diagnose: (message: string) => void;
  /** The gateway's secrets its process still shows in /proc (GatewayOptions.exposedSecrets). */
  readonly exposedSecrets?: readonly string[];
}

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

/** One of a new turn's first events, as recorded: its method and params. */
type FirstEvent = readonly [ServerNotificationName, Record<string, unknown>];

export class TurnLifecycle {
  private readonly running: TurnRuns;
  /**
   * Turns whose run crashed and whose Failed end could not be recorded (the store failed
   * too, e.g. its database was restarting), by thread: their end is recorded again at each
   * lease check until it is, and on a shared store their lease is kept meanwhile.
   */
  private readonly unfinished = new Map<string, string>();
  /** Set by close(): a turn stopped from now on (a child turn its parent cancels, say) blocks rather than ends. */
  private stopping = false;
  private leaseTimer: NodeJS.Timeout | undefined;
  /** What a running turn's spawn_agent starts and cancels child turns through. */
  private readonly children: ChildTurns = {
    startTurn: (params, parent) => this.startTurn(params, parent),
    cancelTurn: (turnId, reason) => this.cancelTurn(turnId, reason),
  };

  constructor(private readonly ports: LifecyclePorts) {
    this.running = ports.runs;
    ports.log.onFenced((turnId, refusal) => this.fenced(turnId, refusal));
  }

  /**
   * Claims a turn for a run of this instance: the generation the claim gives is what every
   * write for the turn carries from now on. Undefined when another instance holds the turn.
   */
  private claim(turnId: string): number | undefined {
    const generation = this.ports.store.claimTurn(turnId, this.ports.leaseTimeoutMs);
    if (generation !== undefined) this.ports.log.hold(turnId, generation);
    return generation;
  }

  /**
   * This instance lost a turn it ran (it stalled past its lease and another instance took
   * the turn over): its run is stopped here, its processes killed with it, and nothing more
   * is written for it (the log refuses it). Said once.
   */
  private fenced(turnId: string, refusal: Error): void {
    this.unfinished.delete(turnId);
    const run = this.running.get(turnId);
    this.ports.diagnose(
      `turn ${turnId}: fenced off, another instance holds it now (${refusal.message}); this instance stops ${run ? "its run" : "it"} and writes nothing more to it`,
    );
    run?.abort.abort(new GatewayShutdown());
  }

  /**
   * Takes over the turns the log holds: those it shows running were cut off by a stop or a
   * kill, and are blocked. On a shared store, another instance's cancel requests are
   * served from now on, and the leases are kept every third of their timeout.
   */
  open(): void {
    this.recoverCutOffTurns();
    const shared = this.ports.store.shared;
    if (!shared) return;
    shared.onCancelRequest((turnId, reason) => this.cancelRequested(turnId, reason));
    this.leaseTimer = setInterval(
      () => {
        try {
          this.maintainLeases();
        } catch (error) {
          this.ports.diagnose(`could not renew or check turn leases: ${(error as Error).message}`);
        }
      },
      Math.max(1, Math.floor(this.ports.leaseTimeoutMs / 3)),
    );
    this.leaseTimer.unref();
  }

  /**
   * Stops every running turn and waits for them: each ends Blocked with a
   * runtime_shutdown_continuation recovery job, which turn/resume continues after a restart.
   */
  async close(): Promise<void> {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.stopping = true;
    const running = this.running.runs();
    for (const run of running) run.abort.abort(new GatewayShutdown());
    await Promise.allSettled(running.map((r) => r.done));
  }

  /** Starts running a turn whose first events are stored; they are sent after the turn/start (or turn/resume) response. */
  private launch(
    threadId: string,
    turnId: string,
    first: readonly StoredEvent[],
    depth: number,
    from: { readonly resumed: RecoveryJobState } | { readonly prepared: PreparedTurn | undefined },
    /** A new turn whose first events were lost with their commit: what it leaves to clean up (its sandbox). */
    unstarted?: () => void,
  ): Promise<void> {
    const abort = new AbortController();
    const done = new Promise<void>((resolve) => {
      // setImmediate: the dispatcher sends the turn/start response on a microtask, so the
      // response reaches the client before the first notification of the turn. The run then
      // waits for the first events' commit to end: on a store whose commits take a round trip
      // (PostgreSQL), what the run reads first would otherwise wait behind that commit, and
      // the first frames of every turn started in the same burst behind those reads.
      setImmediate(() => void this.ports.log.committed().then(start));
      const start = (): void => {
        // The first events were committed (or lost) by now: lost, they are not sent.
        const lost = this.ports.log.takeLostEvents(turnId);
        // A new turn lost with its first events is not in the log at all: there is nothing to
        // run or end (the failure may already have been taken by a new start of the same id).
        // One that kept some of them (a group that committed part-way) is ended Failed below.
        if (unstarted && this.ports.log.state(turnId) === undefined) {
          this.ports.diagnose(`turn ${turnId} was not started: its first events could not be stored${lost ? ` (${lost.message})` : ""}`);
          unstarted();
          this.running.delete(turnId);
          this.release(turnId);
          resolve();
          return;
        }
        if (!lost) for (const event of first) this.ports.log.deliver(event);
        const run: TurnRun = {
          threadId,
          turnId,
          signal: abort.signal,
          depth,
          ...from,
          finish: (outcome) => this.finish(threadId, turnId, outcome),
          children: this.children,
        };
        (lost ? Promise.reject(lost) : this.ports.execution.run(run))
          // The run's last events are not in the log until their commit: if it fails, so did the run.
          .then(() => this.ports.log.committed())
          .then(() => {
            const failure = this.ports.log.takeLostEvents(turnId);
            if (failure) throw failure;
          })
          .catch((error: unknown) => {
            // Fenced off: said once already, and the turn is the other instance's to end.
            if (this.ports.log.isFenced(turnId)) return;
            this.ports.diagnose(`turn ${turnId} crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
            // A gateway bug must not leave the turn InProgress with nothing running it.
            try {
              this.failCrashed(threadId, turnId);
            } catch (finishing) {
              this.ports.diagnose(`turn ${turnId} could not be ended: ${(finishing as Error).message}; ending it is tried again`);
              this.unfinished.set(turnId, threadId);
            }
          })
          .finally(() => {
            this.running.delete(turnId);
            if (!this.unfinished.has(turnId)) this.release(turnId);
            resolve();
          });
      };
    });
    this.running.add(turnId, { abort, done });
    return done;
  }

  /**
   * A turn running on another instance: that instance is asked to cancel it, and this
   * waits until the log shows it ended (or Blocked, when its owner died and the lease
   * ran out: then it is cancelled here, as a blocked turn is).
   */
  private async cancelElsewhere(shared: NonNullable<EventStore["shared"]>, turnId: string, reason: string): Promise<void> {
    shared.requestCancel(turnId, reason);
    const deadline = Date.now() + 3 * this.ports.leaseTimeoutMs;
    while (this.ports.log.state(turnId)?.turn.status === "InProgress" && !this.running.has(turnId)) {
      if (Date.now() > deadline)
        throw new Error(`turn ${turnId} runs on another instance, which did not end it within ${3 * this.ports.leaseTimeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Another instance asked for a cancel: the turn is cancelled if it runs here. */
  private cancelRequested(turnId: string, reason: string): void {
    if (!this.running.has(turnId)) return;
    this.cancelTurn(turnId, reason).catch((error: unknown) =>
      this.ports.diagnose(`turn ${turnId} could not be cancelled: ${(error as Error).message}`),
    );
  }

  /** Ends a turn whose run crashed Failed (internal), if the log still shows it active. */
  private failCrashed(threadId: string, turnId: string): void {
    const state = this.ports.log.state(turnId);
    // A crashed run surfaces nothing it had queued: the turn ends without it.
    this.ports.surfaced.forget(turnId);
    if (!state || !isActive(state.turn)) return;
    this.finish(threadId, turnId, {
      status: "Failed",
      usage: state.turn.usage ?? zeroUsage(),
      error: { kind: "internal", message: "the gateway failed while running the turn", retryable: false },
    });
  }

  /** Records again the Failed end of the turns whose first attempt the store refused. */
  private finishUnfinished(): void {
    for (const [turnId, threadId] of this.unfinished) {
      try {
        this.failCrashed(threadId, turnId);
      } catch (error) {
        if (this.ports.log.isFenced(turnId)) continue;
        this.ports.diagnose(`turn ${turnId} could not be ended yet: ${(error as Error).message}`);
        continue;
      }
      this.unfinished.delete(turnId);
      this.release(turnId);
    }
  }

  /** Gives up the claim of a turn this instance no longer runs (and its lease, on a shared store). */
  private release(turnId: string): void {
    this.ports.log.letGo(turnId);
    try {
      this.ports.store.shared?.releaseTurn(turnId);
    } catch (error) {
      // An unreleased lease only expires: another instance then finds the turn ended.
      this.ports.diagnose(`the lease of turn ${turnId} could not be released: ${(error as Error).message}`);
    }
  }

  /**
   * On a shared store: renews the leases of the turns this instance runs, stops the runs
   * whose lease another instance took over (this one was presumed dead), and blocks the
   * running turns whose owner stopped renewing, as a restart blocks the turns it finds
   * cut off. Called every third of the lease timeout.
   */
  private maintainLeases(): void {
    const shared = this.ports.store.shared;
    if (!shared || this.stopping) return;
    const held = new Set(shared.renewLeases(this.ports.leaseTimeoutMs, [...this.running.turnIds(), ...this.unfinished.keys()]));
    // A turn another instance took over is its to end now.
    for (const turnId of this.unfinished.keys()) if (!held.has(turnId)) this.unfinished.delete(turnId);
    this.finishUnfinished();
    for (const turnId of this.running.turnIds()) {
      if (!held.has(turnId)) this.ports.log.fence(turnId, storeErrors.leaseTakenOver(turnId));
    }
    for (const turnId of shared.expiredLeases()) {
      if (this.running.has(turnId) || this.unfinished.has(turnId)) continue;
      const threadId = this.ports.store.turnThread(turnId);
      if (threadId !== undefined) this.recoverCutOffTurn(threadId, turnId);
    }
  }

  /** Interrupts a running turn and waits until it has ended; a blocked turn (nothing runs it) ends at once. */
  async cancelTurn(turnId: string, reason: string): Promise<void> {
    const run = this.running.get(turnId);
    const shared = this.ports.store.shared;
    if (!run && shared && this.ports.log.state(turnId)?.turn.status === "InProgress") await this.cancelElsewhere(shared, turnId, reason);
    if (run) {
      run.abort.abort(this.stopping ? new GatewayShutdown() : new Error(reason));
      await run.done;
      // A run that had just blocked the turn was only winding down (it ends once its last
      // events are committed): the blocked turn is still to be cancelled.
      if (this.stopping) return;
    }
    if (this.ports.log.state(turnId)?.turn.status !== "Blocked") return;
    // Claimed like a run: a resume on another instance and this cancel do not both act on it.
    if (this.claim(turnId) === undefined) {
      if (shared) await this.cancelElsewhere(shared, turnId, reason);
      return;
    }
    try {
      const state = this.ports.log.state(turnId);
      if (state?.turn.status !== "Blocked") return;
      this.finish(state.turn.thread_id ?? this.ports.store.turnThread(turnId)!, turnId, {
        status: "Interrupted",
        usage: state.turn.usage ?? zeroUsage(),
        error: { kind: "cancelled", message: reason, retryable: false },
      });
    } finally {
      this.release(turnId);
    }
  }

  /**
   * turn/start: the execution backend the start asks for is checked and the capabilities it
   * selects are resolved (a backend this gateway does not serve refuses it, and no turn is
   * created), then the turn is created and started.
   */
  async start(params: TurnStartParams): Promise<{ turn: Turn; done: Promise<void> }> {
    const prepared = await this.ports.execution.prepare(params, this.ports.threads.thread(params.thread_id));
    return this.begin(prepared.params, undefined, prepared);
  }

  /** Creates and starts a child turn of `parent` (spawn_agent), which inherits the parent's permission mode and never gets more than it. */
  startTurn(params: TurnStartParams, parent: ParentTurn): { turn: Turn; done: Promise<void> } {
    return this.begin(params, parent, undefined);
  }

  /** Creates and starts a turn: a client's, from what its start was prepared into, or a child turn of `parent`. */
  private begin(
    params: TurnStartParams,
    parent: ParentTurn | undefined,
    preparedTurn: PreparedTurn | undefined,
  ): { turn: Turn; done: Promise<void> } {
    const capabilities = preparedTurn?.capabilities;
    const thread = this.ports.threads.thread(params.thread_id);
    // On a shared store, another instance's turn/start for the thread waits here until
    // this one's turn/started is committed, and then finds it active.
    this.ports.store.shared?.lockThread(thread.id);
    const active = this.ports.threads.activeTurn(thread.id);
    if (active) {
      const remedy =
        active.status === "Blocked"
          ? "resume it with turn/resume or cancel it with turn/cancel"
          : "wait for it to finish or cancel it with turn/cancel";
      throw protocolError(
        "turn_in_progress",
        `Thread ${thread.id} already has turn ${active.id} (${active.status}); a thread runs one turn at a time: ${remedy}`,
        {
          thread_id: thread.id,
          active_turn_id: active.id,
          active_turn_status: active.status,
        },
      );
    }
    // Refused before the turn exists: a turn/start that fails leaves no turn behind.
    const deep = tooDeep(params.input, MAX_INPUT_DEPTH, "/input");
    if (deep)
      throw invalidParams("turn/start", `the input nests deeper than ${MAX_INPUT_DEPTH} levels`, [
        { pointer: deep, message: `nests deeper than ${MAX_INPUT_DEPTH} levels` },
      ]);
    const profile = this.profileFor(params, parent);
    const missing = sandboxMissing(profile.mode, this.ports.config.sandbox);
    if (missing) throw protocolError("sandbox_unavailable", `Turn ${params.turn_id} was not started: ${missing}`, { mode: profile.mode });
    const createdAt = this.ports.clock.nowIso();
    // The id is checked before the sandbox's temp folder is made for it; createTurn below
    // is what takes it (a concurrent start of the same id loses there).
    if (this.ports.store.turnThread(params.turn_id) !== undefined) {
      throw protocolError("duplicate_turn_id", `Turn id ${params.turn_id} is already used`, { turn_id: params.turn_id });
    }
    const sandbox = sandboxForNewTurn(profile.mode, params.turn_id, this.ports.config.sandbox);
    const turn: Turn = {
      id: params.turn_id,
      thread_id: thread.id,
      workspace_id: thread.workspace_id,
      status: "InProgress",
      mode: params.mode ?? thread.mode,
      created_at: createdAt,
      model_provider: params.model_provider ?? thread.model_provider ?? this.ports.config.defaultProvider,
      model: params.model ?? thread.model ?? this.ports.config.defaultModel,
      ...(params.execution_backend ? { execution_backend: params.execution_backend } : {}),
      prompt_manifest: null,
      permission_profile: profile,
      ...(capabilities ? { capabilities } : {}),
      ...(parent?.actor ? { actor: parent.actor } : {}),
      security: securitySnapshot({
        profile,
        cwd: thread.cwd,
        // A child never gets roots beyond its parent's (permissions/roots.ts).
        roots: childRoots(thread.cwd, parent?.turn.security),
        allowedPaths: profile.effective_policy.allowed_paths ?? [],
        ...(sandbox ? { sandbox } : {}),
        sandboxRequired: this.ports.config.sandbox.required,
        envPassthrough: this.ports.config.envPassthrough,
        network: this.ports.config.network,
        ...(this.ports.exposedSecrets?.length ? { exposedSecrets: this.ports.exposedSecrets } : {}),
        // Restricted modes cap how long a command may run, below the gateway's own bound.
        shellTimeoutCapMs:
          profile.mode === "full_access"
            ? this.ports.config.maxShellTimeoutMs
            : Math.min(this.ports.config.maxShellTimeoutMs, this.ports.config.restrictedMaxShellTimeoutMs),
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
    const user: TurnItem = {
      type: "userMessage",
      id: `${params.turn_id}_user`,
      status: "completed",
      content: params.input,
      ...(params.capabilities ? { capabilities: params.capabilities } : {}),
    };
    // One object for both: the log serialises the user's input once (see TurnLog.prepareFirst).
    const userEvent = { item_id: user.id, item: user };
    const events: FirstEvent[] = [
      ["turn/started", { turn }],
      [
        "turn/permission/audit",
        {
          audit_id: `aud_${randomUUID().replace(/-/g, "")}`,
          kind: "profile_selected",
          profile,
          reason: profileReason(profile),
          recorded_at: createdAt,
        },
      ],
      ["item/started", userEvent],
      ["item/completed", userEvent],
    ];
    // The start is atomic: the turn and its first events are stored together or not at all.
    // What could fail one of them part-way (an event that does not validate or serialise)
    // is found here, before anything is stored; the store's own failure is a failed commit,
    // which loses the turn with its events (createTurn is in the same commit), leaving the
    // id and the thread free: launch() then runs nothing.
    let prepared: PreparedEvent[];
    try {
      try {
        prepared = this.ports.log.prepareFirst(thread.id, params.turn_id, events);
      } catch (error) {
        throw new Error(`turn ${params.turn_id} was not started: ${(error as Error).message}`);
      }
      if (!this.ports.store.createTurn(thread.id, params.turn_id, createdAt)) {
        throw protocolError("duplicate_turn_id", `Turn id ${params.turn_id} is already used`, { turn_id: params.turn_id });
      }
    } catch (error) {
      releaseTurnSandbox(turn.security);
      throw error;
    }
    // A failure reported for an earlier turn of this id, which a failed commit took away, is not this turn's.
    this.ports.log.takeLostEvents(params.turn_id);
    // Committed with turn/started: no instance ever sees the turn running without an owner.
    this.claim(params.turn_id);
    const first: StoredEvent[] = [];
    try {
      for (const event of prepared) first.push(this.ports.log.recordPrepared(event));
    } catch (error) {
      // A store that refuses an append part-way (not at its commit) has kept the ones before
      // it: the turn is ended at once, so it never holds the thread.
      if (first.length > 0) this.endUnstarted(thread.id, params.turn_id, error);
      releaseTurnSandbox(turn.security);
      throw error;
    }
    return {
      turn,
      done: this.launch(thread.id, params.turn_id, first, parent ? parent.depth + 1 : 0, { prepared: preparedTurn }, () =>
        releaseTurnSandbox(turn.security),
      ),
    };
  }

  /** Ends a turn whose first events were only partly stored: Failed (internal), so its thread is free. */
  private endUnstarted(threadId: string, turnId: string, cause: unknown): void {
    try {
      this.finish(threadId, turnId, {
        status: "Failed",
        usage: zeroUsage(),
        error: { kind: "internal", message: `the turn's first events could not be stored: ${(cause as Error).message}`, retryable: true },
      });
    } catch (ending) {
      this.ports.diagnose(`turn ${turnId} could not be ended after a failed start: ${(ending as Error).message}`);
    } finally {
      this.release(turnId);
    }
  }

  /** The profile a new turn runs under: what the client asked for, or for a child turn, the parent's mode at most. */
  private profileFor(params: TurnStartParams, parent: ParentTurn | undefined): TurnPermissionProfileSnapshot {
    const configPaths = this.ports.config.allowedPaths;
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
  private finish(threadId: string, turnId: string, outcome: TurnOutcome): Turn {
    const { blocked: _blocked, ...current } = this.ports.log.state(turnId)!.turn;
    const manifest = outcome.promptManifest ? { prompt_manifest: outcome.promptManifest } : {};
    const turn: Turn = { ...current, ...manifest, status: outcome.status, completed_at: this.ports.clock.nowIso(), usage: outcome.usage };
    releaseTurnSandbox(current.security);
    // After the turn's last item, before its terminal notification, once each.
    this.ports.surfaced.surface(threadId, turnId);
    if (outcome.status === "Completed") {
      this.ports.log.publish(threadId, turnId, "turn/completed", { turn, usage: outcome.usage });
    } else {
      const failed: Turn = { ...turn, error: outcome.error };
      this.ports.log.publish(threadId, turnId, "turn/failed", { turn: failed, error: outcome.error });
      return failed;
    }
    return turn;
  }

  /**
   * Turns the log shows as running when the gateway starts were cut off by a stop or a
   * kill: each is made Blocked with a runtime_shutdown_continuation recovery job, so no
   * turn stays InProgress with nothing running it, and turn/resume can continue it.
   */
  private recoverCutOffTurns(): void {
    for (const ref of this.ports.store.allTurns()) {
      const state = this.ports.log.state(ref.turn_id);
      for (const id of state?.requests.keys() ?? []) this.ports.approvals.remember(id, ref.thread_id, ref.turn_id);
      if (state?.turn.status === "InProgress") this.recoverCutOffTurn(ref.thread_id, ref.turn_id);
    }
  }

  /**
   * Blocks one turn the log shows running with nothing running it. On a shared store, only
   * when this instance can take its lease (it is free or expired): a turn another live
   * instance runs is left alone, and of two instances noticing the same dead owner, one
   * blocks it.
   */
  private recoverCutOffTurn(threadId: string, turnId: string): void {
    if (this.claim(turnId) === undefined) return;
    try {
      const state = this.ports.log.state(turnId);
      if (state?.turn.status !== "InProgress") return;
      try {
        this.ports.recovery.blockCutOffTurn(threadId, turnId, state, observedInLog(this.ports.store.events(turnId), state));
      } catch (error) {
        // A log this gateway cannot block from must still not leave the turn InProgress.
        this.ports.diagnose(
          `turn ${turnId} could not be blocked after the stop: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
        this.finish(threadId, turnId, {
          status: "Interrupted",
          usage: state.turn.usage ?? zeroUsage(),
          error: { kind: "interrupted", message: "the gateway stopped while the turn was running", retryable: true },
        });
      }
    } finally {
      this.release(turnId);
    }
  }

  /**
   * turn/resume: continues a Blocked turn through one of its open recovery jobs in a new
   * execution window. The resume's first events are in the log before the response.
   */
  async resume(params: TurnResumeParams): Promise<{ turn: Turn; recovery_job_id: string }> {
    // A run that has just blocked the turn may still be winding down.
    const winding = this.running.get(params.turn_id);
    if (winding && this.ports.log.state(params.turn_id)?.turn.status === "Blocked") await winding.done;
    // On a shared store, a resume of the same turn on another instance waits until this
    // one's is committed, and then finds the turn running.
    this.ports.store.shared?.lockThread(params.thread_id);
    const state = this.ports.threads.turnOf(params.thread_id, params.turn_id);
    const blocked = state.turn.status === "Blocked" ? state.turn.blocked : undefined;
    if (!blocked || this.running.has(params.turn_id)) {
      throw protocolError(
        "turn_not_blocked",
        `Turn ${params.turn_id} is not blocked (${state.turn.status}); only a blocked turn can be resumed`,
        {
          turn_id: params.turn_id,
          status: state.turn.status,
        },
      );
    }
    const jobId = params.recovery_job_id ?? blocked.recovery_job_id;
    const job = state.jobs.get(jobId);
    if (!job?.open) {
      const why = job ? "was already used by an earlier resume" : "is not a recovery job of this turn";
      throw protocolError(
        "recovery_job_not_found",
        `Recovery job ${jobId} ${why}; turn ${params.turn_id} can be resumed through ${blocked.recovery_job_id} (or without recovery_job_id)`,
        {
          turn_id: params.turn_id,
          recovery_job_id: jobId,
          active_recovery_job_id: blocked.recovery_job_id,
        },
      );
    }
    const { thread_id: threadId, turn_id: turnId } = params;
    // Only with the turn claimed: another instance that holds it (it runs the turn, or is
    // resuming it) goes on alone, and this resume is refused.
    if (this.claim(turnId) === undefined) {
      throw protocolError(
        "turn_not_blocked",
        `Turn ${turnId} is not blocked: another instance holds it and runs it (InProgress); only a blocked turn can be resumed`,
        {
          turn_id: turnId,
          status: "InProgress",
        },
      );
    }
    const first = [
      this.ports.log.record(threadId, turnId, "item/recovery_attached", {
        item_id: job.item_id,
        recovery_job_id: job.recovery_job_id,
        attempt: job.attempts + 1,
      }),
    ];
    const previous = state.windows.at(-1);
    const index = previous ? previous.window_index + 1 : 0;
    if (previous) {
      first.push(
        this.ports.log.record(threadId, turnId, "turn/execution_window/continued", {
          previous_window_id: previous.window_id,
          window_id: windowId(turnId, index),
          window_index: index,
          checkpoint_id: checkpointId(turnId, previous.window_index),
          reason: job.exhaustion_reason ?? (blocked.reason as TurnExecutionWindowExhaustionReason),
        }),
      );
    }
    first.push(
      this.ports.log.record(threadId, turnId, "turn/execution_window/started", {
        window_id: windowId(turnId, index),
        window_index: index,
        limits: this.ports.config.windowLimits,
        status: "running",
      }),
    );
    void this.launch(threadId, turnId, first, this.depthOf(state.turn), { resumed: job });
    return { turn: this.ports.log.state(turnId)!.turn, recovery_job_id: job.recovery_job_id };
  }

  /** How deep a turn is in a chain of spawn_agent child turns (0 for a client's turn). */
  private depthOf(turn: Turn): number {
    let depth = 0;
    for (let parent = turn.parent_turn_id; parent !== undefined; parent = this.ports.log.state(parent)?.turn.parent_turn_id) depth++;
    return depth;
  }
}
