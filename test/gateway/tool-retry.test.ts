/**
 * Tool deadlines and retries end to end: web_fetch against a local server that fails a
 * given number of times, and a shell command over its timeout, with the scripted provider
 * over the in-memory pair.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import { flatEvents } from "./events.js";
import { ofTurn, script, startHarness, text, type Harness } from "./harness.js";

let h: Harness;
let server: Server | undefined;
afterEach(async () => {
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A server whose first `failures` requests get 503, and later ones 200 "fresh data". */
async function flakyServer(failures: number): Promise<string> {
  let seen = 0;
  server = createServer((_req, res) => {
    seen++;
    res.writeHead(seen <= failures ? 503 : 200, { "content-type": "text/plain" });
    res.end(seen <= failures ? "busy" : "fresh data");
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/data`;
}

const TOOL_RETRY = new Set(["item/tool/retry_scheduled", "item/tool/retry_resolved", "item/tool/retry_exhausted", "item/timeout_detected"]);
const toolRetryEvents = (ns: readonly AnyNotification[]) => flatEvents(ns, TOOL_RETRY);
const completedTool = (ns: readonly AnyNotification[], type: string) =>
  ns
    .filter((n): n is Extract<AnyNotification, { method: "item/completed" }> => n.method === "item/completed")
    .map((n) => n.params.item)
    .find((i) => i.type === type);

const retry = { max_attempts: 3, initial_delay_ms: 1, max_delay_ms: 2 };

/** A turn that fetches from a server failing `failures` times, then answers; resolves when it ended. */
async function fetchTurn(failures: number, turnId: string) {
  const url = await flakyServer(failures);
  h = await startHarness({ config: { tools: { retry } } });
  const thread = await h.thread();
  const end = await h.runTurn({
    thread_id: thread,
    turn_id: turnId,
    input: text(script({ tool: "web_fetch", args: { url } }, { say: "that is what the site said" })),
  });
  const events = ofTurn(h.received, turnId);
  return { end, events, item: completedTool(events, "webFetch")! };
}

describe("a retryable tool failure", () => {
  it("is retried until an attempt succeeds: retry_scheduled for each retry, then retry_resolved", async () => {
    const { end, events, item } = await fetchTurn(2, "trn_flaky");
    expect(end.method).toBe("turn/completed");
    expect(item).toMatchObject({ status: "completed", outcome: "success", status_code: 200, content: "fresh data" });
    expect(toolRetryEvents(events)).toEqual([
      expect.objectContaining({
        method: "item/tool/retry_scheduled",
        item_id: item.id,
        tool_name: "web_fetch",
        attempt: 2,
        max_attempts: 3,
        delay_ms: 1,
      }),
      expect.objectContaining({
        method: "item/tool/retry_scheduled",
        item_id: item.id,
        tool_name: "web_fetch",
        attempt: 3,
        max_attempts: 3,
        delay_ms: 2,
      }),
      expect.objectContaining({
        method: "item/tool/retry_resolved",
        item_id: item.id,
        tool_name: "web_fetch",
        attempts: 3,
        outcome: "succeeded",
      }),
    ]);
    expect((toolRetryEvents(events)[0] as { error: string }).error).toMatch(/^HTTP 503/);
  });

  it("gives up after the policy's attempts with retry_exhausted; the model sees the last failure and the turn goes on", async () => {
    const { end, events, item } = await fetchTurn(100, "trn_down");
    expect(end.method).toBe("turn/completed");
    expect(item).toMatchObject({ status: "failed", outcome: "error", status_code: 503 });
    expect(toolRetryEvents(events).map((e) => e.method)).toEqual([
      "item/tool/retry_scheduled",
      "item/tool/retry_scheduled",
      "item/tool/retry_exhausted",
    ]);
    expect(toolRetryEvents(events)[2]).toMatchObject({ item_id: item.id, tool_name: "web_fetch", attempts: 3 });
  });
});

describe("a tool over its deadline", () => {
  it("is reported with item/timeout_detected and ends timed_out, without a retry", { timeout: 15_000 }, async () => {
    h = await startHarness({ config: { tools: { retry } } });
    const thread = await h.thread();
    const end = await h.runTurn({
      thread_id: thread,
      turn_id: "trn_slow",
      input: text(script({ tool: "shell", args: { command: "sleep 20", timeout_ms: 100 } }, { say: "too slow" })),
    });
    expect(end.method).toBe("turn/completed");
    const events = ofTurn(h.received, "trn_slow");
    const item = completedTool(events, "commandExecution")!;
    expect(item).toMatchObject({ status: "failed", outcome: "timed_out", timed_out: true });
    const detected = toolRetryEvents(events);
    expect(detected).toEqual([
      expect.objectContaining({ method: "item/timeout_detected", item_id: item.id, deadline_ms: 100, attempt: 1 }),
    ]);
    expect((detected[0] as { elapsed_ms: number }).elapsed_ms).toBeGreaterThanOrEqual(100);
  });
});
