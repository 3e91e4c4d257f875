/**
 * Questions the model asks with ask_question: each one waits here until the user answers
 * it with turn/question/respond, it expires, or the turn is cancelled. A question is a
 * decision the user makes, not a permission gate, so it has its own events
 * (turn/question/opened, turn/question/resolved) and its own signed answer token. Its state
 * is read back from the turn's log like everything else (TurnState.questions).
 */
import type {
  TurnQuestion,
  TurnQuestionOption,
  TurnQuestionRespondParams,
  TurnQuestionRespondResponse,
  TurnQuestionResolution,
} from "@turnspec/protocol/types";
import { protocolError } from "@turnspec/protocol/server";
import { invalidParams } from "@turnspec/rpc";
import type { AnswerTokens } from "../permissions/answer-tokens.js";
import { TOKEN_REJECTION_WORDS } from "../permissions/tokens.js";
import { asNotification, questionKey } from "../log/fold.js";
import { isTurnFenced } from "../store/rules.js";
import type { StoredEvent } from "../store/store.js";
import { SOLE_INSTANCE, type Clock, type EventLog, type ResolutionPorts, type ThreadLookup, type TurnReader } from "../engine/ports.js";

/** What questions are built from. */
export interface QuestionPorts {
  readonly log: EventLog & TurnReader;
  readonly threads: ThreadLookup;
  readonly clock: Clock;
}

/** One question as the ask_question call gave it, its options already given ids. */
export interface QuestionAsk {
  readonly header: string;
  readonly question: string;
  readonly options: readonly TurnQuestionOption[];
}

/** How one question of a call ended. */
export interface QuestionOutcome {
  readonly resolution: TurnQuestionResolution;
  readonly option?: TurnQuestionOption;
}

interface Waiting {
  readonly threadId: string;
  readonly turnId: string;
  readonly callId: string;
  readonly index: number;
  /** Records the resolution and lets the call go on; false when another instance recorded one first. */
  readonly settle: (outcome: TurnQuestionResolution, optionId?: string) => boolean;
  /** Lets the call go on without recording anything (the resolution is in the log already, or could not be decided). */
  readonly finish: (outcome: TurnQuestionResolution, optionId?: string) => void;
}

export class Questions {
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly ports: QuestionPorts,
    private readonly timeoutMs: number,
    private readonly tokens: AnswerTokens,
    /** On a store shared by several instances: where the turn runs, and who records a resolution. */
    private readonly cluster: ResolutionPorts = SOLE_INSTANCE,
  ) {}

  /**
   * An event another instance committed: when it recorded the resolution of a question
   * whose call waits here, the call goes on. Nothing is recorded again: the resolution is in
   * the log already.
   */
  readonly onForeignEvent = (event: StoredEvent): void => {
    const n = asNotification(event);
    if (n.method !== "turn/question/resolved") return;
    const { call_id, index, resolution, option_id } = n.params;
    this.waiting.get(waitKey(event.turn_id, call_id, index))?.finish(resolution, option_id);
  };

  /**
   * Opens every question of one ask_question call and resolves, once all have ended, with
   * how each did, in order. An aborted signal cancels those still open.
   */
  async ask(
    threadId: string,
    turnId: string,
    callId: string,
    argsJson: string,
    asks: readonly QuestionAsk[],
    signal: AbortSignal,
  ): Promise<QuestionOutcome[]> {
    const g = this.ports;
    const created = g.clock.now();
    const expiresAt = new Date(created.getTime() + this.timeoutMs).toISOString();
    const pending = asks.map((ask, index) => {
      const question: TurnQuestion = {
        call_id: callId,
        index,
        header: ask.header,
        question: ask.question,
        options: [...ask.options],
        args_json: argsJson,
        answer_token: this.tokens.mint({ thread_id: threadId, turn_id: turnId, call_id: callId, index, expires_at: expiresAt }),
        created_at: created.toISOString(),
        expires_at: expiresAt,
      };
      g.log.publish(threadId, turnId, "turn/question/opened", { call_id: callId, index, question, already_surfaced: false });
      return new Promise<QuestionOutcome>((resolve) => {
        const key = waitKey(turnId, callId, index);
        const timer = setTimeout(() => settleQuietly("expired"), this.timeoutMs);
        const cancel = () => settleQuietly("cancelled");
        const finish = (resolution: TurnQuestionResolution, optionId?: string) => {
          if (!this.waiting.delete(key)) return;
          clearTimeout(timer);
          signal.removeEventListener("abort", cancel);
          const option = ask.options.find((o) => o.id === optionId);
          resolve({ resolution, ...(option ? { option } : {}) });
        };
        const settle = (resolution: TurnQuestionResolution, optionId?: string) => {
          if (!this.waiting.has(key)) return false;
          if (!this.cluster.claim(turnId, subject(callId, index))) {
            // Another instance recorded a resolution first: the call waits on for it, which the log has now.
            this.cluster.catchUp(turnId);
            return false;
          }
          try {
            // Recorded for the question, not by the turn (an answer, a timer, the cancellation): a commit the turn lost is left for the turn to report.
            g.log.publish(
              threadId,
              turnId,
              "turn/question/resolved",
              {
                call_id: callId,
                index,
                resolution,
                ...(optionId === undefined ? {} : { option_id: optionId }),
                resolved_at: g.clock.nowIso(),
              },
              "request",
            );
          } finally {
            finish(resolution, optionId);
          }
          return true;
        };
        function settleQuietly(resolution: TurnQuestionResolution) {
          try {
            settle(resolution);
          } catch {
            // The waiting call goes on, even when the store failed before the resolution was
            // decided (an expiry or a cancel picks no option); the turn's next record throws the failure.
            finish(resolution);
          }
        }
        this.waiting.set(key, { threadId, turnId, callId, index, settle, finish });
        if (signal.aborted) cancel();
        else signal.addEventListener("abort", cancel, { once: true });
      });
    });
    return Promise.all(pending);
  }

  /** question_resolved, with how the question was resolved as the log has it. */
  private alreadyResolved(turnId: string, callId: string, index: number) {
    const resolution = this.ports.log.state(turnId)?.questions.get(questionKey(callId, index))?.resolution;
    return protocolError(
      "question_resolved",
      `Question ${index} of call ${callId} was already resolved${resolution ? ` (${resolution})` : " on another instance"}; the answer is not recorded twice`,
      {
        turn_id: turnId,
        call_id: callId,
        index,
        ...(resolution ? { resolution } : {}),
      },
    );
  }

  /** turn/question/respond. */
  respond(params: TurnQuestionRespondParams): TurnQuestionRespondResponse {
    const { thread_id: threadId, turn_id: turnId, call_id: callId, index } = params;
    this.ports.threads.thread(threadId);
    const state = this.ports.log.state(turnId);
    if (!state || state.turn.thread_id !== threadId)
      throw protocolError("turn_not_found", `No turn ${turnId} exists in thread ${threadId}`, { thread_id: threadId, turn_id: turnId });
    const asked = state.questions.get(questionKey(callId, index));
    if (!asked)
      throw protocolError("question_not_found", `Turn ${turnId} has no question ${index} of call ${callId}`, {
        turn_id: turnId,
        call_id: callId,
        index,
      });
    if (asked.resolution) throw this.alreadyResolved(turnId, callId, index);
    const check = this.tokens.verify(
      params.answer_token,
      { thread_id: threadId, turn_id: turnId, call_id: callId, index },
      this.ports.clock.now(),
    );
    if (!check.ok) {
      throw protocolError(
        "unauthorized",
        `The answer token for question ${index} of call ${callId} is ${TOKEN_REJECTION_WORDS[check.reason]}; the question stays open`,
        {
          turn_id: turnId,
          call_id: callId,
          index,
          detail: check.reason,
        },
      );
    }
    if (!asked.question.options.some((o) => o.id === params.option_id)) {
      throw invalidParams(
        "turn/question/respond",
        `question ${index} of call ${callId} has no option ${JSON.stringify(params.option_id)}; the question stays open`,
        [
          {
            pointer: "/option_id",
            message: `must be one of ${asked.question.options.map((o) => o.id).join(", ")}`,
            received: params.option_id,
          },
        ],
      );
    }
    const waiting = this.waiting.get(waitKey(turnId, callId, index));
    if (waiting) {
      let settled: boolean;
      try {
        settled = waiting.settle("answered", params.option_id);
      } catch (error) {
        // This instance's run of the turn was fenced off it (another instance took the turn over): it records nothing.
        if (isTurnFenced(error)) throw notRunningHere(turnId, callId, index);
        throw error;
      }
      if (!settled) throw this.alreadyResolved(turnId, callId, index);
    } else if (this.cluster.runsElsewhere(turnId)) {
      // The call waits on the instance that runs the turn: the answer is recorded here, in
      // the turn's log, and that instance reads it there and lets the call go on.
      if (!this.cluster.claim(turnId, subject(callId, index))) {
        this.cluster.catchUp(turnId);
        throw this.alreadyResolved(turnId, callId, index);
      }
      this.ports.log.publish(
        threadId,
        turnId,
        "turn/question/resolved",
        { call_id: callId, index, resolution: "answered", option_id: params.option_id, resolved_at: this.ports.clock.nowIso() },
        "request",
      );
    } else {
      // Open in the log but not waited for: its turn is no longer running here.
      throw notRunningHere(turnId, callId, index);
    }
    const resolved = this.ports.log.state(turnId)?.questions.get(questionKey(callId, index));
    return {
      thread_id: threadId,
      turn_id: turnId,
      call_id: callId,
      index,
      option_id: params.option_id,
      resolved_at: resolved?.resolved_at ?? this.ports.clock.nowIso(),
    };
  }
}

/**
 * The params of an event as a replay (turn/items) delivers it. The stored
 * turn/question/opened says `already_surfaced: false`, which is true of its one live
 * delivery: publishing records the event and sends it at once, and a commit that fails
 * drops both. An opened event read back from the log was therefore delivered before, so a
 * replay says `true`, whatever this process remembers: after a restart, on another instance
 * of a shared store, to a client that reconnected. A thread runs one turn at a time and the
 * turn that asked waits on its questions, so no later turn of the thread re-delivers one.
 */
export function replayedParams(method: string, params: Record<string, unknown>): Record<string, unknown> {
  return method === "turn/question/opened" ? { ...params, already_surfaced: true } : params;
}

const subject = (callId: string, index: number) => `question:${questionKey(callId, index)}`;
const waitKey = (turnId: string, callId: string, index: number) => `${turnId}\u0000${questionKey(callId, index)}`;

/** The answer to a question whose turn no longer runs here (it ended, or another instance took it over). */
function notRunningHere(turnId: string, callId: string, index: number) {
  return protocolError("question_resolved", `Question ${index} of call ${callId} can no longer be answered: its turn is not running`, {
    turn_id: turnId,
    call_id: callId,
    index,
  });
}
