/** `turnspec serve --ag-ui 0`: the reference gateway behind the AG-UI bridge, driven by @ag-ui/client's HttpAgent. */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HttpAgent } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import { afterEach, describe, expect, it } from "vitest";

const children: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill();
});

/** Starts `turnspec serve --ag-ui 0` with `args`; resolves with the endpoint's URL, the token it printed and the process. */
async function serveAgUi(...args: string[]) {
  const child = spawn("node", ["bin/turnspec.js", "serve", "--ag-ui", "0", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  children.push(child);
  const { url, token } = await new Promise<{ url: string; token: string }>((resolve, reject) => {
    let err = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      err += chunk.toString();
      const found = /AG-UI endpoint on (http:\/\/\S+\/)/.exec(err);
      const token = /^token: (\S+)$/m.exec(err);
      if (found && token) resolve({ url: found[1]!, token: token[1]! });
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  return { url, token, child };
}

async function say({ url, token }: { url: string; token: string }, text: string, runId: string) {
  const agent = new HttpAgent({ url, threadId: "cli-thread", headers: { authorization: `Bearer ${token}` } });
  agent.messages = [{ id: "m1", role: "user", content: text }];
  const events: BaseEvent[] = [];
  await agent.runAgent({ runId }, { onEvent: ({ event }) => void events.push(event) });
  return events;
}

describe("turnspec serve --ag-ui", () => {
  it("serves AG-UI runs over HTTP and SSE", async () => {
    const { url, token } = await serveAgUi("--memory");
    const agent = new HttpAgent({ url, threadId: "cli-thread", headers: { authorization: `Bearer ${token}` } });
    agent.messages = [{ id: "m1", role: "user", content: "hello over AG-UI" }];
    const events: BaseEvent[] = [];
    await agent.runAgent({ runId: "cli-run" }, { onEvent: ({ event }) => void events.push(event) });
    const text = events
      .filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
      .map((e) => (e as unknown as { delta: string }).delta)
      .join("");
    expect(text).toBe("You said: hello over AG-UI");
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 60_000);

  it("keeps the AG-UI thread pairs beside the store file: after a restart, the AG-UI thread goes on in its gateway thread", async () => {
    const store = join(mkdtempSync(join(tmpdir(), "turnspec-agui-serve-")), "gateway.sqlite");
    const pairs = () => (JSON.parse(readFileSync(`${store}.ag-ui-threads.json`, "utf8")) as { threads: Record<string, string> }).threads;
    const first = await serveAgUi("--store", store);
    expect((await say(first, "before the restart", "cli-run-1")).at(-1)).toMatchObject({
      type: "RUN_FINISHED",
      outcome: { type: "success" },
    });
    const before = pairs();
    expect(Object.keys(before)).toEqual(["cli-thread"]);
    await new Promise((exited) => (first.child.once("exit", exited), first.child.kill("SIGTERM")));

    const second = await serveAgUi("--store", store);
    const events = await say(second, "after the restart", "cli-run-2");
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    // No second gateway thread was started for it.
    expect(pairs()).toEqual(before);
  }, 60_000);

  it.each([
    [["--host", "0.0.0.0"], "--ag-ui listens on a loopback address only (127.0.0.1, ::1, localhost), not on 0.0.0.0"],
    [["--max-frame-bytes", "4096"], "--ag-ui does not use --max-frame-bytes"],
  ])("refuses %j, which the AG-UI endpoint would not honour (exit 2)", (args, message) => {
    const run = spawnSync("node", ["bin/turnspec.js", "serve", "--ag-ui", "0", "--memory", ...args], { encoding: "utf8", timeout: 30_000 });
    expect(run.stderr).toContain(message);
    expect(run.status).toBe(2);
  });
});
