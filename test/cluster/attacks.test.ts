/**
 * Several instances on one PostgreSQL database, attacked where they share state:
 *   - two answers to one permission request sent at once to two instances (allow on one,
 *     deny on the other): exactly one is recorded, the other is told the request was
 *     already resolved, and the call does what the recorded one says;
 *   - an instance that stalls mid-turn (SIGSTOP, past its lease) while another takes the
 *     turn over: when it wakes, it must not go on running the turn the other blocked: the
 *     log has one terminal event, no gap, and what the stalled instance did after the
 *     takeover is not in it;
 *   - failover: every event a client of the stalled instance was sent is in the log, and the
 *     client of the other instance gets the whole log, each event once.
 * Processes, not gateways of one process: stopping one must not stop the other.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { TurnPermissionApprovalRequest } from "../../generated/types.js";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { script, text } from "../gateway/harness.js";
import { startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
import { connectClient, sequenced, startInstance } from "./serve-instance.js";

const started = await startPostgres();
if ("skip" in started) console.warn(`skipping the several-instance attack tests: ${started.skip}`);
const server: PostgresServer | undefined = "server" in started ? started.server : undefined;
afterAll(() => server?.stop());

const LEASE_TIMEOUT_MS = 1500;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.skipIf(server === undefined)("instances on one database, attacked", () => {
  it("records exactly one of two answers to one request sent at once to two instances", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([
      startInstance(store, { lease_timeout_ms: LEASE_TIMEOUT_MS }, cleanups),
      startInstance(store, { lease_timeout_ms: LEASE_TIMEOUT_MS }, cleanups),
    ]);
    const [onA, onB] = await Promise.all([connectClient(a, cleanups), connectClient(b, cleanups)]);
    for (let round = 0; round < 5; round++) {
      const cwd = mkdtempSync(join(tmpdir(), "turnspec-race-"));
      const marker = join(cwd, "ran");
      const { thread } = await onA.client.threadStart({ cwd });
      await onB.client.threadGet({ thread_id: thread.id });
      const turnId = `trn_race_${round}`;
      const opened = onB.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.turn_id === turnId);
      const done = onB.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);
      await onA.client.turnStart({
        thread_id: thread.id,
        turn_id: turnId,
        permission_profile: { mode: "supervised" },
        input: text(script({ tool: "shell", args: { command: `touch ${marker}` } }, { say: "done" })),
      });
      const { request } = (await opened).params as { request: TurnPermissionApprovalRequest };
      const answer = (client: typeof onA, resolution: "allow_once" | "deny") =>
        client.client
          .turnPermissionRequestRespond({ request_id: request.request_id, resolve_token: request.resolve_token!, resolution })
          .then(
            () => resolution,
            (e: unknown) => e as RpcError,
          );
      const results = await Promise.all([answer(onA, "allow_once"), answer(onB, "deny")]);
      const won = results.filter((r): r is "allow_once" | "deny" => typeof r === "string");
      const lost = results.filter((r): r is RpcError => typeof r !== "string");
      expect(won, `round ${round}`).toHaveLength(1);
      expect(lost[0]).toMatchObject({ reason: "permission_request_resolved" });
      await done;
      const items = await onB.client.turnItems({ thread_id: thread.id, turn_id: turnId });
      const resolved = items.events.filter((e) => e.method === "turn/permission/request/resolved");
      expect(resolved).toHaveLength(1);
      expect(resolved[0]!.params).toMatchObject({ resolution: won[0] });
      // The call did what the one recorded answer said, and nothing else.
      const command = items.events.find(
        (e) => e.method === "item/completed" && (e.params.item as { type: string }).type === "commandExecution",
      )!.params.item as { status: string };
      expect(command.status === "declined").toBe(won[0] === "deny");
    }
  }, 120_000);

  it("does not let a stalled instance go on with a turn another took over; the log loses nothing", async () => {
    const store = await server!.createDatabase();
    const [a, b] = await Promise.all([
      startInstance(store, { lease_timeout_ms: LEASE_TIMEOUT_MS }, cleanups),
      startInstance(store, { lease_timeout_ms: LEASE_TIMEOUT_MS }, cleanups),
    ]);
    const [onA, onB] = await Promise.all([connectClient(a, cleanups), connectClient(b, cleanups)]);
    const cwd = mkdtempSync(join(tmpdir(), "turnspec-takeover-"));
    const counter = join(cwd, "runs");
    const { thread } = await onA.client.threadStart({ cwd });
    await onB.client.threadGet({ thread_id: thread.id });
    // The tool outlives the stall: it ends while A is stopped, and A hears of it only when it wakes.
    const steps = script({ tool: "shell", args: { command: `echo run >> ${counter}; sleep 2` } }, { say: "answered once" });
    const running = onB.waitFor(
      (n) => n.method === "item/started" && n.params.turn_id === "trn_takeover" && n.params.item.type === "commandExecution",
    );
    await onA.client.turnStart({ thread_id: thread.id, turn_id: "trn_takeover", input: text(steps) });
    await running;

    a.child.kill("SIGSTOP");
    cleanups.push(() => a.child.kill("SIGCONT"));
    const blocked = await onB.waitFor((n) => n.method === "turn/blocked" && n.params.turn_id === "trn_takeover");
    expect(blocked.params).toMatchObject({ reason: "runtime_shutdown_continuation" });
    a.child.kill("SIGCONT");
    // A wakes with its tool done; B resumes the turn and runs it to its end.
    const completed = onB.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_takeover");
    await onB.client.turnResume({ thread_id: thread.id, turn_id: "trn_takeover" });
    await completed;
    // Let A do whatever it still would: its lease check runs every third of the lease.
    await new Promise((resolve) => setTimeout(resolve, LEASE_TIMEOUT_MS));

    const items = await onB.client.turnItems({ thread_id: thread.id, turn_id: "trn_takeover" });
    const methods = items.events.map((e) => e.method);

    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    expect(methods.filter((m) => m === "turn/completed" || m === "turn/failed")).toEqual(["turn/completed"]);
    expect(methods.at(-1)).toBe("turn/completed");
    expect(methods.filter((m) => m === "turn/blocked")).toHaveLength(1);
    // One answer: the model's last round ran once, on B.
    const answers = items.events.filter(
      (e) => e.method === "item/completed" && (e.params.item as { type: string }).type === "agentMessage",
    );
    expect(answers).toHaveLength(1);
    // B's client has the whole log, each event once; what A's client was sent is in it.
    const logged = items.events.map((e) => ({ sequence: e.sequence, method: e.method, params: e.params }));
    expect(sequenced(onB.received, "trn_takeover")).toEqual(logged);
    const seenOnA = sequenced(onA.received, "trn_takeover");
    for (const event of seenOnA) expect(logged).toContainEqual(event);
    // The tool's command ran on A once before the stall, and once more when B resumed the turn.
    expect(readFileSync(counter, "utf8").trim().split("\n").length).toBeLessThanOrEqual(2);
    expect(onB.protocolErrors).toEqual([]);
  }, 120_000);
});
