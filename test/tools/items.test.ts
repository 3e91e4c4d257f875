/**
 * What each tool puts on its TurnItem is valid on the wire: the fields known before the
 * run (an in-progress item) and after it (a finished one), for successes and failures,
 * checked with the strict generated validator, which rejects any unknown field.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertTurnItem } from "../../generated/validators.js";
import { builtinTools } from "../../packages/gateway/src/tools/registry.js";
import type { Tool } from "../../packages/gateway/src/tools/tool.js";
import { testContext } from "./context.js";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-items-")));
writeFileSync(join(dir, "exists.txt"), "old\n");
const server = createServer((_req, res) => {
  res.writeHead(200, { "content-type": "text/plain" });
  res.end("ok");
});
let base: string;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await new Promise((resolve) => server.close(resolve));
});

const tool = (name: string): Tool => builtinTools().find((t) => t.spec.name === name)!;

const calls: [string, string, () => Record<string, unknown>, boolean][] = [
  ["shell", "success", () => ({ command: "echo hi; echo err >&2" }), true],
  ["shell", "non-zero exit", () => ({ command: "exit 2" }), false],
  ["shell", "timeout", () => ({ command: "sleep 5", timeout_ms: 50 }), false],
  ["shell", "missing cwd", () => ({ command: "true", cwd: "nope" }), false],
  ["read_file", "success", () => ({ path: "exists.txt" }), true],
  ["read_file", "missing file", () => ({ path: "nope.txt" }), false],
  ["write_file", "add", () => ({ path: "new.txt", content: "a\n" }), true],
  ["write_file", "modify", () => ({ path: "exists.txt", content: "new\n" }), true],
  ["write_file", "directory", () => ({ path: ".", content: "x" }), false],
  ["web_fetch", "success", () => ({ url: `${base}/` }), true],
  ["web_fetch", "bad scheme", () => ({ url: "file:///etc/hosts" }), false],
];

describe("tool items on the wire", () => {
  it("are checked by a validator that rejects a wrongly named field", () => {
    const item = { type: "commandExecution", id: "item_1", status: "completed", arguments: {}, command: "ls", cwd: "/" };
    expect(() => assertTurnItem(item)).not.toThrow();
    expect(() => assertTurnItem({ ...item, exitCode: 0 })).toThrow("exitCode");
  });

  it.each(calls)("%s (%s) gives valid in-progress and finished items", async (name, _case, makeArgs, ok) => {
    const t = tool(name);
    const args = makeArgs();
    const ctx = testContext(dir);
    const bound = t.bind(args);
    if (!bound.ok) throw new Error(bound.error);
    const started = {
      type: t.itemType,
      id: "item_1",
      status: "in_progress",
      arguments: args,
      tool_call_id: "call_0_0",
      ...bound.call.describe(ctx),
    };
    expect(() => assertTurnItem(started)).not.toThrow();
    const result = await bound.call.run(ctx);
    expect(result.ok).toBe(ok);
    expect(() => assertTurnItem({ ...started, ...result.item, status: ok ? "completed" : "failed" })).not.toThrow();
  });
});
