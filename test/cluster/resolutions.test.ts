/**
 * Two gateways of one process on one PostgreSQL database, as two instances are: a
 * permission request's or a question's resolution is decided once, in the database. When
 * the request expires on the instance running the turn at the moment another instance
 * records an answer, exactly one of them is recorded; the waiting call follows that one,
 * and the loser is told the request was already resolved. Tokens minted by one instance
 * check on the other with no secret configured, and a configured secret still wins.
 *
 * The race is made exact rather than hoped for: the test holds the event loop until the
 * request's timer is due, so the answer and the expiry meet in one turn of the loop. The
 * answering instance's clock runs behind (as clocks of two machines may), so its token
 * check still lets the answer through.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnPermissionApprovalRequest, TurnQuestionOpenedNotification } from "../../generated/types.js";
import { ResolveTokens } from "../../packages/gateway/src/permissions/tokens.js";
import { PostgresEventStore } from "../../packages/gateway/src/store/postgres.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { script, startHarness, text, type Harness, type HarnessOptions } from "../gateway/harness.js";

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the resolution race tests: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;
afterAll(() => server?.stop());

const TIMEOUT_MS = 300;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Instance A runs the turns; B's clock runs 5 s behind. */
async function twoInstances(config: HarnessOptions["config"] = {}): Promise<[Harness, Harness]> {
  const url = await server!.createDatabase();
  const open = async (now?: () => Date) => {
    const store = new PostgresEventStore(url);
    const h = await startHarness({
      store,
      config: { permissions: { request_timeout_ms: TIMEOUT_MS }, questions: { timeout_ms: TIMEOUT_MS }, ...config },
      ...(now ? { now } : {}),
    });
    cleanups.push(
      () => store.close(),
      () => h.close(),
    );
    await h.gateway.ready;
    return h;
  };
  return [await open(), await open(() => new Date(Date.now() - 5000))];
}

/** Holds the event loop (timers included) until `at`, in ms since the epoch. */
function holdUntil(at: number): void {
  while (Date.now() < at + 5) {
    // Busy: nothing else of this process runs meanwhile.
  }
}

const ofMethod = (received: readonly AnyNotification[], turnId: string, method: string) =>
  received.filter((n) => n.method === method && "turn_id" in n.params && n.params.turn_id === turnId);

async function supervisedTurn(
  a: Harness,
  b: Harness,
  turnId: string,
): Promise<{ thread: string; request: TurnPermissionApprovalRequest; done: Promise<AnyNotification> }> {
  const thread = await a.thread();
  await b.client.threadGet({ thread_id: thread });
  const opened = b.waitFor((n) => n.method === "turn/permission/request/opened");
  const done = a.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);
  await a.client.turnStart({
    thread_id: thread,
    turn_id: turnId,
    permission_profile: { mode: "supervised" },
    input: text(script({ tool: "shell", args: { command: "echo ran" } }, { say: "done" })),
  });
  const { request } = (await opened).params as { request: TurnPermissionApprovalRequest };
  return { thread, request, done };
}

async function askingTurn(
  a: Harness,
  b: Harness,
  turnId: string,
): Promise<{ thread: string; opened: TurnQuestionOpenedNotification; done: Promise<AnyNotification> }> {
  const thread = await a.thread();
  await b.client.threadGet({ thread_id: thread });
  const opened = b.waitFor((n) => n.method === "turn/question/opened");
  const done = a.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);
  const deploy = {
    header: "Target",
    question: "Where should the build be deployed?",
    options: [{ label: "Staging" }, { label: "Production" }],
  };
  await a.client.turnStart({
    thread_id: thread,
    turn_id: turnId,
    input: text(script({ tool: "ask_question", args: { questions: [deploy] } }, { say: "done" })),
  });
  return { thread, opened: (await opened).params as TurnQuestionOpenedNotification, done };
}

describe.skipIf(server === undefined)("resolutions decided once across instances", () => {
  it("records an answer on B that meets the expiry on A, and only it: the tool call runs", async () => {
    const [a, b] = await twoInstances();
    const { thread, request, done } = await supervisedTurn(a, b, "trn_answer_wins");
    holdUntil(Date.parse(request.expires_at!));
    // A's timer is due; B's answer is recorded first, in this same turn of the event loop.
    const answer = b.gateway.approvals.respond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_once",
    });
    expect(answer.resolution).toBe("allow_once");
    expect((await done).method).toBe("turn/completed");
    const items = await a.client.turnItems({ thread_id: thread, turn_id: "trn_answer_wins" });
    const resolved = items.events.filter((e) => e.method === "turn/permission/request/resolved");
    expect(resolved.map((e) => e.params.resolution)).toEqual(["allow_once"]);
    const command = items.events.find(
      (e) => e.method === "item/completed" && (e.params.item as { type: string }).type === "commandExecution",
    );
    expect(command?.params.item).toMatchObject({ stdout: "ran\n", status: "completed" });
    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    await b.waitFor((n) => n.method === "turn/completed");
    expect(ofMethod(b.received, "trn_answer_wins", "turn/permission/request/resolved")).toHaveLength(1);
  });

  it("refuses an answer on B that meets the expiry recorded on A first, as already resolved: the call was denied", async () => {
    const [a, b] = await twoInstances();
    const { thread, request, done } = await supervisedTurn(a, b, "trn_expiry_wins");
    let refused: unknown;
    // Due just after A's timer, so it runs right after the expiry, before anything is committed or announced.
    setTimeout(() => {
      try {
        b.gateway.approvals.respond({ request_id: request.request_id, resolve_token: request.resolve_token, resolution: "allow_once" });
      } catch (error) {
        refused = error;
      }
    }, TIMEOUT_MS);
    holdUntil(Date.parse(request.expires_at!) + TIMEOUT_MS);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(refused).toMatchObject({
      reason: "permission_request_resolved",
      data: { request_id: request.request_id, resolution: "expired" },
    });
    expect((await done).method).toBe("turn/completed");
    const items = await a.client.turnItems({ thread_id: thread, turn_id: "trn_expiry_wins" });
    expect(items.events.filter((e) => e.method === "turn/permission/request/resolved").map((e) => e.params.resolution)).toEqual([
      "expired",
    ]);
    expect(
      items.events.some(
        (e) =>
          e.method === "item/completed" &&
          (e.params.item as { type: string }).type === "commandExecution" &&
          (e.params.item as { status: string }).status === "completed",
      ),
    ).toBe(false);
  });

  it("records an answer to a question on B that meets its expiry on A, and only it", async () => {
    const [a, b] = await twoInstances();
    const { thread, opened, done } = await askingTurn(a, b, "trn_q_answer_wins");
    holdUntil(Date.parse(opened.question.expires_at!));
    const option = opened.question.options[1]!.id;
    const answer = b.gateway.questions.respond({
      thread_id: thread,
      turn_id: "trn_q_answer_wins",
      call_id: opened.call_id,
      index: opened.index,
      option_id: option,
      answer_token: opened.question.answer_token,
    });
    expect(answer.option_id).toBe(option);
    expect((await done).method).toBe("turn/completed");
    const items = await a.client.turnItems({ thread_id: thread, turn_id: "trn_q_answer_wins" });
    expect(items.events.filter((e) => e.method === "turn/question/resolved").map((e) => [e.params.resolution, e.params.option_id])).toEqual(
      [["answered", option]],
    );
  });

  it("refuses an answer to a question on B that meets the expiry recorded on A first", async () => {
    const [a, b] = await twoInstances();
    const { thread, opened, done } = await askingTurn(a, b, "trn_q_expiry_wins");
    let refused: unknown;
    setTimeout(() => {
      try {
        b.gateway.questions.respond({
          thread_id: thread,
          turn_id: "trn_q_expiry_wins",
          call_id: opened.call_id,
          index: opened.index,
          option_id: opened.question.options[0]!.id,
          answer_token: opened.question.answer_token,
        });
      } catch (error) {
        refused = error;
      }
    }, TIMEOUT_MS);
    holdUntil(Date.parse(opened.question.expires_at!) + TIMEOUT_MS);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(refused).toMatchObject({ reason: "question_resolved", data: { resolution: "expired" } });
    expect((await done).method).toBe("turn/completed");
    const items = await a.client.turnItems({ thread_id: thread, turn_id: "trn_q_expiry_wins" });
    expect(items.events.filter((e) => e.method === "turn/question/resolved").map((e) => e.params.resolution)).toEqual(["expired"]);
  });

  it("signs tokens with a secret configured when there is one, not with the one kept in the database", async () => {
    const secret = "a-configured-secret-of-some-length";
    const [a, b] = await twoInstances({ permissions: { request_timeout_ms: 60_000, resolve_token_secret: secret } });
    const { request } = await supervisedTurn(a, b, "trn_configured");
    const binding = { request_id: request.request_id, turn_id: request.turn_id, thread_id: request.thread_id };
    expect(new ResolveTokens(secret).verify(request.resolve_token, binding, new Date())).toEqual({ ok: true });
    const kept = (a.store as PostgresEventStore).shared.tokenSecret();
    expect(new ResolveTokens(kept).verify(request.resolve_token, binding, new Date())).toMatchObject({
      ok: false,
      reason: "bad_signature",
    });
  });
});
