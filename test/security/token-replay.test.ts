/**
 * Resolve and answer tokens, replayed: a token used again once its request is resolved, a
 * token of one request offered for another of another turn and thread, a token of a
 * question offered as a resolve token, and a token minted by another gateway instance (one
 * with its own secret, and one that shares the secret but not the request). Each answer must
 * be refused with its reason, and the request it was offered for stays open for the token
 * that is its own.
 */
import { describe, expect, it } from "vitest";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { script, startHarness, text } from "../gateway/harness.js";
import { h, setup, startAndWaitForRequest, terminalOf, usePermissionHarness } from "../gateway/permission-steps.js";

usePermissionHarness();
const shellTurn = (thread: string, turn: string) => ({
  thread_id: thread,
  turn_id: turn,
  permission_profile: { mode: "supervised" as const },
  input: text(script({ tool: "shell", args: { command: "echo hi" } }, { say: "ok" })),
});
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e as RpcError,
  );

describe("a resolve token, replayed", () => {
  it("is refused once its request is resolved, and for a request of another turn and thread", async () => {
    const first = await setup();
    const a = await startAndWaitForRequest(shellTurn(first, "trn_a"));
    await h.client.turnPermissionRequestRespond({ request_id: a.request_id, resolve_token: a.resolve_token!, resolution: "allow_once" });
    await terminalOf("trn_a");
    // The same answer again: the request is resolved.
    const again = await refusal(
      h.client.turnPermissionRequestRespond({ request_id: a.request_id, resolve_token: a.resolve_token!, resolution: "allow_once" }),
    );
    expect(again).toMatchObject({
      reason: "permission_request_resolved",
      message: expect.stringContaining("was already resolved (allow_once); nothing runs twice"),
    });

    // A's token for B's request, in another thread and turn.
    const second = (await h.client.threadStart({ cwd: h.cwd })).thread.id;
    const b = await startAndWaitForRequest(shellTurn(second, "trn_b"));
    const crossed = await refusal(
      h.client.turnPermissionRequestRespond({ request_id: b.request_id, resolve_token: a.resolve_token!, resolution: "allow_once" }),
    );
    expect(crossed).toMatchObject({
      reason: "unauthorized",
      data: { detail: "wrong_request" },
      message: `The resolve token for ${b.request_id} is another request's; the request stays open`,
    });
    // B is still open, for its own token.
    await h.client.turnPermissionRequestRespond({ request_id: b.request_id, resolve_token: b.resolve_token!, resolution: "deny" });
    expect((await terminalOf("trn_b")).method).toBe("turn/completed");
  });

  it("is refused when it is another gateway's, with its own secret or with a shared one", async () => {
    const thread = await setup({ config: { permissions: { resolve_token_secret: "a-secret-of-sixteen-bytes-or-more" } } });
    const ours = await startAndWaitForRequest(shellTurn(thread, "trn_ours"));
    for (const secret of [undefined, "a-secret-of-sixteen-bytes-or-more"]) {
      const other = await startHarness(secret === undefined ? {} : { config: { permissions: { resolve_token_secret: secret } } });
      try {
        const otherThread = (await other.client.threadStart({ cwd: other.cwd })).thread.id;
        await other.client.turnStart(shellTurn(otherThread, "trn_theirs"));
        const theirs = await other.waitFor((n) => n.method === "turn/permission/request/opened");
        if (theirs.method !== "turn/permission/request/opened") throw new Error("unreachable");
        const refused = await refusal(
          h.client.turnPermissionRequestRespond({
            request_id: ours.request_id,
            resolve_token: theirs.params.request.resolve_token!,
            resolution: "allow_once",
          }),
        );
        expect(refused).toMatchObject({
          reason: "unauthorized",
          data: { detail: secret === undefined ? "bad_signature" : "wrong_request" },
        });
      } finally {
        await other.close();
      }
    }
    await h.client.turnPermissionRequestRespond({ request_id: ours.request_id, resolve_token: ours.resolve_token!, resolution: "deny" });
    expect((await terminalOf("trn_ours")).method).toBe("turn/completed");
  });
});

describe("an answer token, replayed", () => {
  const questions = [{ header: "Pick", question: "Which?", options: [{ label: "A" }, { label: "B" }] }];

  it("is refused once its question is answered", async () => {
    const thread = await setup();
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_q",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "ask_question", args: { questions } }, { say: "ok" })),
    });
    const asked = await h.waitFor((n) => n.method === "turn/question/opened" && n.params.turn_id === "trn_q");
    if (asked.method !== "turn/question/opened") throw new Error("unreachable");
    const { question } = asked.params;
    const answer = () =>
      h.client.turnQuestionRespond({
        thread_id: thread,
        turn_id: "trn_q",
        call_id: question.call_id,
        index: question.index,
        option_id: question.options[0]!.id,
        answer_token: question.answer_token,
      });
    await answer();
    expect(await refusal(answer())).toMatchObject({
      reason: "question_resolved",
      message: expect.stringContaining("the answer is not recorded twice"),
    });
    expect((await terminalOf("trn_q")).method).toBe("turn/completed");
  });

  it("does not resolve a permission request, and a resolve token does not answer a question", async () => {
    const first = await setup();
    const request = await startAndWaitForRequest(shellTurn(first, "trn_r"));
    const second = (await h.client.threadStart({ cwd: h.cwd })).thread.id;
    await h.client.turnStart({
      thread_id: second,
      turn_id: "trn_q2",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "ask_question", args: { questions } }, { say: "ok" })),
    });
    const asked = await h.waitFor((n) => n.method === "turn/question/opened" && n.params.turn_id === "trn_q2");
    if (asked.method !== "turn/question/opened") throw new Error("unreachable");
    const { question } = asked.params;
    const respond = (token: string) =>
      h.client.turnPermissionRequestRespond({ request_id: request.request_id, resolve_token: token, resolution: "allow_once" });
    const answer = (token: string) =>
      h.client.turnQuestionRespond({
        thread_id: second,
        turn_id: "trn_q2",
        call_id: question.call_id,
        index: question.index,
        option_id: question.options[0]!.id,
        answer_token: token,
      });
    expect(await refusal(respond(question.answer_token))).toMatchObject({ reason: "unauthorized" });
    expect(await refusal(answer(request.resolve_token!))).toMatchObject({ reason: "unauthorized" });
    // Both still open, each for its own token.
    await respond(request.resolve_token!);
    await answer(question.answer_token);
    expect((await terminalOf("trn_r")).method).toBe("turn/completed");
    expect((await terminalOf("trn_q2")).method).toBe("turn/completed");
  });
});
