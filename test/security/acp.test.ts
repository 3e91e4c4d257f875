/**
 * An ACP agent's requests into the gateway, attacked: fs/read_text_file and
 * fs/write_text_file with a relative path (which the gate would judge in the thread's folder
 * and the file system would open in the gateway's), through links out of the roots, and
 * terminal/create under a restricted mode, which must run confined as the gateway's own
 * shell tool does. The agent is the SDK-built fixture playing the steps of its prompt.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnItem, TurnPermissionMode } from "../../generated/types.js";
import { detectBubblewrap } from "../../packages/gateway/src/sandbox/bubblewrap.js";
import { ofTurn, startHarness, text, type Harness } from "../gateway/harness.js";

const AGENT = join(import.meta.dirname, "..", "fixtures", "acp", "agent.mjs");
const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-acp-attack-")));
const outside = join(dir, "outside");
mkdirSync(outside);
writeFileSync(join(outside, "secret.txt"), "the secret outside");
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  // What the relative-path attack leaves in the gateway's folder when it works.
  rmSync(join(process.cwd(), "planted-by-agent.txt"), { force: true });
});

let h: Harness | undefined;
afterEach(async () => {
  expect(h?.protocolErrors ?? []).toEqual([]);
  await h?.close();
  h = undefined;
});

const said = (ns: readonly AnyNotification[]) =>
  ns
    .flatMap((n) => (n.method === "item/completed" ? [n.params.item] : []))
    .filter((i): i is Extract<TurnItem, { type: "agentMessage" }> => i.type === "agentMessage")
    .map((i) => i.text)
    .join("");

/**
 * Runs the agent's steps in a fresh thread under `mode`, answering each approval with
 * `answer`; `steps` may be a function of the thread's folder, run before the turn starts.
 */
async function agentTurn(mode: TurnPermissionMode, steps: unknown[] | ((cwd: string) => unknown[]), answer: "allow_once" | "deny") {
  h = await startHarness({ config: { acp_agents: { fixture: { command: process.execPath, args: [AGENT], startup_timeout_ms: 10_000 } } } });
  const gw = h;
  const cwd = realpathSync(gw.cwd);
  const played = typeof steps === "function" ? steps(cwd) : steps;
  const thread = await gw.thread({ cwd });
  const turnId = `trn_acp_${mode}_${answer}`;
  const terminal = gw.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);
  const answered = new Set<string>();
  const pump = setInterval(() => {
    for (const n of gw.received) {
      if (n.method !== "turn/permission/request/opened" || answered.has(n.params.request.request_id)) continue;
      answered.add(n.params.request.request_id);
      void gw.client
        .turnPermissionRequestRespond({
          request_id: n.params.request.request_id,
          resolve_token: n.params.request.resolve_token,
          resolution: answer,
        })
        .catch(() => undefined);
    }
  }, 20);
  await gw.client.turnStart({
    thread_id: thread,
    turn_id: turnId,
    execution_backend: { type: "acpAgentRuntime", runtime_id: "fixture" },
    permission_profile: { mode },
    input: text(JSON.stringify(played)),
  });
  await terminal.finally(() => clearInterval(pump));
  const events = ofTurn(gw.received, turnId);
  return { cwd, events, said: said(events), asked: events.filter((n) => n.method === "turn/permission/request/opened") };
}

describe("an ACP agent's fs requests", () => {
  it("are refused with a relative path, which would be read in the gateway's own folder", async () => {
    // package.json is in the gateway process's folder (this repository), not in the thread's.
    const { said: out } = await agentTurn(
      "supervised",
      [{ read: "package.json" }, { write: "planted-by-agent.txt", content: "x" }, { say: "done" }],
      "allow_once",
    );
    expect(out).not.toContain('"name": "turnspec"');
    expect(out).toContain('error: Invalid params: "package.json" is not an absolute path: ACP names files by absolute paths');
    expect(existsSync(join(process.cwd(), "planted-by-agent.txt"))).toBe(false);
  }, 60_000);

  it("through a link out of the roots are asked about, and a denial holds for reads and writes", async () => {
    const run = await agentTurn(
      "auto_accept_edits",
      (cwd) => {
        symlinkSync(join(outside, "secret.txt"), join(cwd, "looks-inside.txt"));
        symlinkSync(outside, join(cwd, "folder-link"));
        return [
          { read: join(cwd, "looks-inside.txt") },
          { write: join(cwd, "folder-link", "planted.txt"), content: "planted" },
          { say: "done" },
        ];
      },
      "deny",
    );
    expect(run.asked.map((n) => (n.params as { request: { action: string } }).request.action)).toEqual(["file_read", "file_write"]);
    expect(run.said).not.toContain("the secret outside");
    expect(existsSync(join(outside, "planted.txt"))).toBe(false);
  }, 60_000);
});

describe.runIf(detectBubblewrap())("an ACP agent's terminal", () => {
  it("runs under the turn's sandbox once approved: nothing is written outside the roots", async () => {
    const target = join(outside, "from-terminal.txt");
    const { said: out, asked } = await agentTurn(
      "supervised",
      [{ run: "sh", args: ["-c", `echo planted > ${target}; echo exit-$?`] }, { say: "done" }],
      "allow_once",
    );
    expect(asked.length).toBeGreaterThan(0);
    expect(existsSync(target)).toBe(false);
    expect(out).toMatch(/ran: .*exit-[12]/s);
  }, 60_000);
});
