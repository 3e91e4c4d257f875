/**
 * Commands the gateway runs for a turn (the shell tool's, an ACP agent's terminals) lead a
 * process group of their own, killed as one, and that group dies with the gateway, however
 * the gateway dies.
 */
import { spawn, type ChildProcess } from "node:child_process";

/**
 * The script a command is started through. It leaves a watcher in the command's process
 * group, then becomes the command (exec: the group's leader is the command's own process,
 * and its exit status or signal is the command's). The watcher reads fd 3, a pipe nothing
 * is ever written to, whose other end only the gateway holds: it reads end-of-file when
 * that end closes, which the kernel does when the gateway dies, SIGKILL included, and then
 * kills the whole group. No timing, no polling, no race with a parent that is already
 * gone (the read then ends at once), and no tool outside POSIX sh. Under bubblewrap the
 * group's leader is bwrap, whose --die-with-parent takes the sandbox down with it. A
 * gateway that is stopped (SIGSTOP), not dead, keeps its end open: its commands run on.
 */
export const WATCHED = 'exec 4<&3 3<&-; (read -r _ <&4; kill -KILL 0) </dev/null >/dev/null 2>&1 & exec 4<&-; exec "$@"';

/**
 * Starts `file` with `args` behind WATCHED, as the leader of a new process group, with no
 * stdin and its output on pipes; fd 3 is the watcher's pipe. The exit status (or signal)
 * is the command's own; a command that cannot be run exits 126 or 127, as a shell says.
 * When the command exits, whatever it left running in its group is killed with it.
 */
export function spawnWatched(
  file: string,
  args: readonly string[],
  options: { readonly cwd: string; readonly env: Record<string, string> },
): ChildProcess {
  const child = spawn("/bin/sh", ["-c", WATCHED, "sh", file, ...args], {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe", "pipe"],
  });
  // A background job does not outlive the command (nor the call or the turn it ran for).
  child.once("exit", () => killGroup(child));
  return child;
}

/** Kills the process group `child` leads: the command and whatever it started. */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone.
  }
}
