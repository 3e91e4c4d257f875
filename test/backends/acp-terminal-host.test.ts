/**
 * An ACP agent's terminal is a command the gateway runs for the turn, as its own shell
 * tool's are: when the gateway process dies, however it dies (SIGKILL here), the terminal's
 * command and whatever it left in the background die with it. A `turnspec serve --stdio`
 * process runs a turn on the fixture agent (test/fixtures/acp/agent.mjs), whose terminal
 * writes its pids and sleeps; the gateway is killed while the agent waits for it to exit.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spawnStdioTransport } from "../../packages/rpc/src/transport/child-process.js";
import { startStrictClient } from "../../bench/strict-client.js";

const AGENT = join(import.meta.dirname, "..", "fixtures", "acp", "agent.mjs");
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Whether a process runs (a zombie waiting for its reaper does not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !execFileSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" })
      .trim()
      .startsWith("Z");
  } catch {
    return false;
  }
}

describe("an ACP agent's terminal", () => {
  it("dies, with what it left in the background, when the gateway is killed", { timeout: 30_000 }, async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-acp-terminal-")));
    const config = join(dir, "gateway.json");
    writeFileSync(
      config,
      JSON.stringify({ acp_agents: { fixture: { command: process.execPath, args: [AGENT], startup_timeout_ms: 10_000 } } }),
    );
    const pids = join(dir, "pids");
    const transport = spawnStdioTransport("node", ["bin/turnspec.js", "serve", "--stdio", "--memory", "--config", config], {
      stderr: "collect",
    });
    const s = await startStrictClient(transport);
    cleanups.push(() => s.client.close().catch(() => undefined));
    const { thread } = await s.client.threadStart({ cwd: dir });
    const steps = [{ run: "/bin/sh", args: ["-c", `sleep 60 & echo $$ $! > ${pids}.tmp; mv ${pids}.tmp ${pids}; sleep 60`] }];
    await s.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_terminal",
      execution_backend: { type: "acpAgentRuntime", runtime_id: "fixture" },
      input: [{ type: "text", text: JSON.stringify(steps), textElements: [] }],
    });
    await expect.poll(() => existsSync(pids), { timeout: 15_000 }).toBe(true);
    const started = readFileSync(pids, "utf8").trim().split(" ").map(Number);
    expect(started.filter(alive)).toEqual(started);
    transport.child.kill("SIGKILL");
    // Gone once the gateway is: nothing of the terminal's command runs on.
    await expect.poll(() => started.filter(alive), { timeout: 5_000 }).toEqual([]);
  });
});
