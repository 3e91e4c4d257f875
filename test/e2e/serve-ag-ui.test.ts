/** `turnspec serve --ag-ui 0`: the reference gateway behind the AG-UI bridge, driven by @ag-ui/client's HttpAgent. */
import { spawn } from "node:child_process";
import { HttpAgent } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import { afterEach, describe, expect, it } from "vitest";

const children: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill();
});

describe("turnspec serve --ag-ui", () => {
  it("serves AG-UI runs over HTTP and SSE", async () => {
    const child = spawn("node", ["bin/turnspec.js", "serve", "--ag-ui", "0", "--memory"], { stdio: ["ignore", "ignore", "pipe"] });
    children.push(child);
    const url = await new Promise<string>((resolve, reject) => {
      let err = "";
      child.stderr!.on("data", (chunk: Buffer) => {
        err += chunk.toString();
        const found = /AG-UI endpoint on (http:\/\/\S+\/)/.exec(err);
        if (found) resolve(found[1]!);
      });
      child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
    });
    const agent = new HttpAgent({ url, threadId: "cli-thread" });
    agent.messages = [{ id: "m1", role: "user", content: "hello over AG-UI" }];
    const events: BaseEvent[] = [];
    await agent.runAgent({ runId: "cli-run" }, { onEvent: ({ event }) => void events.push(event) });
    const text = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => (e as unknown as { delta: string }).delta).join("");
    expect(text).toBe("You said: hello over AG-UI");
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
  }, 60_000);
});
