/**
 * Unix-domain sockets of the host, attacked from a confined command: a network namespace
 * does not separate socket files, and connect() needs no write access, so a read-only view
 * of the file system used to leave the Docker socket, the database's socket, ssh and GnuPG
 * agents, the session bus and other turns' proxy sockets in reach. Each test listens on a
 * socket where the host keeps them (/tmp, /run, $XDG_RUNTIME_DIR, another turn's proxy
 * folder), lets a confined command connect with plain node, and asserts it cannot; the same
 * probe unconfined reaches each, so the tests can fail. Needs bubblewrap.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnPermissionMode } from "../../generated/types.js";
import { materializeProfile } from "../../packages/gateway/src/permissions/policy.js";
import { securitySnapshot } from "../../packages/gateway/src/permissions/security.js";
import { BUBBLEWRAP, detectBubblewrap, hiddenFolders } from "../../packages/gateway/src/sandbox/bubblewrap.js";
import { NetworkProxy } from "../../packages/gateway/src/sandbox/network-proxy.js";
import { createTurnTempDir } from "../../packages/gateway/src/sandbox/temp.js";
import { releaseTurnSandbox, startTurnSandbox } from "../../packages/gateway/src/sandbox/turn.js";
import { shellTool } from "../../packages/gateway/src/tools/shell.js";
import { testContext } from "../tools/context.js";

const bwrap = detectBubblewrap();
const settings = { required: false, bwrapPath: "bwrap" };

describe.runIf(bwrap)("a confined command and the host's Unix sockets", () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-sockets-")));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  // A /run-like place: where system services keep theirs (/run/docker.sock, /run/postgresql).
  // Only root may make one there; another user's run leaves it out, and says so.
  const runDir = (() => {
    try {
      return mkdtempSync("/run/turnspec-sockets-");
    } catch (error) {
      console.log(
        `the /run socket is left out: ${(error as NodeJS.ErrnoException).code} making a folder in /run (run the tests as root, as CI does, to include it)`,
      );
      return undefined;
    }
  })();
  // $XDG_RUNTIME_DIR, where a session keeps its bus and agents: outside /tmp and /run here.
  const xdgDir = realpathSync(mkdtempSync(join(homedir(), ".turnspec-xdg-")));
  const savedXdg = process.env.XDG_RUNTIME_DIR;
  const servers: Server[] = [];
  const snapshots: ReturnType<typeof securitySnapshot>[] = [];
  let otherProxy: NetworkProxy;
  const sockets: Record<string, string> = {
    "/tmp": join(dir, "host.sock"),
    ...(runDir === undefined ? {} : { "/run": join(runDir, "service.sock") }),
    $XDG_RUNTIME_DIR: join(xdgDir, "bus"),
  };

  const listen = (path: string, name: string) =>
    new Promise<void>((done) => {
      const server = createServer((socket) => socket.end(`secret of ${name}\n`));
      servers.push(server);
      server.listen(path, done);
    });

  beforeAll(async () => {
    process.env.XDG_RUNTIME_DIR = xdgDir;
    for (const [name, path] of Object.entries(sockets)) await listen(path, name);
    // Another turn's filtering proxy: a socket of the gateway's own, in a folder under /tmp.
    otherProxy = await NetworkProxy.start({ policy: { allow_domains: ["example.com"], deny_domains: [] }, onRefused: () => undefined });
    sockets["another turn's proxy"] = otherProxy.socketPath;
  });
  afterAll(async () => {
    if (savedXdg === undefined) delete process.env.XDG_RUNTIME_DIR;
    else process.env.XDG_RUNTIME_DIR = savedXdg;
    for (const s of snapshots) releaseTurnSandbox(s);
    await otherProxy?.close();
    await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
    for (const path of [dir, runDir, xdgDir]) if (path !== undefined) rmSync(path, { recursive: true, force: true });
  });

  async function turn(mode: TurnPermissionMode, network?: { allowDomains: string[]; denyDomains: string[] }) {
    const tempDir = createTurnTempDir(`trn_sock_${mode}`);
    const snapshot = securitySnapshot({
      profile: materializeProfile({ mode }),
      cwd: ws,
      roots: [ws],
      sandbox: { backend: BUBBLEWRAP, tempDir },
      shellTimeoutCapMs: 120_000,
      ...(network ? { network } : {}),
    });
    snapshots.push(snapshot);
    const sandbox = await startTurnSandbox(snapshot, settings, () => undefined);
    expect(sandbox).toBeDefined();
    return testContext(ws, { sandbox: sandbox! });
  }

  /** A shell command that connects to each socket with plain node and prints what it got, one line each. */
  const probe = (paths: string[]) =>
    paths
      .map(
        (path) =>
          `node -e 'const s=require("net").connect(${JSON.stringify(path)});s.on("connect",()=>console.log("connected"));s.setTimeout(1000,()=>s.destroy());s.on("data",d=>process.stdout.write(String(d)));s.on("error",e=>console.log("error "+e.code))'`,
      )
      .join("; ");

  it.each([
    ["supervised", "no network", false],
    ["auto_accept_edits", "no network", false],
    ["supervised", "a restricted network", true],
  ] as const)("under %s with %s: none of them is reachable", async (mode, _network, restricted) => {
    const ctx = await turn(mode, restricted ? { allowDomains: ["example.com"], denyDomains: [] } : undefined);
    const paths = Object.values(sockets);
    const confined = (await shellTool.run({ command: probe(paths) }, ctx)).item as { stdout: string };
    for (const name of Object.keys(sockets)) expect(confined.stdout, name).not.toContain(`secret of ${name}`);
    expect(confined.stdout.trim().split("\n")).toEqual(paths.map(() => "error ENOENT"));
    // The same probe unconfined reaches every one of them.
    const open = (await shellTool.run({ command: probe(paths) }, testContext(ws))).item as { stdout: string };
    for (const name of Object.keys(sockets).filter((n) => n !== "another turn's proxy")) expect(open.stdout).toContain(`secret of ${name}`);
    expect(open.stdout.match(/^connected$/gm)).toHaveLength(paths.length);
  });

  it("keeps what the turn owns: its roots and temp folder under the hidden /tmp, and its own proxy", async () => {
    const ctx = await turn("auto_accept_edits", { allowDomains: ["example.com"], denyDomains: [] });
    const item = (
      await shellTool.run(
        {
          command: `echo kept > ${ws}/kept && cat ${ws}/kept && echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && ls /tmp | wc -l && ls /run | wc -l`,
        },
        ctx,
      )
    ).item as { stdout: string; stderr: string };
    // /tmp shows the turn's own folders only (its workspace's and its temp folder's parents, its proxy's); /run is empty.
    const [kept, temp, inTmp, inRun] = item.stdout.trim().split("\n");
    expect([kept, temp, inRun]).toEqual(["kept", "t", "0"]);
    expect(Number(inTmp)).toBeLessThanOrEqual(3);
  });

  it("hides /run, /var/run, /tmp, /var/tmp and $XDG_RUNTIME_DIR, by their real paths, but not a folder the turn was given", () => {
    const hidden = hiddenFolders({ writable: [ws], readOnly: [], tempDir: undefined }, xdgDir);
    expect(hidden).toEqual(expect.arrayContaining([realpathSync("/run"), realpathSync("/tmp"), xdgDir]));
    expect(hidden).toContain(realpathSync("/var/tmp"));
    expect(new Set(hidden).size).toBe(hidden.length);
    // A thread whose folder is /tmp itself keeps it.
    expect(hiddenFolders({ writable: [realpathSync("/tmp")], readOnly: [] }, undefined)).not.toContain(realpathSync("/tmp"));
  });
});
