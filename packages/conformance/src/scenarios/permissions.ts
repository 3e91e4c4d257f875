/** Scenarios of the permissions capability: profiles, approval requests and their answers. */
import type { AnyNotification } from "@turnspec/protocol/registry";
import type { TurnPermissionApprovalRequest, TurnPermissionRequestRespondParams } from "@turnspec/protocol/types";
import { messageText, type ChatRequest } from "../model-server.js";
import { Failure, shown, isTerminal, type Scenario, type ScenarioContext } from "../scenario.js";
import { agentTurn, itemOf } from "./core.js";

const supervised = agentTurn("supervised");
const fullAccess = agentTurn("full_access");

/**
 * A shell command whose output differs from its text: the marker with 42 in it appears
 * only if the command really ran, never from a gateway echoing the command back.
 */
const marked = (ctx: ScenarioContext, label: string) => ({
  command: `echo ${label}-$((6*7))-${ctx.token.slice(-6)}`,
  output: `${label}-42-${ctx.token.slice(-6)}`,
});

const requestsOf = (ctx: ScenarioContext, turnId: string) =>
  ctx
    .ofTurn(turnId)
    .filter(
      (n): n is Extract<AnyNotification, { method: "turn/permission/request/opened" }> => n.method === "turn/permission/request/opened",
    )
    .map((n) => n.params.request);

async function nextRequest(ctx: ScenarioContext, turnId: string, index: number): Promise<TurnPermissionApprovalRequest> {
  await ctx.waitFor(`approval request ${index + 1} of turn ${turnId}`, () => requestsOf(ctx, turnId).length > index);
  return requestsOf(ctx, turnId)[index]!;
}

function respond(
  ctx: ScenarioContext,
  request: TurnPermissionApprovalRequest,
  resolution: TurnPermissionRequestRespondParams["resolution"],
) {
  return ctx.client.turnPermissionRequestRespond({
    request_id: request.request_id,
    resolution,
    ...(request.resolve_token ? { resolve_token: request.resolve_token } : {}),
  });
}

/** Every output a turn streamed or completed with, as one text. */
const outputOf = (ctx: ScenarioContext, turnId: string) =>
  ctx
    .ofTurn(turnId)
    .filter((n) => n.method === "item/command_execution/output_delta" || n.method === "item/completed" || n.method === "item/updated")
    .map((n) => JSON.stringify(n.params))
    .join("\n");

const lastTool = (request: ChatRequest | undefined) =>
  request ? messageText([...request.messages].reverse().find((m) => m.role === "tool")) : "";

const snapshot: Scenario = {
  name: "the supervised profile",
  checks: ["PERM-PROFILE-SNAPSHOT"],
  async run(ctx) {
    ctx.script([{ reply: { text: "ok" } }]);
    const thread = await ctx.thread();
    await ctx.step("PERM-PROFILE-SNAPSHOT", async () => {
      const turn = await ctx.startTurn(thread.id, "Hello", { mode: "Chat", permission_profile: { mode: "supervised" } });
      const p = turn.permission_profile;
      const want = { file_read: "allow", file_write: "ask", shell_command: "ask", network: "ask" } as const;
      const wrong = Object.entries(want).filter(([k, v]) => p.effective_policy[k as keyof typeof want] !== v);
      if (p.mode !== "supervised" || wrong.length)
        throw new Failure(
          `the supervised turn's profile is ${p.mode} with ${wrong.map(([k]) => `${k}: ${p.effective_policy[k as keyof typeof want]}`).join(", ")}`,
        );
      await ctx.ended(turn.id);
    });
  },
};

const fullAccessRuns: Scenario = {
  name: "full access asks nothing",
  checks: ["PERM-FULL-ACCESS-NO-ASK"],
  async run(ctx) {
    const { command, output } = marked(ctx, "free");
    ctx.script([{ reply: { toolCalls: [{ tool: "shell", args: { command } }] } }, { reply: { text: "done" } }]);
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("PERM-FULL-ACCESS-NO-ASK", async () => {
      const turn = await ctx.startTurn(thread.id, "Run it", fullAccess);
      await ctx.ended(turn.id);
      if (requestsOf(ctx, turn.id).length) throw new Failure("a full_access turn opened an approval request");
      if (!outputOf(ctx, turn.id).includes(output)) throw new Failure("the command did not run");
    });
  },
};

const readAllowed: Scenario = {
  name: "supervised reads",
  checks: ["PERM-READ-NO-ASK"],
  async run(ctx) {
    const file = `${ctx.id("read")}.txt`;
    const content = `content-${ctx.token.slice(-6)}`;
    const script = ctx.script([
      { reply: { toolCalls: [{ tool: "write_file", args: { path: file, content } }] } },
      { reply: { text: "written" } },
      { reply: { toolCalls: [{ tool: "read_file", args: { path: file } }] } },
      { reply: { text: "read" } },
    ]);
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("PERM-READ-NO-ASK", async () => {
      await ctx.ended((await ctx.startTurn(thread.id, "Write it", fullAccess)).id);
      const turn = await ctx.startTurn(thread.id, "Read it", supervised);
      await ctx.ended(turn.id);
      if (requestsOf(ctx, turn.id).length)
        throw new Failure("a read inside the thread's folder opened an approval request under supervised");
      if (!lastTool(script.calls[3]).includes(content))
        throw new Failure(`the model received ${shown(lastTool(script.calls[3]))}, expected the file's content`);
    });
  },
};

const allowOnce: Scenario = {
  name: "asking and allow_once",
  checks: ["PERM-ASK-OPENS-REQUEST", "PERM-ALLOW-ONCE", "PERM-RESPOND-TWICE", "PERM-RESPOND-NOT-FOUND", "PERM-AUDIT"],
  async run(ctx) {
    const { command, output } = marked(ctx, "asked");
    ctx.script([{ reply: { toolCalls: [{ tool: "shell", args: { command } }] } }, { reply: { text: "done" } }]);
    const thread = await ctx.thread({ mode: "Agent" });
    const turn = await ctx.startTurn(thread.id, "Run it", supervised);
    const request = await ctx.step("PERM-ASK-OPENS-REQUEST", async () => {
      const request = await nextRequest(ctx, turn.id, 0);
      const wrong = [
        request.tool_name !== ctx.tool("shell") && `tool_name is ${shown(request.tool_name)}, expected ${shown(ctx.tool("shell"))}`,
        !request.scope_hash && `scope_hash is ${shown(request.scope_hash)}, expected a non-empty hash`,
        !request.reason && `reason is ${shown(request.reason)}, expected a non-empty reason`,
        request.turn_id !== turn.id && `turn_id is ${shown(request.turn_id)}, expected ${shown(turn.id)}`,
      ].filter((w): w is string => typeof w === "string");
      if (wrong.length)
        throw new Failure(`the approval request ${request.request_id}: ${wrong.join("; ")} (the request: ${shown(request)})`);
      if (outputOf(ctx, turn.id).includes(output)) throw new Failure("the command ran before the request was answered");
      return request;
    });
    await ctx.step("PERM-ALLOW-ONCE", async () => {
      await respond(ctx, request, "allow_once");
      const resolved = await ctx.waitFor(
        "turn/permission/request/resolved",
        (n) => n.method === "turn/permission/request/resolved" && n.params.request_id === request.request_id,
      );
      if ((resolved.params as { resolution: string }).resolution !== "allow_once")
        throw new Failure(`the request was resolved ${(resolved.params as { resolution: string }).resolution}`);
      const end = await ctx.ended(turn.id);
      if (end.turn.status !== "Completed") throw new Failure(`the turn ended ${end.turn.status}`);
      if (!outputOf(ctx, turn.id).includes(output)) throw new Failure("the allowed command did not run");
    });
    await ctx.attempt("PERM-RESPOND-TWICE", () =>
      ctx.rejects(respond(ctx, request, "deny"), "permission_request_resolved", "answering a resolved request"),
    );
    await ctx.attempt("PERM-RESPOND-NOT-FOUND", () =>
      ctx.rejects(
        ctx.client.turnPermissionRequestRespond({ request_id: ctx.id("perm_missing"), resolution: "allow_once" }),
        "permission_request_not_found",
        "answering an unknown request",
      ),
    );
    await ctx.attempt("PERM-AUDIT", async () => {
      const kinds = ctx
        .ofTurn(turn.id)
        .filter((n) => n.method === "turn/permission/audit" && n.params.request_id === request.request_id)
        .map((n) => (n.params as { kind: string }).kind);
      for (const kind of ["request_opened", "request_resolved"])
        if (!kinds.includes(kind)) throw new Failure(`no ${kind} audit record for the request (got ${kinds.join(", ") || "none"})`);
    });
  },
};

const deny: Scenario = {
  name: "deny",
  checks: ["PERM-DENY"],
  async run(ctx) {
    const { command, output } = marked(ctx, "denied");
    const script = ctx.script([{ reply: { toolCalls: [{ tool: "shell", args: { command } }] } }, { reply: { text: "understood" } }]);
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("PERM-DENY", async () => {
      const turn = await ctx.startTurn(thread.id, "Try it", supervised);
      await respond(ctx, await nextRequest(ctx, turn.id, 0), "deny");
      await ctx.ended(turn.id);
      if (outputOf(ctx, turn.id).includes(output)) throw new Failure("the denied command ran: its output was streamed");
      const item = ctx
        .ofTurn(turn.id)
        .filter((n) => n.method === "item/completed")
        .map(itemOf)
        .find((i) => i?.type === "commandExecution");
      if (item?.status !== "declined")
        throw new Failure(
          item
            ? `the denied command's item ended ${shown(item.status)}, expected declined`
            : "the denied command has no item that ended declined",
        );
      const told = lastTool(script.calls[1]);
      if (!told || told.includes(output)) throw new Failure(`the model was told ${shown(told)}, expected a refusal`);
    });
  },
};

const allowForTurn: Scenario = {
  name: "allow_for_turn",
  checks: ["PERM-ALLOW-FOR-TURN", "PERM-GRANT-TURN-SCOPED"],
  async run(ctx) {
    const { command } = marked(ctx, "granted");
    const call = { reply: { toolCalls: [{ tool: "shell", args: { command } }] } };
    ctx.script([call, call, { reply: { text: "twice" } }, call, { reply: { text: "again" } }]);
    const thread = await ctx.thread({ mode: "Agent" });
    const firstTurn = await ctx.startTurn(thread.id, "Run it twice", supervised);
    const first = firstTurn;
    await ctx.attempt("PERM-ALLOW-FOR-TURN", async () => {
      await respond(ctx, await nextRequest(ctx, first.id, 0), "allow_for_turn");
      // If a second request opens after all, answer it so the turn can end.
      const extra = ctx.watchFor(
        "a second request",
        (n) => n.method === "turn/permission/request/opened" && n.params.turn_id === first.id && requestsOf(ctx, first.id).length > 1,
      );
      extra
        .then((n) => respond(ctx, (n.params as { request: TurnPermissionApprovalRequest }).request, "allow_once"))
        .catch(() => undefined);
      await ctx.ended(first.id);
      const runs = ctx
        .ofTurn(first.id)
        .filter((n) => n.method === "item/completed" && itemOf(n)?.type === "commandExecution" && itemOf(n)?.status === "completed").length;
      if (requestsOf(ctx, first.id).length > 1) throw new Failure("the same command opened a second approval request after allow_for_turn");
      if (runs !== 2) throw new Failure(`the command ran ${runs} times, expected 2`);
    });
    await ctx.attempt("PERM-GRANT-TURN-SCOPED", async () => {
      const next = await ctx.startTurn(thread.id, "Run it once more", supervised);
      // Either the gateway asks again (as it must), or the turn runs the command unasked and ends.
      const asked = (n: AnyNotification) => n.method === "turn/permission/request/opened" && n.params.request.turn_id === next.id;
      const endedUnasked = (n: AnyNotification) => isTerminal(n) && (n.params as { turn_id?: string }).turn_id === next.id;
      const first = await ctx.waitFor(
        `an approval request of turn ${next.id} (the same command as the previous turn's allow_for_turn grant)`,
        (n) => asked(n) || endedUnasked(n),
      );
      if (!asked(first)) {
        const ran = ctx
          .ofTurn(next.id)
          .some((n) => n.method === "item/completed" && itemOf(n)?.type === "commandExecution" && itemOf(n)?.status === "completed");
        throw new Failure(
          `the allow_for_turn grant of turn ${firstTurn.id} leaked into the next turn ${next.id}: it ended with ${first.method} without an approval request${ran ? ", and the command ran" : ""}`,
        );
      }
      await respond(ctx, requestsOf(ctx, next.id)[0]!, "allow_once");
      await ctx.ended(next.id);
    });
  },
};

const cancelPending: Scenario = {
  name: "cancelling with a request open",
  checks: ["PERM-CANCEL-PENDING"],
  async run(ctx) {
    const { command } = marked(ctx, "pending");
    ctx.script([{ reply: { toolCalls: [{ tool: "shell", args: { command } }] } }]);
    const thread = await ctx.thread({ mode: "Agent" });
    await ctx.step("PERM-CANCEL-PENDING", async () => {
      const turn = await ctx.startTurn(thread.id, "Run it", supervised);
      const request = await nextRequest(ctx, turn.id, 0);
      await ctx.client.turnCancel({ thread_id: thread.id, turn_id: turn.id });
      const resolved = await ctx.waitFor(
        "the request's resolution",
        (n) => n.method === "turn/permission/request/resolved" && n.params.request_id === request.request_id,
      );
      if ((resolved.params as { resolution: string }).resolution !== "cancelled")
        throw new Failure(`the open request was resolved ${(resolved.params as { resolution: string }).resolution}, expected cancelled`);
      await ctx.ended(turn.id);
    });
  },
};

export const permissionScenarios: readonly Scenario[] = [
  snapshot,
  fullAccessRuns,
  readAllowed,
  allowOnce,
  deny,
  allowForTurn,
  cancelPending,
];
