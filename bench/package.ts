/**
 * What `npm install turnspec` downloads: the packed tarball's size, its unpacked size and
 * its file count, from `npm pack --dry-run` after a fresh build (informational: no target).
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/package.ts
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isMain, resultTable, type ResultRow } from "./lib.js";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

interface PackResult {
  readonly size: number;
  readonly unpackedSize: number;
  readonly entryCount: number;
  readonly files: readonly { readonly path: string; readonly size: number }[];
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

export async function runPackageBench(options: { readonly log?: (line: string) => void } = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  log("== package: npm pack --dry-run of a fresh build");
  const built = spawnSync(process.execPath, [resolve(ROOT, "build.mjs")], { cwd: ROOT, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`the build failed: ${built.stderr || built.stdout}`);
  // The build has just run: --ignore-scripts keeps npm from running prepare a second time.
  const packed = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, encoding: "utf8" });
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`);
  const [pack] = JSON.parse(packed.stdout) as PackResult[];
  if (!pack) throw new Error("npm pack reported no package");
  const byFolder = new Map<string, number>();
  for (const file of pack.files) {
    const parts = file.path.split("/");
    const folder = parts[0] === "dist" && parts.length > 2 ? `dist/${parts[1]}` : parts.length > 1 ? parts[0]! : "(top level)";
    byFolder.set(folder, (byFolder.get(folder) ?? 0) + file.size);
  }
  const largest = [...byFolder].sort((a, b) => b[1] - a[1]).slice(0, 6);
  log(`  unpacked by folder, largest first: ${largest.map(([folder, bytes]) => `${folder} ${kib(bytes)}`).join(", ")}`);
  return [
    { name: "packed tarball", value: kib(pack.size), target: "(info)", status: "info" },
    { name: "  unpacked", value: kib(pack.unpackedSize), target: "(info)", status: "info" },
    { name: "  files", value: String(pack.entryCount), target: "(info)", status: "info" },
  ];
}

if (isMain(import.meta.url)) console.log(`\n${resultTable(await runPackageBench())}`);
