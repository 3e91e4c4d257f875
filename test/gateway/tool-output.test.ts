/**
 * A tool's streamed output and the item the runner holds: output deltas are kept as pieces
 * and built into the item only when the tool publishes an update, so an item/updated
 * carries every delta streamed before it, and the deltas after it follow on top.
 */
import { afterEach, expect, it } from "vitest";
import { defineTool } from "../../packages/gateway/src/tools/arguments.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A command-like tool that streams output around an update of its item. */
const streaming = defineTool({
  spec: {
    name: "stream_then_update",
    description: "streams stdout, updates its item, streams more",
    parameters: { type: "object", properties: {}, additionalProperties: false },
  },
  itemType: "commandExecution",
  permissionAction: "shell_command",
  describe: (_args, ctx) => ({ command: "stream", cwd: ctx.cwd }),
  run: async (_args, ctx) => {
    ctx.emit("stdout", "one ");
    ctx.emit("stderr", "warn ");
    ctx.emit("stdout", "two ");
    ctx.update?.({ output_policy: { truncated: false, max_display_bytes: 65536 } });
    ctx.emit("stdout", "three");
    ctx.update?.({ duration_ms: 5 });
    return { ok: true, content: "one two three", item: { stdout: "one two three", stderr: "warn ", exit_code: 0 } };
  },
});

it("sends in item/updated the item with every output delta streamed before it", async () => {
  h = await startHarness({ tools: [streaming] });
  const thread = await h.thread();
  const end = await h.runTurn({
    thread_id: thread,
    turn_id: "trn_stream",
    input: text(script({ tool: "stream_then_update" }, { say: "done" })),
  });
  expect(end.method).toBe("turn/completed");
  const updates = ofTurn(h.received, "trn_stream").flatMap((n) => (n.method === "item/updated" ? [n.params.item] : []));
  expect(updates).toHaveLength(2);
  expect(updates[0]).toMatchObject({ stdout: "one two ", stderr: "warn ", output_policy: { truncated: false, max_display_bytes: 65536 } });
  expect(updates[1]).toMatchObject({
    stdout: "one two three",
    stderr: "warn ",
    output_policy: { truncated: false, max_display_bytes: 65536 },
    duration_ms: 5,
  });
});
