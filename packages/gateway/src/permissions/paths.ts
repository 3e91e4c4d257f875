/**
 * Where a path really leads, and whether that is inside a turn's roots. A lexical check
 * alone is not enough: a file inside the workspace may be a symbolic link to /etc, and a
 * file that does not exist yet may sit under a linked folder. Both are judged by where the
 * kernel would take them.
 */
import { lstatSync, readlinkSync } from "node:fs";
import { dirname, isAbsolute, join, parse, resolve, sep } from "node:path";

/** Links followed in one resolution before giving up: Linux's own limit (MAXSYMLINKS). */
const MAX_SYMLINKS = 40;

/**
 * Errors that mean "nothing further can be seen from here": the rest of the path is then
 * appended as written. A path that cannot be looked at cannot be a link we would follow,
 * and the tool that tries to open it fails the same way.
 */
const UNSEEABLE = new Set(["ENOENT", "ENOTDIR", "EACCES"]);

/**
 * The absolute path `path` leads to, with `.`, `..` and every symbolic link resolved.
 *
 * Works on paths that do not exist yet: the longest existing prefix is resolved through
 * its links and the rest is appended, so a new file under a linked folder resolves through
 * the link, and so does a dangling link (writing to it would create its target).
 * Components are taken one at a time, as the kernel does, so `link/..` is the parent of
 * the link's target, not the folder holding the link. Callers that open a lexically
 * normalized path (as the file tools do) must normalize before calling this.
 *
 * Synchronous on purpose: a permission check is a handful of lstat calls, and keeping it
 * synchronous lets the decision stay a plain function.
 *
 * @throws when `path` is relative (what it means would depend on the gateway's own working
 *   directory) or when resolving it follows more than MAX_SYMLINKS links (a loop).
 */
export function resolveRealPath(path: string): string {
  if (!isAbsolute(path)) throw new Error(`resolveRealPath needs an absolute path, got ${JSON.stringify(path)}`);
  const root = parse(path).root;
  // Components still to walk, next one last, so a link's target can be pushed in its place.
  const pending = components(path).reverse();
  let current = root;
  let links = 0;
  while (pending.length > 0) {
    const part = pending.pop()!;
    if (part === ".") continue;
    if (part === "..") {
      current = dirname(current);
      continue;
    }
    const next = join(current, part);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch (error) {
      if (!UNSEEABLE.has((error as NodeJS.ErrnoException).code ?? "")) throw error;
      // Not there (yet): keep it as written, and still look at what follows, since a later
      // `..` may climb back into a part of the tree that exists.
      current = next;
      continue;
    }
    if (!isLink) {
      current = next;
      continue;
    }
    if (++links > MAX_SYMLINKS) throw new Error(`cannot resolve ${path}: more than ${MAX_SYMLINKS} symbolic links (a loop?)`);
    const target = readlinkSync(next);
    // A relative target is relative to the folder holding the link, which is `current`.
    if (isAbsolute(target)) current = parse(target).root;
    pending.push(...components(target).reverse());
  }
  return current;
}

/**
 * Whether `resolved` is `root` or lies beneath it. Both should already be resolved real
 * paths; trailing separators are ignored. Compares whole components: /a/bc is not within /a/b.
 */
export function isWithin(resolved: string, root: string): boolean {
  const path = resolve(resolved);
  const base = resolve(root);
  if (path === base) return true;
  // resolve() keeps the separator only on a filesystem root ("/"), which contains everything.
  return path.startsWith(base.endsWith(sep) ? base : base + sep);
}

/**
 * The real paths among `paths` that are outside every one of `roots`, each once, in the
 * order first seen. Both sides are resolved with resolveRealPath, so a root given through
 * a link (macOS's /tmp, say) still contains what lies beneath its target.
 *
 * A path that cannot be resolved (a link loop, an I/O error) is reported as outside, as
 * written: where it leads is unknown, so it cannot be shown to be inside, and asking is
 * the safe way to be wrong. A root that cannot be resolved, or a relative path on either
 * side, is a caller's mistake and throws.
 */
export function outsideRoots(paths: readonly string[], roots: readonly string[]): string[] {
  const realRoots = roots.map(resolveRealPath);
  const outside = new Set<string>();
  for (const path of paths) {
    if (!isAbsolute(path)) throw new Error(`outsideRoots needs absolute paths, got ${JSON.stringify(path)}`);
    let real: string;
    try {
      real = resolveRealPath(path);
    } catch {
      outside.add(resolve(path));
      continue;
    }
    if (!realRoots.some((root) => isWithin(real, root))) outside.add(real);
  }
  return [...outside];
}

/** The names in a path. Only Windows also separates with a backslash; elsewhere it is a valid character in a name. */
function components(path: string): string[] {
  return path.split(sep === "\\" ? /[\\/]+/ : /\/+/).filter((part) => part !== "");
}
