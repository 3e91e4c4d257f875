/**
 * The two schemas folders a diff reads: a folder on disk, or the schemas folder at a git
 * ref of the current repository. Older schemas named the directions client_to_gateway and
 * gateway_to_client; they are read as client_to_server and server_to_client. The folder
 * is then loaded and checked by the generator's own loader.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { loadSchemas } from "../load.js";
import type { ProtocolModel } from "../model.js";

/** Direction names of earlier versions of the protocol table, and their current names. */
export const DIRECTION_ALIASES: Readonly<Record<string, string>> = {
  client_to_gateway: "client_to_server",
  gateway_to_client: "server_to_client",
};

/** A schemas folder that cannot be read or loaded: a usage error of the diff (exit 2). */
export class SchemasUnreadable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SchemasUnreadable";
  }
}

/** protocol.json with the old direction names replaced; other files are kept as they are. */
function withAliases(file: string, text: string): string {
  if (file !== "protocol.json") return text;
  let protocol: { methods?: { direction?: string }[]; notifications?: { direction?: string }[] };
  try {
    protocol = JSON.parse(text);
  } catch {
    return text; // the loader reports the JSON error with the file's name
  }
  let changed = false;
  for (const entry of [...(protocol.methods ?? []), ...(protocol.notifications ?? [])]) {
    const alias = entry.direction === undefined ? undefined : DIRECTION_ALIASES[entry.direction];
    if (alias) {
      entry.direction = alias;
      changed = true;
    }
  }
  return changed ? JSON.stringify(protocol, null, 2) : text;
}

/** Loads a folder of files (name → text) through a temporary folder. */
function loadFiles(files: ReadonlyMap<string, string>, label: string): ProtocolModel {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-diff-"));
  try {
    for (const [file, text] of files) writeFileSync(join(dir, file), withAliases(file, text));
    return loadSchemas(dir);
  } catch (error) {
    throw new SchemasUnreadable(`${label}: ${(error as Error).message.replaceAll(dir, label)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Loads a schemas folder on disk. */
export function loadFolder(dir: string): ProtocolModel {
  let names: string[];
  try {
    names = readdirSync(dir).filter((f) => f.endsWith(".json"));
  } catch (error) {
    throw new SchemasUnreadable(`cannot read the schemas folder ${dir}: ${(error as Error).message}`);
  }
  return loadFiles(new Map(names.map((f) => [f, readFileSync(join(dir, f), "utf8")])), dir);
}

function git(cwd: string, args: string[], input?: string): Buffer {
  try {
    return execFileSync("git", args, { cwd, input, maxBuffer: 256 * 1024 * 1024, stdio: ["pipe", "pipe", "pipe"] });
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? "").trim();
    throw new SchemasUnreadable(`git ${args.join(" ")} failed${stderr ? `: ${stderr}` : ""}`);
  }
}

/**
 * Loads the schemas folder `dir` (a folder inside a git work tree) as it was at `ref`.
 * The files are read with one `git cat-file --batch`, not one process per file.
 */
export function loadAtRef(dir: string, ref: string): ProtocolModel {
  // A ref that reads as an option (--output=…, --exec=…) is never handed to git, where it
  // would be taken as one: git's own refs cannot start with "-".
  if (ref.startsWith("-") || ref === "")
    throw new SchemasUnreadable(
      `--against ${JSON.stringify(ref)} is not a git ref: ${ref === "" ? "it is empty" : 'a ref cannot start with "-", and this one would be read by git as an option'}`,
    );
  const absolute = resolve(dir);
  let top: string;
  try {
    top = git(absolute, ["rev-parse", "--show-toplevel"]).toString().trim();
  } catch {
    throw new SchemasUnreadable(`--against needs a git repository: ${absolute} is not inside one`);
  }
  const inRepo = relative(top, absolute).split("\\").join("/");
  let commit: string;
  try {
    commit = git(top, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`])
      .toString()
      .trim();
  } catch {
    throw new SchemasUnreadable(`"${ref}" is not a commit of the git repository at ${top}`);
  }
  const listing = git(top, ["ls-tree", "-z", commit, "--", `${inRepo}/`]).toString();
  const blobs: { name: string; id: string }[] = [];
  for (const entry of listing.split("\0").filter(Boolean)) {
    const [meta, path] = entry.split("\t") as [string, string];
    const [, kind, id] = meta.split(" ") as [string, string, string];
    const name = path.slice(inRepo.length + 1);
    if (kind === "blob" && name.endsWith(".json")) blobs.push({ name, id });
  }
  if (blobs.length === 0) throw new SchemasUnreadable(`${ref} has no schemas in ${inRepo}/`);
  const batch = git(top, ["cat-file", "--batch"], blobs.map((b) => b.id).join("\n") + "\n");
  const files = new Map<string, string>();
  let offset = 0;
  for (const blob of blobs) {
    const headerEnd = batch.indexOf(0x0a, offset);
    const size = Number(batch.subarray(offset, headerEnd).toString().split(" ")[2]);
    files.set(blob.name, batch.subarray(headerEnd + 1, headerEnd + 1 + size).toString("utf8"));
    offset = headerEnd + 1 + size + 1;
  }
  return loadFiles(files, `${inRepo}/ at ${ref}`);
}

export const _internal = { withAliases };
