/**
 * The gateway's own files: its event log (with what SQLite keeps beside it: `-wal`,
 * `-shm`, `-journal`, and the AG-UI bridge's thread map), its configuration file, its token
 * file. A turn's tools never read or write them, in any permission mode and through any
 * link: an auto-accepted edit of the write-ahead log would break the gateway for every
 * client, and the log holds every thread's conversation. The file tools refuse them (the
 * gate before asking anyone, the tool again at open time, against a link swapped in
 * since); the sandbox shows them empty and read-only (bubblewrap.ts).
 */
import { existsSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, resolve } from "node:path";
import { resolveRealPath } from "./paths.js";

/** One of the gateway's files, and what it is, in words. */
export interface OwnFile {
  readonly path: string;
  /** What the file is, for the refusal: "its event log", "its configuration file". */
  readonly what: string;
  /**
   * Files whose names extend this one's (`gateway.sqlite-wal`, `gateway.sqlite.ag-ui-threads.json`)
   * are the gateway's too: what SQLite and the bridge keep beside the log.
   */
  readonly withSiblings?: boolean;
}

/** What SQLite keeps beside a database in WAL mode, or while it rolls back. */
const SQLITE_SIBLINGS = ["-wal", "-shm", "-journal"];

export class GatewayFiles {
  private readonly files: readonly (OwnFile & { readonly real: string })[];

  /** `files` may be relative (to this process's working folder) and may not exist yet. */
  constructor(files: readonly OwnFile[]) {
    this.files = files.map((file) => {
      const absolute = isAbsolute(file.path) ? file.path : resolve(file.path);
      return { ...file, path: absolute, real: resolveRealPath(absolute) };
    });
  }

  /** What `path` is of the gateway's own files, in words, or undefined when it is none. `path` is absolute; links are followed. */
  match(path: string): string | undefined {
    let real: string;
    try {
      real = resolveRealPath(path);
    } catch {
      real = resolve(path);
    }
    for (const file of this.files) {
      if (real === file.real) return `the gateway's ${file.what}`;
      if (!file.withSiblings || dirname(real) !== dirname(file.real)) continue;
      const name = basename(real);
      const own = basename(file.real);
      if (name.startsWith(own) && /^[-.]/.test(name.slice(own.length))) {
        const suffix = name.slice(own.length);
        return SQLITE_SIBLINGS.includes(suffix)
          ? `the gateway's ${file.what} (SQLite's ${suffix.slice(1)} file beside it)`
          : `the gateway's ${file.what} (a file kept beside it)`;
      }
    }
    return undefined;
  }

  /**
   * What a sandbox hides: every own file that exists now, by its real path (the siblings
   * SQLite keeps beside the log among them), and the folders holding them, which are
   * locked read-only when they lie in a writable root so that no file can be added beside
   * the log, nor its folder renamed away.
   */
  present(): { readonly files: string[]; readonly folders: string[] } {
    const files = new Set<string>();
    const folders = new Set<string>();
    for (const file of this.files) {
      const candidates = [file.real, ...(file.withSiblings ? SQLITE_SIBLINGS.map((s) => `${file.real}${s}`) : [])];
      for (const candidate of candidates) if (existsSync(candidate) && statSync(candidate).isFile()) files.add(candidate);
      folders.add(dirname(file.real));
    }
    return { files: [...files], folders: [...folders] };
  }

  /** The paths, as given (absolute), for the operator's log. */
  get paths(): string[] {
    return this.files.map((f) => f.path);
  }
}
