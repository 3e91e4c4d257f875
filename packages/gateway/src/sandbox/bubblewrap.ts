/**
 * Bubblewrap (`bwrap`, Debian's `bubblewrap`), the OS sandbox shell commands run under on
 * Linux. Each run gets a fresh mount namespace in which the whole file system is bound
 * read-only and only the confinement's writable paths are bound writable; a fresh PID
 * namespace (the gateway's /proc/<pid> is out of sight, and when the shell exits the
 * kernel kills everything it left behind); no network namespace of the host unless the
 * turn's network is enabled; and no capabilities, so even root cannot remount its way out.
 *
 * A network namespace does not separate Unix-domain sockets that live in the file system:
 * connect() on a socket file needs no write access, so a read-only view is no protection.
 * The folders where the host keeps its sockets and its processes' scratch files (/run and
 * /var/run: Docker, D-Bus, PostgreSQL, systemd, nscd; /tmp and /var/tmp: X11, ssh-agent,
 * tmux, PostgreSQL, other turns' proxy sockets; $XDG_RUNTIME_DIR: the session bus, the
 * GnuPG and ssh agents, Wayland) are each replaced by an empty tmpfs, and only what the
 * turn owns is bound back on top: its roots and temp folder, and its own proxy socket's
 * folder. Abstract sockets (no file) belong to the network namespace, so only a turn whose
 * network is the host's reaches them. A seccomp filter on AF_UNIX was weighed against
 * this: it would refuse every Unix socket, the turn's own proxy and the sockets programs
 * use among themselves (socketpair, nscd, a local build server) included, needs a BPF
 * program per architecture, and still lets a socket file be read by path; hiding the
 * folders keeps what a turn owns working and is the same on every architecture.
 */
import { spawnSync } from "node:child_process";
import { existsSync, realpathSync, statSync } from "node:fs";
import { isWithin } from "../permissions/paths.js";
import type { Confinement } from "./confinement.js";

/** Where a host keeps its Unix sockets and its processes' scratch files: hidden from every confined command. */
export const HOST_SOCKET_FOLDERS = ["/run", "/var/run", "/tmp", "/var/tmp"] as const;

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
    const probe = spawnSync(
      path,
      [...bubblewrapArgs({ backend: BUBBLEWRAP, writable: [], readOnly: [], network: "none" }, "/"), "/bin/true"],
      { timeout: 5000 },
    );
    if (probe.status === 0) info = { path, version: version.stdout.trim() };
  }
  probed.set(path, info);
  return info;
}

/**
 * The folders a confinement hides under an empty tmpfs: HOST_SOCKET_FOLDERS and
 * `runtimeDir` ($XDG_RUNTIME_DIR), by their real paths, each once, those that exist as
 * folders. A folder that is itself inside one of the turn's roots (a thread whose folder is
 * /tmp, or /) is the turn's: it stays as the roots show it.
 */
export function hiddenFolders(
  confinement: Pick<Confinement, "writable" | "readOnly" | "tempDir">,
  runtimeDir: string | undefined = process.env.XDG_RUNTIME_DIR,
): string[] {
  const roots = [...confinement.writable, ...confinement.readOnly, ...(confinement.tempDir ? [confinement.tempDir] : [])];
  const folders: string[] = [];
  for (const candidate of [...HOST_SOCKET_FOLDERS, ...(runtimeDir ? [runtimeDir] : [])]) {
    if (!existsSync(candidate)) continue;
    const real = realpathSync(candidate);
    if (!statSync(real).isDirectory() || folders.some((f) => isWithin(real, f))) continue;
    if (roots.some((root) => isWithin(real, root))) continue;
    // A folder found inside another: the outer one hides it already.
    for (let i = folders.length - 1; i >= 0; i--) if (isWithin(folders[i]!, real)) folders.splice(i, 1);
    folders.push(real);
  }
  return folders;
}

/**
 * The bwrap arguments that confine a command started in `cwd`, up to (not including) the
 * command itself. Later binds win over earlier ones, so the root is bound read-only
 * first, then the host's socket folders are hidden, then the writable paths, then
 * read-only paths nested in writable ones, then `visible`: paths of the turn's own inside
 * a hidden folder (its proxy socket's folder), read-only; then the gateway's `own` files.
 */
export function bubblewrapArgs(
  confinement: Confinement,
  cwd: string,
  visible: readonly string[] = [],
  own?: { readonly files: readonly string[]; readonly folders: readonly string[] },
): string[] {
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
  const hidden = hiddenFolders(confinement);
  for (const folder of hidden) args.push("--tmpfs", folder);
  for (const path of confinement.writable) args.push("--bind", path, path);
  if (confinement.tempDir && !confinement.writable.includes(confinement.tempDir))
    args.push("--bind", confinement.tempDir, confinement.tempDir);
  for (const path of confinement.readOnly) args.push("--ro-bind", path, path);
  for (const path of visible) args.push("--ro-bind", path, path);
  // The gateway's own files (its log and what SQLite keeps beside it, its configuration,
  // its token): a folder of them inside a writable root is bound read-only, so nothing can
  // be added beside them and the folder cannot be renamed away (a mount point cannot be);
  // each file is then covered with /dev/null, read-only: it reads empty and takes no write.
  if (own) {
    const writable = [...confinement.writable, ...(confinement.tempDir ? [confinement.tempDir] : [])];
    const shown = (path: string) =>
      !hidden.some((folder) => isWithin(path, folder)) || [...writable, ...confinement.readOnly].some((root) => isWithin(path, root));
    for (const folder of own.folders) {
      if (shown(folder) && writable.some((root) => isWithin(folder, root) && folder !== root)) args.push("--ro-bind", folder, folder);
    }
    for (const file of own.files) if (shown(file)) args.push("--ro-bind", "/dev/null", file);
  }
  // A host whose resolver configuration lives in a hidden folder (/etc/resolv.conf → /run/…) keeps it for a turn with the host's network.
  if (confinement.network === "host") {
    const resolver = existsSync("/etc/resolv.conf") ? realpathSync("/etc/resolv.conf") : undefined;
    if (resolver && hidden.some((folder) => isWithin(resolver, folder))) args.push("--ro-bind", resolver, resolver);
  }
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
