/**
 * The reference gateway run in this process behind a wrapper that sees every frame both
 * ways and may pass it on, change it, hold it, drop it or add its own: how the tests build
 * the broken gateways a check must catch, without any switch inside the gateway.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadCatalogue, selectIds } from "../../packages/conformance/src/catalogue.js";
import { QUESTION_TIMEOUT_MS, runCertification, type CertifyOptions } from "../../packages/conformance/src/certify.js";
import { ModelServer } from "../../packages/conformance/src/model-server.js";
import type { Capability } from "../../packages/conformance/src/results.js";
import { createInMemoryPair, type Transport } from "../../packages/rpc/src/index.js";
import { resolveConfig } from "../../packages/gateway/src/config.js";
import { createGateway } from "../../packages/gateway/src/serve.js";
import { MemoryEventStore } from "../../packages/gateway/src/store/memory.js";
import { CLAIMED } from "./reference.js";

export type Json = { jsonrpc?: string; id?: string | number | null; method?: string; params?: any; result?: any; error?: unknown };

export interface Wrapper {
  /** A frame the gateway sends to the harness: `pass` sends a frame on to the harness. */
  out?(frame: Json, pass: (frame: Json) => void, inject: (frame: Json) => void): void;
  /** A frame the harness sends to the gateway: `pass` delivers a frame to the gateway. */
  in?(frame: Json, pass: (frame: Json) => void): void;
}

const all = loadCatalogue().map((r) => r.id);

export interface WrappedRun {
  readonly patterns: readonly string[];
  readonly capabilities?: readonly Capability[];
  readonly level?: "core" | "full";
  /** The suite version to certify against (default: the current one). */
  readonly suite?: string;
  readonly stepTimeoutMs?: number;
  readonly notices?: string[];
  readonly extra?: Partial<CertifyOptions>;
  /** Puts something between the gateway and the scripted model: given the model's URL, the URL the gateway uses. */
  readonly modelProxy?: (modelUrl: string) => Promise<{ url: string; close: () => Promise<void> }>;
}

/**
 * Certifies the wrapped reference gateway on the requirements `patterns` select. Frames
 * the wrapper injects towards the gateway carry ids starting `wrap-`; their responses
 * never reach the harness.
 */
export async function certifyWrapped(wrapper: Wrapper, run: WrappedRun) {
  const model = new ModelServer(run.extra?.toolMap ? { toolMap: run.extra.toolMap } : {});
  const modelUrl = await model.start();
  const proxy = run.modelProxy ? await run.modelProxy(modelUrl) : undefined;
  const providerUrl = proxy?.url ?? modelUrl;
  const gateway = createGateway(
    new MemoryEventStore(),
    resolveConfig(
      { tools: { default_cwd: mkdtempSync(join(tmpdir(), "turnspec-wrapped-")) }, questions: { timeout_ms: QUESTION_TIMEOUT_MS } },
      { providerUrl },
    ),
    () => undefined,
  );
  const [clientSide, gatewaySide] = createInMemoryPair();
  // What the gateway is connected to: the gateway's end of the pair, seen through the wrapper.
  const wrapped: Transport = {
    start: () => gatewaySide.start(),
    close: () => gatewaySide.close(),
    send: async (text) => {
      const frame = JSON.parse(text) as Json;
      if (typeof frame.id === "string" && frame.id.startsWith("wrap-")) return;
      if (wrapper.out) wrapper.out(frame, pass, inject);
      else pass(frame);
    },
  };
  const pass = (frame: Json) => void gatewaySide.send(JSON.stringify(frame)).catch(() => undefined);
  const inject = (frame: Json) => wrapped.onmessage?.(JSON.stringify(frame));
  gatewaySide.onmessage = (text) => {
    let frame: Json;
    try {
      frame = JSON.parse(text) as Json;
    } catch {
      return wrapped.onmessage?.(text);
    }
    if (wrapper.in) wrapper.in(frame, (f) => wrapped.onmessage?.(JSON.stringify(f)));
    else wrapped.onmessage?.(text);
  };
  gatewaySide.onclose = () => wrapped.onclose?.();
  gatewaySide.onerror = (error) => wrapped.onerror?.(error);
  gateway.connect(wrapped);
  try {
    const report = await runCertification({
      transport: clientSide,
      model,
      capabilities: run.capabilities ?? CLAIMED,
      level: run.level ?? "full",
      ...(run.suite === undefined ? {} : { suite: run.suite }),
      selected: selectIds([...run.patterns], all).ids,
      expectedFailures: [],
      stepTimeoutMs: run.stepTimeoutMs ?? 4000,
      quietMs: 500,
      noticeAfterMs: 500,
      ...(run.notices ? { onNotice: (text: string) => run.notices!.push(text) } : {}),
      ...run.extra,
    });
    const by = (outcome: string) => report.results.filter((r) => r.outcome === outcome).map((r) => r.id);
    const result = (id: string) => report.results.find((r) => r.id === id)!;
    return { report, failed: by("fail"), errored: by("error"), passed: by("pass"), result };
  } finally {
    await gateway.close();
    await proxy?.close();
    await model.close();
  }
}
