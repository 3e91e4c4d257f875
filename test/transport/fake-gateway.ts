/**
 * A small gateway for the transport tests: the generated dispatcher with fake handlers for
 * two methods, wired to any transport the way the reference gateway wires it.
 */
import type { Transport } from "@turnspec/rpc";
import { createDispatcher, protocolError, type Handlers } from "../../generated/server.js";
import type { Thread } from "../../generated/types.js";

/** The cwd that makes thread/start never answer: a request left pending for close tests. */
export const NEVER_ANSWERED_CWD = "/never/answered";

const notServed = (): never => {
  throw new Error("not served by the transport tests' fake gateway");
};

export function thread(id: string, cwd = "/srv/project"): Thread {
  return { id, workspace_id: "ws_default", cwd, mode: "Agent", created_at: "2025-06-01T10:00:00Z" };
}

/** thread/start answers a new thread; thread/get answers thread_not_found, echoing the id it was asked for. */
export const fakeHandlers: Handlers = {
  "thread/start": (params) => {
    if (params.cwd === NEVER_ANSWERED_CWD) return new Promise<never>(() => undefined);
    return { thread: thread("thr_000000000000000001", params.cwd) };
  },
  "thread/get": (params) => {
    throw protocolError("thread_not_found", `No thread ${params.thread_id}`, { thread_id: params.thread_id });
  },
  "thread/timeline/page": notServed,
  "turn/start": notServed,
  "turn/cancel": notServed,
  "turn/resume": notServed,
  "turn/get": notServed,
  "turn/items": notServed,
  "turn/work/page": notServed,
  "turn/work/items/get": notServed,
  "turn/permission/request/respond": notServed,
  "turn/question/respond": notServed,
  "agent/route/create": notServed,
  "agent/route/list": notServed,
  "agent/route/revoke": notServed,
};

export interface Served {
  /** Every frame the dispatcher was handed, in order. */
  readonly frames: string[];
  /** Replies that could not be sent (the connection had closed). */
  readonly sendErrors: Error[];
  /** Resolves once the dispatcher has been handed `count` frames in all. */
  received(count: number): Promise<void>;
}

/** Answers every frame arriving on `transport` with the dispatcher's reply, if one is owed. */
export function serve(transport: Transport): Served {
  const dispatcher = createDispatcher(fakeHandlers);
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const served: Served = {
    frames: [],
    sendErrors: [],
    received: (count) =>
      served.frames.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve })),
  };
  transport.onmessage = (frame) => {
    served.frames.push(frame);
    for (const waiter of waiters.filter((w) => served.frames.length >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    void dispatcher
      .handleFrame(frame, undefined)
      .then((reply) => (reply === undefined ? undefined : transport.send(reply)))
      .catch((error: Error) => served.sendErrors.push(error));
  };
  return served;
}
