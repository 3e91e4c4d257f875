/**
 * How a process is started inside the turn's sandbox: the command line bwrap is given,
 * and the environment (TMPDIR pointed at the turn's own temp folder; under a restricted
 * network, the proxy variables pointing at the bridge to the turn's filtering proxy).
 */
import { dirname } from "node:path";
import type { GatewayFiles } from "../permissions/own-files.js";
import { bubblewrapArgs } from "./bubblewrap.js";
import type { Confinement } from "./confinement.js";
import { PROXY_BRIDGE_PORT, PROXY_BRIDGE_SOURCE, proxyEnvironment } from "./proxy-bridge.js";
import { ensureTurnTempDir } from "./temp.js";

/** A turn's sandbox as a tool sees it: what it confines to, and the binary that does it. */
export interface Sandbox {
  readonly confinement: Confinement;
  /** The bwrap binary that passed the probe (bubblewrap.ts detectBubblewrap). */
  readonly executable: string;
  /** The Unix socket of the turn's filtering proxy (network-proxy.ts), when its network is restricted. */
  readonly proxySocket?: string;
  /** The gateway's own files: shown empty and read-only in the sandbox, their folders locked. */
  readonly ownFiles?: GatewayFiles;
}

export interface SandboxedCommand {
  readonly file: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

/** Variables that would send a proxied connection around the proxy, into an empty network. */
const NO_PROXY_VARIABLES = ["NO_PROXY", "no_proxy"];

/** `argv` started in `cwd` under `sandbox`, with `env` (and TMPDIR set to the turn's temp folder). */
export function sandboxedCommand(sandbox: Sandbox, cwd: string, argv: readonly string[], env: Record<string, string>): SandboxedCommand {
  const { tempDir, network } = sandbox.confinement;
  if (tempDir) ensureTurnTempDir(tempDir);
  if (network === "proxy" && sandbox.proxySocket === undefined)
    throw new Error("a sandbox with a restricted network needs the turn's proxy socket");
  const proxied = network === "proxy";
  const command = proxied
    ? [process.execPath, "-e", PROXY_BRIDGE_SOURCE, "--", sandbox.proxySocket!, String(PROXY_BRIDGE_PORT), ...argv]
    : [...argv];
  const base = proxied ? Object.fromEntries(Object.entries(env).filter(([name]) => !NO_PROXY_VARIABLES.includes(name))) : env;
  return {
    file: sandbox.executable,
    // The proxy's socket sits in a folder of its own under the host's temp folder, which the sandbox hides: that one folder is shown.
    // The gateway's own files are looked up now: SQLite's -wal and -shm come and go with the log.
    args: [
      ...bubblewrapArgs(sandbox.confinement, cwd, proxied ? [dirname(sandbox.proxySocket!)] : [], sandbox.ownFiles?.present()),
      "--",
      ...command,
    ],
    env: { ...base, ...(tempDir ? { TMPDIR: tempDir } : {}), ...(proxied ? proxyEnvironment() : {}) },
  };
}
