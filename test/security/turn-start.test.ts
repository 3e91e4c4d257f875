/**
 * A failed turn/start leaves no turn behind (hole 11, in general): whatever storage
 * failure hits the turn's first events, turn/start answers an error, the thread has no
 * turn in progress (the next turn/start runs), and the turn id is free again. The
 * failures are real ones of a SQLite store: a commit that breaks a deferred foreign key
 * (checked at COMMIT), set off by a trigger on the event the test picks.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RpcError } from "../../packages/rpc/src/index.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import { StoreError } from "../../packages/gateway/src/store/rules.js";
import { SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";
import { startHarness, text, type Harness } from "../gateway/harness.js";

interface RawConnection {
  exec(sql: string): unknown;
  prepare(sql: string): { all(...params: unknown[]): unknown[] };
  close(): void;
}
const RawDatabase = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawConnection;

let dir: string;
let file: string;
let raw: RawConnection;
let h: Harness | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "turnspec-turn-start-"));
  file = join(dir, "events.db");
});
afterEach(async () => {
  await h?.close();
  h = undefined;
  raw?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function open(): Promise<string> {
  const store = new SqliteEventStore(file);
  raw = new RawDatabase(file);
  h = await startHarness({ store });
  return h.thread();
}

/** Makes the commit holding an event whose method is `method` fail (a deferred foreign key a trigger breaks). */
function failCommitOf(method: string): void {
  raw.exec(`
    CREATE TABLE doomed (turn_id TEXT REFERENCES turns (turn_id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TRIGGER doom AFTER INSERT ON event_runs WHEN instr(NEW.methods, '"${method}"') > 0
    BEGIN INSERT INTO doomed VALUES ('no such turn'); END;
  `);
}
const heal = () => raw.exec(`DROP TRIGGER doom; DROP TABLE doomed;`);

describe("a turn/start whose first events cannot be stored", () => {
  it.each(["turn/started", "turn/permission/audit", "item/started", "item/completed"])(
    "when the commit holding %s fails: an error, no turn, the thread free",
    async (method) => {
      const thread = await open();
      failCommitOf(method);
      const error = (await h!.client
        .turnStart({ thread_id: thread, turn_id: "trn_lost", input: text("hi") })
        .catch((e: unknown) => e)) as RpcError;
      expect(error.code).toBe(-32603);
      heal();
      expect(h!.store.turnsOfThread(thread)).toEqual([]);
      expect(raw.prepare(`SELECT turn_id FROM turns`).all()).toEqual([]);
      expect((await h!.client.threadGet({ thread_id: thread })).thread.active_turn_id).toBeUndefined();
      // The thread runs its next turn, under the same id.
      const end = await h!.runTurn({ thread_id: thread, turn_id: "trn_lost", input: text("hi") });
      expect(end.method).toBe("turn/completed");
    },
  );
});

/** A memory store whose append of `method` fails once, as a store refusing a write at the call (not at its commit) does. */
class FailingAppendStore extends MemoryEventStore {
  constructor(private failing: string | undefined) {
    super();
  }
  override append(turnId: string, method: string, build: (sequence: number) => Record<string, unknown>) {
    if (method === this.failing) {
      this.failing = undefined;
      throw new StoreError("commit_failed", `the disk refused ${method}`);
    }
    return super.append(turnId, method, build);
  }
}

describe("a turn/start whose store refuses one of the first events at the append", () => {
  it("ends the part-stored turn at once: the thread is free for the next turn/start", async () => {
    h = await startHarness({ store: new FailingAppendStore("item/started") });
    const thread = await h.thread();
    const error = (await h.client
      .turnStart({ thread_id: thread, turn_id: "trn_half", input: text("hi") })
      .catch((e: unknown) => e)) as RpcError;
    expect(error.code).toBe(-32603);
    const half = await h.client.turnItems({ thread_id: thread, turn_id: "trn_half" });
    expect(half.events.map((e) => e.method)).toEqual(["turn/started", "turn/permission/audit", "turn/failed"]);
    expect((await h.client.threadGet({ thread_id: thread })).thread.active_turn_id).toBeUndefined();
    const end = await h.runTurn({ thread_id: thread, turn_id: "trn_next", input: text("hi") });
    expect(end.method).toBe("turn/completed");
  });
});
