/**
 * Several `turnspec serve` processes on one PostgreSQL database, with clients on each:
 * a turn running on one instance reaches a client of the other live, in order and each
 * notification once, and both answer turn/get and turn/items the same; concurrent
 * turn/start for one thread on two instances lets exactly one win; and when the instance
 * running 20 turns is killed with SIGKILL, the other blocks them once their leases expire,
 * turn/resume there completes them, and the log holds every notification a client was
 * sent, with no gap in any turn's sequence.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { AgentDelegationRouteCreateParams } from "../../generated/types.js";
import { script, text } from "../gateway/harness.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { connectClient, sequenced, startInstance, type Instance } from "./serve-instance.js";

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the several-instance tests: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;
afterAll(() => server?.stop());

const LEASE_TIMEOUT_MS = 1500;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const instance = (store: string, settings: Record<string, unknown> = {}) =>
  startInstance(store, { lease_timeout_ms: LEASE_TIMEOUT_MS, ...settings }, cleanups);
const clientOf = (gateway: Instance) => connectClient(gateway, cleanups);

function routeParams(workspace: string, source: string, destination: string): AgentDelegationRouteCreateParams {
  return {
    kind: "execution_bound",
    source_execution_id: `trn_of_${source}`,
    source_capsule_id: source,
    source_thread_id: source,
    source_workspace_id: workspace,
    source_gateway_id: "gw_local",
    destination_thread_id: destination,
    destination_workspace_id: workspace,
    destination_gateway_id: "gw_local",
    allowed_actions: ["start_agent", "deliver_result"],
    disclosure: { text: true, artifacts: false, context: false, userInput: false, resultReturn: "full_result" },
    source_policy_generation: 1,
    destination_policy_generation: 1,
    hop_count: 0,
    max_hops: 2,
  };
}

describe.skipIf(server === undefined)("gateway instances on one PostgreSQL database", () => {
  it("delivers a turn running on one instance to a client of the other, in order, each once; both answer the same", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([instance(store), instance(store)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const cwd = mkdtempSync(join(tmpdir(), "turnspec-cluster-"));
    const { thread } = await onA.client.threadStart({ cwd });
    // The client on B follows the thread; the turn then runs on A.
    expect((await onB.client.threadGet({ thread_id: thread.id })).thread.id).toBe(thread.id);
    const endOnB = onB.waitFor((n) => n.method === "turn/completed");
    const endOnA = onA.waitFor((n) => n.method === "turn/completed");
    const say = "one two three four five six seven eight nine ten eleven twelve";
    await onA.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_live",
      input: text(script({ tool: "shell", args: { command: "echo from-instance-a" } }, { reasoning: "thinking it over", say, chunks: 12 })),
    });
    await Promise.all([endOnA, endOnB]);

    const items = await onB.client.turnItems({ thread_id: thread.id, turn_id: "trn_live" });
    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    const logged = items.events.map((e) => ({ sequence: e.sequence, method: e.method, params: e.params }));
    // Every event of the turn reached the client on B, in sequence order and once: exactly the log.
    expect(sequenced(onB.received, "trn_live")).toEqual(logged);
    expect(sequenced(onA.received, "trn_live")).toEqual(logged);
    expect(await onA.client.turnItems({ thread_id: thread.id, turn_id: "trn_live" })).toEqual(items);
    expect(await onB.client.turnGet({ thread_id: thread.id, turn_id: "trn_live" })).toEqual(
      await onA.client.turnGet({ thread_id: thread.id, turn_id: "trn_live" }),
    );
    expect(await onB.client.threadGet({ thread_id: thread.id })).toEqual(await onA.client.threadGet({ thread_id: thread.id }));
    // The work view B folded from the log agrees with A's.
    const page = { threadId: thread.id, turnId: "trn_live", anchor: { kind: "oldest" as const }, limit: 100 };
    expect(await onB.client.turnWorkPage(page)).toEqual(await onA.client.turnWorkPage(page));
    const timeline = { threadId: thread.id, limit: 50 };
    expect(await onB.client.threadTimelinePage(timeline)).toEqual(await onA.client.threadTimelinePage(timeline));
    // The derived work notifications reached B's client too.
    expect(onB.received.some((n) => n.method === "turn/work/items/changed")).toBe(true);
    expect(onA.protocolErrors).toEqual([]);
    expect(onB.protocolErrors).toEqual([]);
  });

  it("lets exactly one of two concurrent turn/start for one thread win, on two instances", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([instance(store), instance(store)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const slow = text(script({ say: "a while", delay_ms: 2000 }));
    for (let round = 0; round < 5; round++) {
      const { thread } = await onA.client.threadStart({});
      const outcomes = await Promise.allSettled([
        onA.client.turnStart({ thread_id: thread.id, turn_id: `trn_${round}_a`, input: slow }),
        onB.client.turnStart({ thread_id: thread.id, turn_id: `trn_${round}_b`, input: slow }),
      ]);
      const won = outcomes.filter((o) => o.status === "fulfilled");
      const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
      expect(won, `round ${round}`).toHaveLength(1);
      expect(lost[0]!.reason).toMatchObject({ reason: "turn_in_progress" });
      const winner = (won[0] as PromiseFulfilledResult<{ turn: { id: string } }>).value.turn.id;
      expect(lost[0]!.reason).toMatchObject({ data: { active_turn_id: winner } });
      expect((await onB.client.threadGet({ thread_id: thread.id })).thread.active_turn_id).toBe(winner);
    }
  });

  it("leaves alone, when it starts, the turns a live instance runs", async () => {
    const store = await server!.createDatabase();
    const a = await instance(store);
    const onA = await clientOf(a);
    const { thread } = await onA.client.threadStart({});
    const done = onA.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed" || n.method === "turn/blocked");
    await onA.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_running",
      input: text(script({ say: "still mine", delay_ms: 6 * LEASE_TIMEOUT_MS })),
    });
    // A second instance starts while the turn runs, and keeps running past a lease timeout.
    const b = await instance(store);
    const onB = await clientOf(b);
    await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_TIMEOUT_MS));
    expect((await onB.client.turnGet({ thread_id: thread.id, turn_id: "trn_running" })).turn.status).toBe("InProgress");
    expect((await done).method).toBe("turn/completed");
  });

  it("lets a permission answer sent to one instance reach the turn waiting for it on the other", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([instance(store), instance(store)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const { thread } = await onA.client.threadStart({ cwd: mkdtempSync(join(tmpdir(), "turnspec-cluster-")) });
    await onB.client.threadGet({ thread_id: thread.id });
    const opened = onB.waitFor((n) => n.method === "turn/permission/request/opened");
    const done = onA.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed");
    // A supervised turn asks before running a shell command; it runs on A, the answer goes to B.
    await onA.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_asks",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo approved-elsewhere" } }, { say: "ran it" })),
    });
    const { request } = (await opened).params as { request: { request_id: string; resolve_token: string } };
    const answer = await onB.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token,
      resolution: "allow_once",
    });
    expect(answer).toMatchObject({ request_id: request.request_id, turn_id: "trn_asks", resolution: "allow_once" });
    expect((await done).method).toBe("turn/completed");
    const items = await onA.client.turnItems({ thread_id: thread.id, turn_id: "trn_asks" });
    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    expect(items.events.filter((e) => e.method === "turn/permission/request/resolved")).toHaveLength(1);
    const command = items.events.find(
      (e) => e.method === "item/completed" && (e.params.item as { type: string }).type === "commandExecution",
    );
    expect(command?.params.item).toMatchObject({ stdout: "approved-elsewhere\n", status: "completed" });
    const logged = items.events.map((e) => ({ sequence: e.sequence, method: e.method, params: e.params }));
    // Both clients got the whole turn in order, the answer B recorded included, each once.
    await onB.waitFor((n) => n.method === "turn/completed");
    expect(sequenced(onA.received, "trn_asks")).toEqual(logged);
    expect(sequenced(onB.received, "trn_asks")).toEqual(logged);
    // Answered once: a second answer, on either instance, is refused.
    for (const client of [onA, onB]) {
      await expect(
        client.client.turnPermissionRequestRespond({
          request_id: request.request_id,
          resolve_token: request.resolve_token,
          resolution: "deny",
        }),
      ).rejects.toMatchObject({ reason: "permission_request_resolved" });
    }
  });

  it("lets a question opened by a turn on one instance be answered on the other, once, with no token secret configured", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([instance(store), instance(store)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const { thread } = await onB.client.threadStart({});
    await onA.client.threadGet({ thread_id: thread.id });
    const opened = onA.waitFor((n) => n.method === "turn/question/opened");
    const done = onB.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed");
    const deploy = {
      header: "Target",
      question: "Where should the build be deployed?",
      options: [{ label: "Staging" }, { label: "Production" }],
    };
    // The turn runs on B; the question reaches the client on A, which answers it there.
    await onB.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_q",
      input: text(script({ tool: "ask_question", args: { questions: [deploy] } }, { say: "deploying" })),
    });
    const { call_id, index, question } = (await opened).params as {
      call_id: string;
      index: number;
      question: { answer_token: string; options: { id: string }[] };
    };
    const answer = {
      thread_id: thread.id,
      turn_id: "trn_q",
      call_id,
      index,
      option_id: question.options[1]!.id,
      answer_token: question.answer_token,
    };
    expect(await onA.client.turnQuestionRespond(answer)).toMatchObject({ turn_id: "trn_q", option_id: question.options[1]!.id });
    expect((await done).method).toBe("turn/completed");
    const items = await onB.client.turnItems({ thread_id: thread.id, turn_id: "trn_q" });
    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    const resolved = items.events.filter((e) => e.method === "turn/question/resolved");
    expect(resolved.map((e) => e.params)).toEqual([
      expect.objectContaining({ resolution: "answered", option_id: question.options[1]!.id }),
    ]);
    await onA.waitFor((n) => n.method === "turn/completed");
    // A replay marks the question already surfaced; its one live delivery did not.
    const live = (e: (typeof items.events)[number]) =>
      e.method === "turn/question/opened" ? { ...e.params, already_surfaced: false } : e.params;
    const logged = items.events.map((e) => ({ sequence: e.sequence, method: e.method, params: live(e) }));
    expect(logged.some((e) => e.method === "turn/question/opened")).toBe(true);
    expect(sequenced(onA.received, "trn_q")).toEqual(logged);
    expect(sequenced(onB.received, "trn_q")).toEqual(logged);
    for (const client of [onA, onB])
      await expect(client.client.turnQuestionRespond(answer)).rejects.toMatchObject({
        reason: "question_resolved",
        data: { resolution: "answered" },
      });
  });

  it("decides route creates on two instances one at a time: no cycle of live routes, no source past its limit", async () => {
    const store = await server!.createDatabase();
    const settings = { routes: { max_routes_per_source: 3 } };
    const [a, b] = await Promise.all([instance(store, settings), instance(store, settings)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const refusal = (outcome: PromiseSettledResult<unknown>) =>
      outcome.status === "rejected" ? (outcome.reason as { data?: { detail?: string } }).data?.detail : "created";
    for (let round = 0; round < 5; round++) {
      const { thread: x } = await onA.client.threadStart({});
      const { thread: y } = await onB.client.threadStart({});
      // x → y on A and y → x on B at once: each alone is fine, together they close a cycle.
      const outcomes = await Promise.allSettled([
        onA.client.agentRouteCreate(routeParams(x.workspace_id, x.id, y.id)),
        onB.client.agentRouteCreate(routeParams(x.workspace_id, y.id, x.id)),
      ]);
      expect(outcomes.map(refusal).sort(), `round ${round}`).toEqual(["created", "cycle_detected"]);
    }
    const { thread: source } = await onA.client.threadStart({});
    const destinations = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? onA : onB).client.threadStart({})));
    const creates = await Promise.allSettled(
      destinations.map(({ thread }, i) =>
        (i % 2 === 0 ? onB : onA).client.agentRouteCreate(routeParams(source.workspace_id, source.id, thread.id)),
      ),
    );
    expect(creates.filter((o) => o.status === "fulfilled")).toHaveLength(3);
    expect(creates.map(refusal).filter((r) => r !== "created")).toEqual(Array(5).fill("edge_limit_exceeded"));
    const live = (await onB.client.agentRouteList({ source_execution_id: `trn_of_${source.id}` })).routes.filter(
      (r) => r.status === "active",
    );
    expect(live).toHaveLength(3);
  });

  it("cancels, through either instance, a turn running on the other", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([instance(store), instance(store)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const { thread } = await onA.client.threadStart({});
    await onB.client.threadGet({ thread_id: thread.id });
    const started = onB.waitFor((n) => n.method === "turn/started");
    await onA.client.turnStart({ thread_id: thread.id, turn_id: "trn_long", input: text(script({ say: "never said", delay_ms: 60_000 })) });
    await started;
    const { turn } = await onB.client.turnCancel({ thread_id: thread.id, turn_id: "trn_long", reason: "stopped from instance b" });
    expect(turn).toMatchObject({ status: "Interrupted", error: { kind: "cancelled", message: "stopped from instance b" } });
    expect((await onA.client.turnGet({ thread_id: thread.id, turn_id: "trn_long" })).turn.status).toBe("Interrupted");
  });

  it("blocks the 20 turns of a killed instance on the other once their leases expire; turn/resume there completes them, nothing missing, no gaps", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([instance(store), instance(store)]);
    const [onA, onB] = await Promise.all([clientOf(a), clientOf(b)]);
    const turns: { thread: string; turn: string }[] = [];
    for (let i = 0; i < 20; i++) {
      const { thread } = await onA.client.threadStart({ cwd: mkdtempSync(join(tmpdir(), "turnspec-cluster-")) });
      await onB.client.threadGet({ thread_id: thread.id });
      turns.push({ thread: thread.id, turn: `trn_owned_${i}` });
    }
    const SLOW_TOOL_THEN_ANSWER = script({ tool: "shell", args: { command: "sleep 20" } }, { say: "finished on the other instance" });
    const running = turns.map(({ turn }) =>
      onB.waitFor((n) => n.method === "item/started" && n.params.turn_id === turn && n.params.item.type === "commandExecution"),
    );
    for (const { thread, turn } of turns)
      await onA.client.turnStart({ thread_id: thread, turn_id: turn, input: text(SLOW_TOOL_THEN_ANSWER) });
    // Every turn is in its tool call on A, as the client on B saw.
    await Promise.all(running);

    a.child.kill("SIGKILL");
    await new Promise((resolve) => a.child.once("exit", resolve));
    const blocked = turns.map(({ turn }) => onB.waitFor((n) => n.method === "turn/blocked" && n.params.turn_id === turn));
    const blockedAt = await Promise.all(blocked);
    for (const n of blockedAt) expect(n.params).toMatchObject({ reason: "runtime_shutdown_continuation" });

    const completed = turns.map(({ turn }) => onB.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === turn));
    for (const { thread, turn } of turns) {
      const resumed = await onB.client.turnResume({ thread_id: thread, turn_id: turn });
      expect(resumed.turn.status).toBe("InProgress");
    }
    await Promise.all(completed);

    for (const { thread, turn } of turns) {
      const items = await onB.client.turnItems({ thread_id: thread, turn_id: turn });
      expect(
        items.events.map((e) => e.sequence),
        turn,
      ).toEqual(items.events.map((_, i) => i + 1));
      const logged = items.events.map((e) => ({ sequence: e.sequence, method: e.method, params: e.params }));
      // B's client followed the turn from its start: it got the whole log, in order, each event once.
      expect(sequenced(onB.received, turn), turn).toEqual(logged);
      // What A's client was sent before the kill is in the log unchanged.
      const seenOnA = sequenced(onA.received, turn);
      expect(seenOnA.length, turn).toBeGreaterThan(0);
      expect(logged.slice(0, seenOnA.length), turn).toEqual(seenOnA);
      const answer = items.events.find((e) => e.method === "item/completed" && (e.params.item as { type: string }).type === "agentMessage");
      expect(answer?.params.item, turn).toMatchObject({ text: "finished on the other instance" });
    }
    expect(onB.protocolErrors).toEqual([]);
  });
});
