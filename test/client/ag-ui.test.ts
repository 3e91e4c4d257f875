/**
 * The AG-UI bridge driven by the official @ag-ui/client HttpAgent, whose own event
 * verification must accept every stream: a plain answer, a tool call with its result and
 * reasoning, an approval and a question as interrupts answered by the next run's resume
 * (also by a bridge restarted in between), and the inputs the bridge refuses.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { HttpAgent } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import { afterEach, describe, expect, it } from "vitest";
import { AgUiBridge, serveAgUi, type AgUiServer } from "../../packages/client/src/ag-ui/index.js";
import { script } from "../gateway/harness.js";
import { startClientGateway, type ClientGateway } from "./gateway.js";

let g: ClientGateway;
let server: AgUiServer;
afterEach(async () => {
  await server.close();
  await g.close();
});

async function setup(
  options: Parameters<typeof startClientGateway>[0] = {},
  turn: NonNullable<Parameters<typeof serveAgUi>[2]>["turn"] = {},
) {
  g = await startClientGateway(options);
  server = await serveAgUi(await g.open(), 0, { turn });
}

/** Runs the agent once, collecting every event it accepted. */
async function run(agent: HttpAgent, parameters: Parameters<HttpAgent["runAgent"]>[0] = {}) {
  const events: BaseEvent[] = [];
  const outcome = await agent.runAgent(parameters, { onEvent: ({ event }) => void events.push(event) });
  return { events, types: events.map((e): string => e.type), outcome };
}

/** The headers every request to `to` carries: its token, and the JSON body's type. */
const headersOf = (to: AgUiServer) => ({ "content-type": "application/json", authorization: `Bearer ${to.token}` });

const userAgent = (text: string, threadId = "agui-thread") => {
  const agent = new HttpAgent({ url: server.url, threadId, headers: { authorization: `Bearer ${server.token}` } });
  agent.messages = [{ id: "m1", role: "user", content: text }];
  return agent;
};

describe("the AG-UI bridge", () => {
  it("streams a turn as run started, text message start/content/end and run finished", async () => {
    await setup();
    const { types, events } = await run(userAgent(script({ say: "Hello from the gateway.", chunks: 3 })), { runId: "run_1" });
    expect(types[0]).toBe("RUN_STARTED");
    expect(types.at(-1)).toBe("RUN_FINISHED");
    expect(types.filter((t) => t === "TEXT_MESSAGE_CONTENT").length).toBe(3);
    expect(types.indexOf("TEXT_MESSAGE_START")).toBeLessThan(types.indexOf("TEXT_MESSAGE_CONTENT"));
    expect(types.lastIndexOf("TEXT_MESSAGE_END")).toBeLessThan(types.indexOf("RUN_FINISHED"));
    const text = events
      .filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
      .map((e) => (e as unknown as { delta: string }).delta)
      .join("");
    expect(text).toBe("Hello from the gateway.");
  });

  it("streams reasoning and a tool call with its arguments and result", async () => {
    await setup({}, { permission_profile: { mode: "full_access" } });
    const { types, events } = await run(
      userAgent(script({ tool: "shell", args: { command: "echo from-the-tool" }, reasoning: "Run it." }, { say: "Done." })),
      { runId: "run_tool" },
    );
    expect(types).toEqual(
      expect.arrayContaining([
        "REASONING_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
      ]),
    );
    const start = events.find((e) => e.type === "TOOL_CALL_START") as unknown as { toolCallName: string; toolCallId: string };
    expect(start.toolCallName).toBe("commandExecution");
    const args = events.find((e) => e.type === "TOOL_CALL_ARGS") as unknown as { delta: string };
    expect(JSON.parse(args.delta)).toMatchObject({ command: "echo from-the-tool" });
    const result = events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { toolCallId: string; content: string };
    expect(result.toolCallId).toBe(start.toolCallId);
    expect(result.content).toContain("from-the-tool");
    expect(types.at(-1)).toBe("RUN_FINISHED");
  });

  it("ends the run with an approval interrupt; the next run's resume answers it and streams the rest of the turn", async () => {
    await setup({}, { permission_profile: { mode: "supervised" } });
    const agent = userAgent(script({ tool: "shell", args: { command: "echo approved-run" } }, { say: "It ran." }));
    const first = await run(agent, { runId: "run_a" });
    const finished = first.events.at(-1) as unknown as {
      type: string;
      outcome: { type: string; interrupts: { id: string; reason: string; toolCallId?: string }[] };
    };
    expect(finished).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt", interrupts: [{ reason: "tool_approval" }] } });
    const id = finished.outcome.interrupts[0]!.id;
    const started = first.events.find((e) => e.type === "TOOL_CALL_START") as unknown as { toolCallId: string };
    expect(finished.outcome.interrupts[0]).toMatchObject({ toolCallId: started.toolCallId });
    const second = await run(agent, {
      runId: "run_b",
      resume: [{ interruptId: id, status: "resolved", payload: { resolution: "allow_once" } }],
    });
    expect(second.types[0]).toBe("RUN_STARTED");
    expect(second.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const result = second.events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { content: string };
    expect(result.content).toContain("approved-run");
  });

  it("turns the questions of one ask_question call into one interrupt each, answered by optionId", async () => {
    await setup();
    const questions = [
      { header: "Target", question: "Where should it go?", options: [{ label: "Staging" }, { label: "Production" }] },
      { header: "Style", question: "Which style?", options: [{ label: "Squash" }, { label: "Merge" }] },
    ];
    const agent = userAgent(script({ tool: "ask_question", args: { questions } }, { say: "Thanks." }));
    const first = await run(agent, { runId: "run_q1" });
    const finished = first.events.at(-1) as unknown as {
      outcome: { type: string; interrupts: { id: string; reason: string; message: string }[] };
    };
    expect(finished.outcome.type).toBe("interrupt");
    expect(finished.outcome.interrupts.map((i) => [i.reason, i.message])).toEqual([
      ["question", "Where should it go?"],
      ["question", "Which style?"],
    ]);
    const [a, b] = finished.outcome.interrupts;
    // Every open interrupt must be answered (HttpAgent checks it too; the bridge does for any client).
    const partial = await fetch(server.url, {
      method: "POST",
      headers: headersOf(server),
      body: JSON.stringify({
        threadId: "agui-thread",
        runId: "run_q2",
        messages: [],
        tools: [],
        context: [],
        resume: [{ interruptId: a!.id, status: "resolved", payload: { optionId: "b" } }],
      }),
    });
    expect(partial.status).toBe(400);
    expect(((await partial.json()) as { error: string }).error).toContain(`not answered: ${b!.id}`);
    const second = await run(agent, {
      runId: "run_q3",
      resume: [
        { interruptId: a!.id, status: "resolved", payload: { optionId: "b" } },
        { interruptId: b!.id, status: "resolved", payload: { optionId: "a" } },
      ],
    });
    const result = second.events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { content: string };
    expect(result.content).toBe('Target: the user chose "Production"\nStyle: the user chose "Squash"');
    expect(second.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("starts one gateway thread for an AG-UI thread whose first two runs come at once", async () => {
    await setup();
    const bridge = new AgUiBridge(await g.open());
    const input = (runId: string, text: string) => ({
      threadId: "agui-race",
      runId,
      state: {},
      messages: [{ id: "m1", role: "user" as const, content: text }],
      tools: [],
      context: [],
      forwardedProps: {},
    });
    const runs = await Promise.all([
      bridge.run(input("run_c1", script({ say: "one" }))),
      bridge.run(input("run_c2", script({ say: "two" }))),
    ]);
    for (const events of runs) for await (const _ of events);
    // The second turn either ran after the first or was refused (one turn at a time), but in the same thread.
    const threads = ["run_c1", "run_c2"].map((turn) => g.harness.store.turnThread(turn)).filter((t) => t !== undefined);
    expect(threads.length).toBeGreaterThan(0);
    expect(new Set(threads).size).toBe(1);
  });

  it("reports a failed turn as RUN_ERROR", async () => {
    await setup();
    const events: BaseEvent[] = [];
    const agent = userAgent(script({ fail: "the model broke" }));
    await agent.runAgent({ runId: "run_fail" }, { onEvent: ({ event }) => void events.push(event) });
    expect(events.map((e): string => e.type)).toEqual(["RUN_STARTED", "RUN_ERROR"]);
    expect(events[1]).toMatchObject({ code: "provider_error", message: expect.stringContaining("the model broke") });
  });

  it("refuses what the gateway does not serve, naming it", async () => {
    await setup();
    const post = (body: unknown) => fetch(server.url, { method: "POST", headers: headersOf(server), body: JSON.stringify(body) });
    const base = { threadId: "t", runId: "r", messages: [{ id: "m", role: "user", content: "hi" }], tools: [], context: [] };
    const refused = async (body: unknown) => {
      const res = await post(body);
      return [res.status, ((await res.json()) as { error: string }).error];
    };
    expect(await refused({ ...base, tools: [{ name: "browser_open", description: "d", parameters: {} }] })).toEqual([
      400,
      expect.stringContaining("frontend tools"),
    ]);
    expect(await refused({ ...base, context: [{ description: "d", value: "v" }] })).toEqual([400, expect.stringContaining("context")]);
    expect(await refused({ ...base, messages: [{ id: "m", role: "assistant", content: "hi" }] })).toEqual([
      400,
      expect.stringContaining("user message last"),
    ]);
    expect(await refused({ ...base, resume: [{ interruptId: "nope", status: "resolved" }] })).toEqual([
      400,
      expect.stringContaining("names no open interrupt"),
    ]);
    expect(await refused({ runId: "r" })).toEqual([400, expect.stringContaining("not a RunAgentInput")]);
    expect((await fetch(server.url, { headers: headersOf(server) })).status).toBe(405);
  });
});

describe("the AG-UI bridge after a restart", () => {
  const mapFile = () => join(mkdtempSync(join(tmpdir(), "turnspec-agui-")), "state", "threads.json");

  /** A bridge on a connection of its own, as a new process would have; `server` is always the latest. */
  async function bridge(threadMapFile?: string, turn: NonNullable<Parameters<typeof serveAgUi>[2]>["turn"] = {}) {
    server = await serveAgUi(await g.open(), 0, { turn, ...(threadMapFile === undefined ? {} : { threadMapFile }) });
    return server;
  }

  it("answers the approval a run before the restart ended with, and goes on in the same gateway thread", async () => {
    g = await startClientGateway();
    const file = mapFile();
    const turn = { permission_profile: { mode: "supervised" as const } };
    const before = await bridge(file, turn);
    const agent = userAgent(script({ tool: "shell", args: { command: "echo after-the-restart" } }, { say: "It ran." }));
    const first = await run(agent, { runId: "run_r1" });
    const finished = first.events.at(-1) as unknown as { outcome: { type: string; interrupts: { id: string; reason: string }[] } };
    expect(finished.outcome).toMatchObject({ type: "interrupt", interrupts: [{ reason: "tool_approval" }] });
    const gatewayThread = (JSON.parse(readFileSync(file, "utf8")) as { threads: Record<string, string> }).threads["agui-thread"];
    expect(gatewayThread).toMatch(/\S/);
    await before.close();

    const after = await bridge(file, turn);
    const resumed = new HttpAgent({ url: after.url, threadId: "agui-thread", headers: { authorization: `Bearer ${after.token}` } });
    const second = await run(resumed, {
      runId: "run_r2",
      resume: [{ interruptId: finished.outcome.interrupts[0]!.id, status: "resolved", payload: { resolution: "allow_once" } }],
    });
    expect(second.types[0]).toBe("RUN_STARTED");
    expect((second.events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { content: string }).content).toContain(
      "after-the-restart",
    );
    expect(second.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    // The next message goes on in the same gateway thread: its history holds the first turn.
    const third = userAgent(script({ say: "Still the same thread." }));
    await run(third, { runId: "run_r3" });
    expect((await g.harness.client.threadGet({ thread_id: gatewayThread! })).thread.active_turn_id).toBeUndefined();
    expect((await g.harness.client.turnGet({ thread_id: gatewayThread!, turn_id: "run_r3" })).turn.status).toBe("Completed");
  });

  it("answers the questions of a call the run before the restart ended with, by optionId", async () => {
    g = await startClientGateway();
    const file = mapFile();
    const before = await bridge(file);
    const questions = [
      { header: "Target", question: "Where should it go?", options: [{ label: "Staging" }, { label: "Production" }] },
      { header: "Style", question: "Which style?", options: [{ label: "Squash" }, { label: "Merge" }] },
    ];
    const first = await run(userAgent(script({ tool: "ask_question", args: { questions } }, { say: "Thanks." })), { runId: "run_q_r1" });
    const [a, b] = (first.events.at(-1) as unknown as { outcome: { interrupts: { id: string }[] } }).outcome.interrupts;
    await before.close();

    const after = await bridge(file);
    const agent = new HttpAgent({ url: after.url, threadId: "agui-thread", headers: { authorization: `Bearer ${after.token}` } });
    // Still every open interrupt, as the gateway's log has them.
    const partial = await fetch(after.url, {
      method: "POST",
      headers: headersOf(after),
      body: JSON.stringify({
        threadId: "agui-thread",
        runId: "run_q_r2",
        messages: [],
        tools: [],
        context: [],
        resume: [{ interruptId: b!.id, status: "resolved", payload: { optionId: "a" } }],
      }),
    });
    expect(partial.status).toBe(400);
    expect(((await partial.json()) as { error: string }).error).toContain(`not answered: ${a!.id}`);
    const second = await run(agent, {
      runId: "run_q_r3",
      resume: [
        { interruptId: a!.id, status: "resolved", payload: { optionId: "b" } },
        { interruptId: b!.id, status: "resolved", payload: { optionId: "b" } },
      ],
    });
    expect((second.events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { content: string }).content).toBe(
      'Target: the user chose "Production"\nStyle: the user chose "Merge"',
    );
    expect(second.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  });

  it("without a thread map file, refuses a resume after a restart, saying it knows no gateway thread for the AG-UI thread", async () => {
    g = await startClientGateway();
    const before = await bridge(undefined, { permission_profile: { mode: "supervised" } });
    const first = await run(userAgent(script({ tool: "shell", args: { command: "echo never" } }, { say: "no" })), { runId: "run_m1" });
    const id = (first.events.at(-1) as unknown as { outcome: { interrupts: { id: string }[] } }).outcome.interrupts[0]!.id;
    await before.close();
    const after = await bridge();
    const res = await fetch(after.url, {
      method: "POST",
      headers: headersOf(after),
      body: JSON.stringify({
        threadId: "agui-thread",
        runId: "run_m2",
        messages: [],
        tools: [],
        context: [],
        resume: [{ interruptId: id, status: "resolved", payload: { resolution: "allow_once" } }],
      }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain("this bridge has no gateway thread for it");
  });

  it("starts afresh an AG-UI thread whose gateway thread the gateway no longer has", async () => {
    g = await startClientGateway();
    const file = mapFile();
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ version: 1, threads: { "agui-thread": "thr_gone" } }));
    await bridge(file);
    const { events } = await run(userAgent(script({ say: "A new thread." })), { runId: "run_gone" });
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const now = (JSON.parse(readFileSync(file, "utf8")) as { threads: Record<string, string> }).threads["agui-thread"];
    expect(now).not.toBe("thr_gone");
    expect(g.harness.store.turnThread("run_gone")).toBe(now);
  });

  it("refuses a thread map file it cannot read, naming the file and the place", async () => {
    g = await startClientGateway();
    const connection = await g.open();
    server = await serveAgUi(connection, 0);
    const file = mapFile();
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ version: 1, threads: { "agui-thread": 7 } }));
    expect(() => new AgUiBridge(connection, { threadMapFile: file })).toThrow(
      `${file} has 7 at /threads/agui-thread, expected a gateway thread id`,
    );
    writeFileSync(file, "{");
    expect(() => new AgUiBridge(connection, { threadMapFile: file })).toThrow(`the AG-UI thread map ${file} is not JSON`);
  });
});
