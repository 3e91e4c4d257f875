/**
 * How the harness judges what goes wrong, against the reference gateway run in this
 * process with its outgoing frames tampered with: an invalid frame fails the requirement
 * being exercised and is shown; a gateway that goes away fails what was running with why.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadCatalogue, selectIds } from "../../packages/conformance/src/catalogue.js";
import { runCertification } from "../../packages/conformance/src/certify.js";
import { ModelServer } from "../../packages/conformance/src/model-server.js";
import { Failure, isAbort, ScenarioContext } from "../../packages/conformance/src/scenario.js";
import { GatewaySession } from "../../packages/conformance/src/session.js";
import { resolveConfig } from "../../packages/gateway/src/config.js";
import { createInMemoryPair, RpcError, type Transport } from "../../packages/rpc/src/index.js";
import { createGateway } from "../../packages/gateway/src/serve.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import { CLAIMED } from "./reference.js";

const all = loadCatalogue().map((r) => r.id);
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Certifies an in-process reference gateway whose every outgoing frame goes through `tamper`. */
async function certifyTampered(patterns: string[], tamper: (frame: string, send: (f: string) => Promise<void>, gatewaySide: Transport) => Promise<void>) {
  const model = new ModelServer();
  const providerUrl = await model.start();
  const store = new MemoryEventStore();
  const gateway = createGateway(store, resolveConfig({ tools: { default_cwd: mkdtempSync(join(tmpdir(), "turnspec-harness-")) } }, { providerUrl }), () => undefined);
  cleanups.push(() => model.close(), () => gateway.close());
  const [clientSide, gatewaySide] = createInMemoryPair();
  const send = gatewaySide.send.bind(gatewaySide);
  gatewaySide.send = (frame) => tamper(frame, send, gatewaySide);
  gateway.connect(gatewaySide);
  return runCertification({
    transport: clientSide,
    model,
    capabilities: CLAIMED,
    level: "full",
    selected: selectIds(patterns, all).ids,
    expectedFailures: [],
    stepTimeoutMs: 4000,
    quietMs: 500,
  });
}

describe("the certification harness", () => {
  it("fails the requirement being exercised when a frame is invalid, and keeps the frame and the transcript", async () => {
    const report = await certifyTampered(["TURN-COMPLETED-NOTIFIED"], (frame, send) => {
      const message = JSON.parse(frame) as { method?: string; params?: Record<string, unknown> };
      return send(message.method === "turn/completed" ? JSON.stringify({ ...message, params: { ...message.params, unexpected_field: 1 } }) : frame);
    });
    const result = report.results.find((r) => r.id === "TURN-COMPLETED-NOTIFIED")!;
    expect(result.outcome).toBe("fail");
    expect(result.message).toMatch(/invalid frame: notification turn\/completed is invalid/);
    expect(result.invalidFrame).toMatchObject({ method: "turn/completed", params: { unexpected_field: 1 } });
    expect(result.transcript?.some((e) => e.direction === "sent" && (e.frame as { method?: string }).method === "turn/start")).toBe(true);
    expect(report.certified).toBe(false);
  });

  it("fails the step that was running when the gateway went away, and reports what follows as not reached with the cause", async () => {
    const report = await certifyTampered(["TURN-START-RESPONSE", "TURN-STARTED-NOTIFIED", "TURN-ORDER-*"], async (frame, send, gatewaySide) => {
      if ((JSON.parse(frame) as { method?: string }).method === "turn/started") return gatewaySide.close();
      return send(frame);
    });
    const ran = report.results.filter((r) => r.message !== "not selected by --only/--skip" && !r.message?.startsWith("capability"));
    expect(ran.map((r) => r.id).sort()).toEqual(["TURN-ORDER-BLOCKED-QUIET", "TURN-ORDER-COMPACTED-FIRST", "TURN-ORDER-ONE-TERMINAL", "TURN-ORDER-SEQUENCE", "TURN-ORDER-STARTED-FIRST", "TURN-START-RESPONSE", "TURN-STARTED-NOTIFIED"]);
    // TURN-ORDER-COMPACTED-FIRST has a scenario of its own, whose step was running too.
    for (const id of ["TURN-STARTED-NOTIFIED", "TURN-ORDER-COMPACTED-FIRST"]) {
      expect(ran.find((r) => r.id === id)).toMatchObject({ outcome: "fail", message: expect.stringContaining("the gateway closed the connection") });
    }
    for (const r of ran.filter((r) => r.id.startsWith("TURN-ORDER-") && r.id !== "TURN-ORDER-COMPACTED-FIRST")) {
      expect({ id: r.id, outcome: r.outcome, message: r.message }).toMatchObject({ outcome: "skipped", message: expect.stringMatching(/^not reached: the run stopped early: the gateway closed the connection/) });
    }
    expect(report.achievedLevel).toBe("none");
  });
});

describe("a gateway command that dies", () => {
  it("fails the first step of each scenario with how the process ended, the request in flight and the end of its stderr; the rest is not reached", async () => {
    const report = await runCertification({
      gatewayCmd: "sh -c 'echo the gateway is broken >&2; exit 3'",
      capabilities: CLAIMED,
      level: "core",
      selected: selectIds(["THREAD-*"], all).ids,
      expectedFailures: [],
    });
    const ran = report.results.filter((r) => r.id.startsWith("THREAD-"));
    const exit = /the gateway exited with code 3; its stderr ends with:\nthe gateway is broken/;
    for (const r of ran) expect(r.message).toMatch(exit);
    const failed = ran.filter((r) => r.outcome === "fail");
    expect(failed.length).toBeGreaterThan(0);
    for (const r of failed) expect(r.message).toMatch(/while .*thread\/start \(id \d+, from "[^"]+"\).* in flight/);
    for (const r of ran.filter((r) => r.outcome !== "fail")) expect(r).toMatchObject({ outcome: "skipped", message: expect.stringMatching(/^not reached: /) });
    expect(report.certified).toBe(false);
  });
});

describe("a scenario step", () => {
  /** A context over a connection nobody answers: enough to judge what a step throws. */
  function context() {
    const [clientSide] = createInMemoryPair();
    const session = new GatewaySession(clientSide, performance.now(), { requestTimeoutMs: 50 });
    const model = new ModelServer();
    return new ScenarioContext({ session, channel: session.channel(), checks: ["X"], model, token: ModelServer.newToken(), idPrefix: "t", gatewayId: "gw_local", stepTimeoutMs: 50, quietMs: 50, missingTerminal: () => undefined });
  }

  it.each([
    ["a wrong answer from the gateway", "fail", /the gateway said no/, () => Promise.reject(new Failure("the gateway said no"))],
    ["an error response from the gateway", "fail", /error -32002 \(turn_not_found\)/, () => Promise.reject(new RpcError(-32002, "Turn not found", { reason: "turn_not_found" }))],
    ["something the gateway never sent", "fail", /^the gateway never sent something \(waited 50 ms\)$/, (ctx: ScenarioContext) => ctx.waitFor("something", () => false)],
    ["a request the gateway never answers", "fail", /^the gateway never answered: thread\/get got no response within 50 ms$/, (ctx: ScenarioContext) => ctx.client.threadGet({ thread_id: "thr_x" })],
    ["a fault of the harness itself", "error", /harness fault: TypeError: boom/, () => Promise.reject(new TypeError("boom"))],
  ] as const)("judges %s as %s", async (_what, outcome, message, body) => {
    const ctx = context();
    await expect(ctx.step("X", (): Promise<unknown> => body(ctx))).rejects.toSatisfy(isAbort);
    expect(ctx.records.get("X")).toMatchObject({ outcome, message: expect.stringMatching(message) });
  });
});
