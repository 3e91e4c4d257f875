/**
 * The harness's one connection to the gateway under test. Every frame either way goes
 * through here: it is recorded (time-stamped from the start of the run), fed to the
 * generated ordering checker, and, coming from the gateway, validated in strict mode by
 * the generated client (results against the request they answer, notifications against
 * their params) and, for errors, against the error registry. Frames are attributed to
 * the scenario that caused them: a request to the scenario that sent it (through
 * AsyncLocalStorage), a response to its request, a notification to the scenario that
 * owns its thread.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { ProtocolClient } from "@turnspec/protocol/client";
import { createOrderingChecker } from "@turnspec/protocol/ordering";
import type { AnyNotification } from "@turnspec/protocol/registry";
import type { OrderingViolation } from "@turnspec/rpc";
import type { Transport } from "@turnspec/rpc";
import { codeMismatch } from "@turnspec/rpc";
import { protocolView } from "@turnspec/protocol/view";
import type { TranscriptEntry } from "./results.js";

/** A finding about one frame that fails a requirement wherever the frame came from. */
export interface Finding {
  readonly requirement: string;
  readonly message: string;
  readonly frame?: unknown;
  /** The scenario whose doing it was, when known apart from the frame. */
  readonly channel?: ScenarioChannel;
  /** The turn it is about, when known apart from the frame. */
  readonly turnId?: string;
  /** The method whose response it is about: the finding belongs to that method's capability, not the scenario's. */
  readonly method?: string;
}

/** What a scenario sees of the connection: its own frames and notifications. */
export interface ScenarioChannel {
  readonly transcript: TranscriptEntry[];
  readonly notifications: AnyNotification[];
  /** Frames of this scenario the strict validators rejected, with why. */
  readonly invalidFrames: { message: string; frame: unknown }[];
  /** Called for each notification of this scenario as it arrives. */
  onNotification?: (n: AnyNotification) => void;
  /** Called for each invalid frame of this scenario as it arrives. */
  onInvalidFrame?: (message: string, frame: unknown) => void;
  readonly threads: Set<string>;
  readonly requestIds: Set<string | number>;
  /** The scenario this channel belongs to, once it runs (for waits and attributions). */
  scenario?: string;
  /** The requirement whose step is running in the scenario right now, if one is. */
  step?: string;
  /** Turns the scenario left unfinished when it stopped early (their findings are not the gateway's to answer for). */
  readonly abandoned: Set<string>;
  /** The requirement whose step started each turn: run-wide findings about the turn from another capability go to it. */
  readonly turnRequirement: Map<string, string>;
}

/** Something the harness is waiting for, for the console to name when it takes long. */
export interface Wait {
  readonly what: string;
  readonly scenario: string | undefined;
  readonly since: number;
  noticed?: boolean;
}

type Json = Record<string, unknown>;

const threadOf = (params: unknown): string | undefined => {
  const p = params as { thread_id?: unknown; threadId?: unknown; request?: { thread_id?: unknown } } | undefined;
  const id = p?.thread_id ?? p?.threadId ?? p?.request?.thread_id;
  return typeof id === "string" ? id : undefined;
};

export class GatewaySession {
  readonly client: ProtocolClient;
  /** Findings that name their own requirement: ordering violations and error codes off the registry. */
  readonly findings: Finding[] = [];
  /** Set once the connection has closed, with what is known of why. */
  closedBecause: string | undefined;
  /** The last frame sent to the gateway, with the scenario and step that sent it (what preceded a crash). */
  lastSent: { frame: unknown; atMs: number; channel: ScenarioChannel | undefined; step: string | undefined } | undefined;
  /** The requests that were never answered, once the connection has closed. */
  unanswered: { id: string | number; method: string; channel: ScenarioChannel | undefined }[] = [];
  private readonly closeWaiters: ((why: string) => void)[] = [];
  private readonly scope = new AsyncLocalStorage<ScenarioChannel>();
  private readonly byThread = new Map<string, ScenarioChannel>();
  private readonly byRequest = new Map<string | number, ScenarioChannel>();
  private readonly raw = new Map<string | number, (response: Json) => void>();
  private rawNullWaiter: ((response: Json) => void) | undefined;
  /** The scenario that sent the raw frame a null-id response would answer. */
  private rawNullChannel: ScenarioChannel | undefined;
  private readonly ordering = createOrderingChecker();
  private rawCounter = 0;
  private lastError: string | undefined;
  /** Requests sent and not answered yet, by id. */
  private readonly inFlight = new Map<string | number, { method: string; channel: ScenarioChannel | undefined; done: () => void }>();
  /** Everything the harness is waiting for right now. */
  readonly waits = new Set<Wait>();
  /** Called with each line the gateway wrote that is not JSON (a banner, a log line). */
  onStray?: (text: string) => void;

  constructor(
    private readonly transport: Transport,
    readonly startedAt: number,
    options: { readonly requestTimeoutMs?: number } = {},
  ) {
    const recorder: Transport = {
      start: () => transport.start(),
      close: () => transport.close(),
      send: (frame) => {
        this.record("sent", frame, this.scope.getStore());
        return transport.send(frame);
      },
    };
    transport.onmessage = (frame) => this.receive(frame, recorder);
    transport.onerror = (error) => {
      this.lastError = error.message;
      recorder.onerror?.(error);
    };
    transport.onclose = () => {
      if (this.closedBecause === undefined)
        this.unanswered = [...this.inFlight].map(([id, r]) => ({ id, method: r.method, channel: r.channel }));
      const pending = [...this.inFlight].map(
        ([id, r]) => `${r.method} (id ${JSON.stringify(id)}${r.channel?.scenario ? `, from "${r.channel.scenario}"` : ""})`,
      );
      const during = pending.length
        ? ` while ${pending.join(", ")} ${pending.length === 1 ? "was" : "were"} in flight`
        : " with no request in flight";
      this.closedBecause ??= `${this.lastError ? `the gateway closed the connection: ${this.lastError}` : "the gateway closed the connection"}${during}`;
      for (const w of this.closeWaiters.splice(0)) w(this.closedBecause);
      for (const r of this.inFlight.values()) r.done();
      recorder.onclose?.();
    };
    this.client = new ProtocolClient(recorder, {
      validateIncoming: "strict",
      ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
      onProtocolError: (error, frame) => this.invalid(error.message, frame),
    });
    // Only notifications that passed strict validation get here; the others go to invalid().
    this.client.onAny((n) => {
      const channel = this.byThread.get(threadOf(n.params) ?? "");
      if (!channel) return;
      channel.notifications.push(n);
      channel.onNotification?.(n);
    });
  }

  start(): Promise<void> {
    return this.client.start();
  }

  close(): Promise<void> {
    return this.client.close();
  }

  /** Resolves with why, once the connection has closed. */
  whenClosed(): Promise<string> {
    return this.closedBecause !== undefined
      ? Promise.resolve(this.closedBecause)
      : new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  /** Registers a wait until `settled` settles, so that a long one can be named on the console. */
  track<T>(what: string, channel: ScenarioChannel | undefined, settled: Promise<T>): Promise<T> {
    const wait: Wait = { what, scenario: channel?.scenario, since: performance.now() };
    this.waits.add(wait);
    return settled.finally(() => this.waits.delete(wait));
  }

  /** The channel owning a frame: by its request id, or by the thread its params name. */
  ownerOf(frame: unknown): ScenarioChannel | undefined {
    const message = (typeof frame === "object" && frame !== null ? frame : {}) as { id?: string | number | null; params?: unknown };
    return (
      (message.id !== undefined && message.id !== null ? this.byRequest.get(message.id) : undefined) ??
      this.byThread.get(threadOf(message.params) ?? "")
    );
  }

  /** A fresh channel for one scenario. */
  channel(): ScenarioChannel {
    return {
      transcript: [],
      notifications: [],
      invalidFrames: [],
      threads: new Set(),
      requestIds: new Set(),
      abandoned: new Set(),
      turnRequirement: new Map(),
    };
  }

  /** Runs `fn` with its requests attributed to `channel`. */
  within<T>(channel: ScenarioChannel, fn: () => Promise<T>): Promise<T> {
    return this.scope.run(channel, fn);
  }

  /** Notifications of `threadId` go to `channel` from now on. */
  own(channel: ScenarioChannel, threadId: string): void {
    channel.threads.add(threadId);
    this.byThread.set(threadId, channel);
  }

  /**
   * Sends `text` as it is (not necessarily JSON) and resolves with the response: the one
   * with `id`, or one with a null id (what a gateway answers a frame it could not read).
   */
  sendRaw(text: string, id: string | null): Promise<Json> {
    const channel = this.scope.getStore();
    this.rawNullChannel = channel;
    const response = new Promise<Json>((resolve) => {
      this.rawNullWaiter = resolve;
      if (id !== null) this.raw.set(id, resolve);
    });
    if (channel && id !== null) {
      channel.requestIds.add(id);
      this.byRequest.set(id, channel);
    }
    this.record("sent", text, channel);
    void this.transport.send(text).catch(() => undefined);
    return response;
  }

  /** A request id for a raw frame, unique in this run. */
  rawId(): string {
    return `cert-raw-${++this.rawCounter}`;
  }

  /** Reports what only the end of the stream shows (a turn left without a terminal). */
  end(): void {
    for (const v of this.ordering.end({ openTurnsAllowed: false })) this.addViolation(v);
  }

  private receive(frame: string, recorder: Transport): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(frame);
    } catch {
      this.record("received", frame, undefined);
      this.onStray?.(frame);
      recorder.onmessage?.(frame);
      return;
    }
    const message = parsed as Json;
    const id = message.id as string | number | null | undefined;
    const channel =
      id !== undefined && id !== null
        ? this.byRequest.get(id)
        : "method" in message
          ? this.byThread.get(threadOf(message.params) ?? "")
          : id === null
            ? this.rawNullChannel
            : undefined;
    this.record("received", parsed, channel, frame);
    if (id !== undefined && id !== null) {
      this.inFlight.get(id)?.done();
      this.inFlight.delete(id);
    }
    if ("error" in message) this.checkErrorCode(message);
    if (id !== undefined && id !== null && this.raw.has(id)) {
      const resolve = this.raw.get(id)!;
      this.raw.delete(id);
      resolve(message);
      return;
    }
    if (id === null && this.rawNullWaiter) {
      const resolve = this.rawNullWaiter;
      this.rawNullWaiter = undefined;
      resolve(message);
      return;
    }
    recorder.onmessage?.(frame);
  }

  private record(
    direction: TranscriptEntry["direction"],
    frame: string | unknown,
    channel: ScenarioChannel | undefined,
    text?: string,
  ): void {
    let value: unknown = frame;
    if (typeof frame === "string" && text === undefined) {
      try {
        value = JSON.parse(frame);
      } catch {
        value = frame;
      }
    }
    const entry: TranscriptEntry = { direction, atMs: Math.round(performance.now() - this.startedAt), frame: value };
    // A frame sent after the connection closed never reached the gateway: it cannot be what preceded the close.
    if (direction === "sent" && this.closedBecause === undefined)
      this.lastSent = { frame: value, atMs: entry.atMs, channel, step: channel?.step };
    if (direction === "sent" && channel && typeof value === "object" && value !== null && "id" in value) {
      const id = (value as { id: string | number }).id;
      channel.requestIds.add(id);
      this.byRequest.set(id, channel);
    }
    if (direction === "sent" && typeof value === "object" && value !== null && "id" in value && "method" in value) {
      const request = value as { id: string | number; method: unknown };
      let done!: () => void;
      const answered = new Promise<void>((resolve) => (done = resolve));
      this.inFlight.set(request.id, { method: String(request.method), channel, done });
      void this.track(`the response to ${String(request.method)} (id ${JSON.stringify(request.id)})`, channel, answered);
    }
    channel?.transcript.push(entry);
    if (typeof value === "object" && value !== null) {
      for (const v of this.ordering.accept(value, direction === "sent" ? "client_to_server" : "server_to_client")) this.addViolation(v);
    }
  }

  private addViolation(v: OrderingViolation): void {
    this.findings.push({ requirement: v.requirement, message: v.message, frame: v.frame });
  }

  /** An error whose data.reason is in the registry must carry that reason's code. */
  private checkErrorCode(message: Json): void {
    const error = message.error as { code?: unknown; data?: unknown } | undefined;
    const mismatch = error && codeMismatch(error, protocolView);
    if (mismatch) {
      this.findings.push({
        requirement: "RPC-ERROR-CODES",
        message: `error reason "${mismatch.reason}" came with code ${String(error.code)}; the registry gives it ${mismatch.expected}`,
        frame: message,
      });
    }
  }

  private invalid(why: string, frame: string): void {
    let value: unknown = frame;
    try {
      value = JSON.parse(frame);
    } catch {
      // Kept as text: the report shows what arrived.
    }
    const channel = this.ownerOf(value);
    if (!channel) {
      const text = typeof value === "string" ? `: ${JSON.stringify(value)}` : "";
      this.findings.push({
        requirement: "RPC-RESPONSE-MATCHES-REQUEST",
        message: `the gateway sent a frame no scenario can own: ${why}${text}`,
        frame: value,
      });
      return;
    }
    channel.invalidFrames.push({ message: why, frame: value });
    channel.onInvalidFrame?.(why, value);
  }
}
