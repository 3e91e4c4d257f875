/**
 * The gateway on a group-committing SQLite store, whose writer thread commits while the
 * turn streams on: no frame leaves before what it reports is committed (a second
 * connection to the file sees it when the frame is written); a commit that fails, another
 * process appending to the streaming turn, or the writer thread dying sends none of the
 * lost frames and ends the turn Failed (internal); and the frames go out in the same order
 * as on the memory store, which commits every write at once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { ScriptStep } from "../../packages/gateway/src/providers/scripted.js";
import type { Transport } from "../../packages/rpc/src/index.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import { StoreError } from "../../packages/gateway/src/store/rules.js";
import { GROUP_COMMIT_LIMIT, SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";
import { recording, type RecordedFrame } from "../ordering/record.js";
import { check } from "../ordering/streams.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

interface RawConnection {
  exec(sql: string): unknown;
  prepare(sql: string): { get(...params: unknown[]): unknown; run(...params: unknown[]): unknown };
  transaction(run: () => void): { immediate(): void };
  close(): void;
}
const RawDatabase = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawConnection;

let dir: string;
let file: string;
let raw: RawConnection;
let h: Harness | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "turnspec-group-gateway-"));
  file = join(dir, "events.db");
});

afterEach(async () => {
  await h?.close();
  h = undefined;
  raw?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens the store and, on the same file, the second connection the tests look through. */
function openStore(): SqliteEventStore {
  const store = new SqliteEventStore(file);
  raw = new RawDatabase(file);
  return store;
}

/**
 * Makes every commit holding a run of events that matches `when` (SQL on NEW, a row of
 * event_runs) fail the way a real commit fails: a deferred foreign key, checked at COMMIT,
 * that a row inserted along with the run breaks.
 */
function failCommitsOf(when: string): void {
  raw.exec(`
    CREATE TABLE doomed (turn_id TEXT REFERENCES turns (turn_id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TRIGGER doom AFTER INSERT ON event_runs WHEN ${when}
    BEGIN INSERT INTO doomed VALUES ('no such turn'); END;
  `);
}

const isCommitted = (turnId: string, sequence: number) =>
  raw
    .prepare(`SELECT 1 AS one FROM event_runs WHERE turn_id = ? AND first_sequence <= ? AND last_sequence >= ?`)
    .get(turnId, sequence, sequence) !== undefined;

/**
 * The gateway's end of the pair, checking each frame as it is written: every turn event
 * a notification or a turn/items response carries, and every thread a response names,
 * must already be readable through the second connection.
 */
function checkingCommits(transport: Transport, uncommitted: string[], sent: string[]): Transport {
  const send = transport.send.bind(transport);
  transport.send = (frame) => {
    sent.push(frame);
    const message = JSON.parse(frame) as { method?: string; params?: Record<string, unknown>; result?: Record<string, unknown> };
    const { params, result } = message;
    if (
      params &&
      typeof params.turn_id === "string" &&
      typeof params.sequence === "number" &&
      !isCommitted(params.turn_id, params.sequence)
    ) {
      uncommitted.push(`${message.method} ${params.turn_id}#${params.sequence}`);
    }
    if (result && Array.isArray(result.events)) {
      for (const event of result.events as { sequence: number }[]) {
        if (!isCommitted(result.turn_id as string, event.sequence))
          uncommitted.push(`turn/items ${String(result.turn_id)}#${event.sequence}`);
      }
    }
    const thread = (result?.thread as { id?: string } | undefined)?.id;
    if (thread && raw.prepare(`SELECT 1 AS one FROM threads WHERE id = ?`).get(thread) === undefined) uncommitted.push(`thread ${thread}`);
    return send(frame);
  };
  return transport;
}

/** A `say` streamed as `n` deltas. */
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

const turnEvents = (received: readonly AnyNotification[], turnId: string) =>
  ofTurn(received, turnId)
    .filter((n) => "sequence" in n.params)
    .map((n) => [n.method, (n.params as { sequence: number }).sequence]);

describe("the gateway on a group-committing store", () => {
  it("writes no notification or response before a second connection can read what it reports", async () => {
    const uncommitted: string[] = [];
    const sent: string[] = [];
    h = await startHarness({ store: openStore(), serverTransport: (t) => checkingCommits(t, uncommitted, sent) });
    const thread = await h.thread();
    // More deltas than one group holds, so groups end both at the limit and on setImmediate;
    // turn/items is asked while the turn streams, so its answer reads uncommitted events.
    const deltas = 2 * GROUP_COMMIT_LIMIT + 50;
    const items: Promise<unknown>[] = [];
    let seen = 0;
    h.client.on("item/agent_message/delta", () => {
      if (++seen % 100 === 0) items.push(h!.client.turnItems({ thread_id: thread, turn_id: "trn_stream" }));
    });
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_stream", input: text(script({ say: words(deltas), chunks: deltas })) });
    await Promise.all(items);
    expect(end.method).toBe("turn/completed");
    expect(items.length).toBeGreaterThan(0);
    expect(uncommitted).toEqual([]);
    expect(h.protocolErrors).toEqual([]);
    // What the client got is exactly the log.
    const log = await h.client.turnItems({ thread_id: thread, turn_id: "trn_stream" });
    expect(turnEvents(h.received, "trn_stream")).toEqual(log.events.map((e) => [e.method, e.sequence]));
    expect(log.last_sequence).toBeGreaterThan(deltas);
    expect(sent.length).toBeGreaterThan(deltas);
  });

  /**
   * Runs a turn of `steps` while every commit holding an event matching `when` fails; it
   * must end Failed (internal), with the client sent exactly what the log holds.
   */
  async function failingTurn(when: string, turnId: string, ...steps: ScriptStep[]) {
    const sent: string[] = [];
    const uncommitted: string[] = [];
    h = await startHarness({ store: openStore(), serverTransport: (t) => checkingCommits(t, uncommitted, sent) });
    const thread = await h.thread();
    failCommitsOf(when);
    const end = await h.runTurn({ thread_id: thread, turn_id: turnId, input: text(script(...steps)) });
    expect(end.params).toMatchObject({ turn: { status: "Failed" }, error: { kind: "internal" } });
    expect((await h.client.turnGet({ thread_id: thread, turn_id: turnId })).turn.status).toBe("Failed");
    const log = await h.client.turnItems({ thread_id: thread, turn_id: turnId });
    // Sent is in the log, and the log holds nothing that was not sent.
    expect(turnEvents(h.received, turnId)).toEqual(log.events.map((e) => [e.method, e.sequence]));
    expect(uncommitted).toEqual([]);
    expect(h.protocolErrors).toEqual([]);
    return { log, sent };
  }

  it("sends no frame of a group whose commit fails at setImmediate, and ends the turn Failed (internal)", async () => {
    // Every commit holding a delta fails, as a full disk would make it.
    const { log, sent } = await failingTurn(`instr(NEW.methods, '"item/agent_message/delta"') > 0`, "trn_doomed", {
      say: words(20),
      chunks: 20,
    });
    expect(sent.filter((frame) => frame.includes('"item/agent_message/delta"'))).toEqual([]);
    expect(log.events.map((e) => e.method)).not.toContain("item/agent_message/delta");
  });

  it("fails the turn at its next record when a group commit fails while the turn waits on a tool", async () => {
    // The commit holding the tool's item/started fails while the tool writes its file.
    const { log } = await failingTurn(
      `instr(NEW.methods, '"item/started"') > 0 AND NEW.last_sequence > 4`,
      "trn_tool",
      { tool: "write_file", args: { path: "notes.txt", content: "hello\n" } },
      { say: "done" },
    );
    expect(log.events.map((e) => e.method)).toEqual([
      "turn/started",
      "turn/permission/audit",
      "item/started",
      "item/completed",
      "turn/failed",
    ]);
  });

  it("fails the turn, kills its command and keeps the process, when a commit holding the command's output fails while it prints", async () => {
    // The first commit holding an output delta fails; the command prints on, and its next
    // chunk's write, made from the output handler, is refused: it must fail the turn, not
    // escape the handler.
    const { log } = await failingTurn(
      `instr(NEW.methods, '"item/command_execution/output_delta"') > 0`,
      "trn_output",
      { tool: "shell", args: { command: "for i in $(seq 1 100); do echo line-$i; sleep 0.02; done" } },
      { say: "never said" },
    );
    const command = log.events.find(
      (e) => e.method === "item/completed" && (e.params.item as { type: string }).type === "commandExecution",
    );
    // Killed before its end: it never printed its last line.
    expect(JSON.stringify(command?.params.item ?? {})).not.toContain("line-100");
    expect(log.events.map((e) => e.method)).not.toContain("item/agent_message/delta");
  });

  it("fails the turn whose batch, ended at the limit mid-stream, fails in the writer while the next ones are in flight", async () => {
    // Only the commit holding sequence 100 fails: a batch that ends at the limit, mid-stream;
    // the batches after it, which continue the turn, fail with it.
    const deltas = 4 * GROUP_COMMIT_LIMIT;
    const { log } = await failingTurn("NEW.first_sequence <= 100 AND NEW.last_sequence >= 100", "trn_limit", {
      say: words(deltas),
      chunks: deltas,
    });
    expect(log.events.some((e) => e.sequence === 100)).toBe(false);
    expect(log.events.at(-1)!.method).toBe("turn/failed");
  });

  /** A store on the file that calls `at` once, just before its `n`th append. */
  function storeWithHook(n: number, at: (store: SqliteEventStore) => void): SqliteEventStore {
    const store = openStore();
    const append = store.append.bind(store);
    let appends = 0;
    store.append = (...args) => {
      if (++appends === n) at(store);
      return append(...args);
    };
    return store;
  }

  it("fails the turn when another writer of the file appends to it mid-stream, without a gap or a duplicate in its log", async () => {
    const sent: string[] = [];
    const uncommitted: string[] = [];
    let intruded = false;
    // At the 1000th append, another process appends the turn's next event after what the
    // file holds, while the store's batches after that are in flight or filling.
    const store = storeWithHook(1000, () => {
      intruded = true;
      // Under the write lock, so that the writer thread cannot commit between the read of the
      // last sequence and the insert after it.
      raw
        .transaction(() => {
          // A copy of the last event the file holds, as a run of one after it.
          const run = raw
            .prepare(
              `SELECT last_sequence AS last, thread_id, methods, recorded_at, ends, params FROM event_runs WHERE turn_id = 'trn_intruded' ORDER BY last_sequence DESC LIMIT 1`,
            )
            .get() as { last: number; thread_id: string; methods: string; recorded_at: string; ends: string; params: string };
          const ends = JSON.parse(run.ends) as number[];
          const method = (JSON.parse(run.methods) as [string, number][]).at(-1)![0];
          const time = (JSON.parse(run.recorded_at) as [string, number][]).at(-1)![0];
          raw
            .prepare(
              `INSERT INTO event_runs (turn_id, last_sequence, first_sequence, thread_id, methods, recorded_at, ends, params) VALUES ('trn_intruded', ?, ?, ?, ?, ?, '[]', ?)`,
            )
            .run(
              run.last + 1,
              run.last + 1,
              run.thread_id,
              JSON.stringify([[method, 1]]),
              JSON.stringify([[time, 1]]),
              run.params.slice(ends.at(-1) ?? 0),
            );
        })
        .immediate();
    });
    h = await startHarness({ store, serverTransport: (t) => checkingCommits(t, uncommitted, sent) });
    const thread = await h.thread();
    const deltas = 8 * GROUP_COMMIT_LIMIT;
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_intruded",
      input: text(script({ say: words(deltas), chunks: deltas })),
    });
    expect(intruded).toBe(true);
    expect(end.params).toMatchObject({ turn: { status: "Failed" }, error: { kind: "internal" } });
    const log = await h.client.turnItems({ thread_id: thread, turn_id: "trn_intruded" });
    expect(log.events.map((e) => e.sequence)).toEqual(log.events.map((_, i) => i + 1));
    expect(log.events.at(-1)!.method).toBe("turn/failed");
    // What the client got is in the log, at its sequence; the log holds one event more, the other writer's.
    const got = turnEvents(h.received, "trn_intruded");
    const held = log.events.map((e) => `${e.method} ${e.sequence}`);
    expect(got.every(([method, sequence]) => held.includes(`${method} ${sequence}`))).toBe(true);
    expect(held.length).toBe(got.length + 1);
    expect(uncommitted).toEqual([]);
    expect(h.protocolErrors).toEqual([]);
  });

  it("fails the turn whose batches the writer thread held when it died, and runs the next turn on the main connection", async () => {
    const sent: string[] = [];
    const uncommitted: string[] = [];
    let killed: Promise<number> | undefined;
    const store = storeWithHook(1000, (s) => {
      killed = (s as unknown as { writer: { worker: Worker } }).writer.worker.terminate();
    });
    h = await startHarness({ store, serverTransport: (t) => checkingCommits(t, uncommitted, sent) });
    const thread = await h.thread();
    const deltas = 8 * GROUP_COMMIT_LIMIT;
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_cut", input: text(script({ say: words(deltas), chunks: deltas })) });
    expect(await killed).toBeDefined();
    expect(end.params).toMatchObject({ turn: { status: "Failed" }, error: { kind: "internal" } });
    const log = await h.client.turnItems({ thread_id: thread, turn_id: "trn_cut" });
    expect(log.events.map((e) => e.sequence)).toEqual(log.events.map((_, i) => i + 1));
    expect(log.events.at(-1)!.method).toBe("turn/failed");
    // Everything sent is in the log. (A batch the writer committed just before it died is in
    // the log too, though its answer, and so its frames, died with the writer.)
    const held = log.events.map((e) => `${e.method} ${e.sequence}`);
    expect(turnEvents(h.received, "trn_cut").every(([method, sequence]) => held.includes(`${method} ${sequence}`))).toBe(true);
    // The store goes on without the writer.
    const next = await h.runTurn({ thread_id: thread, turn_id: "trn_after", input: text(script({ say: words(50), chunks: 50 })) });
    expect(next.method).toBe("turn/completed");
    const after = await h.client.turnItems({ thread_id: thread, turn_id: "trn_after" });
    expect(turnEvents(h.received, "trn_after")).toEqual(after.events.map((e) => [e.method, e.sequence]));
    expect(uncommitted).toEqual([]);
    expect(h.protocolErrors).toEqual([]);
  });

  it("answers a request whose writes a failed commit lost with internal_error, not with what it wrote", async () => {
    h = await startHarness({ store: openStore() });
    // Any turn/started commit fails: turn/start's answer would report a turn the log lost.
    failCommitsOf("NEW.method = 'turn/started'");
    const thread = await h.thread();
    await expect(
      h.client.turnStart({ thread_id: thread, turn_id: "trn_lost", input: text(script({ say: "never said" })) }),
    ).rejects.toMatchObject({ code: -32603 });
    expect(ofTurn(h.received, "trn_lost")).toEqual([]);
    expect(h.protocolErrors).toEqual([]);
  });
});

describe("frame order", () => {
  /** Every frame of a session, both ways, with what varies between runs (ids, times) left out. */
  async function session(store: SqliteEventStore | MemoryEventStore): Promise<{ frames: RecordedFrame[]; shape: string[] }> {
    const frames: RecordedFrame[] = [];
    h = await startHarness({ store, clientTransport: (t) => recording(t, frames) });
    const thread = await h.thread();
    h.client.on("turn/permission/request/opened", ({ request }) => {
      void h!.client.turnPermissionRequestRespond({
        request_id: request.request_id,
        resolve_token: request.resolve_token,
        resolution: "allow_once",
      });
    });
    await h.runTurn({
      thread_id: thread,
      turn_id: "trn_order",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "write_file", args: { path: "notes.txt", content: "hello\n" } }, { say: words(300), chunks: 300 })),
    });
    await h.client.turnItems({ thread_id: thread, turn_id: "trn_order" });
    await h.close();
    h = undefined;
    const shape = frames.map(({ direction, frame }) => {
      const m = frame as { id?: unknown; method?: string; params?: { sequence?: number }; result?: unknown };
      const what = m.method ?? `response ${m.id === undefined ? "" : "to a request"}`;
      return `${direction} ${what}${m.params?.sequence === undefined ? "" : ` #${m.params.sequence}`}`;
    });
    return { frames, shape };
  }

  it("is the same on the SQLite store as on the memory store, and passes the ordering checker", async () => {
    const memory = await session(new MemoryEventStore());
    const sqlite = await session(openStore());
    expect(sqlite.shape.length).toBeGreaterThan(300);
    expect(sqlite.shape).toEqual(memory.shape);
    expect(check(sqlite.frames)).toEqual([]);
  });
});

/**
 * A memory store whose commit groups can be made to fail: the group opened by the next
 * append of a doomed method fails, and so does every commit wait until the next append.
 */
class DoomedGroups extends MemoryEventStore {
  private doomedMethod: string | undefined;
  private doomed = false;

  doom(method: string): void {
    this.doomedMethod = method;
  }

  override append(...args: Parameters<MemoryEventStore["append"]>) {
    this.doomed = args[1] === this.doomedMethod;
    if (this.doomed) this.doomedMethod = undefined;
    return super.append(...args);
  }

  override afterCommit(fn: (failure?: StoreError) => void): void {
    if (this.doomed) fn(new StoreError("commit_failed", "the commit failed (doomed by the test)"));
    else super.afterCommit(fn);
  }
}

describe("a failed commit and an approval's answer", () => {
  it("leaves the turn's lost-event mark to the turn: the answer fails, and the turn ends Failed (internal) instead of hanging", async () => {
    const store = new DoomedGroups();
    h = await startHarness({ store });
    const thread = await h.thread();
    h.client.on("turn/permission/request/opened", ({ request }) => {
      // The group holding the answer's first event fails to commit.
      store.doom("turn/permission/request/resolved");
      h!.client
        .turnPermissionRequestRespond({ request_id: request.request_id, resolve_token: request.resolve_token, resolution: "allow_once" })
        .then(
          () => answers.push("answered"),
          (error: { code: number }) => answers.push(error.code),
        );
    });
    const answers: (string | number)[] = [];
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_answer_lost",
      permission_profile: { mode: "supervised" },
      input: text(script({ tool: "write_file", args: { path: "notes.txt", content: "hello\n" } }, { say: "done" })),
    });
    expect(end.params).toMatchObject({ turn: { status: "Failed" }, error: { kind: "internal" } });
    expect(answers).toEqual([-32603]);
    expect(h.protocolErrors).toEqual([]);
  });
});
