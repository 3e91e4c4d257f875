/** Handlers of the turn methods: start, get, cancel, items, resume. */
import { protocolError, type Handlers } from "@turnspec/protocol/server";
import type { TurnItemEvent } from "@turnspec/protocol/types";
import type { Connection } from "../views/connections.js";
import { isActive } from "../log/fold.js";
import type { TurnReader } from "../engine/ports.js";
import { replayedParams } from "../flows/questions.js";
import type { TurnLifecycle } from "../turn/lifecycle.js";
import type { Threads } from "../views/threads.js";
import type { EventStore } from "../store/store.js";
import type { Surfaced } from "../flows/surfaced.js";

export type TurnMethods = "turn/start" | "turn/get" | "turn/cancel" | "turn/items" | "turn/resume";

export interface TurnHandlerPorts {
  readonly threads: Pick<Threads, "thread" | "turnOf">;
  readonly log: TurnReader;
  readonly store: Pick<EventStore, "events" | "lastSequence">;
  /** The turn lifecycle: start (the backend checked first), cancel (waits until the turn ended), resume. */
  readonly lifecycle: Pick<TurnLifecycle, "start" | "cancelTurn" | "resume">;
  /** Where turn/start's private_delivery authorises the connection that sent it. */
  readonly surfaced: Pick<Surfaced, "authorise">;
}

export function turnHandlers({ threads, log, store, lifecycle, surfaced }: TurnHandlerPorts): Pick<Handlers<Connection>, TurnMethods> {
  return {
    "turn/start": async (params, connection) => {
      threads.thread(params.thread_id);
      const { turn } = await lifecycle.start(params);
      // Before the turn runs (it starts on a later tick): its first tool call may mint an invite.
      if (params.private_delivery) surfaced.authorise(turn.id, connection, params.private_delivery.inviter_display);
      return { turn };
    },
    "turn/get": (params) => ({ turn: threads.turnOf(params.thread_id, params.turn_id).turn }),
    "turn/cancel": async (params) => {
      const state = threads.turnOf(params.thread_id, params.turn_id);
      if (!isActive(state.turn)) {
        throw protocolError(
          "turn_not_active",
          `Turn ${params.turn_id} already ended (${state.turn.status}); only a running or blocked turn can be cancelled`,
          {
            turn_id: params.turn_id,
            status: state.turn.status,
          },
        );
      }
      await lifecycle.cancelTurn(params.turn_id, params.reason ?? "cancelled by the client");
      return { turn: log.state(params.turn_id)!.turn };
    },
    "turn/items": (params) => {
      const state = threads.turnOf(params.thread_id, params.turn_id);
      const events: TurnItemEvent[] = store
        .events(params.turn_id, params.after_sequence ?? 0, params.limit)
        .map((e) => ({ sequence: e.sequence, method: e.method, params: replayedParams(e.method, e.params), recorded_at: e.recorded_at }));
      const workspace = state.turn.workspace_id ?? threads.thread(params.thread_id).workspace_id;
      return {
        thread_id: params.thread_id,
        workspace_id: workspace,
        turn_id: params.turn_id,
        events,
        last_sequence: store.lastSequence(params.turn_id),
      };
    },
    "turn/resume": (params) => lifecycle.resume(params),
  };
}
