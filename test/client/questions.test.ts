/**
 * The streaming view of questions, handoffs and compaction against the reference gateway:
 * question_pending answered with answer(), the gateway's reminder when the same open
 * question is streamed again, handoff_started once for a sub-agent, and context_compacted before any
 * text of the turn.
 */
import { afterEach, describe, expect, it } from "vitest";
import { streamExistingTurn, streamTurn, type GatewayConnection, type TurnStreamEvent } from "../../packages/client/src/index.js";
import { script, text } from "../gateway/harness.js";
import { collect, startClientGateway, type ClientGateway } from "./gateway.js";

let g: ClientGateway;
afterEach(async () => {
  await g.close();
});

async function setup(options: Parameters<typeof startClientGateway>[0] = {}): Promise<{ connection: GatewayConnection; threadId: string }> {
  g = await startClientGateway(options);
  const connection = await g.open();
  return { connection, threadId: await g.harness.thread() };
}

const question = { header: "Target", question: "Where should it go?", options: [{ label: "Staging" }, { label: "Production" }] };

describe("question_pending", () => {
  it("is answered with answer(optionId); the turn goes on and the stream reports the resolution", async () => {
    const { connection, threadId } = await setup();
    const input = text(script({ tool: "ask_question", args: { questions: [question] } }, { say: "Going to staging." }));
    const events: TurnStreamEvent[] = [];
    for await (const event of streamTurn(connection, { thread_id: threadId, turn_id: "trn_q", input })) {
      events.push(event);
      if (event.type === "question_pending") {
        expect(event).toMatchObject({ turnId: "trn_q", alreadySurfaced: false, question: { header: "Target", index: 0 } });
        expect(await event.answer("a")).toMatchObject({ option_id: "a" });
      }
    }
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["question_pending", "question_resolved", "done"]));
    expect(events.find((e) => e.type === "question_resolved")).toMatchObject({ resolution: "answered", optionId: "a", index: 0 });
    expect(events.at(-1)).toMatchObject({ type: "done", status: "Completed" });
  });

  it("comes with the gateway's already_surfaced: a replay on another connection is a reminder", async () => {
    const { connection, threadId } = await setup();
    const input = text(script({ tool: "ask_question", args: { questions: [question] } }, { say: "ok" }));
    const first = streamTurn(connection, { thread_id: threadId, turn_id: "trn_r", input });
    let pending: Extract<TurnStreamEvent, { type: "question_pending" }> | undefined;
    for await (const event of first) {
      if (event.type === "question_pending") {
        pending = event;
        break;
      }
    }
    expect(pending?.alreadySurfaced).toBe(false);
    // A connection that has seen nothing (a page reloaded, another process): the gateway says the question was delivered before.
    const fresh = await g.open();
    const again = streamExistingTurn(fresh, { thread_id: threadId, turn_id: "trn_r" });
    const events: TurnStreamEvent[] = [];
    for await (const event of again) {
      events.push(event);
      if (event.type === "question_pending") {
        expect(event.alreadySurfaced).toBe(true);
        await event.answer("b");
      }
    }
    expect(events.filter((e) => e.type === "question_pending")).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: "done", status: "Completed" });
  });
});

describe("handoff_started and context_compacted", () => {
  it("reports a sub-agent delegation once", async () => {
    const { connection, threadId } = await setup();
    const input = text(script({ tool: "spawn_agent", args: { prompt: script({ say: "child answer" }) } }, { say: "parent answer" }));
    const events = await collect(streamTurn(connection, { thread_id: threadId, turn_id: "trn_h", input }));
    const handoffs = events.filter((e) => e.type === "handoff_started");
    expect(handoffs).toHaveLength(1);
    expect(handoffs[0]).toMatchObject({ child_agent_id: "agent_reference", child_turn_id: expect.stringMatching(/^trn_h_child_/) });
  });

  it("puts context_compacted before the turn's first text", async () => {
    const { connection, threadId } = await setup({ config: { context: { max_history_tokens: 40, keep_recent_messages: 1 } } });
    const long = "lorem ipsum ".repeat(30);
    await collect(streamTurn(connection, { thread_id: threadId, turn_id: "trn_1", input: text(script({ say: long })) }));
    const events = await collect(streamTurn(connection, { thread_id: threadId, turn_id: "trn_2", input: text(script({ say: "short" })) }));
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === "context_compacted")).toHaveLength(1);
    expect(types.indexOf("context_compacted")).toBeLessThan(types.indexOf("text_delta"));
  });
});
