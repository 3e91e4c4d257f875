/**
 * One turn's notifications, each exactly once and in sequence order, across reconnects.
 *
 * Every notification the gateway logs for a turn carries the turn's sequence (1, 2, 3, …
 * without gaps), the same number the event has in `turn/items`. The feed delivers
 * sequence n+1 after n and nothing twice: a notification at or below the last delivered
 * sequence is a duplicate and dropped; one that leaves a gap is held back, and the gap is
 * filled from `turn/items` (after_sequence = the last delivered). After a reconnect the
 * feed subscribes on the new client first, then catches up from `turn/items`; live
 * notifications that arrive while that page is in flight wait in the same buffer, so the
 * page and the live stream merge without loss or repetition.
 */
import type { ProtocolClient } from "@turnspec/protocol/client";
import { orderingRules } from "@turnspec/protocol/ordering";
import type { AnyNotification } from "@turnspec/protocol/registry";
import type { TurnItemEvent } from "@turnspec/protocol/types";
import { notificationIssues } from "@turnspec/protocol/validators";
import { LocalError } from "@turnspec/rpc";
import { formatIssue } from "@turnspec/rpc";
import type { GatewayConnection } from "./connection.js";
import { TurnClientError } from "./errors.js";

/** A notification that belongs to a turn's log (it has the turn's ids and a sequence). */
export type TurnNotification = Extract<AnyNotification, { params: { turn_id: string; sequence: number } }>;

/** The terminals of the protocol's single_terminal ordering rule (turn/completed, turn/failed). */
const TERMINAL: ReadonlySet<string> = new Set(orderingRules.flatMap((rule) => (rule.kind === "single_terminal" ? rule.terminals : [])));

/** True for the notifications that end a turn: after one, nothing more follows. */
export function isTerminal(notification: AnyNotification): boolean {
  return TERMINAL.has(notification.method);
}

/**
 * The notifications that `turn/items` events were sent as, each checked against the schema
 * of its method (tolerantly, as the client checks live ones). Throws a `TurnClientError`
 * naming the first event that does not fit.
 */
export function replayedNotifications(events: readonly TurnItemEvent[], turnId: string): TurnNotification[] {
  return events.map((event) => {
    const issues = notificationIssues(event.method, event.params, "tolerant");
    if (issues) {
      throw new TurnClientError(
        "invalid_event",
        `turn/items event ${event.sequence} (${event.method}) of turn ${turnId} is invalid: ${issues.map((i) => formatIssue(i, "params")).join("; ")}`,
      );
    }
    // Checked just above against the schema of its method.
    return { method: event.method, params: event.params } as unknown as TurnNotification;
  });
}

export interface TurnFeedSink {
  /** Each notification of the turn, once, in sequence order. */
  event(notification: TurnNotification): void;
  /** The feed cannot go on (the connection is gone for good, or the gateway sent something unusable). */
  error(error: TurnClientError): void;
}

export interface FollowOptions {
  /** Deliver only events after this sequence (the last one the caller already has). Default 0: from the start. */
  readonly afterSequence?: number | undefined;
  /** Fetch the events the caller does not have from `turn/items` right away (default true; streamTurn starts the turn itself and waits for live ones). */
  readonly catchUp?: boolean | undefined;
}

/** A running feed; `stop()` unsubscribes. It stops by itself after the turn's terminal notification or an error. */
export interface TurnFeed {
  /** Sequence of the last event delivered. */
  readonly lastSequence: number;
  stop(): void;
}

function belongsTo(notification: AnyNotification, threadId: string, turnId: string): notification is TurnNotification {
  const params = notification.params as { thread_id?: unknown; turn_id?: unknown; sequence?: unknown };
  return params.thread_id === threadId && params.turn_id === turnId && typeof params.sequence === "number";
}

/** Follows one turn on a connection; see the file comment. */
export function followTurn(
  connection: GatewayConnection,
  threadId: string,
  turnId: string,
  sink: TurnFeedSink,
  options: FollowOptions = {},
): TurnFeed {
  let last = options.afterSequence ?? 0;
  const held = new Map<number, TurnNotification>();
  /** Catch-ups in flight (an old connection's may still be failing while the new one's runs). */
  let catchingUp = 0;
  let stopped = false;
  let unsubscribeClient: (() => void) | undefined;

  const stop = () => {
    if (stopped) return;
    stopped = true;
    unsubscribeClient?.();
    unsubscribeConnection();
    held.clear();
  };

  const fail = (error: TurnClientError) => {
    if (stopped) return;
    stop();
    sink.error(error);
  };

  const drain = () => {
    for (let next = held.get(last + 1); next && !stopped; next = held.get(last + 1)) {
      held.delete(last + 1);
      last += 1;
      sink.event(next);
      if (isTerminal(next)) stop();
    }
  };

  const receive = (notification: AnyNotification) => {
    if (stopped || !belongsTo(notification, threadId, turnId)) return;
    const sequence = notification.params.sequence;
    if (sequence <= last) return;
    held.set(sequence, notification);
    drain();
    if (held.size > 0 && catchingUp === 0) void catchUp(connection.client);
  };

  const catchUp = async (client: ProtocolClient) => {
    catchingUp += 1;
    try {
      for (;;) {
        const page = await client.turnItems({ thread_id: threadId, turn_id: turnId, after_sequence: last });
        if (stopped) return;
        const before = last;
        for (const n of replayedNotifications(
          page.events.filter((e) => e.sequence > last),
          turnId,
        ))
          held.set(n.params.sequence, n);
        drain();
        // Done when the log has nothing beyond what was delivered, or it returned nothing more;
        // and when this page delivered nothing, asking again would get the same page: the
        // events after `last` are missing from turn/items too (reported below).
        if (stopped || last >= page.last_sequence || page.events.length === 0 || last === before) break;
      }
    } catch (error) {
      if (error instanceof TurnClientError) {
        fail(error);
        return;
      }
      // A connection that dropped meanwhile (perhaps before the connection has heard of it)
      // is caught up again once it is back, or the feed fails when it closes for good.
      const dropped = error instanceof LocalError && error.kind === "transport_closed";
      if (!dropped && connection.status === "open" && client === connection.client) {
        fail(
          new TurnClientError("rpc_error", `could not read the events of turn ${turnId}: ${(error as Error).message}`, { cause: error }),
        );
      }
      return;
    } finally {
      catchingUp -= 1;
    }
    if (held.size > 0 && !stopped && catchingUp === 0) {
      const gap = `${last + 1}…${Math.min(...held.keys()) - 1}`;
      fail(new TurnClientError("invalid_event", `events ${gap} of turn ${turnId} are missing from turn/items although later ones arrived`));
    }
  };

  const attach = (client: ProtocolClient) => {
    unsubscribeClient?.();
    unsubscribeClient = client.onAny(receive);
  };

  const unsubscribeConnection = connection.onChange((change) => {
    if (change.type === "reconnected") {
      attach(change.client);
      void catchUp(change.client);
    } else if (change.type === "closed") {
      fail(change.error ?? new TurnClientError("connection_lost", `the connection was closed while following turn ${turnId}`));
    }
  });

  attach(connection.client);
  if (options.catchUp !== false) void catchUp(connection.client);
  return {
    get lastSequence() {
      return last;
    },
    stop,
  };
}
