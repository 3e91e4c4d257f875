/**
 * `streamTurn`: start a turn and iterate over its high-level events until `done`.
 *
 * The turn's notifications are subscribed to before `turn/start` is sent, so none can be
 * missed whatever the order in which the response and the first notification arrive; they
 * pass through the turn feed (one each, in sequence order, caught up after a reconnect)
 * and are turned into `TurnStreamEvent`s. Aborting the signal sends `turn/cancel`; the
 * iteration then runs on to the turn's `failed` (kind cancelled) and `done`. A gateway
 * error, or a connection lost for good, ends the iteration by throwing a `TurnClientError`.
 */
import type { TurnPermissionApprovalRequest, TurnQuestion, TurnStartParams } from "@turnspec/protocol/types";
import { RpcError } from "@turnspec/rpc";
import type { GatewayConnection } from "./connection.js";
import { TurnClientError } from "./errors.js";
import { emptyItems } from "./deltas.js";
import { streamEventsOf, type ApprovalAnswer, type TurnStreamEvent } from "./events.js";
import { followTurn, type TurnNotification } from "./turn-feed.js";

export interface StreamTurnOptions {
  /** Aborting it cancels the turn (turn/cancel); the stream still ends with `failed` and `done`. */
  readonly signal?: AbortSignal | undefined;
  /** The reason sent with turn/cancel. Default "cancelled by the client". */
  readonly cancelReason?: string | undefined;
}

/** Starts a turn and yields its events; `done` is always the last one. Breaking out of the loop stops listening, not the turn. */
export function streamTurn(
  connection: GatewayConnection,
  params: TurnStartParams,
  options: StreamTurnOptions = {},
): AsyncGenerator<TurnStreamEvent, void, undefined> {
  return eventStream(connection, params.thread_id, params.turn_id, 0, options, async () => {
    try {
      await connection.client.turnStart(params);
    } catch (error) {
      throw new TurnClientError("rpc_error", `turn/start of turn ${params.turn_id} failed: ${(error as Error).message}`, { cause: error });
    }
  });
}

export interface ResumeStreamParams {
  readonly thread_id: string;
  readonly turn_id: string;
  /** The sequence of the last event already seen (its `sequence`); 0 replays the turn from the start. */
  readonly after_sequence?: number;
}

/**
 * Yields the events of a turn that is already running or has ended: first those after
 * `after_sequence` from `turn/items`, then live ones, until `done`. For a UI that opens
 * while a turn runs, or that picks a turn up again after a restart.
 */
export function streamExistingTurn(
  connection: GatewayConnection,
  params: ResumeStreamParams,
  options: StreamTurnOptions = {},
): AsyncGenerator<TurnStreamEvent, void, undefined> {
  return eventStream(connection, params.thread_id, params.turn_id, params.after_sequence ?? 0, options, undefined);
}

async function* eventStream(
  connection: GatewayConnection,
  threadId: string,
  turnId: string,
  afterSequence: number,
  options: StreamTurnOptions,
  start: (() => Promise<void>) | undefined,
): AsyncGenerator<TurnStreamEvent, void, undefined> {
  const { signal } = options;
  if (signal?.aborted)
    throw new TurnClientError("aborted", `turn ${turnId} was not ${start ? "started" : "followed"}: the signal was already aborted`);

  const queue: TurnNotification[] = [];
  let failure: TurnClientError | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const feed = followTurn(
    connection,
    threadId,
    turnId,
    {
      event: (n) => {
        queue.push(n);
        notify();
      },
      error: (error) => {
        failure ??= error;
        notify();
      },
    },
    { afterSequence, catchUp: start === undefined },
  );

  const cancel = () => {
    connection.client
      .turnCancel({ thread_id: threadId, turn_id: turnId, reason: options.cancelReason ?? "cancelled by the client" })
      .catch((error: unknown) => {
        // A turn that ended meanwhile has nothing left to cancel; its end arrives as usual.
        if (error instanceof RpcError && error.reason === "turn_not_active") return;
        failure ??= new TurnClientError("rpc_error", `turn/cancel of turn ${turnId} failed: ${(error as Error).message}`, { cause: error });
        notify();
      });
  };

  let listening = false;
  try {
    if (start) await start();
    signal?.addEventListener("abort", cancel, { once: true });
    listening = true;
    // Aborted while turn/start was in flight: the turn exists now, so it is cancelled.
    if (signal?.aborted) cancel();

    let items = emptyItems;
    const respond = connectionResponder(connection);
    for (;;) {
      const n = queue.shift();
      if (!n) {
        if (failure) throw failure;
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      const step = streamEventsOf(items, n, { respond, answer: connectionAnswerer(connection) });
      items = step.items;
      for (const event of step.events) {
        yield event;
        if (event.type === "done") return;
      }
    }
  } finally {
    feed.stop();
    if (listening) signal?.removeEventListener("abort", cancel);
  }
}

/** Answers a question on whichever connection is open when the caller answers. */
export function connectionAnswerer(connection: GatewayConnection) {
  return (threadId: string, turnId: string, question: TurnQuestion, optionId: string) =>
    // The token goes back exactly as the gateway sent it: it is signed over the question.
    connection.client.turnQuestionRespond({
      thread_id: threadId,
      turn_id: turnId,
      call_id: question.call_id,
      index: question.index,
      option_id: optionId,
      answer_token: question.answer_token,
    });
}

/** Answers a permission request on whichever connection is open when the caller answers. */
export function connectionResponder(connection: GatewayConnection) {
  return (request: TurnPermissionApprovalRequest, resolution: ApprovalAnswer) =>
    connection.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolution,
      // Carried back exactly as the gateway sent it: it is signed over the request.
      ...(request.resolve_token === undefined ? {} : { resolve_token: request.resolve_token }),
    });
}
