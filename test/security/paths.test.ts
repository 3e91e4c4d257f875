/**
 * File tools against links swapped after the check (hole 1) and against path arguments
 * that used to fail the whole turn (hole 13). The swap is done between the gate's check
 * and the tool's run, as another process would do it.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { outsideRoots } from "../../packages/gateway/src/permissions/paths.js";
import { readFileTool } from "../../packages/gateway/src/tools/read-file.js";
import { writeFileTool } from "../../packages/gateway/src/tools/write-file.js";
import { script, startHarness, text, type Harness } from "../gateway/harness.js";
import { testContext } from "../tools/context.js";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-paths-")));
const ws = join(dir, "ws");
const outside = join(dir, "outside");
mkdirSync(ws);
mkdirSync(outside);
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const confined = (approved: string[] = []) => testContext(ws, { files: { roots: [ws], approved } });

describe("a link swapped after the check (hole 1)", () => {
  it("does not take a read outside the roots", async () => {
    writeFileSync(join(ws, "notes.txt"), "inside\n");
    writeFileSync(join(outside, "secret.txt"), "outside\n");
    const link = join(ws, "read-link");
    symlinkSync(join(ws, "notes.txt"), link);
    expect(outsideRoots([link], [ws])).toEqual([]); // what the gate saw
    unlinkSync(link);
    symlinkSync(join(outside, "secret.txt"), link); // the swap
    const result = await readFileTool.run({ path: link }, confined());
    expect(result.ok).toBe(false);
    expect(result.content).toMatch(/outside the turn's roots/);
    expect(result.content).not.toContain("outside\n");
  });

  it("does not take a write outside the roots, through a link or a swapped folder", async () => {
    writeFileSync(join(outside, "target.txt"), "untouched\n");
    const link = join(ws, "write-link");
    symlinkSync(join(ws, "fresh.txt"), link);
    expect(outsideRoots([link], [ws])).toEqual([]);
    unlinkSync(link);
    symlinkSync(join(outside, "target.txt"), link);
    const viaLink = await writeFileTool.run({ path: link, content: "planted\n" }, confined());
    mkdirSync(join(ws, "sub"));
    expect(outsideRoots([join(ws, "sub", "target.txt")], [ws])).toEqual([]);
    rmSync(join(ws, "sub"), { recursive: true });
    symlinkSync(outside, join(ws, "sub"));
    const viaFolder = await writeFileTool.run({ path: join(ws, "sub", "target.txt"), content: "planted\n" }, confined());
    expect([viaLink.ok, viaFolder.ok]).toEqual([false, false]);
    expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe("untouched\n");
  });

  it("still reads and writes what was approved outside the roots for this call, and in the roots", async () => {
    const approved = join(outside, "approved.txt");
    writeFileSync(approved, "ok\n");
    expect((await readFileTool.run({ path: approved }, confined([approved]))).content).toBe("ok\n");
    expect((await writeFileTool.run({ path: join(ws, "deep", "new.txt"), content: "x" }, confined())).ok).toBe(true);
    expect(readFileSync(join(ws, "deep", "new.txt"), "utf8")).toBe("x");
  });
});

describe("a bad path argument fails the call, not the turn (hole 13)", () => {
  let h: Harness;
  afterEach(async () => {
    expect(h.protocolErrors).toEqual([]);
    await h.close();
  });

  it.each(["full_access", "auto_accept_edits"] as const)("under %s: a NUL byte, a link loop, a name over the limit", async (mode) => {
    h = await startHarness();
    const thread = await h.thread();
    symlinkSync("loop", join(h.cwd, "loop"));
    const bad = ["a\u0000b.txt", "loop/x.txt", `${"n".repeat(300)}.txt`];
    const calls = bad.flatMap((path) => [
      { tool: "read_file", args: { path } },
      { tool: "write_file", args: { path, content: "x" } },
    ]);
    const terminal = h.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed");
    await h.client.turnStart({
      thread_id: thread,
      turn_id: `trn_bad_${mode}`,
      permission_profile: { mode },
      input: text(script(...calls, { say: "still here" })),
    });
    // A path that leads nowhere known is outside the roots: the restricted mode asks first.
    const answered = new Set<string>();
    const answer = async (): Promise<void> => {
      for (const n of h.received) {
        if (n.method !== "turn/permission/request/opened" || answered.has(n.params.request.request_id)) continue;
        answered.add(n.params.request.request_id);
        await h.client.turnPermissionRequestRespond({
          request_id: n.params.request.request_id,
          resolve_token: n.params.request.resolve_token,
          resolution: "allow_once",
        });
      }
    };
    const pump = setInterval(() => void answer(), 20);
    const end = await terminal.finally(() => clearInterval(pump));
    expect(end.method).toBe("turn/completed");
    const items = h.received.filter(
      (n) => n.method === "item/completed" && (n.params.item.type === "dynamicToolCall" || n.params.item.type === "fileChange"),
    );
    expect(items).toHaveLength(6);
    for (const n of items) expect((n.params as { item: { status: string } }).item.status).toBe("failed");
  });
});
