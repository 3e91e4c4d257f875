/**
 * streamTurn end to end against the reference gateway over the in-memory pair: text and
 * tool events, an approval answered with respond(), a failed turn, a gateway error as a
 * typed error, and abort as turn/cancel; done is always last.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  accumulateItems,
  replayedNotifications,
  streamTurn,
  TurnClientError,
  type GatewayConnection,
  type TurnStreamEvent,
} from "../../packages/client/src/index.js";
import { RpcError } from "../../packages/rpc/src/index.js";
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

const ofType = <K extends TurnStreamEvent["type"]>(events: readonly TurnStreamEvent[], type: K) =>
  events.filter((e): e is Extract<TurnStreamEvent, { type: K }> => e.type === type);

describe("streamTurn", () => {
  it("yields reasoning, a tool's start, output and end, the answer's text as it grows, and done last", async () => {
    const { connection, threadId } = await setup();
    const input = text(
      script(
        { tool: "shell", args: { command: "echo from-the-tool" } },
        { say: "The tool said so.", chunks: 3, reasoning: "Read the output." },
      ),
    );
    const events = await collect(streamTurn(connection, { thread_id: threadId, turn_id: "trn_stream", input }));

    expect(events.at(-1)).toMatchObject({ type: "done", status: "Completed" });
    expect(ofType(events, "done")).toHaveLength(1);
    const started = ofType(events, "tool_started");
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      name: "commandExecution",
      item: { type: "commandExecution", command: "echo from-the-tool", status: "in_progress" },
    });
    const output = ofType(events, "tool_output").filter((e) => e.itemId === started[0]!.item.id);
    expect(output.map((e) => e.delta).join("")).toBe("from-the-tool\n");
    expect(ofType(events, "tool_completed")[0]).toMatchObject({
      item: { id: started[0]!.item.id, status: "completed", stdout: "from-the-tool\n" },
    });
    expect(ofType(events, "reasoning").map((e) => e.text)).toEqual(["Read the output."]);
    const deltas = ofType(events, "text_delta");
    expect(deltas).toHaveLength(3);
    expect(deltas.map((e) => e.delta).join("")).toBe("The tool said so.");
    expect(deltas.at(-1)!.text).toBe("The tool said so.");
    // The events follow the turn's sequence; the answer matches what turn/items recorded.
    const sequences = events.map((e) => e.sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    const replay = await connection.client.turnItems({ thread_id: threadId, turn_id: "trn_stream" });
    const items = accumulateItems(replayedNotifications(replay.events, "trn_stream"));
    expect(items.find((i) => i.type === "agentMessage")).toMatchObject({ text: "The tool said so.", status: "completed" });
  });

  it("pauses on an approval and continues after respond(), which carries the resolve token back", async () => {
    const { connection, threadId } = await setup({ config: { permissions: { require_resolve_token: true } } });
    const input = text(script({ tool: "shell", args: { command: "echo approved" } }, { say: "Ran it." }));
    const events: TurnStreamEvent[] = [];
    for await (const event of streamTurn(connection, {
      thread_id: threadId,
      turn_id: "trn_approval",
      input,
      permission_profile: { mode: "supervised" },
    })) {
      events.push(event);
      if (event.type === "approval_pending") {
        expect(event.request).toMatchObject({ tool_name: "shell", turn_id: "trn_approval", action: "shell_command" });
        expect(event.request.resolve_token).toEqual(expect.any(String));
        await expect(event.respond("allow_once")).resolves.toMatchObject({ request_id: event.request.request_id });
      }
    }
    const pending = ofType(events, "approval_pending");
    expect(pending).toHaveLength(1);
    expect(ofType(events, "approval_resolved")).toEqual([
      expect.objectContaining({ requestId: pending[0]!.request.request_id, resolution: "allow_once" }),
    ]);
    expect(ofType(events, "tool_completed")[0]).toMatchObject({ item: { status: "completed", stdout: "approved\n" } });
    expect(events.at(-1)).toMatchObject({ type: "done", status: "Completed" });
  });

  it("reports a failed turn as failed (kind, retryable) followed by done", async () => {
    const { connection, threadId } = await setup();
    const input = text(script({ fail: "the request was malformed" }));
    const events = await collect(streamTurn(connection, { thread_id: threadId, turn_id: "trn_fail", input }));
    expect(events.slice(-2)).toEqual([
      expect.objectContaining({
        type: "failed",
        kind: "provider_error",
        retryable: false,
        message: expect.stringContaining("the request was malformed"),
      }),
      expect.objectContaining({ type: "done", status: "Failed" }),
    ]);
  });

  it("reports a turn blocked after its provider retries ran out as blocked (reason, recovery job) followed by done", async () => {
    const { connection, threadId } = await setup();
    const input = text(script({ fail: "the provider is overloaded", retryable: true }));
    const events = await collect(streamTurn(connection, { thread_id: threadId, turn_id: "trn_blocked", input }));
    expect(events.slice(-2)).toEqual([
      expect.objectContaining({ type: "blocked", reason: "provider_failure_continuation", recoveryJobId: expect.stringMatching(/\S/) }),
      expect.objectContaining({ type: "done", status: "Blocked" }),
    ]);
  });

  it("throws a typed error when the gateway refuses the turn, instead of ending silently", async () => {
    const { connection } = await setup();
    const error = await collect(streamTurn(connection, { thread_id: "thr_missing", turn_id: "trn_refused", input: text("hello") })).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TurnClientError);
    expect(error).toMatchObject({ kind: "rpc_error", message: expect.stringContaining("thr_missing") });
    expect((error as TurnClientError).cause).toBeInstanceOf(RpcError);
    expect((error as TurnClientError).cause).toMatchObject({ reason: "thread_not_found" });
  });

  it("cancels the turn when the signal aborts, and still ends with failed (cancelled) and done", async () => {
    const { connection, threadId } = await setup();
    const abort = new AbortController();
    const input = text(script({ tool: "shell", args: { command: "sleep 30" } }, { say: "never" }));
    const events: TurnStreamEvent[] = [];
    for await (const event of streamTurn(connection, { thread_id: threadId, turn_id: "trn_abort", input }, { signal: abort.signal })) {
      events.push(event);
      if (event.type === "tool_started") abort.abort();
    }
    expect(events.slice(-2)).toEqual([
      expect.objectContaining({ type: "failed", kind: "cancelled", retryable: false }),
      expect.objectContaining({ type: "done", status: "Interrupted" }),
    ]);
    expect(ofType(events, "tool_completed")[0]).toMatchObject({ item: { status: "cancelled" } });
    expect((await connection.client.turnGet({ thread_id: threadId, turn_id: "trn_abort" })).turn.status).toBe("Interrupted");
  });

  it("does not start a turn when the signal is already aborted", async () => {
    const { connection, threadId } = await setup();
    const abort = new AbortController();
    abort.abort();
    const error = await collect(
      streamTurn(connection, { thread_id: threadId, turn_id: "trn_never", input: text("hi") }, { signal: abort.signal }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "TurnClientError", kind: "aborted" });
    const refused = await connection.client.turnGet({ thread_id: threadId, turn_id: "trn_never" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ reason: "turn_not_found" });
  });

  it("ignores the notifications of other turns on the same connection", async () => {
    const { connection, threadId } = await setup();
    const other = await g.harness.thread();
    const [a, b] = await Promise.all([
      collect(streamTurn(connection, { thread_id: threadId, turn_id: "trn_a", input: text(script({ say: "alpha", chunks: 2 })) })),
      collect(streamTurn(connection, { thread_id: other, turn_id: "trn_b", input: text(script({ say: "beta", chunks: 2 })) })),
    ]);
    expect(
      ofType(a, "text_delta")
        .map((e) => e.delta)
        .join(""),
    ).toBe("alpha");
    expect(
      ofType(b, "text_delta")
        .map((e) => e.delta)
        .join(""),
    ).toBe("beta");
  });
});
