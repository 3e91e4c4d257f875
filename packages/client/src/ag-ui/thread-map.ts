/**
 * Which gateway thread each AG-UI thread runs in. AG-UI clients name their own thread ids
 * and the gateway assigns its own, so the bridge keeps the pairs. Given a file, it keeps
 * them there too (written whole to a temporary file, then renamed over the old one), so a
 * restarted bridge goes on in the same gateway threads. Everything else the bridge needs
 * after a restart, the open interrupts among them, it reads back from the gateway.
 *
 * Whoever can change the file can point an AG-UI thread at any gateway thread, and answer
 * its approvals. So the file is written readable and writable by its owner only, and a
 * file that anyone else could have changed is refused at start: a link, a file of another
 * user, one that group or others may write, one that gives a gateway thread to two AG-UI
 * threads. The gateway counts it among its own files, which no tool of a turn may touch.
 */
import { constants, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** The file's content. */
interface StoredThreadMap {
  readonly version: 1;
  /** AG-UI thread id → gateway thread id. */
  readonly threads: Readonly<Record<string, string>>;
}

export class AgUiThreadMap {
  private readonly threads = new Map<string, string>();

  /** Reads `file` when given and present; throws an Error naming the file and what is wrong with it otherwise. */
  constructor(private readonly file?: string) {
    if (file === undefined) return;
    let text: string;
    try {
      checkOwnership(file);
      text = readFileSync(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw new Error(`cannot read the AG-UI thread map ${file}: ${(error as Error).message}`);
    }
    let stored: unknown;
    try {
      stored = JSON.parse(text);
    } catch (error) {
      throw new Error(`the AG-UI thread map ${file} is not JSON: ${(error as Error).message}`);
    }
    const { version, threads } = (stored ?? {}) as Partial<StoredThreadMap>;
    if (version !== 1) throw new Error(`the AG-UI thread map ${file} has version ${JSON.stringify(version)} at /version, expected 1`);
    if (typeof threads !== "object" || threads === null || Array.isArray(threads))
      throw new Error(`the AG-UI thread map ${file} has no object at /threads`);
    const owner = new Map<string, string>();
    for (const [agUi, gateway] of Object.entries(threads)) {
      if (typeof gateway !== "string" || gateway === "")
        throw new Error(`the AG-UI thread map ${file} has ${JSON.stringify(gateway)} at /threads/${agUi}, expected a gateway thread id`);
      const first = owner.get(gateway);
      if (first !== undefined)
        throw new Error(
          `the AG-UI thread map ${file} gives gateway thread ${gateway} to two AG-UI threads (/threads/${first} and /threads/${agUi}); the bridge starts one gateway thread per AG-UI thread, so the file was changed by hand`,
        );
      owner.set(gateway, agUi);
      this.threads.set(agUi, gateway);
    }
  }

  /** The gateway thread of an AG-UI thread, if the bridge started one for it. */
  get(agUiThread: string): string | undefined {
    return this.threads.get(agUiThread);
  }

  /** Records the gateway thread of an AG-UI thread, in the file too before it returns. */
  set(agUiThread: string, gatewayThread: string): void {
    this.threads.set(agUiThread, gatewayThread);
    this.write();
  }

  /** Forgets an AG-UI thread (its gateway thread is gone), in the file too before it returns. */
  delete(agUiThread: string): void {
    if (this.threads.delete(agUiThread)) this.write();
  }

  private write(): void {
    if (this.file === undefined) return;
    const stored: StoredThreadMap = { version: 1, threads: Object.fromEntries(this.threads) };
    mkdirSync(dirname(this.file), { recursive: true });
    // A crash mid-write leaves the old file whole: the new one replaces it in one rename.
    const temporary = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
    renameSync(temporary, this.file);
  }
}

/** Throws when `file` is a link, or a file that another user, a group or others could have written. */
function checkOwnership(file: string): void {
  const stat = lstatSync(file);
  if (stat.isSymbolicLink()) throw new Error("it is a symbolic link; the thread map must be a plain file");
  if (!stat.isFile()) throw new Error("it is not a plain file");
  if (typeof process.getuid === "function" && stat.uid !== process.getuid())
    throw new Error(`it belongs to user ${stat.uid}, not to the user the bridge runs as (${process.getuid()})`);
  if ((stat.mode & (constants.S_IWGRP | constants.S_IWOTH)) !== 0)
    throw new Error(
      `group or others may write it (mode ${(stat.mode & 0o777).toString(8)}); make it writable by its owner only (chmod 600)`,
    );
}
