/**
 * Sends fuzz frames to a gateway in one pipelined burst and checks every reply against
 * what the oracle says each frame is owed: nothing missing, nothing extra, each reply a
 * valid response. The link is the raw byte path to the gateway (bench/raw-link.ts), so
 * frames can be malformed in ways no client library would produce.
 */
import type { RawLink } from "../../bench/raw-link.js";
import { notificationIssues } from "../../generated/validators.js";
import { owedBy, replyProblems, type Owed } from "./frames.js";

let sentinels = 0;

export interface ExchangeOptions {
  /** How long to wait for the owed replies before reporting the missing ones. A liveness bound, not a timing check. */
  readonly patienceMs?: number;
}

/**
 * Sends the frames and returns every problem: a missing reply, an extra one, a reply that
 * is not what its frame was owed. A final request (a sentinel, answered after everything
 * sent before it has been read) flushes out replies that should not have come.
 */
export async function exchange(
  link: RawLink,
  frames: readonly Buffer[],
  cuts: readonly number[] = [],
  options: ExchangeOptions = {},
): Promise<string[]> {
  const problems: string[] = [];
  const owed = new Map<string, Owed[]>();
  let remaining = 0;
  for (const o of frames.flatMap(owedBy)) {
    const key = JSON.stringify(o.id);
    (owed.get(key) ?? owed.set(key, []).get(key)!).push(o);
    remaining++;
  }
  const sentinel = `sentinel-${++sentinels}`;
  let allOwed!: () => void;
  let sentinelAnswered!: () => void;
  const everythingOwed = new Promise<void>((resolve) => (allOwed = resolve));
  const sentinelReply = new Promise<void>((resolve) => (sentinelAnswered = resolve));
  if (remaining === 0) allOwed();

  const take = (reply: unknown) => {
    // The live thread's turns stream notifications: each must be valid, and none is a reply.
    if (reply !== null && typeof reply === "object" && "method" in reply) {
      problems.push(...notificationProblems(reply as { method: unknown; params?: unknown; id?: unknown }));
      return;
    }
    const id = (reply as { id?: unknown } | null)?.id;
    if (id === sentinel) {
      sentinelAnswered();
      return;
    }
    const bucket = owed.get(JSON.stringify(id ?? null));
    if (!bucket || bucket.length === 0) {
      problems.push(`a reply nothing was owed: ${JSON.stringify(reply).slice(0, 300)}`);
      return;
    }
    // Replies with the same id (null, mostly) are told apart by what they say: an owed
    // reply that names its error is matched before one that takes any error.
    const fitting = bucket.flatMap((o, i) => (replyProblems(reply, o).length === 0 ? [i] : []));
    const fits = fitting.find((i) => bucket[i]!.reason !== undefined) ?? fitting[0] ?? -1;
    const [match] = bucket.splice(fits >= 0 ? fits : 0, 1);
    if (fits < 0) problems.push(...replyProblems(reply, match!));
    if (--remaining === 0) allOwed();
  };
  link.onFrame = (text) => {
    let reply: unknown;
    try {
      reply = JSON.parse(text);
    } catch {
      problems.push(`the gateway sent a frame that is not JSON: ${text.slice(0, 200)}`);
      return;
    }
    if (Array.isArray(reply)) {
      if (reply.length === 0) problems.push("an empty batch reply");
      reply.forEach(take);
    } else take(reply);
  };

  await link.send(frames, cuts);
  let timer: NodeJS.Timeout | undefined;
  const patience = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), options.patienceMs ?? 30_000)));
  const outcome = await Promise.race([everythingOwed.then(() => "done" as const), patience]);
  clearTimeout(timer);
  if (outcome === "timeout") {
    const missing = [...owed.values()].flat();
    problems.push(`${missing.length} owed replies never came, e.g. ${JSON.stringify(missing.slice(0, 5))}`);
    return problems;
  }
  await link.send(
    [Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: sentinel, method: "thread/get", params: { thread_id: "thr_sentinel" } }))],
    [],
  );
  await sentinelReply;
  return problems;
}

/** One request over the link, outside any burst; resolves with its reply. */
export async function request(link: RawLink, method: string, params: unknown): Promise<{ result?: unknown; error?: unknown }> {
  const id = `request-${++sentinels}`;
  const reply = new Promise<{ result?: unknown; error?: unknown }>((resolve) => {
    link.onFrame = (text) => {
      const message = JSON.parse(text) as { id?: unknown; result?: unknown; error?: unknown };
      if (message.id === id) resolve(message);
    };
  });
  await link.send([JSON.stringify({ jsonrpc: "2.0", id, method, params })]);
  return reply;
}

/** The problems with a notification the gateway sent: it must be one of the protocol's, valid in strict mode. */
function notificationProblems(message: { method: unknown; params?: unknown; id?: unknown }): string[] {
  if ("id" in message) return [`the gateway sent a request (${String(message.method)}); it serves requests, it sends none`];
  const issues =
    typeof message.method === "string"
      ? notificationIssues(message.method, message.params ?? {}, "strict")
      : [{ pointer: "/method", message: "must be a string" }];
  return issues ? [`an invalid ${String(message.method)} notification: ${JSON.stringify(issues).slice(0, 300)}`] : [];
}
