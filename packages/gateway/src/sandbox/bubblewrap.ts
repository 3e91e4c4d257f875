/**
 * Bubblewrap (`bwrap`, Debian's `bubblewrap`), the OS sandbox shell commands run under on
 * Linux. Each run gets a fresh mount namespace in which the whole file system is bound
 * read-only and only the confinement's writable paths are bound writable; a fresh PID
 * namespace (the gateway's /proc/<pid> is out of sight, and when the shell exits the
 * kernel kills everything it left behind); no network namespace of the host unless the
 * turn's network is enabled; and no capabilities, so even root cannot remount its way out.
 */
import { spawnSync } from "node:child_process";
import type { Confinement } from "./confinement.js";

/** The mechanism's name as the security snapshot records it (backend.sandbox_backend). */
export const BUBBLEWRAP = "bubblewrap";

export interface BubblewrapInfo {
  /** The binary that passed the probe. */
  readonly path: string;
  /** Its version line, e.g. "bubblewrap 0.8.0". */
  readonly version: string;
}

const probed = new Map<string, BubblewrapInfo | undefined>();

/**
 * Whether bubblewrap at `path` can build the sandbox this gateway uses, on this host: it
 * must exist and be allowed to create the namespaces (a container without user
 * namespaces, or a kernel that forbids them, fails the probe). The answer is cached per
 * path; the probe runs once, the first time a turn asks.
 */
export function detectBubblewrap(path = "bwrap"): BubblewrapInfo | undefined {
  if (probed.has(path)) return probed.get(path);
  let info: BubblewrapInfo | undefined;
  const version = spawnSync(path, ["--version"], { encoding: "utf8", timeout: 5000 });
  if (version.status === 0) {
    const probe = spawnSync(path, [...bubblewrapArgs({ backend: BUBBLEWRAP, writable: [], readOnly: [], network: "none" }, "/"), "/bin/true"], { timeout: 5000 });
    if (probe.status === 0) info = { path, version: version.stdout.trim() };
  }
  probed.set(path, info);
  return info;
}

/**
 * The bwrap arguments that confine a command started in `cwd`, up to (not including) the
 * command itself. Later binds win over earlier ones, so the root is bound read-only
 * first, then the writable paths, then read-only paths nested in writable ones.
 */
export function bubblewrapArgs(confinement: Confinement, cwd: string): string[] {
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  for (const path of confinement.writable) args.push("--bind", path, path);
  if (confinement.tempDir && !confinement.writable.includes(confinement.tempDir)) args.push("--bind", confinement.tempDir, confinement.tempDir);
  for (const path of confinement.readOnly) args.push("--ro-bind", path, path);
  args.push(
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    // Under a restricted network the namespace is empty too: the proxy's socket is the way out.
    ...(confinement.network === "host" ? [] : ["--unshare-net"]),
    // The sandbox dies with bwrap, so killing bwrap's process group kills the whole tree.
    "--die-with-parent",
    // setsid: a command cannot push input into a terminal the gateway holds.
    "--new-session",
    "--cap-drop",
    "ALL",
    "--chdir",
    cwd,
  );
  return args;
}
