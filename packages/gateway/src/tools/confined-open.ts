/**
 * Opening a file a tool call was allowed to touch, and only that file. The gate checks
 * where a path leads before the call runs; a link swapped in after that check (by the
 * command of another call, or another process) must not take the tool somewhere else. So
 * the tool resolves the path once, opens the folder it resolved to, verifies where that
 * open folder really is (the kernel's own answer, /proc/self/fd), and opens the file
 * inside it with O_NOFOLLOW: no link is followed between the check and the use.
 */
import { constants, existsSync, readlinkSync } from "node:fs";
import { mkdir, open, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { TurnExecutionSecuritySnapshot } from "@turnspec/protocol/types";
import type { GatewayFiles } from "../permissions/own-files.js";
import { isWithin, resolveRealPath } from "../permissions/paths.js";

/** Where a call's file tools may reach: the turn's roots, and the outside paths approved for this one call. */
export interface FileConfinement {
  readonly roots: readonly string[];
  readonly approved: readonly string[];
}

/** The confinement of a call under `snapshot` (none when its file system is unrestricted). */
export function fileConfinementOf(
  snapshot: Pick<TurnExecutionSecuritySnapshot, "sandbox"> | undefined,
  approved: readonly string[],
): FileConfinement | undefined {
  if (!snapshot || snapshot.sandbox.filesystem.unrestricted) return undefined;
  return { roots: snapshot.sandbox.filesystem.entries.map((e) => e.path), approved };
}

/** A path argument the tool refuses: the call fails with this message, the turn goes on. */
export class PathRefused extends Error {}

export interface ConfinedFile {
  readonly handle: FileHandle;
  /** The real path that was opened. */
  readonly path: string;
  /** Whether the file was there before (always true for reads). */
  readonly existed: boolean;
}

const FD_DIR = "/proc/self/fd";

/**
 * Opens `path` (absolute, lexically normalized) for reading or for writing (created if
 * missing, never truncated here), confined to `confinement` when given, and never one of
 * the gateway's own files (`own`), in any mode.
 *
 * @throws PathRefused when the path is malformed, cannot be resolved, leads outside the
 *   confinement, or changed into a link between resolution and open; the errno errors of
 *   open (ENOENT, EACCES, EISDIR, ENAMETOOLONG, …) as they come.
 */
export async function openConfined(
  path: string,
  mode: "read" | "write",
  confinement: FileConfinement | undefined,
  own?: GatewayFiles,
): Promise<ConfinedFile> {
  if (path.includes("\0")) throw new PathRefused(`the path ${JSON.stringify(path)} contains a NUL byte`);
  let real: string;
  try {
    real = resolveRealPath(path);
  } catch (error) {
    throw new PathRefused(`cannot resolve ${path}: ${(error as Error).message}`);
  }
  const allowed = (candidate: string) =>
    !confinement || confinement.approved.includes(candidate) || confinement.roots.some((root) => isWithin(candidate, root));
  if (!allowed(real)) throw new PathRefused(`${path} leads to ${real}, outside the turn's roots and not approved for this call`);
  const refuseOwn = (candidate: string) => {
    const what = own?.match(candidate);
    if (what !== undefined)
      throw new PathRefused(`${path} leads to ${candidate}, ${what}, which no tool may ${mode} in any permission mode`);
  };
  refuseOwn(real);

  const parent = dirname(real);
  if (mode === "write") await mkdir(parent, { recursive: true });
  const flags = (mode === "read" ? constants.O_RDONLY : constants.O_RDWR | constants.O_CREAT) | constants.O_NOFOLLOW;
  if (!existsSync(FD_DIR)) {
    // No /proc (not Linux): O_NOFOLLOW still refuses a final link; a swapped parent folder is not caught.
    return openFile(real, flags, mode);
  }
  const folder = await open(parent, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    // Where the folder we hold really is, whatever its path says by now.
    const held = readlinkSync(join(FD_DIR, String(folder.fd)));
    const target = join(held, basename(real));
    if (!allowed(target))
      throw new PathRefused(`${path} changed after it was checked: it now leads to ${target}, outside the turn's roots`);
    refuseOwn(target);
    // Opening through the held folder's fd is openat(2): the path is not walked again.
    return await openFile(join(FD_DIR, String(folder.fd), basename(real)), flags, mode, target);
  } finally {
    await folder.close();
  }
}

async function openFile(path: string, flags: number, mode: "read" | "write", shown = path): Promise<ConfinedFile> {
  let existed = true;
  if (mode === "write") {
    // O_EXCL first tells whether this open created the file, without a separate stat race.
    try {
      const handle = await open(path, flags | constants.O_EXCL, 0o666);
      return { handle, path: shown, existed: false };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw refuseLink(error, shown);
    }
    existed = true;
  }
  try {
    return { handle: await open(path, flags), path: shown, existed };
  } catch (error) {
    throw refuseLink(error, shown);
  }
}

/** ELOOP under O_NOFOLLOW means the final name is a link: one that appeared after the check. */
function refuseLink(error: unknown, path: string): unknown {
  if ((error as NodeJS.ErrnoException).code === "ELOOP")
    return new PathRefused(`${path} is a symbolic link now; it was not when it was checked, so it is not followed`);
  return error;
}
