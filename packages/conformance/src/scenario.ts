/**
 * What a scenario is and the context it runs in. A scenario drives the gateway through
 * fresh threads and turns of its own and checks requirements in steps: a step names the
 * requirement it exercises, and what goes wrong inside it decides that requirement's
 * outcome. A gateway's wrong answer, an invalid frame, a closed connection or something
 * the gateway never sent within the step timeout is a failure; a fault of the harness
 * itself is an error. What follows a failed step is not reached, and says why.
 */
import type { ProtocolClient } from "@turnspec/protocol/client";
import { orderingRules } from "@turnspec/protocol/ordering";
import type { AnyNotification } from "@turnspec/protocol/registry";
import type { ThreadStartParams, Turn, TurnStartParams, UserInput } from "@turnspec/protocol/types";
import { errors } from "@turnspec/protocol/registry";
import { LocalError, RpcError } from "@turnspec/rpc";
import type { ChatRequest, ModelServer, ScriptedCall, ScriptHandle } from "./model-server.js";
import type { Outcome, TranscriptEntry } from "./results.js";
import type { GatewaySession, ScenarioChannel } from "./session.js";

export interface Scenario {
  /** A short name, for messages. */
  readonly name: string;
  /** The requirements this scenario decides; what each check observes is in the catalogue (`observes`). */
  readonly checks: readonly string[];
  run(ctx: ScenarioContext): Promise<void>;
}

/** The gateway did something a requirement forbids (or did not do what it demands). */
export class Failure extends Error {
  override readonly name = "Failure";
  constructor(
    message: string,
    readonly invalidFrame?: unknown,
  ) {
    super(message);
  }
}

/** A wait ran out of time: the gateway never sent what the step needs (a failure of that step's requirement). */
export class StepTimeout extends Error {
  override readonly name = "StepTimeout";
}

/** What a step that cannot run on tells the requirements after it: not reached, and why. */
export class NotReached extends Error {
  override readonly name = "NotReached";
}

/**
 * The gateway went away (exited, or closed the connection) while a step waited on it. The
 * step is not reached; the run reports the stop once, as the failure of the one step it
 * interrupted, with how the gateway ended.
 */
export class GatewayGone extends Error {
  override readonly name = "GatewayGone";
}

/**
 * The gateway answered -32601 (method not found) to a method a requirement needs: reported
 * as exactly that, and it wins over anything else the step saw, since it is the cause.
 */
export class NotImplemented extends Failure {
  constructor(readonly method: string | undefined) {
    super(
      method === undefined
        ? `the gateway answered a request with -32601 (method not found)`
        : `the gateway does not implement ${method} (-32601)`,
    );
  }
}

/** Thrown to end a scenario after a step failed: what follows depends on it. */
class Abort extends Error {
  override readonly name = "Abort";
}

export interface StepRecord {
  outcome: Outcome;
  message?: string;
  invalidFrame?: unknown;
  durationMs: number;
  /** The gateway went away while this step ran (not_reached; the run decides what to say). */
  interrupted?: boolean;
  /** Not reached because the gateway had gone before it began (the run says how it went). */
  afterStop?: boolean;
}

export interface ContextOptions {
  readonly session: GatewaySession;
  readonly channel: ScenarioChannel;
  /** The scenario's checks (the requirement ids it decides). */
  readonly checks: readonly string[];
  readonly model: ModelServer;
  readonly token: string;
  /** A prefix unique to the run, for every id the scenario makes up. */
  readonly idPrefix: string;
  /** The gateway id routes name as source and destination gateway. */
  readonly gatewayId: string;
  /** Working folder for threads on the gateway host, when the harness knows one. */
  readonly cwd?: string;
  readonly stepTimeoutMs: number;
  /** How long a turn may stay quiet before the harness asks turn/get whether it ended. */
  readonly quietMs: number;
  /** Records that a turn ended without a terminal notification (a finding of its own). */
  readonly missingTerminal: (turnId: string, status: string) => void;
  /** Records a finding of a requirement this scenario does not decide (the run attributes it). */
  readonly finding?: (finding: { requirement: string; message: string; frame?: unknown; turnId?: string; method?: string }) => void;
  /** The methods and notifications a requirement covers (from the catalogue). */
  readonly covers?: (requirement: string) => readonly string[];
}

/**
 * The notifications after which a turn sends nothing more on its own: the terminals of the
 * protocol's turn-scoped single_terminal rules and the notification of each turn-scoped
 * quiet_after rule (turn/blocked).
 */
const TERMINAL: ReadonlySet<string> = new Set(
  orderingRules
    .filter((rule) => rule.scope.at(-1)?.name === "turn")
    .flatMap((rule) => (rule.kind === "single_terminal" ? rule.terminals : rule.kind === "quiet_after" ? [rule.notification] : [])),
);
/** True for a notification after which its turn sends nothing more on its own (see TERMINAL). */
export const isTerminal = (n: AnyNotification): boolean => TERMINAL.has(n.method);

/** The terminals of the turn-scoped single_terminal rules: after one, the turn is over for good (a blocked turn is not). */
const FINAL: ReadonlySet<string> = new Set(
  orderingRules
    .filter((rule) => rule.scope.at(-1)?.name === "turn")
    .flatMap((rule) => (rule.kind === "single_terminal" ? rule.terminals : [])),
);

export class ScenarioContext {
  readonly records = new Map<string, StepRecord>();
  /** Turns the harness saw end for good (by a final notification or turn/get); a blocked turn is not among them. */
  private readonly endedTurns = new Set<string>();
  private counter = 0;
  private readonly waiters = new Set<{ predicate: (n: AnyNotification) => boolean; resolve: (n: AnyNotification) => void }>();

  constructor(private readonly o: ContextOptions) {
    o.channel.onNotification = (n) => {
      for (const w of [...this.waiters]) {
        if (w.predicate(n)) {
          this.waiters.delete(w);
          w.resolve(n);
        }
      }
    };
    o.channel.onInvalidFrame = (message, frame) => {
      const id = this.active ?? [...this.records.keys()].at(-1);
      if (id) this.fail(id, `the gateway sent an invalid frame: ${message}`, frame);
    };
  }

  get session(): GatewaySession {
    return this.o.session;
  }

  /** The requirement whose step is running; kept on the channel, so that the session knows which step sent each frame. */
  private get active(): string | undefined {
    return this.o.channel.step;
  }

  private set active(requirement: string | undefined) {
    this.o.channel.step = requirement;
  }

  get client(): ProtocolClient {
    return this.o.session.client;
  }

  get model(): ModelServer {
    return this.o.model;
  }

  /** The longest wait of one step. */
  get stepTimeoutMs(): number {
    return this.o.stepTimeoutMs;
  }

  /** How long a turn may stay quiet before the harness asks whether it ended. */
  get quietMs(): number {
    return this.o.quietMs;
  }

  get gatewayId(): string {
    return this.o.gatewayId;
  }

  get token(): string {
    return this.o.token;
  }

  /** How many notifications the scenario has received so far (a mark for `ended`). */
  get seen(): number {
    return this.o.channel.notifications.length;
  }

  get notifications(): readonly AnyNotification[] {
    return this.o.channel.notifications;
  }

  get transcript(): readonly TranscriptEntry[] {
    return this.o.channel.transcript;
  }

  /** The JSON-RPC frames of the scenario, in order: its transcript without the model's HTTP exchanges. */
  get rpcFrames(): TranscriptEntry[] {
    return this.o.channel.transcript.filter((entry) => entry.peer !== "model");
  }

  /** A fresh id with this prefix, unique in the run. */
  id(prefix: string): string {
    return `${prefix}_${this.o.idPrefix}_${++this.counter}`;
  }

  /** The gateway's name for a reference tool. */
  tool(reference: string): string {
    return this.o.model.toolName(reference);
  }

  /** Registers the model's answers for this scenario's token. */
  script(calls: readonly ScriptedCall[]): ScriptHandle {
    const handle = this.o.model.script(this.o.token, calls);
    // The model's HTTP exchanges go into the scenario's transcript, beside its JSON-RPC frames.
    handle.onExchange = (kind, frame) =>
      this.o.channel.transcript.push({
        direction: kind === "request" ? "received" : "sent",
        peer: "model",
        atMs: Math.round(performance.now() - this.o.session.startedAt),
        frame,
      });
    // A model call the script did not expect fails the requirement being exercised.
    handle.onProblem = (problem) => {
      const id = this.active ?? [...this.records.keys()].at(-1) ?? this.o.checks[0];
      if (id) this.fail(id, problem);
    };
    return handle;
  }

  /** Text input carrying the scenario's token, so the model server finds its script. */
  input(text: string): UserInput[] {
    return [{ type: "text", text: `${text} [${this.o.token}]`, textElements: [] }];
  }

  /**
   * Runs one step for `requirement`. A failure inside it fails the requirement and ends
   * the scenario; a timeout or a harness fault is an error and ends it too.
   */
  async step<T>(requirement: string, fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    // A step begun after the gateway went away was not interrupted by it: it never ran.
    const gone = this.o.session.closedBecause !== undefined;
    this.active = requirement;
    try {
      const value = await fn();
      const record = this.record(requirement);
      record.durationMs += performance.now() - started;
      return value;
    } catch (error) {
      const record = this.record(requirement);
      record.durationMs += performance.now() - started;
      if (error instanceof Abort) throw error;
      const { outcome, message, invalidFrame, interrupted } = this.judge(error, requirement);
      const implemented = this.notImplemented(error);
      // A method the gateway does not implement is the cause, whatever else the step saw first.
      if (implemented) Object.assign(record, { outcome: "fail", message: implemented.message });
      else if (outcome === "fail") this.fail(requirement, message, invalidFrame);
      else if (record.outcome !== "fail")
        Object.assign(record, {
          outcome,
          message,
          ...(invalidFrame === undefined ? {} : { invalidFrame }),
          ...(interrupted ? (gone ? { afterStop: true } : { interrupted }) : {}),
        });
      throw new Abort(`${requirement}: ${message}`);
    } finally {
      this.active = undefined;
    }
  }

  /** Like step, but a failure or error only decides `requirement`: the scenario goes on. */
  async attempt(requirement: string, fn: () => Promise<unknown>): Promise<void> {
    try {
      await this.step(requirement, fn);
    } catch (error) {
      if (!(error instanceof Abort)) throw error;
    }
  }

  /** Checks one condition for `requirement` without ending the scenario. */
  check(requirement: string, condition: boolean, message: string, invalidFrame?: unknown): void {
    this.record(requirement);
    if (!condition) this.fail(requirement, message, invalidFrame);
  }

  /** Fails `requirement` with `message` unless it already failed. */
  fail(requirement: string, message: string, invalidFrame?: unknown): void {
    const record = this.record(requirement);
    if (record.outcome === "fail") return;
    Object.assign(record, { outcome: "fail", message, ...(invalidFrame === undefined ? {} : { invalidFrame }) });
  }

  /** Starts a thread the scenario owns. */
  async thread(params: ThreadStartParams = {}): Promise<{ id: string; workspace_id: string }> {
    const { thread } = await this.client.threadStart({ ...(this.o.cwd ? { cwd: this.o.cwd } : {}), ...params });
    this.o.session.own(this.o.channel, thread.id);
    return { id: thread.id, workspace_id: thread.workspace_id };
  }

  /** Notifications of `threadId` from now on belong to this scenario (a child thread, a route's destination). */
  own(threadId: string): void {
    this.o.session.own(this.o.channel, threadId);
  }

  /** Starts a turn with a fresh id (unless given) and the scenario's token in its input. */
  async startTurn(threadId: string, text: string, params: Partial<TurnStartParams> = {}): Promise<Turn> {
    const turnId = params.turn_id ?? this.id("trn");
    this.o.channel.turnRequirement.set(turnId, this.active ?? this.o.checks[0]!);
    const { turn } = await this.client.turnStart({ thread_id: threadId, turn_id: turnId, input: this.input(text), ...params });
    return turn;
  }

  /** Sends a raw frame (see GatewaySession.sendRaw) and waits, within the step timeout, for its response. */
  sendRaw(text: string, id: string | null): Promise<Record<string, unknown>> {
    return this.race(this.o.session.sendRaw(text, id), `a response to ${text}`, this.o.stepTimeoutMs);
  }

  /** Resolves at the first notification of this scenario matching `predicate`, seen already or still to come. */
  waitFor(what: string, predicate: (n: AnyNotification) => boolean, timeoutMs = this.o.stepTimeoutMs): Promise<AnyNotification> {
    return this.awaitNotification(what, predicate, timeoutMs, true);
  }

  /** Like waitFor, for something that may well never come: nobody waits on it, so the console never names it. */
  watchFor(what: string, predicate: (n: AnyNotification) => boolean, timeoutMs = this.o.stepTimeoutMs): Promise<AnyNotification> {
    return this.awaitNotification(what, predicate, timeoutMs, false);
  }

  private awaitNotification(
    what: string,
    predicate: (n: AnyNotification) => boolean,
    timeoutMs: number,
    tracked: boolean,
  ): Promise<AnyNotification> {
    const seen = this.o.channel.notifications.find(predicate);
    if (seen) return Promise.resolve(seen);
    let waiter: { predicate: (n: AnyNotification) => boolean; resolve: (n: AnyNotification) => void };
    const arrived = new Promise<AnyNotification>((resolve) => {
      waiter = { predicate, resolve };
      this.waiters.add(waiter);
    });
    return this.race(arrived, what, timeoutMs, tracked).finally(() => this.waiters.delete(waiter));
  }

  /** Resolves when the gateway has made the n-th model call of `script`, within the step timeout. */
  modelCall(script: ScriptHandle, n: number): Promise<ChatRequest> {
    return this.race(
      script.waitForCall(n),
      `model call ${n} of this scenario's script (the gateway made ${script.calls.length})`,
      this.o.stepTimeoutMs,
    );
  }

  /** `awaited`, unless the step times out first or the connection closes (failures both). */
  private race<T>(awaited: Promise<T>, what: string, timeoutMs: number, tracked = true): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StepTimeout(`the gateway never sent ${what} (waited ${timeoutMs} ms)`)), timeoutMs);
      timer.unref();
    });
    const closed = this.o.session.whenClosed().then((why) => {
      throw new GatewayGone(`${why} while waiting for ${what}`);
    });
    const raced = Promise.race([awaited, timedOut, closed]).finally(() => clearTimeout(timer));
    return tracked ? this.o.session.track(what, this.o.channel, raced) : raced;
  }

  /**
   * Waits until a turn ends: its terminal notification, or, when the turn stays quiet,
   * turn/get saying it ended (then the missing notification is recorded as a finding of
   * its own and the scenario goes on with what turn/get said). Only notifications after the
   * first `since` of the scenario count: a resumed turn ends a second time.
   */
  async ended(turnId: string, since = 0): Promise<{ terminal?: AnyNotification; turn: Turn }> {
    const deadline = performance.now() + this.o.stepTimeoutMs;
    const earlier = new Set(this.o.channel.notifications.slice(0, since));
    const ofTurn = (n: AnyNotification) => isTerminal(n) && (n.params as { turn_id?: string }).turn_id === turnId && !earlier.has(n);
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0)
        throw new StepTimeout(
          `the gateway never ended turn ${turnId}: no terminal notification, and turn/get still says InProgress (waited ${this.o.stepTimeoutMs} ms)`,
        );
      try {
        const terminal = await this.waitFor(`the terminal notification of turn ${turnId}`, ofTurn, Math.min(this.o.quietMs, left));
        if (FINAL.has(terminal.method)) this.endedTurns.add(turnId);
        this.checkItems(turnId);
        return { terminal, turn: (terminal.params as { turn: Turn }).turn };
      } catch (error) {
        if (!(error instanceof StepTimeout)) throw error;
      }
      const threadId = this.threadOfTurn(turnId);
      const { turn } = await this.client.turnGet({ thread_id: threadId, turn_id: turnId });
      if (turn.status !== "InProgress") {
        const late = this.o.channel.notifications.find(ofTurn);
        if (turn.status !== "Blocked") this.endedTurns.add(turnId);
        this.checkItems(turnId);
        if (late) return { terminal: late, turn: (late.params as { turn: Turn }).turn };
        this.o.missingTerminal(turnId, turn.status);
        return { turn };
      }
    }
  }

  /**
   * ITEM-COMPLETED-ONCE over a turn that ended (completed, failed, cancelled or blocked):
   * every item started so far is completed exactly once. Decided here when this scenario
   * checks it, otherwise handed to the run, which attributes it.
   */
  checkItems(turnId: string): void {
    const all = this.ofTurn(turnId);
    // Only what came before the turn ended counts ("completed exactly once before its turn ends").
    let end = all.length - 1;
    while (end >= 0 && !isTerminal(all[end]!)) end--;
    const live = end === -1 ? all : all.slice(0, end + 1);
    const count = new Map<string, number>();
    const types = new Map<string, string>();
    for (const n of live) {
      if (n.method !== "item/started") continue;
      count.set(n.params.item_id, 0);
      types.set(n.params.item_id, n.params.item.type);
    }
    for (const n of live) if (n.method === "item/completed") count.set(n.params.item_id, (count.get(n.params.item_id) ?? 0) + 1);
    const wrong = [...count].filter(([, c]) => c !== 1);
    if (wrong.length === 0) {
      if (this.o.checks.includes("ITEM-COMPLETED-ONCE")) this.check("ITEM-COMPLETED-ONCE", true, "");
      return;
    }
    const status = live.at(-1) && isTerminal(live.at(-1)!) ? live.at(-1)!.method : "its end";
    const message = `turn ${turnId} (ended with ${status}) has items not completed exactly once before it ended: ${wrong.map(([id, c]) => `${id}${types.has(id) ? ` (${types.get(id)})` : ""} completed ${c} times`).join(", ")}`;
    const record = this.records.get("ITEM-COMPLETED-ONCE");
    // Each turn that breaks it is named, not only the first.
    if (!this.o.checks.includes("ITEM-COMPLETED-ONCE")) this.o.finding?.({ requirement: "ITEM-COMPLETED-ONCE", message, turnId });
    else if (record?.outcome === "fail" && record.message !== undefined) record.message += `\n${message}`;
    else this.check("ITEM-COMPLETED-ONCE", false, message);
  }

  /**
   * Leaves the gateway as the scenario found it after it stopped early: denies the open
   * approval requests of its unfinished turns and cancels them, each wait bounded. Those
   * turns are marked abandoned, so that run-wide checks do not blame the gateway for them.
   * Returns the ids of the turns abandoned.
   */
  async cleanUp(): Promise<string[]> {
    // A turn left blocked is unfinished too: the scenario that would have resumed it stopped.
    const ended = (turnId: string) =>
      this.endedTurns.has(turnId) ||
      this.o.channel.notifications.some((n) => FINAL.has(n.method) && (n.params as { turn_id?: string }).turn_id === turnId);
    const open = this.startedTurns().filter((turnId) => !ended(turnId));
    const bound = Math.min(this.o.stepTimeoutMs, 2_000);
    for (const turnId of open) {
      this.o.channel.abandoned.add(turnId);
      if (this.o.session.closedBecause !== undefined) continue;
      const resolved = new Set(
        this.o.channel.notifications
          .filter((n) => n.method === "turn/permission/request/resolved")
          .map((n) => (n.params as { request_id: string }).request_id),
      );
      for (const n of this.ofTurn(turnId)) {
        if (n.method !== "turn/permission/request/opened") continue;
        const request = (n.params as { request: { request_id: string; resolve_token?: string } }).request;
        if (resolved.has(request.request_id)) continue;
        await this.client
          .turnPermissionRequestRespond(
            {
              request_id: request.request_id,
              resolution: "deny",
              ...(request.resolve_token ? { resolve_token: request.resolve_token } : {}),
            },
            { timeoutMs: bound },
          )
          .catch(() => undefined);
      }
      let threadId: string;
      try {
        threadId = this.threadOfTurn(turnId);
      } catch {
        continue;
      }
      await this.client
        .turnCancel({ thread_id: threadId, turn_id: turnId, reason: "the certification scenario stopped early" }, { timeoutMs: bound })
        .catch(() => undefined);
      await this.waitFor(
        `the terminal notification of abandoned turn ${turnId}`,
        (n) => FINAL.has(n.method) && (n.params as { turn_id?: string }).turn_id === turnId,
        bound,
      ).catch(() => undefined);
    }
    return open;
  }

  /** The turns this scenario started (accepted turn/start requests) or saw start on its threads. */
  private startedTurns(): string[] {
    const turns = new Set<string>();
    const sent = new Map<string | number, string>();
    for (const entry of this.rpcFrames) {
      const f = entry.frame as { id?: string | number; method?: string; params?: { turn_id?: string }; result?: unknown };
      if (entry.direction === "sent" && f.method === "turn/start" && f.id !== undefined && f.params?.turn_id)
        sent.set(f.id, f.params.turn_id);
      if (entry.direction === "received" && f.id !== undefined && f.result !== undefined && sent.has(f.id)) turns.add(sent.get(f.id)!);
    }
    for (const n of this.o.channel.notifications) if (n.method === "turn/started") turns.add((n.params as { turn_id: string }).turn_id);
    return [...turns];
  }

  /**
   * Whether the response to the turn/start of `turnId` arrived before the turn's first
   * notification (turn/started or anything else of the turn): the frame that breaks it, if not.
   */
  progressBeforeResponse(turnId: string): unknown {
    let requestId: string | number | undefined;
    for (const entry of this.rpcFrames) {
      const f = entry.frame as { id?: string | number; method?: string; params?: { turn_id?: string }; result?: unknown };
      if (entry.direction === "sent" && f.method === "turn/start" && f.params?.turn_id === turnId) requestId = f.id;
      else if (entry.direction === "received" && requestId !== undefined && f.id === requestId && f.method === undefined) return undefined;
      else if (entry.direction === "received" && requestId !== undefined && f.method !== undefined && f.params?.turn_id === turnId)
        return f;
    }
    return undefined;
  }

  /** Expects `call` to be rejected with `reason` in error.data.reason; returns the error. */
  async rejects(call: Promise<unknown>, reason: string, what: string): Promise<RpcError> {
    let result: unknown;
    try {
      result = await call;
    } catch (error) {
      if (error instanceof RpcError) {
        const implemented = reason === "method_not_found" ? undefined : this.notImplemented(error);
        if (implemented) throw implemented;
        if (error.reason !== reason)
          throw new Failure(
            `${what}: expected error reason ${reason}, got ${error.reason === undefined ? "no reason" : `reason ${error.reason}`} (code ${error.code}${error.message ? `: ${error.message}` : ""})`,
          );
        return error;
      }
      throw error;
    }
    throw new Failure(`${what}: expected error ${reason}, but the call succeeded with ${JSON.stringify(result)}`);
  }

  /** The notifications of one turn so far, in order. */
  ofTurn(turnId: string): AnyNotification[] {
    return this.o.channel.notifications.filter(
      (n) => (n.params as { turn_id?: string; turnId?: string }).turn_id === turnId || (n.params as { turnId?: string }).turnId === turnId,
    );
  }

  /** Marks every requirement of `checks` not yet decided as `outcome` with `message` (and `flags`, for the run). */
  settle(ids: readonly string[], outcome: Outcome, message: string, flags: Pick<StepRecord, "interrupted" | "afterStop"> = {}): void {
    for (const id of ids) {
      const record = this.records.get(id);
      if (!record) this.records.set(id, { outcome, message, durationMs: 0, ...flags });
    }
  }

  /**
   * A -32601 answer, as the failure to report it with: the method the gateway does not
   * implement, found by the request the error answered. Undefined for anything else.
   */
  notImplemented(error: unknown): NotImplemented | undefined {
    if (error instanceof NotImplemented) return error;
    if (!(error instanceof RpcError) || error.code !== errors.method_not_found.code) return undefined;
    const transcript = this.rpcFrames;
    const answer = [...transcript]
      .reverse()
      .find((e) => e.direction === "received" && (e.frame as { error?: { code?: unknown } } | null)?.error?.code === error.code);
    const id = (answer?.frame as { id?: unknown } | undefined)?.id;
    const request =
      id === undefined || id === null
        ? undefined
        : transcript.find((e) => e.direction === "sent" && (e.frame as { id?: unknown; method?: unknown } | null)?.id === id);
    const method = (request?.frame as { method?: unknown } | undefined)?.method;
    return new NotImplemented(typeof method === "string" ? method : undefined);
  }

  private threadOfTurn(turnId: string): string {
    for (const n of this.o.channel.notifications) {
      const p = n.params as { turn_id?: string; thread_id?: string };
      if (p.turn_id === turnId && p.thread_id) return p.thread_id;
    }
    for (const entry of this.o.channel.transcript) {
      const f = entry.frame as { method?: string; params?: { turn_id?: string; thread_id?: string } };
      if (f.method === "turn/start" && f.params?.turn_id === turnId && f.params.thread_id) return f.params.thread_id;
    }
    throw new Error(`the harness lost track of the thread of turn ${turnId}`);
  }

  private record(id: string): StepRecord {
    let record = this.records.get(id);
    if (!record) this.records.set(id, (record = { outcome: "pass", durationMs: 0 }));
    return record;
  }

  /**
   * How an error thrown while exercising `requirement` decides it: the gateway's wrong
   * answer, invalid frame, silence or closed connection fails it; an invalid result of a
   * method the requirement does not cover leaves it not reached (the run fails
   * RPC-RESPONSE-MATCHES-REQUEST for that frame once); anything else is a harness fault.
   */
  judge(error: unknown, requirement?: string): { outcome: Outcome; message: string; invalidFrame?: unknown; interrupted?: boolean } {
    if (error instanceof GatewayGone || (error instanceof LocalError && error.kind === "transport_closed")) {
      return { outcome: "not_reached", message: this.o.session.closedBecause ?? error.message, interrupted: true };
    }
    if (error instanceof Failure)
      return { outcome: "fail", message: error.message, ...(error.invalidFrame === undefined ? {} : { invalidFrame: error.invalidFrame }) };
    if (error instanceof StepTimeout) return { outcome: "fail", message: error.message };
    if (error instanceof NotReached) return { outcome: "not_reached", message: error.message };
    const implemented = this.notImplemented(error);
    if (implemented) return { outcome: "fail", message: implemented.message };
    if (error instanceof RpcError)
      return {
        outcome: "fail",
        message: `the gateway answered error ${error.code}${error.reason === undefined ? "" : ` (${error.reason})`}${error.message ? `: ${error.message}` : ""}`,
      };
    if (error instanceof LocalError && error.kind === "timeout")
      return { outcome: "fail", message: `the gateway never answered: ${error.message}` };
    if (error instanceof LocalError && error.kind === "invalid_incoming") {
      const method = /^the result of (\S+) is invalid/.exec(error.message)?.[1];
      const frame = this.rpcFrames
        .reverse()
        .find((e) => e.direction === "received" && typeof e.frame === "object" && e.frame !== null && "result" in e.frame)?.frame;
      const message = `the gateway sent an invalid result: ${error.message}`;
      this.o.finding?.({ requirement: "RPC-RESPONSE-MATCHES-REQUEST", message, frame, ...(method === undefined ? {} : { method }) });
      const covered = method !== undefined && requirement !== undefined && (this.o.covers?.(requirement) ?? [method]).includes(method);
      if (!covered && requirement !== undefined)
        return { outcome: "not_reached", message: `${message} (a failure of RPC-RESPONSE-MATCHES-REQUEST)`, invalidFrame: frame };
      return { outcome: "fail", message, invalidFrame: frame };
    }
    return { outcome: "error", message: `harness fault: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}` };
  }
}

/**
 * A value from the gateway as a message quotes it: its JSON text, "nothing" when it sent
 * none, "JSON null" for null: never a bare `undefined` or `null` standing in for a value.
 */
export function shown(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "JSON null";
  return JSON.stringify(value) ?? String(value);
}

/** Whether an error thrown out of a scenario was the end of a failed step (already recorded). */
export const isAbort = (error: unknown): boolean => error instanceof Abort;
