/**
 * The `leads` rule kind: a notification that may be absent, but when it comes, comes once
 * and before every notification of its `before` set (the agent-gateway protocol uses it for
 * context/compressed, which comes before any item of the turn).
 */
import { describe, expect, it } from "vitest";
import { createOrderingEngine, type OrderingRule } from "../../packages/rpc/src/index.js";

const rule: OrderingRule = {
  id: "NOTICE-FIRST",
  requirement: "REQ-NOTICE-FIRST",
  description: "job/notice comes once, before any progress",
  scope: [{ name: "job", pointer: "/job" }],
  kind: "leads",
  notification: "job/notice",
  before: ["job/progress"],
};
const note = (method: string, job: string) => ({ jsonrpc: "2.0", method, params: { job } });

function messages(methods: [string, string][]) {
  const engine = createOrderingEngine([rule]);
  for (const [method, job] of methods) engine.accept(note(method, job), "server_to_client");
  engine.end();
  return engine.violations.map((v) => [v.rule, v.frameIndex, v.message]);
}

describe("the leads rule", () => {
  it("accepts a scope without the notification, and one where it comes first", () => {
    expect(
      messages([
        ["job/progress", "a"],
        ["job/notice", "b"],
        ["job/progress", "b"],
        ["job/progress", "b"],
      ]),
    ).toEqual([]);
  });

  it("reports the notification after a notification of its before set, in the same scope only", () => {
    expect(
      messages([
        ["job/notice", "b"],
        ["job/progress", "a"],
        ["job/progress", "a"],
        ["job/notice", "a"],
      ]),
    ).toEqual([["NOTICE-FIRST", 3, 'job/notice for job "a" at frame 3 came after job/progress at frame 1; it must come first']]);
  });

  it("reports a second notification in the same scope", () => {
    expect(
      messages([
        ["job/notice", "a"],
        ["job/notice", "a"],
      ]),
    ).toEqual([["NOTICE-FIRST", 1, 'job/notice for job "a" at frame 1 is a second one: it already came at frame 0']]);
  });
});
