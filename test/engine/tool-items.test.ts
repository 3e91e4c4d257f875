/**
 * Tool items are built as the generated TurnItem variant of the tool's item type: the
 * runner's fields and the tool's reported fields merged, then checked against the schema.
 */
import { describe, expect, it } from "vitest";
import { isTurnItem } from "../../generated/validators.js";
import { finishToolItem, isToolItem, openToolItem, updateToolItem } from "../../packages/gateway/src/turn/tool-items.js";

const call = (described: Record<string, unknown>) => ({
  id: "itm_1",
  round: 2,
  toolCallId: "call_1",
  toolName: "shell",
  args: { command: "ls" },
  described,
});

describe("tool items", () => {
  it("opens a command item with the runner's fields and the described ones", () => {
    const item = openToolItem("commandExecution", call({ command: "ls", cwd: "/w" }));
    expect(item).toEqual({
      type: "commandExecution",
      id: "itm_1",
      status: "in_progress",
      round: 2,
      tool_call_id: "call_1",
      arguments: { command: "ls" },
      command: "ls",
      cwd: "/w",
    });
    expect(isTurnItem(item)).toBe(true);
  });

  it("gives a dynamic tool call its tool name and a task no arguments", () => {
    expect(openToolItem("dynamicToolCall", call({})).tool_name).toBe("shell");
    const task = openToolItem("task", call({ prompt: "do it" }));
    expect(task).not.toHaveProperty("arguments");
    expect(task).toMatchObject({ type: "task", prompt: "do it" });
  });

  it("finishes with the outcome and tool_result, or a task's result without an outcome", () => {
    const item = openToolItem("commandExecution", call({ command: "ls", cwd: "/w" }));
    const done = finishToolItem(item, {
      status: "completed",
      outcome: "success",
      resultText: "a\n",
      reported: { stdout: "a\n", exit_code: 0 },
    });
    expect(done).toMatchObject({ status: "completed", outcome: "success", tool_result: "a\n", stdout: "a\n", exit_code: 0 });
    const task = finishToolItem(openToolItem("task", call({ prompt: "p" })), {
      status: "failed",
      outcome: "error",
      resultText: "no",
      error: { message: "no" },
    });
    expect(task).toMatchObject({ status: "failed", result: "no", error: { message: "no" } });
    expect(task).not.toHaveProperty("outcome");
    expect(task).not.toHaveProperty("tool_result");
  });

  it("keeps an update from changing the item's identity or status", () => {
    const item = openToolItem("webFetch", call({ url: "https://example.test/" }));
    const updated = updateToolItem(item, { status_code: 200, id: "other", status: "completed" });
    expect(updated).toMatchObject({ id: "itm_1", status: "in_progress", status_code: 200 });
  });

  it("refuses a reported field that does not fit the item's schema, naming the call and the field", () => {
    const item = openToolItem("commandExecution", call({ command: "ls", cwd: "/w" }));
    expect(() =>
      finishToolItem(item, { status: "completed", outcome: "success", resultText: "", reported: { exit_code: "zero" } }),
    ).toThrow(/commandExecution item of tool call call_1.*exit_code/);
    expect(() => openToolItem("fileChange", call({ path: "/w/a" }))).toThrow(/change_kind/);
  });

  it("counts as a tool item every item type with a tool call id, and closes a cut-off download as cancelled", () => {
    const download = {
      type: "download" as const,
      id: "itm_2",
      status: "in_progress" as const,
      url: "https://example.test/f",
      tool_call_id: "call_2",
      arguments: {},
    };
    expect(isToolItem(download)).toBe(true);
    expect(isToolItem({ type: "agentMessage", id: "itm_3", status: "in_progress", text: "" })).toBe(false);
    const cut = finishToolItem(download, {
      status: "cancelled",
      outcome: "cancelled",
      error: { message: "stopped" },
      resultText: "stopped",
    });
    expect(cut).toMatchObject({ status: "cancelled", outcome: "cancelled", tool_result: "stopped", error: { message: "stopped" } });
  });
});
