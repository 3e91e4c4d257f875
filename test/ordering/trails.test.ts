/**
 * The `trails` rule kind: a notification that may be absent, but when it comes, comes once
 * and after every notification of its `after` set (the agent-gateway protocol uses it for an
 * invite delivery and the wallet prompts, which come after the turn's last item).
 */
import { describe, expect, it } from "vitest";
import { createOrderingEngine, type OrderingRule } from "../../packages/rpc/src/index.js";

const rule: OrderingRule = {
  id: "SUMMARY-LAST",
  requirement: "REQ-SUMMARY-LAST",
  description: "job/summary comes once, after all progress",
  scope: [{ name: "job", pointer: "/job" }],
  kind: "trails",
  notification: "job/summary",
  after: ["job/progress"],
};
const note = (method: string, job: string) => ({ jsonrpc: "2.0", method, params: { job } });

function messages(methods: [string, string][]) {
  const engine = createOrderingEngine([rule]);
  for (const [method, job] of methods) engine.accept(note(method, job), "server_to_client");
  engine.end();
  return engine.violations.map((v) => [v.rule, v.frameIndex, v.message]);
}

describe("the trails rule", () => {
  it("accepts a scope without the notification, and one where it comes last", () => {
    expect(
      messages([
        ["job/progress", "a"],
        ["job/progress", "b"],
        ["job/progress", "b"],
        ["job/summary", "b"],
        ["job/progress", "a"],
      ]),
    ).toEqual([]);
  });

  it("reports a notification of its after set that follows it, once per scope, in the same scope only", () => {
    expect(
      messages([
        ["job/summary", "a"],
        ["job/progress", "b"],
        ["job/progress", "a"],
        ["job/progress", "a"],
      ]),
    ).toEqual([
      ["SUMMARY-LAST", 2, 'job/progress for job "a" at frame 2 came after job/summary at frame 0; job/summary must come after it'],
    ]);
  });

  it("reports a second notification in the same scope", () => {
    expect(
      messages([
        ["job/summary", "a"],
        ["job/summary", "a"],
      ]),
    ).toEqual([["SUMMARY-LAST", 1, 'job/summary for job "a" at frame 1 is a second one: it already came at frame 0']]);
  });
});
