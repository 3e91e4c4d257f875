/**
 * Drives scripted turns through a strict client, as the concurrency benchmark and the
 * load and durability tests need them: a turn with many deltas, a tool call and, when
 * asked, an approval the client grants as soon as it opens; then the check that what the
 * client received live is exactly what the gateway kept (`turn/items`).
 */
import type { AnyNotification } from "../generated/registry.js";
import type { TurnItemsResponse, TurnPermissionMode } from "../generated/types.js";
import { scriptMessage } from "../packages/gateway/src/providers/scripted.js";
import type { StrictClient } from "./strict-client.js";

export interface TurnPlan {
  /** Agent-message deltas of the final answer. */
  readonly deltas: number;
  /** A write_file call that writes this file (relative to the thread's folder) before the answer. */
  readonly writeFile?: string;
  /** Supervised mode, so the file write waits for an approval (which autoApprove grants). */
  readonly approval?: boolean;
  /** Milliseconds the model waits before it starts its answer. */
  readonly delayMs?: number;
  /** Milliseconds between one delta and the next, as a model streams; without it all deltas come at once. */
  readonly everyMs?: number;
}

/** The user message that plays a plan on the scripted model. */
export function planMessage(plan: TurnPlan): string {
  const words = Array.from({ length: plan.deltas }, (_, i) => `w${i}`).join(" ");
  return scriptMessage([
    ...(plan.writeFile ? [{ tool: "write_file", args: { path: plan.writeFile, content: `written by ${plan.writeFile}\n` } }] : []),
    {
      say: words,
      chunks: plan.deltas,
      ...(plan.delayMs ? { delay_ms: plan.delayMs } : {}),
      ...(plan.everyMs ? { every_ms: plan.everyMs } : {}),
    },
  ]);
}

const isTerminal = (n: AnyNotification, turnId: string) =>
  (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId;

/** The notifications a client received for one turn, in order. */
export function receivedFor(client: StrictClient, turnId: string): AnyNotification[] {
  return client.received.filter((n) => "turn_id" in n.params && n.params.turn_id === turnId);
}

/**
 * Grants every approval request the client sees, once (allow_once), for as long as the
 * client lives. Returns the function that stops it.
 */
export function autoApprove(client: StrictClient): () => void {
  return client.client.onAny((n) => {
    if (n.method !== "turn/permission/request/opened") return;
    void client.client
      .turnPermissionRequestRespond({
        request_id: n.params.request.request_id,
        resolve_token: n.params.request.resolve_token,
        resolution: "allow_once",
      })
      .catch(() => undefined);
  });
}

/** Starts a turn of the plan in a thread; resolves once the gateway has accepted it. */
export async function startTurn(client: StrictClient, threadId: string, turnId: string, plan: TurnPlan): Promise<void> {
  const mode: TurnPermissionMode = plan.approval ? "supervised" : "full_access";
  await client.client.turnStart({
    thread_id: threadId,
    turn_id: turnId,
    permission_profile: { mode },
    input: [{ type: "text", text: planMessage(plan), textElements: [] }],
  });
}

/** Starts a turn of the plan in a thread and resolves with its terminal notification. */
export async function runTurn(client: StrictClient, threadId: string, turnId: string, plan: TurnPlan): Promise<AnyNotification> {
  const terminal = client.waitFor((n) => isTerminal(n, turnId));
  await startTurn(client, threadId, turnId, plan);
  return terminal;
}

/**
 * Differences between what a client received live for a turn and what `turn/items`
 * replays (method, params and sequence of every event); empty when they agree. With
 * `prefix`, the live events need only be the first of the kept ones (a client cut off
 * before the turn ended).
 */
export function compareWithItems(
  turnId: string,
  live: readonly AnyNotification[],
  items: TurnItemsResponse,
  options: { prefix?: boolean } = {},
): string[] {
  const seen = live.map((n) => JSON.stringify({ method: n.method, params: n.params }));
  const kept = items.events.map((e) => JSON.stringify({ method: e.method, params: e.params }));
  const problems: string[] = [];
  if (options.prefix ? seen.length > kept.length : seen.length !== kept.length)
    problems.push(`${turnId}: received ${seen.length} events live, turn/items has ${kept.length}`);
  const firstDiff = seen.findIndex((k, i) => k !== kept[i]);
  if (firstDiff >= 0)
    problems.push(
      `${turnId}: event ${firstDiff + 1} differs: live ${seen[firstDiff]!.slice(0, 200)} vs kept ${kept[firstDiff]?.slice(0, 200)}`,
    );
  const gaps = items.events.filter((e, i) => e.sequence !== i + 1);
  if (gaps.length > 0)
    problems.push(`${turnId}: sequences are not 1…${items.events.length} without gaps (first off: ${gaps[0]!.sequence})`);
  return problems;
}

/** compareWithItems for a turn a client followed to its end, reading turn/items through that client. */
export async function liveVersusItems(client: StrictClient, threadId: string, turnId: string): Promise<string[]> {
  return compareWithItems(turnId, receivedFor(client, turnId), await client.client.turnItems({ thread_id: threadId, turn_id: turnId }));
}
