/**
 * Frame streams for the ordering tests: recorded from the reference gateway on the
 * in-memory pair (both directions, as the client sees them), and edited copies of them.
 */
import { createOrderingChecker, type OrderingViolation } from "../../generated/ordering.js";
import type { TurnPermissionMode } from "../../generated/types.js";
import type { ScriptStep } from "../../packages/gateway/src/providers/scripted.js";
import { script, startHarness, text, type Harness, type HarnessOptions } from "../gateway/harness.js";
import { recording, type RecordedFrame } from "./record.js";

export type { RecordedFrame } from "./record.js";

/** What the tests read of a frame; the frames themselves stay `unknown`, as the checker takes them. */
interface Message {
  readonly jsonrpc?: string;
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
  readonly result?: Record<string, unknown>;
}

export const message = (frame: RecordedFrame): Message => frame.frame as Message;

/** The notification method of a frame, or undefined for a request or response. */
export const notificationMethod = (frame: RecordedFrame): string | undefined => {
  const m = message(frame);
  return m.method !== undefined && m.id === undefined ? m.method : undefined;
};

export interface RecordedTurn {
  readonly frames: RecordedFrame[];
  readonly threadId: string;
  readonly turnId: string;
}

/**
 * Runs `drive` against a fresh reference gateway on the in-memory pair and resolves with
 * every frame of the connection, both directions, once the gateway is closed.
 */
export async function recordSession(
  drive: (h: Harness) => Promise<void>,
  options: Omit<HarnessOptions, "clientTransport"> = {},
): Promise<RecordedFrame[]> {
  const frames: RecordedFrame[] = [];
  const h = await startHarness({ ...options, clientTransport: (transport) => recording(transport, frames) });
  try {
    await drive(h);
    if (h.protocolErrors.length) throw new Error(`the gateway sent invalid frames: ${h.protocolErrors.join("; ")}`);
  } finally {
    await h.close();
  }
  return frames;
}

/**
 * Runs one turn of `steps`, answering each permission request with `answer`, then reads
 * the turn back with turn/items.
 */
export async function recordTurn(
  steps: readonly ScriptStep[],
  mode: TurnPermissionMode = "supervised",
  answer: "allow_once" | "deny" = "allow_once",
): Promise<RecordedTurn> {
  let threadId = "";
  const turnId = "trn_ordering";
  const frames = await recordSession(async (h) => {
    const answers: Promise<unknown>[] = [];
    h.client.on("turn/permission/request/opened", ({ request }) => {
      answers.push(
        h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolve_token: request.resolve_token, resolution: answer }),
      );
    });
    threadId = await h.thread();
    const terminal = await h.runTurn({ thread_id: threadId, turn_id: turnId, permission_profile: { mode }, input: text(script(...steps)) });
    await Promise.all(answers);
    if (terminal.method !== "turn/completed") throw new Error(`the recorded turn ended with ${terminal.method}`);
    await h.client.turnItems({ thread_id: threadId, turn_id: turnId });
  });
  return { frames, threadId, turnId };
}

/** Everything the checker reports for `frames`: while they are fed, then at the end. */
export function check(frames: readonly RecordedFrame[], options?: { openTurnsAllowed?: boolean }): OrderingViolation[] {
  const checker = createOrderingChecker();
  for (const { frame, direction } of frames) checker.accept(frame, direction);
  checker.end(options);
  return [...checker.violations];
}

/** Index of the first frame that is notification `method` and matches `where`. Throws when there is none. */
export function find(
  frames: readonly RecordedFrame[],
  method: string,
  where: (params: Record<string, unknown>) => boolean = () => true,
  from = 0,
): number {
  const index = frames.findIndex((f, i) => i >= from && notificationMethod(f) === method && where(message(f).params ?? {}));
  if (index === -1) throw new Error(`no ${method} in the stream`);
  return index;
}

/** Index of the gateway's response to the client's first `method` request. */
export function responseTo(frames: readonly RecordedFrame[], method: string): number {
  const request = frames.find((f) => f.direction === "client_to_server" && message(f).method === method);
  const index = request
    ? frames.findIndex(
        (f) => f.direction === "server_to_client" && message(f).method === undefined && message(f).id === message(request).id,
      )
    : -1;
  if (index === -1) throw new Error(`no response to ${method} in the stream`);
  return index;
}

export const without = (frames: readonly RecordedFrame[], index: number) => frames.filter((_, i) => i !== index);
export const duplicated = (frames: readonly RecordedFrame[], index: number) => [
  ...frames.slice(0, index + 1),
  frames[index]!,
  ...frames.slice(index + 1),
];
/** `frames` with the frame at `from` taken out and put back just before the frame now at `before`. */
export function moved(frames: readonly RecordedFrame[], from: number, before: number): RecordedFrame[] {
  const rest = without(frames, from);
  const at = before > from ? before - 1 : before;
  return [...rest.slice(0, at), frames[from]!, ...rest.slice(at)];
}
export const inserted = (frames: readonly RecordedFrame[], before: number, ...added: RecordedFrame[]) => [
  ...frames.slice(0, before),
  ...added,
  ...frames.slice(before),
];

/**
 * The per-turn `sequence` of every notification rewritten to count up from the first one
 * seen, in frame order, so that an edit tests one rule and does not also break the sequence.
 */
export function renumbered(frames: readonly RecordedFrame[]): RecordedFrame[] {
  const next = new Map<string, number>();
  return frames.map((f) => {
    const m = message(f);
    const sequence = m.params?.sequence;
    if (notificationMethod(f) === undefined || typeof sequence !== "number") return f;
    const turn = JSON.stringify([m.params?.thread_id, m.params?.turn_id]);
    const value = next.get(turn) ?? sequence;
    next.set(turn, value + 1);
    return { ...f, frame: { ...m, params: { ...m.params, sequence: value } } };
  });
}

/** A gateway notification frame. */
export const notification = (method: string, params: Record<string, unknown>): RecordedFrame => ({
  direction: "server_to_client",
  frame: { jsonrpc: "2.0", method, params },
});
