import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteEventStore } from "../../runtime/store/sqlite.js";
import { script, startHarness, text } from "./harness.js";

describe("a gateway restarted on the same SQLite file", () => {
  it("answers turn/get, turn/items and thread/get exactly as before", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-restart-")), "gateway.sqlite");
    const first = await startHarness({ store: new SqliteEventStore(file) });
    const thread = await first.thread();
    await first.runTurn({ thread_id: thread, turn_id: "trn_keep", input: text(script({ tool: "shell", args: { command: "echo kept" } }, { say: "kept it" })) });
    const before = {
      thread: await first.client.threadGet({ thread_id: thread }),
      turn: await first.client.turnGet({ thread_id: thread, turn_id: "trn_keep" }),
      items: await first.client.turnItems({ thread_id: thread, turn_id: "trn_keep" }),
    };
    await first.close();
    first.store.close();

    const second = await startHarness({ store: new SqliteEventStore(file) });
    expect(await second.client.threadGet({ thread_id: thread })).toEqual(before.thread);
    expect(await second.client.turnGet({ thread_id: thread, turn_id: "trn_keep" })).toEqual(before.turn);
    expect(await second.client.turnItems({ thread_id: thread, turn_id: "trn_keep" })).toEqual(before.items);
    // The thread is free again, and the next turn's history includes the first.
    const end = await second.runTurn({ thread_id: thread, turn_id: "trn_next", input: text(script({ say: "next" })) });
    expect(end.method).toBe("turn/completed");
    await second.close();
    second.store.close();
  });

  it("ends a turn that was running when the gateway died as Interrupted, continuing its sequence", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-restart-")), "gateway.sqlite");
    const dying = await startHarness({ store: new SqliteEventStore(file) });
    const thread = await dying.thread();
    await dying.client.turnStart({ thread_id: thread, turn_id: "trn_cut", input: text(script({ say: "never finished", delay_ms: 60_000 })) });
    await dying.waitFor((n) => n.method === "item/completed");
    const seen = (await dying.client.turnItems({ thread_id: thread, turn_id: "trn_cut" })).last_sequence;

    // A second gateway opens the file while the first is gone (its process would be dead).
    const next = await startHarness({ store: new SqliteEventStore(file) });
    const { turn } = await next.client.turnGet({ thread_id: thread, turn_id: "trn_cut" });
    expect(turn).toMatchObject({ status: "Interrupted", error: { kind: "interrupted" } });
    const items = await next.client.turnItems({ thread_id: thread, turn_id: "trn_cut" });
    expect(items.events.map((e) => e.sequence)).toEqual(items.events.map((_, i) => i + 1));
    expect(items.events.at(-1)).toMatchObject({ sequence: seen + 1, method: "turn/failed" });
    await next.close();
    next.store.close();
    await dying.client.close();
  });
});
