/**
 * The gateway's own files, attacked from a turn: its event log kept in the working folder
 * (as the documented start used to leave it), SQLite's -wal beside it, its configuration and
 * its token file. Under auto_accept_edits, where an edit runs with no approval, the scripted
 * model writes the -wal, then the database, directly and through a link; reads them; and a
 * confined shell command tries to read, overwrite, add beside and rename them. Every one is
 * refused with the reason in words, the gateway keeps serving, and after a restart the other
 * thread is still there. The default store no longer lives in the working folder.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnPermissionMode } from "../../generated/types.js";
import { createInMemoryPair } from "../../packages/rpc/src/index.js";
import { GatewayFiles } from "../../packages/gateway/src/permissions/own-files.js";
import { materializeProfile } from "../../packages/gateway/src/permissions/policy.js";
import { securitySnapshot } from "../../packages/gateway/src/permissions/security.js";
import { BUBBLEWRAP, detectBubblewrap } from "../../packages/gateway/src/sandbox/bubblewrap.js";
import { createTurnTempDir } from "../../packages/gateway/src/sandbox/temp.js";
import { releaseTurnSandbox, startTurnSandbox } from "../../packages/gateway/src/sandbox/turn.js";
import { defaultStore, LEGACY_STORE, openGateway } from "../../packages/gateway/src/serve.js";
import { shellTool } from "../../packages/gateway/src/tools/shell.js";
import { startStrictClient } from "../../bench/strict-client.js";
import { script, text } from "../gateway/harness.js";
import { testContext } from "../tools/context.js";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-own-files-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A working folder with the gateway's files in it, as `turnspec serve` started there used to have them. */
function workingFolder(name: string) {
  const ws = join(dir, name);
  mkdirSync(join(ws, ".turnspec"), { recursive: true });
  const config = join(ws, "gateway.json");
  const token = join(ws, "token");
  writeFileSync(config, "{}\n");
  writeFileSync(token, "s3cret\n", { mode: 0o600 });
  return { ws, store: join(ws, LEGACY_STORE), config, token };
}

async function start(files: ReturnType<typeof workingFolder>) {
  const opened = await openGateway(
    { store: files.store, memory: false, configFile: files.config, tokenFile: files.token },
    () => undefined,
  );
  const [client, server] = createInMemoryPair();
  opened.gateway.connect(server);
  const s = await startStrictClient(client);
  return {
    ...s,
    close: async () => {
      await s.client.close();
      await opened.close();
    },
  };
}

const terminalOf = (received: AnyNotification[], turnId: string) =>
  received.find((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === turnId);

describe("the gateway's own files under auto_accept_edits", () => {
  it("are refused to write_file and read_file, directly and through a link; the gateway goes on, and a restart keeps the other thread", async () => {
    const files = workingFolder("edits");
    const g = await start(files);
    // Another client's thread, with a turn the attack must not take away.
    const { thread: other } = await g.client.threadStart({ cwd: files.ws });
    const firstDone = g.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_other");
    await g.client.turnStart({ thread_id: other.id, turn_id: "trn_other", input: text(script({ say: "kept" })) });
    await firstDone;
    expect(existsSync(`${files.store}-wal`)).toBe(true);

    symlinkSync(files.store, join(files.ws, "notes.db"));
    const calls = [
      { tool: "write_file", args: { path: ".turnspec/gateway.sqlite-wal", content: "garbage" } },
      { tool: "write_file", args: { path: ".turnspec/gateway.sqlite", content: "garbage" } },
      { tool: "write_file", args: { path: "notes.db", content: "garbage" } },
      { tool: "write_file", args: { path: "gateway.json", content: '{"store":"/tmp/elsewhere.sqlite"}' } },
      { tool: "read_file", args: { path: "token" } },
      { tool: "read_file", args: { path: "notes.db" } },
    ];
    const { thread } = await g.client.threadStart({ cwd: files.ws });
    const done = g.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === "trn_attack");
    await g.client.turnStart({
      thread_id: thread.id,
      turn_id: "trn_attack",
      permission_profile: { mode: "auto_accept_edits" },
      input: text(script(...calls, { say: "done" })),
    });
    expect((await done).method).toBe("turn/completed");
    // No approval was asked for: each call was refused outright, with the reason.
    expect(g.received.some((n) => n.method === "turn/permission/request/opened")).toBe(false);
    const ended = g.received.filter(
      (n) =>
        n.method === "item/completed" &&
        n.params.turn_id === "trn_attack" &&
        (n.params.item.type === "fileChange" || n.params.item.type === "dynamicToolCall"),
    );
    expect(ended).toHaveLength(calls.length);
    const messages = ended.map((n) => (n.params as { item: { status: string; error?: { message: string } } }).item);
    for (const item of messages) expect(item.status).toBe("declined");
    expect(messages[0]!.error!.message).toContain(
      `${files.store}-wal is the gateway's event log (SQLite's wal file beside it), which no tool may write in any permission mode`,
    );
    expect(messages[1]!.error!.message).toContain(`${files.store} is the gateway's event log, which no tool may write`);
    expect(messages[2]!.error!.message).toContain("is the gateway's event log, which no tool may write");
    expect(messages[3]!.error!.message).toContain("is the gateway's configuration file");
    expect(messages[4]!.error!.message).toContain("is the gateway's token file, which no tool may read");
    expect(messages[5]!.error!.message).toContain("is the gateway's event log, which no tool may read");
    expect(readFileSync(files.config, "utf8")).toBe("{}\n");

    // The gateway still serves every client.
    const again = g.waitFor((n) => n.method === "turn/completed" && n.params.turn_id === "trn_other_2");
    await g.client.turnStart({ thread_id: other.id, turn_id: "trn_other_2", input: text(script({ say: "still here" })) });
    await again;
    await g.close();

    // And after a restart, the other thread and its turns are there.
    const after = await start(files);
    expect((await after.client.threadGet({ thread_id: other.id })).thread.id).toBe(other.id);
    expect((await after.client.turnGet({ thread_id: other.id, turn_id: "trn_other_2" })).turn.status).toBe("Completed");
    await after.close();
  });

  it.each(["full_access", "supervised"] as const)("are refused under %s too", async (mode: TurnPermissionMode) => {
    const files = workingFolder(`mode-${mode}`);
    const g = await start(files);
    const { thread } = await g.client.threadStart({ cwd: files.ws });
    const done = g.waitFor((n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === `trn_${mode}`);
    await g.client.turnStart({
      thread_id: thread.id,
      turn_id: `trn_${mode}`,
      permission_profile: { mode },
      input: text(script({ tool: "write_file", args: { path: ".turnspec/gateway.sqlite", content: "x" } }, { say: "done" })),
    });
    await done;
    expect(terminalOf(g.received, `trn_${mode}`)?.method).toBe("turn/completed");
    const item = g.received.find((n) => n.method === "item/completed" && n.params.item.type === "fileChange");
    expect((item!.params as { item: { status: string; error: { message: string } } }).item.error.message).toContain(
      "is the gateway's event log, which no tool may write in any permission mode",
    );
    expect(g.received.some((n) => n.method === "turn/permission/request/opened")).toBe(false);
    await g.close();
  });
});

describe.runIf(detectBubblewrap())("the gateway's own files inside the sandbox", () => {
  it("read empty, take no write, get nothing added beside them and cannot be renamed away", async () => {
    const files = workingFolder("sandbox");
    writeFileSync(files.store, "the log\n");
    writeFileSync(`${files.store}-wal`, "the wal\n");
    const own = new GatewayFiles([
      { path: files.store, what: "event log", withSiblings: true },
      { path: files.config, what: "configuration file" },
      { path: files.token, what: "token file" },
    ]);
    const tempDir = createTurnTempDir("trn_own");
    const snapshot = securitySnapshot({
      profile: materializeProfile({ mode: "auto_accept_edits" }),
      cwd: files.ws,
      roots: [files.ws],
      sandbox: { backend: BUBBLEWRAP, tempDir },
      shellTimeoutCapMs: 60_000,
    });
    try {
      const sandbox = await startTurnSandbox(snapshot, { required: false, bwrapPath: "bwrap" }, () => undefined, own);
      const ctx = testContext(files.ws, { sandbox: sandbox! });
      const item = (
        await shellTool.run(
          {
            command: [
              "cat .turnspec/gateway.sqlite .turnspec/gateway.sqlite-wal token gateway.json | wc -c",
              "echo x > .turnspec/gateway.sqlite-wal",
              "echo x > gateway.json",
              "touch .turnspec/gateway.sqlite-journal",
              "mv .turnspec moved",
              "rm -f token",
              "echo still-writable > made",
            ].join("; "),
          },
          ctx,
        )
      ).item as { stdout: string; stderr: string };
      expect(item.stdout.trim()).toBe("0");
      expect(readFileSync(files.store, "utf8")).toBe("the log\n");
      expect(readFileSync(`${files.store}-wal`, "utf8")).toBe("the wal\n");
      expect(readFileSync(files.config, "utf8")).toBe("{}\n");
      expect(readFileSync(files.token, "utf8")).toBe("s3cret\n");
      expect(existsSync(`${files.store}-journal`)).toBe(false);
      expect(existsSync(join(files.ws, "moved"))).toBe(false);
      // The rest of the working folder is as writable as the mode says.
      expect(readFileSync(join(files.ws, "made"), "utf8")).toBe("still-writable\n");
    } finally {
      releaseTurnSandbox(snapshot);
    }
  });
});

describe("the default event log", () => {
  it("is a file of the user's state folder, named for the working folder, unless one is left in the working folder", () => {
    const cwd = join(dir, "project");
    mkdirSync(cwd);
    const state = join(dir, "state");
    const chosen = defaultStore(cwd, { XDG_STATE_HOME: state });
    expect(chosen.legacy).toBe(false);
    expect(chosen.path).toMatch(new RegExp(`^${state}/turnspec/project-[0-9a-f]{12}/gateway\\.sqlite$`));
    expect(defaultStore(join(dir, "other"), { XDG_STATE_HOME: state }).path).not.toBe(chosen.path);
    mkdirSync(join(cwd, ".turnspec"));
    writeFileSync(join(cwd, LEGACY_STORE), "");
    expect(defaultStore(cwd, { XDG_STATE_HOME: state })).toEqual({ path: join(cwd, LEGACY_STORE), legacy: true });
  });

  it("is made in a folder of its own that only its user may enter", async () => {
    const cwd = join(dir, "fresh");
    mkdirSync(cwd);
    const state = join(dir, "fresh-state");
    const saved = [process.cwd(), process.env.XDG_STATE_HOME] as const;
    process.chdir(cwd);
    process.env.XDG_STATE_HOME = state;
    try {
      const logged: string[] = [];
      const opened = await openGateway({ memory: false }, (m) => logged.push(m));
      expect(opened.storeFile).toBe(defaultStore(cwd, { XDG_STATE_HOME: state }).path);
      expect(statSync(join(opened.storeFile!, "..")).mode & 0o777).toBe(0o700);
      expect(existsSync(join(cwd, ".turnspec"))).toBe(false);
      await opened.close();
    } finally {
      process.chdir(saved[0]);
      if (saved[1] === undefined) delete process.env.XDG_STATE_HOME;
      else process.env.XDG_STATE_HOME = saved[1];
    }
  });
});
