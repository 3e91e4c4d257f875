/**
 * What users install, made the way npm makes it: every workspace package packed into a
 * tarball, and apps of their own (outside this repository, so nothing resolves to its
 * node_modules) that install a chosen set of the tarballs. The packages are packed from
 * their builds (npm ci builds them; `npm run build` after a change): a build older than its
 * sources fails here rather than testing stale code.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const exec = promisify(execFile);

/** The workspace packages: name, folder. */
export const WORKSPACES = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { workspaces: string[] }).workspaces.map(
  (dir) => ({
    dir,
    manifest: JSON.parse(readFileSync(join(repoRoot, dir, "package.json"), "utf8")) as PackageManifest,
  }),
);

export interface PackageManifest {
  readonly name: string;
  readonly version: string;
  readonly exports: Record<string, unknown>;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** The version of a tool this repository has installed, so that an app's install is served from the npm cache. */
export const versionOf = (name: string): string =>
  (createRequire(join(repoRoot, "package.json"))(`${name}/package.json`) as { version: string }).version;

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

/** Fails when a package's build is older than its sources. */
function checkBuilt(): void {
  for (const { dir, manifest } of WORKSPACES) {
    const sources = dir === "generated" ? join(repoRoot, dir) : join(repoRoot, dir, "src");
    let built: number;
    try {
      built = statSync(join(repoRoot, dir, "dist")).mtimeMs && newest(join(repoRoot, dir, "dist"));
    } catch {
      throw new Error(`${manifest.name} is not built: run npm run build`);
    }
    const changed =
      dir === "generated"
        ? Math.max(
            ...readdirSync(sources)
              .filter((f) => f.endsWith(".ts"))
              .map((f) => statSync(join(sources, f)).mtimeMs),
          )
        : newest(sources);
    if (changed > built) throw new Error(`the build of ${manifest.name} is older than its sources: run npm run build`);
  }
}

/** Runs a command; the failure message carries its output. */
export async function run(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    const { stdout } = await exec(file, args, {
      cwd,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, NODE_OPTIONS: "", ...env },
    });
    return stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`\`${file} ${args.join(" ")}\` failed in ${cwd}:\n${stderr ?? ""}\n${stdout ?? ""}`, { cause: error });
  }
}

export interface Packs {
  /** The folder holding the tarballs and the apps. */
  readonly work: string;
  /** The tarball of each package, by name. */
  readonly tarball: (name: string) => string;
  remove(): void;
}

/** Packs every workspace package into a new temporary folder. */
export async function packAll(): Promise<Packs> {
  checkBuilt();
  const work = mkdtempSync(join(tmpdir(), "turnspec-packs-"));
  const packed = JSON.parse(await run("npm", ["pack", "--workspaces", "--json", "--pack-destination", work], repoRoot)) as Array<{
    name: string;
    filename: string;
  }>;
  const byName = new Map(packed.map((p) => [p.name, join(work, p.filename)]));
  return {
    work,
    tarball: (name) => {
      const file = byName.get(name);
      if (!file) throw new Error(`no package ${name} was packed`);
      return file;
    },
    remove: () => rmSync(work, { recursive: true, force: true }),
  };
}

export interface App {
  readonly dir: string;
  write(path: string, content: string | object): void;
  run(file: string, args: readonly string[], env?: NodeJS.ProcessEnv): Promise<string>;
  node(...args: string[]): Promise<string>;
  bin(name: string): string;
  /** The packages installed under node_modules, by name. */
  installed(): string[];
  /** Bytes of every file under node_modules. */
  installedBytes(): number;
}

/** A new app (an ESM package.json of its own) in `work`, with `install` given to npm install. */
export async function makeApp(
  work: string,
  name: string,
  install: readonly string[],
  options: { ignoreScripts?: boolean } = {},
): Promise<App> {
  const dir = join(work, name);
  mkdirSync(dir);
  const app: App = {
    dir,
    write(path, content) {
      const full = join(dir, path);
      mkdirSync(join(full, ".."), { recursive: true });
      writeFileSync(full, typeof content === "string" ? content : `${JSON.stringify(content, null, 2)}\n`);
    },
    run: (file, args, env) => run(file, args, dir, env),
    node: (...args) => run(process.execPath, args, dir),
    bin: (binName) => join(dir, "node_modules", ".bin", binName),
    installed() {
      const root = join(dir, "node_modules");
      return readdirSync(root)
        .filter((n) => !n.startsWith("."))
        .flatMap((n) => (n.startsWith("@") ? readdirSync(join(root, n)).map((m) => `${n}/${m}`) : [n]))
        .sort();
    },
    installedBytes() {
      const root = join(dir, "node_modules");
      let bytes = 0;
      for (const entry of readdirSync(root, { withFileTypes: true, recursive: true })) {
        if (entry.isFile()) bytes += statSync(join(entry.parentPath, entry.name)).size;
      }
      return bytes;
    },
  };
  app.write("package.json", { name, version: "1.0.0", private: true, type: "module" });
  await app.run("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--prefer-offline",
    ...(options.ignoreScripts ? ["--ignore-scripts"] : []),
    ...install,
  ]);
  return app;
}

/** Strict settings a careful TypeScript project has. */
export const STRICT_TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    skipLibCheck: false,
    types: [] as string[],
    outDir: "build",
    rootDir: "src",
  },
  include: ["src"],
};
