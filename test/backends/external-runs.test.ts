/**
 * The run ACP agents and CLI runtimes share (backends/external-run.ts), driven through
 * turn/start on each: the ACP fixture agent (test/fixtures/acp/agent.mjs) and a stand-in for
 * `codex app-server` (test/fixtures/codex/app-server.mjs), so the CLI runtime's run is
 * tested where the real Codex CLI is not installed. Each case holds for both runtimes.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { TurnExecutionWindowCounts, TurnStartParams } from "../../generated/types.js";
import { startHarness, text, type Harness } from "../gateway/harness.js";

const ACP_AGENT = join(import.meta.dirname, "..", "fixtures", "acp", "agent.mjs");
const APP_SERVER = join(import.meta.dirname, "..", "fixtures", "codex", "app-server.mjs");

interface Runtime {
  readonly name: string;
  readonly config: NonNullable<Parameters<typeof startHarness>[0]>["config"];
  /** A turn that streams some text and then runs until it is cancelled. */
  readonly longTurn: (threadId: string, turnId: string) => TurnStartParams;
}

const RUNTIMES: Runtime[] = [
  {
    name: "an ACP agent",
    config: { acp_agents: { fixture: { command: process.execPath, args: [ACP_AGENT], startup_timeout_ms: 10_000 } } },
    longTurn: (thread_id, turn_id) => ({
      thread_id,
      turn_id,
      execution_backend: { type: "acpAgentRuntime", runtime_id: "fixture" },
      input: text(JSON.stringify([{ say: "working" }, { wait_for_cancel: true }])),
    }),
  },
  {
    name: "a CLI runtime",
    config: {
      cli_runtimes: {
        fixture: {
          kind: "codex",
          command: process.execPath,
          args: [APP_SERVER],
          base_url: "http://127.0.0.1:9/v1",
          model: "m",
          codex_home: mkdtempSync(join(tmpdir(), "turnspec-codex-home-")),
        },
      },
    },
    longTurn: (thread_id, turn_id) => ({
      thread_id,
      turn_id,
      execution_backend: { type: "cliAgentRuntime", runtime_id: "fixture", runtime_kind: "codex" },
      input: text("Think until told to stop"),
    }),
  },
];

let h: Harness | undefined;
afterEach(async () => {
  if (!h) return;
  expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
  await h.close();
  h = undefined;
});

describe.each(RUNTIMES)("a turn on $name", (runtime) => {
  it("is blocked by a stop of the gateway with the wall-clock time its window ran", async () => {
    let skew = 0;
    h = await startHarness({ config: runtime.config, now: () => new Date(Date.now() + skew) });
    const thread = await h.thread();
    await h.client.turnStart(runtime.longTurn(thread, "trn_stop"));
    await h.waitFor((n) => n.method === "item/agent_message/delta" && n.params.turn_id === "trn_stop");
    // The gateway's clock moves on 7 s while the runtime works.
    skew = 7_000;
    await h.gateway.close();
    expect(h.gateway.turnState("trn_stop")?.turn).toMatchObject({
      status: "Blocked",
      blocked: { reason: "runtime_shutdown_continuation" },
    });
    const exhausted = h.store.events("trn_stop").find((e) => e.method === "turn/execution_window/exhausted");
    const observed = exhausted?.params.observed as TurnExecutionWindowCounts;
    expect(observed.wall_clock_ms).toBeGreaterThanOrEqual(7_000);
    expect(observed.wall_clock_ms).toBeLessThan(7_000 + 60_000);
  }, 60_000);

  it("ends Interrupted on turn/cancel, passing the cancel on to the runtime", async () => {
    h = await startHarness({ config: runtime.config });
    const thread = await h.thread();
    await h.client.turnStart(runtime.longTurn(thread, "trn_cancel"));
    await h.waitFor((n) => n.method === "item/agent_message/delta" && n.params.turn_id === "trn_cancel");
    const { turn } = await h.client.turnCancel({ thread_id: thread, turn_id: "trn_cancel" });
    expect(turn).toMatchObject({ status: "Interrupted", error: { kind: "cancelled" } });
    // The message the runtime was streaming is closed with the turn.
    const message = h.gateway.turnState("trn_cancel")!.items.find((i) => i.type === "agentMessage");
    expect(message?.status).not.toBe("in_progress");
  }, 60_000);

  it("refuses to resume the turn after a stop: the runtime's conversation went with the run", async () => {
    h = await startHarness({ config: runtime.config });
    const thread = await h.thread();
    await h.client.turnStart(runtime.longTurn(thread, "trn_resume"));
    await h.waitFor((n) => n.method === "item/agent_message/delta" && n.params.turn_id === "trn_resume");
    await h.gateway.close();
    await h.client.turnResume({ thread_id: thread, turn_id: "trn_resume" });
    const end = await h.waitFor((n) => n.method === "turn/failed" && n.params.turn_id === "trn_resume");
    expect(end).toMatchObject({
      params: {
        error: {
          kind: "provider_error",
          message: expect.stringMatching(
            /^the (ACP agent|CLI runtime) fixture ran this turn in its own (session|thread), which cannot be continued/,
          ),
        },
      },
    });
  }, 60_000);
});
