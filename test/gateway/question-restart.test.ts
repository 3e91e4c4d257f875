/** A question open when its gateway stopped is resolved as cancelled when the turn is blocked for recovery. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { orderingRules } from "../../generated/ordering.js";
import { createOrderingEngine } from "../../packages/rpc/src/index.js";
import { SqliteEventStore } from "../../packages/gateway/src/store/sqlite.js";
import { script, startHarness, text, type Harness } from "./harness.js";

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0).reverse()) {
    await h.close();
    h.store.close();
  }
});

describe("a question cut off by a stop", () => {
  it("is resolved as cancelled before the turn is blocked, so every opened question is resolved once", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-question-")), "gateway.sqlite");
    const dying = await startHarness({ store: new SqliteEventStore(file) });
    open.push(dying);
    const thread = await dying.thread();
    const questions = [{ header: "Target", question: "Where should it go?", options: [{ label: "Staging" }, { label: "Production" }] }];
    await dying.client.turnStart({
      thread_id: thread,
      turn_id: "trn_cut",
      input: text(script({ tool: "ask_question", args: { questions } }, { say: "ok" })),
    });
    await dying.waitFor((n) => n.method === "turn/question/opened");

    // A second gateway opens the file while the first still waits, as after a kill.
    const next = await startHarness({ store: new SqliteEventStore(file) });
    open.push(next);
    const { events } = await next.client.turnItems({ thread_id: thread, turn_id: "trn_cut" });
    const methods = events.map((e) => e.method);
    expect(events.find((e) => e.method === "turn/question/resolved")?.params).toMatchObject({
      thread_id: thread,
      turn_id: "trn_cut",
      index: 0,
      resolution: "cancelled",
    });
    expect(methods.indexOf("turn/question/resolved")).toBeLessThan(methods.indexOf("turn/blocked"));
    const engine = createOrderingEngine(orderingRules);
    for (const e of events) engine.accept({ jsonrpc: "2.0", method: e.method, params: e.params }, "server_to_client");
    expect(engine.violations.filter((v) => v.requirement === "TURN-QUESTION-ORDER-RESOLVED-ONCE")).toEqual([]);
  });
});
