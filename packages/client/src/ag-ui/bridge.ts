/**
 * The AG-UI bridge: serves a turnspec gateway to any AG-UI client (CopilotKit, the
 * `@ag-ui/client` HttpAgent, …). A POST of AG-UI's `RunAgentInput` starts a turn and
 * the response streams the turn as AG-UI events over server-sent events: run
 * started/finished/errored, text messages, tool calls and their results, reasoning. An
 * approval request or a question ends the run with an `interrupt` outcome; the next run's
 * `resume` entries answer them, and that run streams the rest of the same turn.
 *
 * What survives a restart of the bridge: the pairs of AG-UI and gateway threads are kept in
 * a file when one is given (AgUiThreadMap), and the open interrupts are never kept at all:
 * each run reads them from the gateway's log (the thread's active turn, its requests and
 * questions opened and not resolved), so a resume after a restart answers the right ones.
 *
 * Every event is checked against `@ag-ui/core`'s own schemas before it is written; the
 * bridge only speaks to the gateway through the client SDK (it never imports runtime/).
 *
 * What the gateway does not serve is refused with 400, never ignored: frontend tools,
 * context entries, a state, forwarded props, non-text message content.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { EventSchemas, RunAgentInputSchema } from "@ag-ui/core/schemas";
import type { BaseEvent, Interrupt, ResumeEntry, RunAgentInput } from "@ag-ui/core";
import type { TurnItem, TurnPermissionApprovalRequest, TurnQuestion, TurnStartParams } from "@turnspec/protocol/types";
import type { GatewayConnection } from "../connection.js";
import type { TurnStreamEvent } from "../events.js";
import { RpcError } from "@turnspec/rpc";
import { connectionAnswerer, connectionResponder, streamExistingTurn, streamTurn } from "../stream-turn.js";
import { replayedNotifications } from "../turn-feed.js";
import { AgUiThreadMap } from "./thread-map.js";
import { inviteNotDelivered, walletLinkCard, walletRevokeCard, walletUpdateCard } from "../cards.js";

export interface AgUiBridgeOptions {
  /** Fields every turn the bridge starts gets (mode, permission_profile, model, …); the thread, turn and input are the bridge's. */
  readonly turn?: Omit<Partial<TurnStartParams>, "thread_id" | "turn_id" | "input">;
  /** Largest request body accepted, in bytes. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** JSON file the AG-UI → gateway thread pairs are kept in, so a restarted bridge finds its threads. Default: kept in memory only. */
  readonly threadMapFile?: string;
  /** Bytes of events a run's client may leave unread before its stream is cut. Default DEFAULT_MAX_UNSENT_BYTES. */
  readonly maxUnsentBytes?: number;
}

/** Bytes of events a client may leave unread (AgUiBridgeOptions.maxUnsentBytes). */
export const DEFAULT_MAX_UNSENT_BYTES = 8 * 1024 * 1024;

/** An open interrupt, as the gateway's log has it: waiting for a run's resume entry. */
type Pending =
  | {
      readonly kind: "approval";
      readonly turnId: string;
      readonly afterSequence: number;
      readonly request: TurnPermissionApprovalRequest;
      answer(resolution: "allow_once" | "allow_for_turn" | "deny"): Promise<unknown>;
    }
  | {
      readonly kind: "question";
      readonly turnId: string;
      readonly afterSequence: number;
      readonly question: TurnQuestion;
      answer(optionId: string): Promise<unknown>;
    };

/** A request the bridge refuses: the HTTP status and what was wrong, and where. */
export class AgUiRequestError extends Error {
  override readonly name = "AgUiRequestError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const APPROVAL_ANSWERS = new Set(["allow_once", "allow_for_turn", "deny"]);

export class AgUiBridge {
  /** AG-UI thread id → gateway thread id. */
  private readonly threads: AgUiThreadMap;
  /** Gateway threads being started, by AG-UI thread id. */
  private readonly starting = new Map<string, Promise<string>>();

  /** Throws when `threadMapFile` exists and cannot be read as a thread map. */
  constructor(
    private readonly connection: GatewayConnection,
    private readonly options: AgUiBridgeOptions = {},
  ) {
    this.threads = new AgUiThreadMap(options.threadMapFile);
  }

  /** A Node `http` request handler: POST a RunAgentInput, get an SSE stream of AG-UI events. */
  readonly handler = (req: IncomingMessage, res: ServerResponse): void => {
    void this.handle(req, res);
  };

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let input: RunAgentInput;
    try {
      if (req.method !== "POST") throw new AgUiRequestError(405, `an AG-UI run is started with POST, got ${req.method ?? "no method"}`);
      input = parseInput(await readBody(req, this.options.maxBodyBytes ?? 1 << 20));
    } catch (error) {
      return refuse(res, error);
    }
    let run: AsyncIterable<BaseEvent>;
    try {
      run = await this.run(input);
    } catch (error) {
      return refuse(res, error);
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const limit = this.options.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES;
    for await (const event of run) {
      // A client that went away, or stopped reading, stops the run's stream (the turn goes
      // on in the gateway): what it has not read is not held without limit.
      if (res.destroyed) break;
      res.write(`data: ${JSON.stringify(event)}\n\n`);
      if (res.writableLength > limit) {
        res.destroy();
        break;
      }
    }
    if (!res.destroyed) res.end();
  }

  /**
   * The events of one run, each checked against @ag-ui/core's schemas. Throws an
   * AgUiRequestError, before any event, for an input the bridge cannot serve.
   */
  async run(input: RunAgentInput): Promise<AsyncIterable<BaseEvent>> {
    refuseUnserved(input);
    let gatewayThread = this.threads.get(input.threadId);
    let open = new Map<string, Pending>();
    if (gatewayThread !== undefined) {
      try {
        open = await this.openInterrupts(gatewayThread);
      } catch (error) {
        if (!(error instanceof RpcError && error.reason === "thread_not_found")) throw error;
        // The gateway no longer has the thread (a log kept in memory, and restarted): the AG-UI thread starts afresh.
        this.threads.delete(input.threadId);
        gatewayThread = undefined;
      }
    }
    const resume = input.resume ?? [];
    let stream: AsyncIterable<TurnStreamEvent>;
    if (open.size > 0 || resume.length > 0) {
      const turn = await this.answer(input.threadId, open, resume);
      stream = streamExistingTurn(this.connection, { thread_id: gatewayThread!, turn_id: turn.turnId, after_sequence: turn.afterSequence });
    } else {
      const text = lastUserText(input);
      const threadId = await this.threadFor(input.threadId);
      stream = streamTurn(this.connection, {
        ...this.options.turn,
        thread_id: threadId,
        turn_id: input.runId,
        input: [{ type: "text", text, textElements: [] }],
      });
    }
    return checked(this.translate(input, stream));
  }

  /**
   * The interrupts open in a gateway thread, by interrupt id: the permission requests and
   * questions of its active turn that were opened and not resolved, read from the turn's log.
   */
  private async openInterrupts(threadId: string): Promise<Map<string, Pending>> {
    const open = new Map<string, Pending>();
    const turnId = (await this.connection.client.threadGet({ thread_id: threadId })).thread.active_turn_id;
    if (turnId === undefined) return open;
    const respond = connectionResponder(this.connection);
    const answer = connectionAnswerer(this.connection);
    for (let after = 0; ;) {
      const page = await this.connection.client.turnItems({ thread_id: threadId, turn_id: turnId, after_sequence: after });
      for (const [i, n] of replayedNotifications(page.events, turnId).entries()) {
        const sequence = page.events[i]!.sequence;
        if (n.method === "turn/permission/request/opened") {
          const request = n.params.request;
          open.set(request.request_id, {
            kind: "approval",
            turnId,
            afterSequence: sequence,
            request,
            answer: (resolution) => respond(request, resolution),
          });
        } else if (n.method === "turn/permission/request/resolved") {
          open.delete(n.params.request_id);
        } else if (n.method === "turn/question/opened") {
          const question = n.params.question;
          open.set(questionInterruptId(turnId, question), {
            kind: "question",
            turnId,
            afterSequence: sequence,
            question,
            answer: (optionId) => answer(threadId, turnId, question, optionId),
          });
        } else if (n.method === "turn/question/resolved") {
          open.delete(questionInterruptId(turnId, n.params));
        }
      }
      const last = page.events.at(-1)?.sequence;
      if (last === undefined || last >= page.last_sequence) return open;
      after = last;
    }
  }

  /**
   * Applies the resume entries, which must answer every open interrupt of the thread.
   * Returns the turn they belong to and the sequence its stream goes on after.
   */
  private async answer(
    aguiThread: string,
    open: Map<string, Pending>,
    resume: readonly ResumeEntry[],
  ): Promise<{ turnId: string; afterSequence: number }> {
    const answered = new Set(resume.map((r) => r.interruptId));
    for (const [i, entry] of resume.entries()) {
      if (!open.has(entry.interruptId)) {
        const why =
          this.threads.get(aguiThread) === undefined
            ? "this bridge has no gateway thread for it"
            : "it was never opened, or was answered, expired or cancelled already";
        throw new AgUiRequestError(
          400,
          `resume[${i}].interruptId ${JSON.stringify(entry.interruptId)} names no open interrupt of thread ${aguiThread}: ${why}`,
        );
      }
    }
    const missing = [...open.keys()].filter((id) => !answered.has(id));
    if (missing.length)
      throw new AgUiRequestError(
        400,
        `the run must resume every open interrupt of thread ${aguiThread}; not answered: ${missing.join(", ")}`,
      );
    // Checked whole before anything is sent: a bad entry answers nothing.
    const answers = resume.map((entry, i) => {
      const pending = open.get(entry.interruptId)!;
      const payload = (entry.payload ?? {}) as Record<string, unknown>;
      if (pending.kind === "approval") {
        const resolution = entry.status === "cancelled" ? "deny" : payload.resolution;
        if (typeof resolution !== "string" || !APPROVAL_ANSWERS.has(resolution)) {
          throw new AgUiRequestError(
            400,
            `resume[${i}].payload.resolution must be allow_once, allow_for_turn or deny for approval ${entry.interruptId}, got ${JSON.stringify(resolution)}`,
          );
        }
        return () => pending.answer(resolution as "allow_once" | "allow_for_turn" | "deny");
      }
      if (entry.status === "cancelled")
        throw new AgUiRequestError(
          400,
          `resume[${i}] cancels question ${entry.interruptId}: a question is answered with payload.optionId, or ends with its turn`,
        );
      const optionId = payload.optionId;
      if (typeof optionId !== "string" || !pending.question.options.some((o) => o.id === optionId)) {
        throw new AgUiRequestError(
          400,
          `resume[${i}].payload.optionId must be one of ${pending.question.options.map((o) => o.id).join(", ")} for question ${entry.interruptId}, got ${JSON.stringify(optionId)}`,
        );
      }
      return () => pending.answer(optionId);
    });
    for (const send of answers) {
      try {
        await send();
      } catch (error) {
        throw new AgUiRequestError(409, `the gateway refused an answer: ${(error as Error).message}`);
      }
    }
    // One turn's interrupts, all answered: its stream goes on after the last of them.
    const pending = [...open.values()];
    return { turnId: pending[0]!.turnId, afterSequence: Math.max(...pending.map((p) => p.afterSequence)) };
  }

  /** The gateway thread of an AG-UI thread, started on first use; two first runs at once share one. */
  private threadFor(aguiThread: string): Promise<string> {
    const known = this.threads.get(aguiThread);
    if (known !== undefined) return Promise.resolve(known);
    let starting = this.starting.get(aguiThread);
    if (starting === undefined) {
      starting = this.connection.client
        .threadStart({ mode: "Agent" })
        .then(({ thread }) => {
          this.threads.set(aguiThread, thread.id);
          return thread.id;
        })
        .finally(() => this.starting.delete(aguiThread));
      this.starting.set(aguiThread, starting);
    }
    return starting;
  }

  /** The run's AG-UI events from the turn's stream events. */
  private async *translate(input: RunAgentInput, stream: AsyncIterable<TurnStreamEvent>): AsyncGenerator<BaseEvent> {
    const { threadId, runId } = input;
    yield { type: "RUN_STARTED", threadId, runId } as BaseEvent;
    let openText: string | undefined;
    const endText = function* () {
      if (openText !== undefined) yield { type: "TEXT_MESSAGE_END", messageId: openText } as BaseEvent;
      openText = undefined;
    };
    // The questions of the ask_question call being opened, until all of them are in.
    const asked: { turnId: string; question: TurnQuestion; alreadySurfaced: boolean }[] = [];
    // The AG-UI tool call id (the model's call id) of each tool item seen in this run.
    const callOfItem = new Map<string, string>();
    // What the next run resumes is read back from the gateway then: nothing is kept here.
    const interrupt = function* (found: Interrupt[]) {
      yield* endText();
      yield { type: "RUN_FINISHED", threadId, runId, outcome: { type: "interrupt", interrupts: found } } as BaseEvent;
    };
    const iterator = stream[Symbol.asyncIterator]();
    try {
      for (;;) {
        let next: IteratorResult<TurnStreamEvent>;
        try {
          next = await iterator.next();
        } catch (error) {
          yield* endText();
          yield { type: "RUN_ERROR", message: (error as Error).message, code: "gateway_error" } as BaseEvent;
          return;
        }
        if (next.done) return;
        const event = next.value;
        if (event.type !== "text_delta") yield* endText();
        switch (event.type) {
          case "text_delta":
            if (event.delta === "") break;
            if (openText !== event.itemId) {
              yield* endText();
              openText = event.itemId;
              yield { type: "TEXT_MESSAGE_START", messageId: event.itemId, role: "assistant" } as BaseEvent;
            }
            yield { type: "TEXT_MESSAGE_CONTENT", messageId: event.itemId, delta: event.delta } as BaseEvent;
            break;
          case "reasoning":
            if (event.text === "") break;
            yield { type: "REASONING_START", messageId: event.itemId } as BaseEvent;
            yield { type: "REASONING_MESSAGE_START", messageId: event.itemId, role: "reasoning" } as BaseEvent;
            yield { type: "REASONING_MESSAGE_CONTENT", messageId: event.itemId, delta: event.text } as BaseEvent;
            yield { type: "REASONING_MESSAGE_END", messageId: event.itemId } as BaseEvent;
            yield { type: "REASONING_END", messageId: event.itemId } as BaseEvent;
            break;
          case "tool_started": {
            const id = toolCallId(event.item);
            callOfItem.set(event.item.id, id);
            yield { type: "TOOL_CALL_START", toolCallId: id, toolCallName: event.name } as BaseEvent;
            const args =
              (event.item as { arguments?: unknown; prompt?: unknown }).arguments ??
              ((event.item as { prompt?: unknown }).prompt === undefined
                ? undefined
                : { prompt: (event.item as { prompt: unknown }).prompt });
            if (args !== undefined) yield { type: "TOOL_CALL_ARGS", toolCallId: id, delta: JSON.stringify(args) } as BaseEvent;
            yield { type: "TOOL_CALL_END", toolCallId: id } as BaseEvent;
            break;
          }
          case "tool_completed": {
            const id = toolCallId(event.item);
            yield {
              type: "TOOL_CALL_RESULT",
              messageId: `${event.item.id}_result`,
              toolCallId: id,
              content: toolResult(event.item),
              role: "tool",
            } as BaseEvent;
            break;
          }
          case "approval_pending": {
            const request = event.request;
            yield* interrupt([
              {
                id: request.request_id,
                reason: "tool_approval",
                message: request.summary ?? (request.title || request.tool_name),
                ...(request.item_id && callOfItem.has(request.item_id) ? { toolCallId: callOfItem.get(request.item_id)! } : {}),
                responseSchema: {
                  type: "object",
                  required: ["resolution"],
                  properties: { resolution: { enum: [...(request.allowed_scopes ?? ["allow_once"]), "deny"] } },
                },
                ...(request.expires_at ? { expiresAt: request.expires_at } : {}),
                metadata: { tool_name: request.tool_name, action: request.action, reason: request.reason },
              },
            ]);
            return;
          }
          case "question_pending": {
            const q = event.question;
            asked.push({ turnId: event.turnId, question: q, alreadySurfaced: event.alreadySurfaced });
            // One call asks up to three questions, opened together: the run ends once all of them are in.
            const ofCall = asked.filter((p) => p.turnId === event.turnId && p.question.call_id === q.call_id);
            if (ofCall.length < questionCount(q)) break;
            yield* interrupt(
              ofCall.map(({ turnId, question, alreadySurfaced }) => {
                return {
                  id: questionInterruptId(turnId, question),
                  reason: "question",
                  message: question.question,
                  responseSchema: {
                    type: "object",
                    required: ["optionId"],
                    properties: { optionId: { enum: question.options.map((o) => o.id) } },
                  },
                  expiresAt: question.expires_at,
                  metadata: { header: question.header, options: question.options, already_surfaced: alreadySurfaced },
                };
              }),
            );
            return;
          }
          case "handoff_started":
            yield {
              type: "CUSTOM",
              name: "turnspec.handoff_started",
              value: {
                child_agent_id: event.child_agent_id,
                child_thread_id: event.child_thread_id,
                child_turn_id: event.child_turn_id,
                reason: event.reason,
              },
            } as BaseEvent;
            break;
          case "invite_delivery":
            // An AG-UI front end is no one's direct message: the code never goes to it. The
            // bridge starts its turns without private_delivery, so the gateway withholds it anyway.
            yield {
              type: "CUSTOM",
              name: "turnspec.invite_delivery",
              value: {
                target_user_id: event.targetUserId,
                inviter_display: event.inviterDisplay,
                delivered: false,
                notice: inviteNotDelivered({ targetUserId: event.targetUserId, redacted: true }),
              },
            } as BaseEvent;
            break;
          case "wallet_link_prompt":
            yield {
              type: "CUSTOM",
              name: "turnspec.wallet_link_prompt",
              value: { link_url: event.link_url, renewal: event.renewal, requested: event.requested, card: walletLinkCard(event) },
            } as BaseEvent;
            break;
          case "wallet_update_prompt":
            yield {
              type: "CUSTOM",
              name: "turnspec.wallet_update_prompt",
              value: { update_url: event.update_url, new_limit: event.new_limit, card: walletUpdateCard(event) },
            } as BaseEvent;
            break;
          case "wallet_revoke_prompt":
            yield {
              type: "CUSTOM",
              name: "turnspec.wallet_revoke_prompt",
              value: { revoke_url: event.revoke_url, card: walletRevokeCard(event) },
            } as BaseEvent;
            break;
          case "context_compacted":
            yield {
              type: "CUSTOM",
              name: "turnspec.context_compacted",
              value: { reason: event.reason, summarized_messages: event.summarized_messages, messages_after: event.messages_after },
            } as BaseEvent;
            break;
          case "blocked":
            yield {
              type: "RUN_ERROR",
              message: `the turn is blocked (${event.reason}); turn/resume with recovery job ${event.recoveryJobId} continues it`,
              code: "turn_blocked",
            } as BaseEvent;
            return;
          case "failed":
            if (event.kind === "cancelled") {
              yield { type: "RUN_FINISHED", threadId, runId, outcome: { type: "cancelled" } } as BaseEvent;
            } else {
              yield { type: "RUN_ERROR", message: event.message, code: event.kind } as BaseEvent;
            }
            return;
          case "done":
            yield { type: "RUN_FINISHED", threadId, runId, outcome: { type: "success" } } as BaseEvent;
            return;
          default:
            // tool output deltas and resolutions have no AG-UI event; the tool result carries the output.
            break;
        }
      }
    } finally {
      // An interrupted run stops listening; the turn goes on waiting for the answers.
      await iterator.return?.();
    }
  }
}

/** Each event checked against @ag-ui/core's schemas; an event that fails is a bug of the bridge, reported as RUN_ERROR. */
async function* checked(events: AsyncIterable<BaseEvent>): AsyncGenerator<BaseEvent> {
  for await (const event of events) {
    const result = EventSchemas.safeParse(event);
    if (!result.success) {
      const issue = result.error.issues[0];
      yield {
        type: "RUN_ERROR",
        message: `the bridge made an invalid ${event.type} event: ${issue?.message ?? "invalid"} at /${issue?.path.join("/") ?? ""}`,
        code: "bridge_error",
      } as BaseEvent;
      return;
    }
    yield event;
  }
}

const toolCallId = (item: TurnItem) => (item as { tool_call_id?: string }).tool_call_id ?? item.id;

function toolResult(item: TurnItem): string {
  const fields = item as { tool_result?: string; result?: string; error?: { message: string } };
  return fields.tool_result ?? fields.result ?? fields.error?.message ?? "";
}

const questionInterruptId = (turnId: string, q: Pick<TurnQuestion, "call_id" | "index">) => `${turnId}:${q.call_id}:${q.index}`;

/** How many questions the question's ask_question call asked. */
function questionCount(q: TurnQuestion): number {
  try {
    const args = JSON.parse(q.args_json) as { questions?: unknown[] };
    return Array.isArray(args.questions) ? args.questions.length : q.index + 1;
  } catch {
    return q.index + 1;
  }
}

function parseInput(body: string): RunAgentInput {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    throw new AgUiRequestError(400, `the request body is not JSON: ${(error as Error).message}`);
  }
  const parsed = RunAgentInputSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new AgUiRequestError(400, `the request body is not a RunAgentInput: ${issue.message} at /${issue.path.join("/")}`);
  }
  return parsed.data as RunAgentInput;
}

function refuseUnserved(input: RunAgentInput): void {
  if (input.tools?.length)
    throw new AgUiRequestError(
      400,
      `tools: this gateway runs its own tools and does not serve frontend tools (got ${input.tools.map((t) => t.name).join(", ")})`,
    );
  if (input.context?.length)
    throw new AgUiRequestError(400, "context: this gateway does not serve context entries; put what the model needs in the user message");
  const empty = (v: unknown) => v === undefined || v === null || (typeof v === "object" && Object.keys(v as object).length === 0);
  if (!empty(input.state)) throw new AgUiRequestError(400, "state: this gateway keeps no AG-UI state");
  if (!empty(input.forwardedProps)) throw new AgUiRequestError(400, "forwardedProps: this gateway does not serve forwarded props");
}

/** The text of the last message, which must be the user's: the gateway keeps the conversation itself. */
function lastUserText(input: RunAgentInput): string {
  const i = input.messages.length - 1;
  const last = input.messages[i];
  if (!last || last.role !== "user")
    throw new AgUiRequestError(
      400,
      `messages: a run starts from a user message last, got ${last ? `a ${last.role} message at /messages/${i}` : "no messages"}`,
    );
  const content = (last as { content: unknown }).content;
  if (typeof content === "string") return content;
  const parts = content as { type: string; text?: string }[];
  const other = parts.findIndex((p) => p.type !== "text");
  if (other !== -1)
    throw new AgUiRequestError(400, `messages/${i}/content/${other}: only text content is served, got ${parts[other]!.type}`);
  return parts.map((p) => p.text ?? "").join("\n");
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > limit) return reject(new AgUiRequestError(413, `the request body exceeds ${limit} bytes (${declared} declared)`));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Read no further; the answer is sent, then the connection is dropped (refuse).
        req.pause();
        req.removeAllListeners("data");
        chunks.length = 0;
        reject(new AgUiRequestError(413, `the request body exceeds ${limit} bytes`));
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Answers a refused request: its status, and what was wrong in a JSON body. */
export function refuse(res: ServerResponse, error: unknown): void {
  // A gateway's error answer is the gateway's to explain; anything else is the bridge's own fault, kept to the log.
  const status = error instanceof AgUiRequestError ? error.status : error instanceof RpcError ? 502 : 500;
  const message =
    error instanceof AgUiRequestError
      ? error.message
      : error instanceof RpcError
        ? `the gateway answered an error: ${error.message}`
        : "the bridge failed";
  // A body left unread (too large, or never read at all) is not waited for: the connection ends with the answer.
  const unread = res.req !== undefined && !res.req.complete;
  res.writeHead(status, { "content-type": "application/json", ...(unread ? { connection: "close" } : {}) });
  res.end(JSON.stringify({ error: message }), () => {
    if (unread) res.req.socket?.destroy();
  });
}
