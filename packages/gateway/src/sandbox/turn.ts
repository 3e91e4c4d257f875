/**
 * The sandbox of one turn, from its start to its end: whether the host has one (and the
 * configuration requires it), the temp folder made for the turn, the Sandbox a tool runs
 * under (read back from the turn's security snapshot), the filtering proxy of a turn whose
 * network is restricted (started with its first confined command), and the cleanup at the end.
 */
import type { TurnExecutionSecuritySnapshot, TurnPermissionMode } from "@turnspec/protocol/types";
import type { GatewayFiles } from "../permissions/own-files.js";
import { BUBBLEWRAP, detectBubblewrap } from "./bubblewrap.js";
import type { Sandbox } from "./command.js";
import { confinementOf } from "./confinement.js";
import { NetworkProxy, type RefusedConnection } from "./network-proxy.js";
import { createTurnTempDir, removeTurnTempDir } from "./temp.js";

/**
 * The running proxies, by the turn's temp folder (unique per turn, in every gateway of
 * the process): one per turn, shared by its shell calls, closed when the turn ends.
 */
const proxies = new Map<string, Promise<NetworkProxy>>();

export interface SandboxSettings {
  /** Refuse restricted turns when no sandbox is available (config sandbox.required). */
  readonly required: boolean;
  /** The bubblewrap binary (config sandbox.bwrap_path; default "bwrap" from PATH). */
  readonly bwrapPath: string;
}

/**
 * The sandbox a new turn in `mode` gets: the backend's name and a fresh temp folder, or
 * undefined when the mode confines nothing (full_access) or the host has no working
 * bubblewrap. The caller refuses the turn when settings.required and this is undefined
 * for a restricted mode (sandboxMissing).
 */
export function sandboxForNewTurn(
  mode: TurnPermissionMode,
  turnId: string,
  settings: SandboxSettings,
): { backend: string; tempDir: string } | undefined {
  if (mode === "full_access" || !detectBubblewrap(settings.bwrapPath)) return undefined;
  return { backend: BUBBLEWRAP, tempDir: createTurnTempDir(turnId) };
}

/** Why a restricted turn cannot run under `settings.required`, or undefined when it can. */
export function sandboxMissing(mode: TurnPermissionMode, settings: SandboxSettings): string | undefined {
  if (!settings.required || mode === "full_access" || detectBubblewrap(settings.bwrapPath)) return undefined;
  return (
    `the gateway requires an OS sandbox for ${mode} turns (sandbox.required), and bubblewrap ` +
    `(${JSON.stringify(settings.bwrapPath)}) is missing or cannot create namespaces on this host`
  );
}

/** The Sandbox a turn's tools run under, as its snapshot records it; undefined when it has none. */
export function sandboxOfTurn(snapshot: TurnExecutionSecuritySnapshot | undefined, settings: SandboxSettings): Sandbox | undefined {
  const confinement = confinementOf(snapshot);
  if (!confinement) return undefined;
  const bwrap = detectBubblewrap(settings.bwrapPath);
  // The snapshot promised a sandbox this host no longer has (a turn resumed elsewhere):
  // refuse to run confined commands unconfined.
  if (!bwrap)
    throw new Error(`the turn's security snapshot names the ${confinement.backend} sandbox, which is not available on this host any more`);
  return { confinement, executable: bwrap.path };
}

/**
 * The Sandbox a turn's tools run under, with its filtering proxy running when the
 * network is restricted (started for the turn's first tool call, reused after).
 * `onRefused` is told of each connection the proxy refuses; it is the first caller's
 * for the turn's whole life.
 */
export async function startTurnSandbox(
  snapshot: TurnExecutionSecuritySnapshot | undefined,
  settings: SandboxSettings,
  onRefused: (refused: RefusedConnection) => void,
  /** The gateway's own files, hidden in the sandbox. */
  ownFiles?: GatewayFiles,
): Promise<Sandbox | undefined> {
  const confined = sandboxOfTurn(snapshot, settings);
  const sandbox = confined && ownFiles ? { ...confined, ownFiles } : confined;
  if (!sandbox || sandbox.confinement.network !== "proxy") return sandbox;
  const key = sandbox.confinement.tempDir;
  if (key === undefined) throw new Error("a sandboxed turn with a restricted network has no temp folder to key its proxy by");
  let proxy = proxies.get(key);
  if (!proxy) {
    proxy = NetworkProxy.start({ policy: snapshot!.network, onRefused });
    proxies.set(key, proxy);
    proxy.catch(() => proxies.delete(key));
  }
  return { ...sandbox, proxySocket: (await proxy).socketPath };
}

/** Removes what a turn's sandbox left: its temp folder, and its proxy if one runs. */
export function releaseTurnSandbox(snapshot: TurnExecutionSecuritySnapshot | undefined): void {
  const temp = snapshot?.sandbox.filesystem.entries.find((e) => e.kind === "temp");
  if (!temp) return;
  const proxy = proxies.get(temp.path);
  if (proxy) {
    proxies.delete(temp.path);
    void proxy.then((p) => p.close()).catch(() => {});
  }
  removeTurnTempDir(temp.path);
}
