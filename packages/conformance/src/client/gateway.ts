/**
 * The gateway the suite plays for a client under test: a WebSocket server on 127.0.0.1
 * whose connections are served by the generated dispatcher (every method of the protocol,
 * params checked strictly), each scenario scripting what its methods answer and what its
 * turns stream. Every frame the suite sends is checked against the schemas first, so a
 * fault of the script is the harness's, never the client's; what a scenario sends on
 * purpose outside the schemas (a notification no schema names, fields none declares) is
 * sent as it is, and said so.
 *
 * A scenario is a Stage: the connections its client opened (with its own token, so that a
 * reconnect finds its stage), the requests the client made, and the turns it streams, each
 * a log of numbered events that turn/items replays.
 */
import { createDispatcher, protocolError, type Handlers } from "@turnspec/protocol/server";
import { methods } from "@turnspec/protocol/registry";
import type { Thread, Turn, TurnItem, TurnItemEvent, TurnPermissionApprovalRequest, TurnQuestion } from "@turnspec/protocol/types";
import { notificationIssues, paramsIssues, resultIssues } from "@turnspec/protocol/validators";
import { formatIssue, type Transport } from "@turnspec/rpc";
import { startWebSocketServer, type RunningWebSocketServer } from "@turnspec/rpc/transport";
import type { TranscriptEntry } from "../results.js";

type Json = Record<string, unknown>;

/** A request the client made, as the suite's gateway received it. */
export interface ClientRequest {
  readonly method: string;
  readonly params: Json;
  /** Which of the stage's connections it came on (0 the first, 1 after one reconnect, …). */
  readonly connection: number;
}

/** A frame of the client under test that breaks a client requirement, whichever scenario was running. */
export interface ClientFinding {
  readonly requirement: string;
  readonly message: string;
  readonly frame?: unknown;
}

/** A fault of the suite's own script: a frame it meant to send that the schemas refuse. */
export class ScriptFault extends Error {
  override readonly name = "ScriptFault";
}

/** What a scenario's gateway answers; a method it does not script is answered method_not_found. */
export interface Behaviour {
  turnStart?(params: Json, stage: Stage): Turn;
  permissionRespond?(params: Json, stage: Stage): Json;
  questionRespond?(params: Json, stage: Stage): Json;
}

const EFFECTIVE_POLICY = {
  default_behavior: "ask",
  file_read: "allow",
  file_write: "ask",
  shell_command: "ask",
  network: "ask",
  mcp_read: "allow",
  mcp_write_or_unknown: "ask",
  dynamic_skill_tool: "ask",
  computer_use: "ask",
  task_subagent: "ask",
} as const;

/** A turn as the suite's gateway describes it. */
export function turnOf(id: string, status: Turn["status"]): Turn {
  return {
    id,
    status,
    prompt_manifest: null,
    permission_profile: { mode: "supervised", source: "composer", effective_policy: EFFECTIVE_POLICY },
  };
}

const now = () => new Date().toISOString();
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** One turn's events, numbered from 1: what is streamed live and what turn/items replays. */
export class TurnLog {
  readonly events: TurnItemEvent[] = [];
  /** Sequences recorded but left out of turn/items (a gateway that lost them). */
  readonly lost = new Set<number>();
  private items = 0;

  constructor(
    private readonly stage: Stage,
    readonly threadId: string,
    readonly turnId: string,
  ) {}

  /** The highest sequence recorded. */
  get lastSequence(): number {
    return this.events.at(-1)?.sequence ?? 0;
  }

  /** A fresh item id in this turn. */
  itemId(): string {
    return `itm_${this.turnId}_${++this.items}`;
  }

  /**
   * Records the next event of the turn (its ids and sequence added) and, unless `live` is
   * false, sends it on the stage's open connection. `extra` adds fields no schema declares
   * (checked without them) to the params and to the object each of them holds (the turn, the
   * item). `lost` leaves it out of turn/items. Returns the sequence.
   */
  emit(method: string, params: Json, options: { live?: boolean; extra?: Json; lost?: boolean } = {}): number {
    const sequence = this.lastSequence + 1;
    const full = { thread_id: this.threadId, turn_id: this.turnId, sequence, ...params };
    const issues = notificationIssues(method, full, "strict");
    if (issues) throw new ScriptFault(`the suite's ${method} is invalid: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`);
    const extra = options.extra;
    const sent: Json = extra
      ? {
          ...Object.fromEntries(Object.entries(full).map(([k, v]: [string, unknown]) => [k, isObject(v) ? { ...v, ...extra } : v])),
          ...extra,
        }
      : full;
    this.events.push({ sequence, method, params: sent, recorded_at: now() } as TurnItemEvent);
    if (options.lost) this.lost.add(sequence);
    if (options.live !== false) this.stage.notify(method, sent);
    return sequence;
  }

  /** Sends a recorded event live again (as a gateway racing its own replay might). */
  resend(sequence: number): void {
    const event = this.events.find((e) => e.sequence === sequence);
    if (!event) throw new ScriptFault(`turn ${this.turnId} has no event ${sequence} to send again`);
    this.stage.notify(event.method, event.params as Json);
  }

  started(status: Turn["status"] = "InProgress"): void {
    this.emit("turn/started", { turn: turnOf(this.turnId, status) });
  }

  /** An item, opened: returns its id. */
  open(item: Omit<TurnItem, "id">, options: { extra?: Json; live?: boolean } = {}): string {
    const id = this.itemId();
    this.emit("item/started", { item_id: id, item: { ...item, id } }, options);
    return id;
  }

  complete(id: string, item: Omit<TurnItem, "id">, options: { extra?: Json; live?: boolean } = {}): void {
    this.emit("item/completed", { item_id: id, item: { ...item, id } }, options);
  }

  /** The user's message as the turn's first item, opened and completed. */
  userMessage(text: string): void {
    const item = { type: "userMessage", status: "completed", content: [{ type: "text", text, textElements: [] }] } as unknown as Omit<
      TurnItem,
      "id"
    >;
    const id = this.open(item);
    this.complete(id, item);
  }

  completed(): void {
    this.emit("turn/completed", { turn: turnOf(this.turnId, "Completed") });
  }

  /** turn/items: the events after `after`, but those marked lost. */
  page(after: number, limit?: number): { events: TurnItemEvent[]; last_sequence: number } {
    const events = this.events.filter((e) => e.sequence > after && !this.lost.has(e.sequence));
    return { events: limit === undefined ? events : events.slice(0, limit), last_sequence: this.lastSequence };
  }
}

/** One connection of the client under test. */
export interface Connection {
  readonly transport: Transport;
  closed: boolean;
}

/** One scenario's side of the suite's gateway. */
export class Stage {
  readonly requests: ClientRequest[] = [];
  readonly findings: ClientFinding[] = [];
  /** Faults of the suite's own script (a harness error, never the client's). */
  readonly faults: string[] = [];
  readonly connections: Connection[] = [];
  readonly threads = new Map<string, Thread>();
  readonly turns = new Map<string, TurnLog>();
  behaviour: Behaviour = {};
  /** Fields no schema declares, added to the results of these methods once they are checked. */
  readonly resultExtras: Record<string, Json> = {};
  private readonly changed = new Set<() => void>();
  private readonly after: (() => void)[] = [];
  private threadCount = 0;

  constructor(
    /** The bearer token its client connects with. */
    readonly token: string,
    /** Its path on the server. */
    readonly path: string,
    readonly transcript: TranscriptEntry[],
    private readonly startedAt: number,
  ) {}

  /** The connection open now, if one is. */
  get current(): Connection | undefined {
    const last = this.connections.at(-1);
    return last && !last.closed ? last : undefined;
  }

  /** Sends a notification on the open connection, as it is (a frame with no connection open is dropped). */
  notify(method: string, params: Json | undefined): void {
    const frame = { jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) };
    const connection = this.current;
    if (!connection) return;
    this.record("sent", frame);
    void connection.transport.send(JSON.stringify(frame)).catch(() => undefined);
  }

  /** Runs `fn` once the response to the request being handled has been sent (notifications follow their response). */
  afterResponse(fn: () => void): void {
    this.after.push(fn);
  }

  /** Closes the open connection from the gateway's side: the client sees the connection drop. */
  async drop(): Promise<void> {
    const connection = this.current;
    if (!connection) return;
    connection.closed = true;
    await connection.transport.close();
    this.touch();
  }

  /** A thread for the client. */
  thread(): Thread {
    const thread: Thread = {
      id: `thr_${this.token.slice(-8)}_${++this.threadCount}`,
      workspace_id: "ws_cert",
      cwd: "/srv/cert",
      mode: "Agent",
      created_at: now(),
    };
    this.threads.set(thread.id, thread);
    return thread;
  }

  /** The log of a turn, made when first asked for. */
  turn(threadId: string, turnId: string): TurnLog {
    let log = this.turns.get(turnId);
    if (!log) this.turns.set(turnId, (log = new TurnLog(this, threadId, turnId)));
    return log;
  }

  /** Resolves once `condition` holds (checked on every request and connection change), or rejects after `timeoutMs` saying `what`. */
  until(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!condition()) return;
        this.changed.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.changed.delete(check);
        reject(new ClientTimeout(`the client never ${what} (waited ${timeoutMs} ms)`));
      }, timeoutMs);
      timer.unref();
      this.changed.add(check);
    });
  }

  /** Serves one connection of the client. */
  attach(transport: Transport): void {
    const connection: Connection = { transport, closed: false };
    const index = this.connections.length;
    this.connections.push(connection);
    const dispatcher = createDispatcher<number>(this.checked(this.handlers()), {
      validationMode: "strict",
      onInternalError: (error, method) =>
        this.faults.push(`the suite's answer to ${method} failed: ${error instanceof Error ? error.message : String(error)}`),
    });
    transport.onmessage = (text) => {
      let frame: unknown;
      try {
        frame = JSON.parse(text);
      } catch {
        this.record("received", text);
        this.findings.push({
          requirement: "CLIENT-REQUESTS-VALID",
          message: `the client sent a frame that is not JSON: ${JSON.stringify(text.slice(0, 200))}`,
          frame: text,
        });
        return;
      }
      this.record("received", frame);
      this.inspect(frame, index);
      void (async () => {
        const reply = await dispatcher.handleFrame(text, index);
        if (reply !== undefined && !connection.closed) {
          this.record("sent", JSON.parse(reply));
          await transport.send(reply).catch(() => undefined);
        }
        for (const fn of this.after.splice(0)) {
          try {
            fn();
          } catch (error) {
            this.faults.push(error instanceof Error ? error.message : String(error));
          }
        }
        this.touch();
      })();
    };
    transport.onclose = () => {
      connection.closed = true;
      this.touch();
    };
    void transport.start().then(
      () => this.touch(),
      () => undefined,
    );
  }

  private touch(): void {
    for (const check of [...this.changed]) check();
  }

  private record(direction: TranscriptEntry["direction"], frame: unknown): void {
    this.transcript.push({ direction, atMs: Math.round(performance.now() - this.startedAt), frame });
  }

  /** Every request the client sends: recorded, and checked strictly against its method. */
  private inspect(frame: unknown, connection: number): void {
    for (const message of Array.isArray(frame) ? frame : [frame]) {
      const m = message as { id?: unknown; method?: unknown; params?: unknown };
      if (typeof m !== "object" || m === null || typeof m.method !== "string") continue;
      const entry = (methods as Record<string, { direction: string }>)[m.method];
      if (!entry || entry.direction !== "client_to_server") {
        this.findings.push({
          requirement: "CLIENT-REQUESTS-VALID",
          message: `the client sent ${m.method}, which is not a method the gateway serves`,
          frame: m,
        });
        continue;
      }
      const issues = paramsIssues(m.method, m.params, "strict");
      if (issues)
        this.findings.push({
          requirement: "CLIENT-REQUESTS-VALID",
          message: `the client's ${m.method} is invalid: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`,
          frame: m,
        });
      this.requests.push({ method: m.method, params: (m.params ?? {}) as Json, connection });
    }
  }

  /**
   * The handlers with every result checked strictly before it is sent (a script fault
   * otherwise), then given the extra fields the scenario adds on purpose.
   */
  private checked(handlers: Handlers<number>): Handlers<number> {
    const wrapped: Record<string, (params: never, ctx: number) => unknown> = {};
    for (const [method, handler] of Object.entries(handlers) as [string, (params: never, ctx: number) => unknown][]) {
      wrapped[method] = async (params, ctx) => {
        const result = (await handler(params, ctx)) as Json;
        const issues = resultIssues(method, result, "strict");
        if (issues)
          throw new ScriptFault(`the suite's result of ${method} is invalid: ${issues.map((i) => formatIssue(i, "result")).join("; ")}`);
        const extra = this.resultExtras[method];
        if (!extra) return result;
        // The extras go on the result and on its one object member (the thread, the turn).
        const [key] = Object.keys(result);
        return {
          ...result,
          ...extra,
          ...(key && typeof result[key] === "object" ? { [key]: { ...(result[key] as Json), ...extra } } : {}),
        };
      };
    }
    return wrapped as unknown as Handlers<number>;
  }

  private handlers(): Handlers<number> {
    const notServed = (method: string) => (): never => {
      throw protocolError("method_not_found", `${method} is not part of this scenario`);
    };
    const log = (params: { thread_id: string; turn_id: string }) => {
      const turn = this.turns.get(params.turn_id);
      if (!turn || turn.threadId !== params.thread_id)
        throw protocolError("turn_not_found", `no turn ${params.turn_id} in thread ${params.thread_id}`, {
          thread_id: params.thread_id,
          turn_id: params.turn_id,
        });
      return turn;
    };
    return {
      "thread/start": () => ({ thread: this.thread() }),
      "thread/get": (params) => {
        const thread = this.threads.get(params.thread_id);
        if (!thread) throw protocolError("thread_not_found", `no thread ${params.thread_id}`, { thread_id: params.thread_id });
        return { thread };
      },
      "turn/start": (params) => {
        if (!this.threads.has(params.thread_id))
          throw protocolError("thread_not_found", `no thread ${params.thread_id}`, { thread_id: params.thread_id });
        if (!this.behaviour.turnStart) throw protocolError("method_not_found", "this scenario starts no turn");
        return { turn: this.behaviour.turnStart(params as unknown as Json, this) };
      },
      "turn/items": (params) => {
        const turn = log(params);
        const thread = this.threads.get(turn.threadId)!;
        return {
          thread_id: turn.threadId,
          workspace_id: thread.workspace_id,
          turn_id: turn.turnId,
          ...turn.page(params.after_sequence ?? 0, params.limit),
        };
      },
      "turn/get": (params) => {
        const turn = log(params);
        const last = [...turn.events]
          .reverse()
          .find((e) => e.method === "turn/completed" || e.method === "turn/failed" || e.method === "turn/started");
        return { turn: (last?.params as { turn: Turn } | undefined)?.turn ?? turnOf(turn.turnId, "InProgress") };
      },
      "turn/permission/request/respond": (params) => {
        if (!this.behaviour.permissionRespond) throw protocolError("method_not_found", "this scenario opens no approval request");
        return this.behaviour.permissionRespond(params as unknown as Json, this) as never;
      },
      "turn/question/respond": (params) => {
        if (!this.behaviour.questionRespond) throw protocolError("method_not_found", "this scenario asks no question");
        return this.behaviour.questionRespond(params as unknown as Json, this) as never;
      },
      "thread/timeline/page": notServed("thread/timeline/page"),
      "turn/cancel": notServed("turn/cancel"),
      "turn/resume": notServed("turn/resume"),
      "turn/work/page": notServed("turn/work/page"),
      "turn/work/items/get": notServed("turn/work/items/get"),
      "agent/route/create": notServed("agent/route/create"),
      "agent/route/list": notServed("agent/route/list"),
      "agent/route/revoke": notServed("agent/route/revoke"),
    };
  }
}

/** The client never did what a step waited for. */
export class ClientTimeout extends Error {
  override readonly name = "ClientTimeout";
}

/** An approval request the suite's gateway opens, with the resolve token it expects back. */
export function approvalRequest(log: TurnLog, n: number, command: string): TurnPermissionApprovalRequest {
  return {
    request_id: `req_${log.turnId}_${n}`,
    workspace_id: "ws_cert",
    thread_id: log.threadId,
    turn_id: log.turnId,
    tool_name: "shell",
    action: "shell_command",
    scope_hash: `scope_${n}`,
    reason: "the policy asks before shell commands",
    details: { command },
    allowed_scopes: ["allow_once", "allow_for_turn"],
    created_at: now(),
    resolve_token: `rt.${log.turnId}.${n}.${Math.random().toString(36).slice(2, 12)}`,
  };
}

/** A question the suite's gateway asks, with the answer token it expects back. */
export function question(log: TurnLog, callId: string, index: number, labels: readonly string[]): TurnQuestion {
  return {
    call_id: callId,
    index,
    header: `Question ${index + 1}`,
    question: `Which one should it be (${index + 1})?`,
    options: labels.map((label, i) => ({ id: `opt_${index}_${i}`, label })),
    args_json: JSON.stringify({ questions: [{ labels }] }),
    answer_token: `at.${log.turnId}.${callId}.${index}.${Math.random().toString(36).slice(2, 12)}`,
    created_at: now(),
    expires_at: new Date(Date.now() + 600_000).toISOString(),
  };
}

/**
 * The suite's gateway: one WebSocket server, a stage per scenario. A scenario's client
 * connects to the stage's own path with the stage's token (both given in the connect
 * command), so that a reconnect finds its stage again.
 */
export class ScriptedGateway {
  private server: RunningWebSocketServer | undefined;
  private readonly stages = new Map<string, Stage>();

  /** Listens on 127.0.0.1; resolves with the server's base URL. */
  async start(): Promise<string> {
    this.server = await startWebSocketServer({
      maxFrameBytes: 8 * 1024 * 1024,
      authenticate: (request) => {
        const stage = this.stages.get(pathOf(request.url));
        return stage !== undefined && tokenOf(request.headers.authorization, request.url) === stage.token;
      },
      onConnection: (transport, info) => {
        const stage = this.stages.get(info.path);
        if (stage) stage.attach(transport);
        else void transport.close(1008, "no such stage");
      },
    });
    return this.server.url;
  }

  /** The URL a stage's client connects to. */
  urlOf(stage: Stage): string {
    if (!this.server) throw new Error("the suite's gateway is not started");
    return `${this.server.url.replace(/\/$/, "")}${stage.path}`;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  add(stage: Stage): void {
    this.stages.set(stage.path, stage);
  }

  /** Forgets a stage and closes its connections. */
  async remove(stage: Stage): Promise<void> {
    this.stages.delete(stage.path);
    for (const connection of stage.connections) if (!connection.closed) await connection.transport.close().catch(() => undefined);
  }
}

/** The path of an upgrade request, without its query. */
function pathOf(url: string | undefined): string {
  return new URL(url ?? "/", "ws://localhost").pathname;
}

/** The bearer token of an upgrade request: its Authorization header, or a token query parameter. */
function tokenOf(authorization: string | undefined, url: string | undefined): string {
  const bearer = /^Bearer (.+)$/i.exec(authorization ?? "")?.[1];
  if (bearer) return bearer;
  return new URL(url ?? "/", "ws://localhost").searchParams.get("token") ?? "";
}
