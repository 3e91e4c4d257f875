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
async function certifyTampered(
  patterns: string[],
  tamper: (frame: string, send: (f: string) => Promise<void>, gatewaySide: Transport) => Promise<void>,
) {
  const model = new ModelServer();
  const providerUrl = await model.start();
  const store = new MemoryEventStore();
  const gateway = createGateway(
    store,
    resolveConfig({ tools: { default_cwd: mkdtempSync(join(tmpdir(), "turnspec-harness-")) } }, { providerUrl }),
    () => undefined,
  );
  cleanups.push(
    () => model.close(),
    () => gateway.close(),
  );
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
      return send(
        message.method === "turn/completed" ? JSON.stringify({ ...message, params: { ...message.params, unexpected_field: 1 } }) : frame,
      );
    });
    const result = report.results.find((r) => r.id === "TURN-COMPLETED-NOTIFIED")!;
    expect(result.outcome).toBe("fail");
    expect(result.message).toMatch(/invalid frame: notification turn\/completed is invalid/);
    expect(result.invalidFrame).toMatchObject({ method: "turn/completed", params: { unexpected_field: 1 } });
    expect(result.transcript?.some((e) => e.direction === "sent" && (e.frame as { method?: string }).method === "turn/start")).toBe(true);
    expect(report.certified).toBe(false);
  });

  it("fails the one step the gateway's going away interrupted, and reports what follows as not reached, naming that failure", async () => {
    const report = await certifyTampered(
      ["TURN-START-RESPONSE", "TURN-STARTED-NOTIFIED", "TURN-ORDER-*"],
      async (frame, send, gatewaySide) => {
        if ((JSON.parse(frame) as { method?: string }).method === "turn/started") return gatewaySide.close();
        return send(frame);
      },
    );
    const ran = report.results.filter((r) => r.message !== "not selected by --only/--skip" && !r.message?.startsWith("capability"));
    expect(ran.map((r) => r.id).sort()).toEqual([
      "TURN-ORDER-BLOCKED-QUIET",
      "TURN-ORDER-COMPACTED-FIRST",
      "TURN-ORDER-ONE-TERMINAL",
      "TURN-ORDER-SEQUENCE",
      "TURN-ORDER-STARTED-FIRST",
      "TURN-ORDER-SURFACED-LAST",
      "TURN-START-RESPONSE",
      "TURN-STARTED-NOTIFIED",
    ]);
    expect(report.stopped).toMatchObject({
      summary: "the gateway closed the connection",
      after: { frame: expect.objectContaining({ method: "turn/start" }) },
    });
    const blamed = report.stopped!.requirement!;
    // One of the steps waiting on their turn's turn/started: the one whose scenario sent the last frame.
    expect(["TURN-STARTED-NOTIFIED", "TURN-ORDER-COMPACTED-FIRST", "TURN-ORDER-SURFACED-LAST"]).toContain(blamed);
    expect(ran.filter((r) => r.outcome === "fail")).toEqual([
      expect.objectContaining({
        id: blamed,
        message: expect.stringMatching(/^the gateway closed the connection, after the suite sent \{.*"method":"turn\/start"/),
      }),
    ]);
    for (const r of ran.filter((r) => r.id !== blamed && r.id !== "TURN-START-RESPONSE")) {
      expect({ id: r.id, outcome: r.outcome, message: r.message }).toMatchObject({
        outcome: "not_reached",
        message: expect.stringContaining(`the gateway closed the connection (reported under ${blamed})`),
      });
    }
    expect(report.stopped!.notReached).toBe(ran.filter((r) => r.outcome === "not_reached").length);
    expect(report.achievedLevel).toBe("none");
  });
});

describe("a gateway command that dies", () => {
  it("is told once: how the process ended and the end of its stderr as the run's stop, one failure, the rest not reached", async () => {
    const report = await runCertification({
      gatewayCmd: "sh -c 'echo the gateway is broken >&2; exit 3'",
      capabilities: CLAIMED,
      level: "core",
      selected: selectIds(["THREAD-*"], all).ids,
      expectedFailures: [],
    });
    expect(report.stopped).toMatchObject({
      summary: "the gateway exited with code 3",
      exitCode: 3,
      stderr: "the gateway is broken",
      inFlight: expect.arrayContaining([expect.objectContaining({ method: "thread/start" })]),
    });
    const ran = report.results.filter((r) => r.id.startsWith("THREAD-"));
    const failed = ran.filter((r) => r.outcome === "fail");
    expect(failed.map((r) => r.id)).toEqual([report.stopped!.requirement]);
    expect(failed[0]!.message).toMatch(/^the gateway exited with code 3, after the suite sent .*; unanswered: .*thread\/start \(id \d+\)/);
    for (const r of ran.filter((r) => r.outcome !== "fail"))
      expect(r).toMatchObject({
        outcome: "not_reached",
        message: `the gateway exited with code 3 (reported under ${report.stopped!.requirement})`,
      });
    // The stderr is the stop's, told once, not repeated under each requirement.
    expect(report.results.filter((r) => r.message?.includes("the gateway is broken"))).toEqual([]);
    expect(report.certified).toBe(false);
  });
});

describe("a scenario step", () => {
  /** A context over a connection nobody answers: enough to judge what a step throws. */
  function context() {
    const [clientSide] = createInMemoryPair();
    const session = new GatewaySession(clientSide, performance.now(), { requestTimeoutMs: 50 });
    const model = new ModelServer();
    return new ScenarioContext({
      session,
      channel: session.channel(),
      checks: ["X"],
      model,
      token: ModelServer.newToken(),
      idPrefix: "t",
      gatewayId: "gw_local",
      stepTimeoutMs: 50,
      quietMs: 50,
      missingTerminal: () => undefined,
    });
  }

  it.each([
    ["a wrong answer from the gateway", "fail", /the gateway said no/, () => Promise.reject(new Failure("the gateway said no"))],
    [
      "an error response from the gateway",
      "fail",
      /error -32002 \(turn_not_found\)/,
      () => Promise.reject(new RpcError(-32002, "Turn not found", { reason: "turn_not_found" })),
    ],
    [
      "something the gateway never sent",
      "fail",
      /^the gateway never sent something \(waited 50 ms\)$/,
      (ctx: ScenarioContext) => ctx.waitFor("something", () => false),
    ],
    [
      "a request the gateway never answers",
      "fail",
      /^the gateway never answered: thread\/get got no response within 50 ms$/,
      (ctx: ScenarioContext) => ctx.client.threadGet({ thread_id: "thr_x" }),
    ],
    ["a fault of the harness itself", "error", /harness fault: TypeError: boom/, () => Promise.reject(new TypeError("boom"))],
  ] as const)("judges %s as %s", async (_what, outcome, message, body) => {
    const ctx = context();
    await expect(ctx.step("X", (): Promise<unknown> => body(ctx))).rejects.toSatisfy(isAbort);
    expect(ctx.records.get("X")).toMatchObject({ outcome, message: expect.stringMatching(message) });
  });
});
