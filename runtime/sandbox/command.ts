/**
 * How a process is started inside the turn's sandbox: the command line bwrap is given,
 * and the environment (TMPDIR pointed at the turn's own temp folder).
 */
import { bubblewrapArgs } from "./bubblewrap.js";
import type { Confinement } from "./confinement.js";
import { ensureTurnTempDir } from "./temp.js";

/** A turn's sandbox as a tool sees it: what it confines to, and the binary that does it. */
export interface Sandbox {
  readonly confinement: Confinement;
  /** The bwrap binary that passed the probe (bubblewrap.ts detectBubblewrap). */
  readonly executable: string;
}

export interface SandboxedCommand {
  readonly file: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

/** `argv` started in `cwd` under `sandbox`, with `env` (and TMPDIR set to the turn's temp folder). */
export function sandboxedCommand(sandbox: Sandbox, cwd: string, argv: readonly string[], env: Record<string, string>): SandboxedCommand {
  const { tempDir } = sandbox.confinement;
  if (tempDir) ensureTurnTempDir(tempDir);
  return {
    file: sandbox.executable,
    args: [...bubblewrapArgs(sandbox.confinement, cwd), "--", ...argv],
    env: tempDir ? { ...env, TMPDIR: tempDir } : env,
  };
}
