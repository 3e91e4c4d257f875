/**
 * The cache of `turnspec generate`: the files a run produced, kept under a key made of
 * everything they are made from, so that a run of unchanged schemas, and `--check`, read
 * them back instead of generating them again.
 *
 * The key is a SHA-256 over the bytes of every file of the schemas folder (with their
 * names; the loader reads no subfolder), the generator's own code, templates and meta-schemas, the versions of the
 * packages that write part of the output (ajv, json-schema-to-typescript, handlebars), the
 * support module's sources when they are copied (standalone), and the options. Any change
 * to one of them is another key. An entry carries its key and a SHA-256 of its files; one
 * that does not parse, names another key or does not match its digest is not used (the
 * run generates, and writes the entry again).
 */
import { createHash, type Hash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { packageVersion } from "./built.js";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { GeneratedFile, GenerateOptions } from "./generate.js";

/** Bumped when the layout of an entry or of the key changes. */
const FORMAT = 1;

/** How many entries a cache folder keeps (the most recently used). */
export const CACHE_ENTRIES = 32;

/** The environment variable naming the cache folder. */
export const CACHE_DIR_VARIABLE = "TURNSPEC_CACHE_DIR";

/** A cache folder that cannot be used: a usage error. */
export class CacheDirError extends Error {
  override readonly name = "CacheDirError";
}

const GENERATOR_DIR = fileURLToPath(new URL("..", import.meta.url));
/** The folder of this module: the compiled dist/ of an installed package, src/ in a checkout. */
const CODE_DIR = fileURLToPath(new URL(".", import.meta.url));

/** Whether `path` (an entry of a folder, a link followed) is a regular file. */
function isFile(path: string, entry: { isFile(): boolean; isSymbolicLink(): boolean }): boolean {
  if (entry.isFile()) return true;
  try {
    return entry.isSymbolicLink() && statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Every file under `dir` whose name `keep` accepts, with its path relative to `root`, in a fixed order; `deep` goes into subfolders. */
function hashFolder(hash: Hash, root: string, dir: string, keep: (name: string) => boolean, deep = true): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    hash.update(`missing\0${relative(root, dir)}\0`);
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (deep) hashFolder(hash, root, path, keep);
    } else if (keep(entry.name) && isFile(path, entry)) {
      const bytes = readFileSync(path);
      hash.update(`${relative(root, path)}\0${bytes.length}\0`);
      hash.update(bytes);
    }
  }
}

let generatorDigest: string | undefined;

/**
 * What the generator is: its package.json (its version), its code (`codeDir`), templates
 * and meta-schemas, and the versions of the packages it writes with. `root` is the
 * generator's package folder; this package's own is computed once per process.
 */
export function generatorFingerprint(root = GENERATOR_DIR, codeDir = root === GENERATOR_DIR ? CODE_DIR : join(root, "src")): string {
  const own = root === GENERATOR_DIR && codeDir === CODE_DIR;
  if (own && generatorDigest !== undefined) return generatorDigest;
  const hash = createHash("sha256");
  hash.update(readFileSync(join(root, "package.json")));
  hashFolder(hash, codeDir, codeDir, (name) => /\.(js|ts|json|hbs)$/.test(name) && !name.endsWith(".d.ts"));
  hashFolder(hash, root, join(root, "templates"), () => true);
  hashFolder(hash, root, join(root, "meta"), () => true);
  for (const name of ["ajv", "json-schema-to-typescript", "handlebars", "randexp"]) hash.update(`${name}@${packageVersion(name)}\0`);
  const digest = hash.digest("hex");
  if (own) generatorDigest = digest;
  return digest;
}

/** The options that shape the output, in a fixed order, defaults left as given. */
function optionsKey(options: GenerateOptions): string {
  return JSON.stringify([
    options.lang ?? "typescript",
    options.goModule ?? null,
    options.support ?? null,
    options.clientClass ?? null,
    options.outputs ?? null,
    options.standalone ?? false,
  ]);
}

/** The key of a run: a SHA-256 of everything its output is made from. */
export function cacheKey(options: GenerateOptions): string {
  const hash = createHash("sha256");
  hash.update(`turnspec generate cache ${FORMAT}\0${generatorFingerprint()}\0${optionsKey(options)}\0`);
  if (options.standalone) {
    // --standalone copies the support module's sources into the output.
    const rpcDir = dirname(createRequire(import.meta.url).resolve("@turnspec/rpc/package.json"));
    hashFolder(hash, rpcDir, join(rpcDir, "src"), () => true);
  }
  // The loader reads the folder's own files (the .json ones; the others are taken too), not its subfolders.
  hash.update("schemas\0");
  hashFolder(hash, options.schemasDir, options.schemasDir, () => true, false);
  return hash.digest("hex");
}

function isInside(path: string, folder: string): boolean {
  const rel = relative(folder, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * The cache folder: `explicit` (the environment's TURNSPEC_CACHE_DIR) when given, else
 * node_modules/.cache/turnspec of the nearest folder above the schemas that has a
 * node_modules, else $XDG_CACHE_HOME/turnspec, else ~/.cache/turnspec. Never inside the
 * output folder: a default there is passed over, an explicit one is refused.
 */
export function cacheDirFor(schemasDir: string, outDir: string, explicit = process.env[CACHE_DIR_VARIABLE]): string {
  if (explicit !== undefined && explicit !== "") {
    const dir = resolve(explicit);
    if (isInside(dir, outDir))
      throw new CacheDirError(`the cache folder ${dir} (${CACHE_DIR_VARIABLE}) is inside the output folder ${outDir}; name one outside it`);
    return dir;
  }
  const candidates: string[] = [];
  for (let dir = resolve(schemasDir); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "node_modules"))) {
      candidates.push(join(dir, "node_modules", ".cache", "turnspec"));
      break;
    }
    if (dirname(dir) === dir) break;
  }
  const xdg = process.env.XDG_CACHE_HOME;
  candidates.push(join(xdg !== undefined && isAbsolute(xdg) ? xdg : join(homedir(), ".cache"), "turnspec"));
  return candidates.find((dir) => !isInside(dir, outDir)) ?? join(homedir(), ".cache", "turnspec");
}

interface Entry {
  readonly format: number;
  readonly key: string;
  readonly sha256: string;
  readonly files: GeneratedFile[];
}

function filesDigest(files: readonly GeneratedFile[]): string {
  const hash = createHash("sha256");
  for (const file of files) hash.update(`${file.path}\0${Buffer.byteLength(file.content)}\0${file.content}`);
  return hash.digest("hex");
}

function entryPath(dir: string, key: string): string {
  return join(dir, `${key}.json`);
}

/** The files kept under `key`, or undefined when there is no entry or it cannot be trusted. */
export function readCache(dir: string, key: string): GeneratedFile[] | undefined {
  const path = entryPath(dir, key);
  let entry: Entry;
  try {
    entry = JSON.parse(readFileSync(path, "utf8")) as Entry;
  } catch {
    return undefined;
  }
  if (entry === null || typeof entry !== "object" || entry.format !== FORMAT || entry.key !== key || !Array.isArray(entry.files))
    return undefined;
  if (!entry.files.every((f) => f !== null && typeof f === "object" && typeof f.path === "string" && typeof f.content === "string"))
    return undefined;
  if (entry.sha256 !== filesDigest(entry.files)) return undefined;
  try {
    // Most recently used first when the folder is pruned.
    const now = new Date();
    utimesSync(path, now, now);
  } catch {
    // A read-only cache is still read.
  }
  return entry.files.map((f) => ({ path: f.path, content: f.content }));
}

/** Keeps `files` under `key` (written whole, then renamed into place) and prunes the folder to its newest entries. */
export function writeCache(dir: string, key: string, files: readonly GeneratedFile[]): void {
  mkdirSync(dir, { recursive: true });
  const entry: Entry = { format: FORMAT, key, sha256: filesDigest(files), files: files.map((f) => ({ path: f.path, content: f.content })) };
  const path = entryPath(dir, key);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(entry));
  renameSync(temporary, path);
  const entries = readdirSync(dir)
    .filter((name) => /^[0-9a-f]{64}\.json$/.test(name))
    .map((name) => {
      try {
        return { name, used: statSync(join(dir, name)).mtimeMs };
      } catch {
        return { name, used: 0 };
      }
    })
    .sort((a, b) => b.used - a.used);
  for (const old of entries.slice(CACHE_ENTRIES)) rmSync(join(dir, old.name), { force: true });
}
