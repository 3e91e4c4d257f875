import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import { RpcError } from "../../packages/rpc/src/index.js";
import { SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";
import { spawnStdioTransport, type ChildProcessTransport } from "../../packages/rpc/src/transport/child-process.js";
import { startStrictClient } from "../../bench/strict-client.js";
import { script, startHarness, text, type Harness, type HarnessOptions } from "./harness.js";

const sqliteFile = () => join(mkdtempSync(join(tmpdir(), "turnspec-restart-")), "gateway.sqlite");

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A harness on a SQLite file, closed (and its file released) after the test unless the test closed it. */
async function gatewayOn(file: string, config?: HarnessOptions["config"]): Promise<Harness> {
  const h = await startHarness({ store: new SqliteEventStore(file), ...(config ? { config } : {}) });
  let closed = false;
  const close = h.close;
  const harness: Harness = {
    ...h,
    close: async () => {
      if (closed) return;
      closed = true;
      await close();
      h.store.close();
    },
  };
  cleanups.push(async () => {
    expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
    await harness.close();
  });
  return harness;
}

const SLOW_TOOL_THEN_ANSWER = script({ tool: "shell", args: { command: "sleep 30" } }, { say: "finished after the restart" });

describe("a gateway restarted on the same SQLite file", () => {
  it("answers turn/get, turn/items and thread/get exactly as before", async () => {
    const file = sqliteFile();
    const first = await gatewayOn(file);
    const thread = await first.thread();
    await first.runTurn({
      thread_id: thread,
      turn_id: "trn_keep",
      input: text(script({ tool: "shell", args: { command: "echo kept" } }, { say: "kept it" })),
    });
    const before = {
      thread: await first.client.threadGet({ thread_id: thread }),
      turn: await first.client.turnGet({ thread_id: thread, turn_id: "trn_keep" }),
      items: await first.client.turnItems({ thread_id: thread, turn_id: "trn_keep" }),
    };
    await first.close();

    const second = await gatewayOn(file);
    expect(await second.client.threadGet({ thread_id: thread })).toEqual(before.thread);
    expect(await second.client.turnGet({ thread_id: thread, turn_id: "trn_keep" })).toEqual(before.turn);
    expect(await second.client.turnItems({ thread_id: thread, turn_id: "trn_keep" })).toEqual(before.items);
    // The thread is free again, and the next turn's history includes the first.
    const end = await second.runTurn({ thread_id: thread, turn_id: "trn_next", input: text(script({ say: "next" })) });
    expect(end.method).toBe("turn/completed");
  });

  it("blocks a turn the gateway left running with runtime_shutdown_continuation, and never leaves it InProgress", async () => {
    const file = sqliteFile();
    const dying = await gatewayOn(file);
    const thread = await dying.thread();
    await dying.client.turnStart({
      thread_id: thread,
      turn_id: "trn_cut",
      input: text(script({ say: "never finished", delay_ms: 60_000 })),
    });
    await dying.waitFor((n) => n.method === "turn/execution_window/started");
    const seen = (await dying.client.turnItems({ thread_id: thread, turn_id: "trn_cut" })).last_sequence;

    // A second gateway opens the file while the first still holds the turn in memory, as after a kill.
    const next = await gatewayOn(file);
    const { turn } = await next.client.turnGet({ thread_id: thread, turn_id: "trn_cut" });
    expect(turn).toMatchObject({ status: "Blocked", blocked: { reason: "runtime_shutdown_continuation" } });
    expect(turn.completed_at).toBeUndefined();
    const items = await next.client.turnItems({ thread_id: thread, turn_id: "trn_cut" });
    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    expect(items.events.filter((e) => e.sequence > seen).map((e) => e.method)).toEqual([
      "turn/execution_window/exhausted",
      "turn/execution_window/checkpointed",
      "item/started",
      "item/completed",
      "item/recovery_opened",
      "turn/blocked",
    ]);
    const opened = items.events.find((e) => e.method === "item/recovery_opened")!.params;
    expect(opened).toMatchObject({ reason: "runtime_shutdown", recovery_job_id: turn.blocked!.recovery_job_id });
    expect(opened.exhaustion_reason, "only a window-exhaustion job names a window limit").toBeUndefined();
    expect(items.events.find((e) => e.method === "turn/execution_window/exhausted")!.params).toMatchObject({
      reason: "runtime_shutdown_continuation",
      status: "interrupted",
    });
    // Blocked still occupies the thread.
    const busy = await next.client.turnStart({ thread_id: thread, turn_id: "trn_other", input: text("hi") }).catch((e: unknown) => e);
    expect(busy).toMatchObject({ reason: "turn_in_progress", data: { active_turn_status: "Blocked" } });
  });

  it("blocks a turn on a graceful stop; turn/resume continues it in a new window with the log's history", async () => {
    const file = sqliteFile();
    const first = await gatewayOn(file);
    const thread = await first.thread();
    await first.client.turnStart({ thread_id: thread, turn_id: "trn_stop", input: text(SLOW_TOOL_THEN_ANSWER) });
    await first.waitFor((n) => n.method === "item/started" && n.params.item.type === "commandExecution");
    await first.close();

    const second = await gatewayOn(file);
    const before = await second.client.turnItems({ thread_id: thread, turn_id: "trn_stop" });
    const blocked = before.events.at(-1)!;
    expect(blocked).toMatchObject({ method: "turn/blocked", params: { reason: "runtime_shutdown_continuation" } });
    const command = before.events
      .filter((e) => e.method === "item/completed")
      .map((e) => e.params.item as { type: string; status: string })
      .find((i) => i.type === "commandExecution");
    expect(command).toMatchObject({ status: "cancelled" });

    const done = second.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_stop");
    const resumed = await second.client.turnResume({ thread_id: thread, turn_id: "trn_stop" });
    expect(resumed.turn.status).toBe("InProgress");
    expect(resumed.turn.blocked).toBeUndefined();
    expect(resumed.recovery_job_id).toBe((blocked.params as { recovery_job_id: string }).recovery_job_id);
    const end = await done;
    expect(end.params).toMatchObject({ turn: { status: "Completed" } });

    const after = await second.client.turnItems({ thread_id: thread, turn_id: "trn_stop" });
    expect(after.events.slice(0, before.events.length)).toEqual(before.events);
    expect(after.events.map((e) => e.sequence)).toEqual(after.events.map((_, i) => i + 1));
    const resumedPart = after.events.slice(before.events.length);
    expect(resumedPart.slice(0, 3).map((e) => e.method)).toEqual([
      "item/recovery_attached",
      "turn/execution_window/continued",
      "turn/execution_window/started",
    ]);
    expect(resumedPart[1]!.params).toMatchObject({
      window_index: 1,
      reason: "runtime_shutdown_continuation",
      previous_window_id: "win_trn_stop_0",
    });
    // The answer is the script's second step: the model saw the cut-off tool call in the history rebuilt from the log.
    const answer = resumedPart.find((e) => e.method === "item/completed" && (e.params.item as { type: string }).type === "agentMessage");
    expect(answer?.params.item).toMatchObject({ text: "finished after the restart", round: 2 });
  });
});

describe("a graceful stop", () => {
  it("blocks a parent turn and the child turn its spawn_agent call was waiting for", async () => {
    const h = await startHarness();
    const thread = await h.thread();
    const child = script({ say: "the child never gets here", delay_ms: 60_000 });
    await h.client.turnStart({
      thread_id: thread,
      turn_id: "trn_parent",
      input: text(script({ tool: "spawn_agent", args: { prompt: child } }, { say: "parent done" })),
    });
    const update = await h.waitFor((n) => n.method === "item/updated" && n.params.turn_id === "trn_parent");
    const childTurnId = (update.params as { item: { child_turn_id: string } }).item.child_turn_id;
    await h.close();
    for (const turnId of ["trn_parent", childTurnId]) {
      expect(h.gateway.turnState(turnId)!.turn, turnId).toMatchObject({
        status: "Blocked",
        blocked: { reason: "runtime_shutdown_continuation" },
      });
    }
    expect(h.protocolErrors).toEqual([]);
  });
});

describe("turn/resume", () => {
  async function blockedTurn(turnId: string): Promise<{ h: Harness; thread: string; jobId: string }> {
    const file = sqliteFile();
    const first = await gatewayOn(file);
    const thread = await first.thread();
    await first.client.turnStart({ thread_id: thread, turn_id: turnId, input: text(SLOW_TOOL_THEN_ANSWER) });
    await first.waitFor((n) => n.method === "item/started" && n.params.item.type === "commandExecution");
    await first.close();
    const h = await gatewayOn(file);
    const { turn } = await h.client.turnGet({ thread_id: thread, turn_id: turnId });
    return { h, thread, jobId: turn.blocked!.recovery_job_id };
  }

  it("resumes through the recovery job named, and refuses it once it was used", async () => {
    const { h, thread, jobId } = await blockedTurn("trn_named");
    const done = h.waitFor((n) => n.method === "turn/completed");
    const resumed = await h.client.turnResume({ thread_id: thread, turn_id: "trn_named", recovery_job_id: jobId });
    expect(resumed.recovery_job_id).toBe(jobId);
    await done;
    const again = await h.client.turnResume({ thread_id: thread, turn_id: "trn_named", recovery_job_id: jobId }).catch((e: unknown) => e);
    expect(again).toMatchObject({ code: -32005, reason: "turn_not_blocked", data: { status: "Completed" } });
  });

  it("refuses a recovery job the turn does not have, naming the one it can use, and stays blocked", async () => {
    const { h, thread, jobId } = await blockedTurn("trn_wrong");
    const error = await h.client
      .turnResume({ thread_id: thread, turn_id: "trn_wrong", recovery_job_id: "rec_not_mine" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({
      code: -32007,
      reason: "recovery_job_not_found",
      data: { recovery_job_id: "rec_not_mine", active_recovery_job_id: jobId },
    });
    expect((error as RpcError).message).toContain(jobId);
    expect((await h.client.turnGet({ thread_id: thread, turn_id: "trn_wrong" })).turn.status).toBe("Blocked");
  });

  it("answers turn_not_blocked for a running or a finished turn, and turn_not_found for an unknown one", async () => {
    const h = await gatewayOn(sqliteFile());
    const thread = await h.thread();
    await h.client.turnStart({ thread_id: thread, turn_id: "trn_running", input: text(script({ say: "slow", delay_ms: 60_000 })) });
    const running = await h.client.turnResume({ thread_id: thread, turn_id: "trn_running" }).catch((e: unknown) => e);
    expect(running).toMatchObject({ reason: "turn_not_blocked", data: { status: "InProgress" } });
    await h.client.turnCancel({ thread_id: thread, turn_id: "trn_running" });
    const ended = await h.client.turnResume({ thread_id: thread, turn_id: "trn_running" }).catch((e: unknown) => e);
    expect(ended).toMatchObject({ reason: "turn_not_blocked", data: { status: "Interrupted" } });
    const missing = await h.client.turnResume({ thread_id: thread, turn_id: "trn_nope" }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ reason: "turn_not_found" });
  });

  it("keeps only the job of the latest block open: a stop during a provider retry replaces the retry's job", async () => {
    const file = sqliteFile();
    const first = await gatewayOn(file, { providers: { retry: { max_attempts: 3, initial_delay_ms: 60_000 } } });
    const thread = await first.thread();
    await first.client.turnStart({
      thread_id: thread,
      turn_id: "trn_retrying",
      input: text(script({ say: "after the stop", fail_attempts: 1 })),
    });
    const opened = await first.waitFor((n) => n.method === "item/recovery_opened");
    await first.waitFor((n) => n.method === "item/retry_scheduled");
    await first.close();

    const h = await gatewayOn(file, { providers: { retry: { max_attempts: 3, initial_delay_ms: 1 } } });
    const { turn } = await h.client.turnGet({ thread_id: thread, turn_id: "trn_retrying" });
    const retryJob = (opened.params as { recovery_job_id: string }).recovery_job_id;
    expect(turn.blocked).toMatchObject({ reason: "runtime_shutdown_continuation" });
    expect(turn.blocked!.recovery_job_id).not.toBe(retryJob);
    const stale = await h.client
      .turnResume({ thread_id: thread, turn_id: "trn_retrying", recovery_job_id: retryJob })
      .catch((e: unknown) => e);
    expect(stale).toMatchObject({ reason: "recovery_job_not_found", data: { active_recovery_job_id: turn.blocked!.recovery_job_id } });
    const done = h.waitFor((n) => n.method === "turn/completed");
    await h.client.turnResume({ thread_id: thread, turn_id: "trn_retrying" });
    expect((await done).params).toMatchObject({ turn: { status: "Completed" } });
  });

  it("cancels a blocked turn: it ends Interrupted and its job can no longer be used", async () => {
    const { h, thread } = await blockedTurn("trn_drop");
    const { turn } = await h.client.turnCancel({ thread_id: thread, turn_id: "trn_drop", reason: "not needed any more" });
    expect(turn).toMatchObject({ status: "Interrupted", error: { kind: "cancelled", message: "not needed any more" } });
    const again = await h.client.turnResume({ thread_id: thread, turn_id: "trn_drop" }).catch((e: unknown) => e);
    expect(again).toMatchObject({ reason: "turn_not_blocked" });
  });
});

describe("turnspec serve killed with SIGKILL mid-turn", () => {
  const serve = (db: string): ChildProcessTransport => {
    const transport = spawnStdioTransport("node", ["bin/turnspec.js", "serve", "--stdio", "--db", db], { stderr: "collect" });
    cleanups.push(() => transport.close());
    return transport;
  };
  /** The notifications of a turn that carry a log sequence, as a client received them. */
  const sequenced = (received: readonly AnyNotification[], turnId: string) =>
    received.filter((n) => "turn_id" in n.params && n.params.turn_id === turnId && "sequence" in n.params);
  /** Every notification a client received is in the log at its sequence, as sent. */
  const expectLogged = (
    events: readonly { sequence: number; method: string; params: Record<string, unknown> }[],
    seen: readonly AnyNotification[],
  ) => {
    const bySequence = new Map(events.map((e) => [e.sequence, e]));
    for (const n of seen) {
      const { sequence } = n.params as { sequence: number };
      expect(bySequence.get(sequence), `event ${sequence} (${n.method})`).toMatchObject({ method: n.method, params: n.params });
    }
  };
  const kill = async (transport: ChildProcessTransport) => {
    transport.child.kill("SIGKILL");
    expect(await transport.exited).toMatchObject({ signal: "SIGKILL" });
  };

  it("restarts with the turn Blocked; turn/resume completes it and every event the client saw is in turn/items unchanged", async () => {
    const dir = mkdtempSync(join(tmpdir(), "turnspec-kill-"));
    const db = join(dir, "gateway.sqlite");
    const first = serve(db);
    const a = await startStrictClient(first);
    const { thread } = await a.client.threadStart({ cwd: dir });
    // A supervised turn asks before running a shell command: it waits for an answer that never comes.
    await a.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_killed",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "shell", args: { command: "echo hello" } }, { say: "done after the kill" })),
    });
    await a.waitFor((n) => n.method === "turn/permission/request/opened");
    const seenBeforeKill = sequenced(a.received, "trn_killed");
    await kill(first);
    expect(a.protocolErrors).toEqual([]);

    const second = serve(db);
    const b = await startStrictClient(second);
    const { turn } = await b.client.turnGet({ thread_id: thread.id, turn_id: "trn_killed" });
    expect(turn).toMatchObject({ status: "Blocked", blocked: { reason: "runtime_shutdown_continuation" } });

    const items = await b.client.turnItems({ thread_id: thread.id, turn_id: "trn_killed" });
    expectLogged(items.events, seenBeforeKill);
    // The open request was cancelled by the restart, before the turn blocked.
    const methods = items.events.map((e) => e.method);
    expect(methods.indexOf("turn/permission/request/resolved")).toBeLessThan(methods.indexOf("turn/blocked"));

    const done = b.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_killed");
    const resumed = await b.client.turnResume({ thread_id: thread.id, turn_id: "trn_killed" });
    expect(resumed).toMatchObject({ turn: { status: "InProgress" }, recovery_job_id: turn.blocked!.recovery_job_id });
    await done;
    const final = await b.client.turnItems({ thread_id: thread.id, turn_id: "trn_killed" });
    expect(final.events.map((e) => e.sequence)).toEqual(final.events.map((_, i) => i + 1));
    expect(final.events.slice(0, items.events.length)).toEqual(items.events);
    // Everything the second client was sent is in the log as sent.
    const live = sequenced(b.received, "trn_killed");
    expect(live.length).toBeGreaterThan(0);
    expectLogged(final.events, live);
    const answer = final.events
      .filter((e) => e.method === "item/completed")
      .map((e) => e.params.item as { type: string })
      .find((i) => i.type === "agentMessage");
    expect(answer).toMatchObject({ text: "done after the kill" });
    expect(b.protocolErrors).toEqual([]);
  });

  it("survives a second kill during the resumed run: Blocked again, resumed again, one gap-free log", async () => {
    const dir = mkdtempSync(join(tmpdir(), "turnspec-kill-"));
    const db = join(dir, "gateway.sqlite");
    const ask = { tool: "shell", args: { command: "echo again" } } as const;
    const seen: AnyNotification[] = [];
    let threadId = "";
    // Each run waits on an approval nobody gives, and is killed there.
    for (const run of [1, 2]) {
      const gateway = serve(db);
      const c = await startStrictClient(gateway);
      if (run === 1) {
        threadId = (await c.client.threadStart({ cwd: dir })).thread.id;
        await c.client.turnStart({
          thread_id: threadId,
          turn_id: "trn_twice",
          permission_profile: { mode: "supervised" },
          input: text(script(ask, ask, { say: "third run finishes" })),
        });
      } else {
        expect((await c.client.turnGet({ thread_id: threadId, turn_id: "trn_twice" })).turn.status).toBe("Blocked");
        await c.client.turnResume({ thread_id: threadId, turn_id: "trn_twice" });
      }
      await c.waitFor((n) => n.method === "turn/permission/request/opened");
      seen.push(...sequenced(c.received, "trn_twice"));
      await kill(gateway);
      expect(c.protocolErrors).toEqual([]);
    }
    const last = serve(db);
    const c = await startStrictClient(last);
    const { turn } = await c.client.turnGet({ thread_id: threadId, turn_id: "trn_twice" });
    expect(turn).toMatchObject({ status: "Blocked", blocked: { reason: "runtime_shutdown_continuation" } });
    const done = c.waitFor((n) => n.method === "turn/completed");
    await c.client.turnResume({ thread_id: threadId, turn_id: "trn_twice" });
    await done;
    const log = await c.client.turnItems({ thread_id: threadId, turn_id: "trn_twice" });
    expect(log.events.map((e) => e.sequence)).toEqual(log.events.map((_, i) => i + 1));
    expectLogged(log.events, [...seen, ...sequenced(c.received, "trn_twice")]);
    expect(log.events.filter((e) => e.method === "turn/blocked")).toHaveLength(2);
    expect(log.events.filter((e) => e.method === "turn/execution_window/started").map((e) => e.params.window_index)).toEqual([0, 1, 2]);
    expect(c.protocolErrors).toEqual([]);
  });
});
