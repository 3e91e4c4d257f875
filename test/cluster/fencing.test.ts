/**
 * Several `turnspec serve` processes on one PostgreSQL database, faulted where a turn could
 * run twice or an instance could die:
 *   - an instance stopped (SIGSTOP) past its lease while another takes its turn over and
 *     resumes it, then woken (SIGCONT) while the other runs the turn: its writes are
 *     refused by the turn's generation, it stops the turn's work and says so once; the turn
 *     completes once, each command runs once, the log has one turn/blocked and one terminal
 *     event, and a turn/resume on the woken instance is refused;
 *   - the database restarted while a command streams its output, while a model's answer
 *     streams as deltas, and while a turn waits for an approval: every instance process
 *     keeps running, and the clients are told how each turn ended.
 * Slow (leases run out, a server restarts): a file of its own, with its own server.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnPermissionApprovalRequest } from "../../generated/types.js";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { script, text } from "../gateway/harness.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { connectClient, sequenced, startInstance, type Instance } from "./serve-instance.js";

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the fencing and database restart tests of several instances: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;
afterAll(() => server?.stop());

const LEASE_TIMEOUT_MS = 1500;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const isEnd = (turnId: string) => (n: AnyNotification) =>
  (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId;
const running = (gateway: Instance) => gateway.child.exitCode === null && gateway.child.signalCode === null;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(server === undefined)("an instance stopped past its lease, woken after another took its turn over", () => {
  it("writes nothing more into the turn, stops, and says so once; the turn completes once and each command runs once", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([
      startInstance(store, { lease_timeout_ms: LEASE_TIMEOUT_MS }, cleanups),
      startInstance(store, { lease_timeout_ms: LEASE_TIMEOUT_MS }, cleanups),
    ]);
    const [onA, onB] = await Promise.all([connectClient(a, cleanups), connectClient(b, cleanups)]);
    const cwd = mkdtempSync(join(tmpdir(), "turnspec-fence-"));
    const runs = join(cwd, "runs");
    const { thread } = await onA.client.threadStart({ cwd });
    await onB.client.threadGet({ thread_id: thread.id });
    // The first command outlives the stall and prints all along: when A wakes, while B runs
    // the second one, output is waiting to be read, and A's first act is to write it.
    const steps = script(
      { tool: "shell", args: { command: `echo first >> ${runs}; for i in $(seq 1 60); do echo tick-$i; sleep 0.1; done` } },
      { tool: "shell", args: { command: `echo second >> ${runs}; sleep 4; echo second-done` } },
      { say: "answered once" },
    );
    const commandStarted = (n: AnyNotification) =>
      n.method === "item/started" && n.params.turn_id === "trn_fenced" && n.params.item.type === "commandExecution";
    const firstOnA = onB.waitFor(commandStarted);
    const ticking = onB.waitFor((n) => n.method === "item/command_execution/output_delta" && n.params.turn_id === "trn_fenced");
    await onA.client.turnStart({ thread_id: thread.id, turn_id: "trn_fenced", input: text(steps) });
    const first = await firstOnA;
    await ticking;

    a.child.kill("SIGSTOP");
    cleanups.push(() => a.child.kill("SIGCONT"));
    await onB.waitFor((n) => n.method === "turn/blocked" && n.params.turn_id === "trn_fenced");
    const firstId = (first.params as { item_id: string }).item_id;
    const secondOnB = onB.waitFor((n) => commandStarted(n) && (n.params as { item_id: string }).item_id !== firstId);
    const completed = onB.waitFor(isEnd("trn_fenced"));
    await onB.client.turnResume({ thread_id: thread.id, turn_id: "trn_fenced" });
    await secondOnB;
    // A wakes while B runs the turn: its command is done, its lease is B's.
    a.child.kill("SIGCONT");
    // Its lease checks run every third of the lease: one has run by now.
    await sleep(LEASE_TIMEOUT_MS);
    // A resume on A while B holds the turn is refused.
    const refused = await onA.client.turnResume({ thread_id: thread.id, turn_id: "trn_fenced" }).then(
      () => undefined,
      (error: unknown) => error as RpcError,
    );
    expect(refused).toMatchObject({ reason: "turn_not_blocked" });
    expect((await completed).method).toBe("turn/completed");
    // Whatever A would still do, its lease checks included, has had its time.
    await sleep(LEASE_TIMEOUT_MS);

    const items = await onB.client.turnItems({ thread_id: thread.id, turn_id: "trn_fenced" });
    const methods = items.events.map((e) => e.method);
    // Nothing of A's command after B blocked the turn: A's output read on waking was refused.
    const blockedAt = items.events.findIndex((e) => e.method === "turn/blocked");
    expect(items.events.slice(blockedAt).filter((e) => e.params.item_id === firstId)).toEqual([]);
    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    expect(methods.filter((m) => m === "turn/completed" || m === "turn/failed")).toEqual(["turn/completed"]);
    expect(methods.at(-1)).toBe("turn/completed");
    expect(methods.filter((m) => m === "turn/blocked")).toHaveLength(1);
    // Each item ends once: A's late end of its command (or a cancel of B's) is not in the log.
    const ended = items.events.filter((e) => e.method === "item/completed").map((e) => e.params.item_id);
    expect(new Set(ended).size).toBe(ended.length);
    const second = items.events.find(
      (e) =>
        e.method === "item/completed" && e.params.item_id !== firstId && (e.params.item as { type: string }).type === "commandExecution",
    );
    expect(second?.params.item).toMatchObject({ status: "completed", exit_code: 0 });
    // Each command ran once: the first on A, the second on B.
    expect(readFileSync(runs, "utf8").trim().split("\n")).toEqual(["first", "second"]);
    expect((await onA.client.turnGet({ thread_id: thread.id, turn_id: "trn_fenced" })).turn.status).toBe("Completed");
    // A said it once, and is still serving.
    expect(a.stderr().split("fenced off")).toHaveLength(2);
    expect(running(a)).toBe(true);
    expect(sequenced(onB.received, "trn_fenced")).toEqual(
      items.events.map((e) => ({ sequence: e.sequence, method: e.method, params: e.params })),
    );
    expect(onB.protocolErrors).toEqual([]);
  }, 120_000);
});

/** Restarts the database server, half a second down. */
async function restartDatabase(): Promise<void> {
  await server!.shutDown();
  await sleep(500);
  await server!.start();
}

/** Two instances and a client on each; a thread started on A that B's client follows. */
async function twoInstances() {
  const store = await server!.createDatabase();
  const settings = { lease_timeout_ms: 3000 };
  const [a, b] = await Promise.all([startInstance(store, settings, cleanups), startInstance(store, settings, cleanups)]);
  const [onA, onB] = await Promise.all([connectClient(a, cleanups), connectClient(b, cleanups)]);
  const cwd = mkdtempSync(join(tmpdir(), "turnspec-restart-"));
  const { thread } = await onA.client.threadStart({ cwd });
  await onB.client.threadGet({ thread_id: thread.id });
  return { a, b, onA, onB, thread };
}

/** Both instances run on, both clients were told the same end of the turn, the log has no gap, and a new turn runs. */
async function afterTheRestart(
  setup: Awaited<ReturnType<typeof twoInstances>>,
  turnId: string,
  endOnA: Promise<AnyNotification>,
  endOnB: Promise<AnyNotification>,
): Promise<AnyNotification> {
  const { a, b, onA, onB, thread } = setup;
  // An instance that exits fails the test at once, rather than leave its client waiting.
  const exited = (gateway: Instance, name: string) =>
    new Promise<never>((_, reject) =>
      gateway.child.once("exit", (code, signal) => reject(new Error(`instance ${name} exited (${code ?? signal}): ${gateway.stderr()}`))),
    );
  const [ended, endedOnB] = await Promise.race([Promise.all([endOnA, endOnB]), exited(a, "A"), exited(b, "B")]);
  expect(endedOnB).toEqual(ended);
  if (ended.method === "turn/failed") expect(ended.params).toMatchObject({ turn: { status: "Failed", error: { kind: "internal" } } });
  expect(running(a)).toBe(true);
  expect(running(b)).toBe(true);
  const items = await onB.client.turnItems({ thread_id: thread.id, turn_id: turnId });
  expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
  expect(items.events.at(-1)?.method).toBe(ended.method);
  const next = onB.waitFor(isEnd(`${turnId}_next`));
  await onA.client.turnStart({ thread_id: thread.id, turn_id: `${turnId}_next`, input: text(script({ say: "still here" })) });
  expect((await next).method).toBe("turn/completed");
  expect(running(a)).toBe(true);
  expect(running(b)).toBe(true);
  return ended;
}

describe.skipIf(server === undefined)("instances whose database restarts mid-turn", () => {
  it("keep running while a command streams its output; the turn ends, and the clients are told", async () => {
    const setup = await twoInstances();
    const { onA, onB, thread } = setup;
    const streaming = script(
      { tool: "shell", args: { command: "for i in $(seq 1 150); do echo line-$i; sleep 0.02; done" } },
      { say: "streamed" },
    );
    const output = onA.waitFor((n) => n.method === "item/command_execution/output_delta" && n.params.turn_id === "trn_stream");
    const endOnA = onA.waitFor(isEnd("trn_stream"));
    const endOnB = onB.waitFor(isEnd("trn_stream"));
    await onA.client.turnStart({ thread_id: thread.id, turn_id: "trn_stream", input: text(streaming) });
    await output;
    await restartDatabase();
    await afterTheRestart(setup, "trn_stream", endOnA, endOnB);
  }, 120_000);

  it("keep running while a model's answer streams as deltas; the turn ends, and the clients are told", async () => {
    const setup = await twoInstances();
    const { onA, onB, thread } = setup;
    const words = Array.from({ length: 20_000 }, (_, i) => `w${i}`).join(" ");
    const delta = onA.waitFor((n) => n.method === "item/agent_message/delta" && n.params.turn_id === "trn_deltas");
    const endOnA = onA.waitFor(isEnd("trn_deltas"));
    const endOnB = onB.waitFor(isEnd("trn_deltas"));
    await onA.client.turnStart({ thread_id: thread.id, turn_id: "trn_deltas", input: text(script({ say: words, chunks: 20_000 })) });
    await delta;
    await restartDatabase();
    await afterTheRestart(setup, "trn_deltas", endOnA, endOnB);
  }, 120_000);

  it("keep running while a turn waits for an approval; an answer after the restart is recorded once, and the turn ends", async () => {
    const setup = await twoInstances();
    const { onA, onB, thread } = setup;
    const opened = onB.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.turn_id === "trn_approval");
    const endOnA = onA.waitFor(isEnd("trn_approval"));
    const endOnB = onB.waitFor(isEnd("trn_approval"));
    await onA.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_approval",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo approved" } }, { say: "done" })),
    });
    const { request } = (await opened).params as { request: TurnPermissionApprovalRequest };
    await restartDatabase();
    // Answered on B, the instance that does not run the turn, until the database takes it.
    let answered: RpcError | undefined;
    await expect
      .poll(
        async () => {
          answered = await onB.client
            .turnPermissionRequestRespond({
              request_id: request.request_id,
              resolve_token: request.resolve_token!,
              resolution: "allow_once",
            })
            .then(
              () => undefined,
              (error: unknown) => error as RpcError,
            );
          return answered === undefined || answered.reason === "permission_request_resolved" || answered.reason === "turn_not_active";
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe(true);
    const ended = await afterTheRestart(setup, "trn_approval", endOnA, endOnB);
    const items = await onB.client.turnItems({ thread_id: thread.id, turn_id: "trn_approval" });
    expect(items.events.filter((e) => e.method === "turn/permission/request/resolved").length).toBeLessThanOrEqual(1);
    if (ended.method === "turn/completed")
      expect(items.events.filter((e) => e.method === "turn/permission/request/resolved")).toHaveLength(1);
  }, 120_000);
});
