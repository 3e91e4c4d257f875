/**
 * What each kind of user installs, measured the way npm installs it: every workspace
 * package packed, then installed into apps of their own in a temporary folder.
 *   - @turnspec/client alone: packages, bytes on disk, native builds (targets ≤ 5, ≤ 5 MB, none);
 *   - @turnspec/rpc: its runtime dependencies (target 0), and what generated TypeScript needs
 *     (target: @turnspec/rpc only, read from the imports of freshly generated code);
 *   - the browser entry, @turnspec/client/browser, bundled with vite for a page that streams
 *     one turn: its size and its gzipped size (information);
 *   - the repository's node_modules without the opt-in Codex CLI (target ≤ 300 MB);
 *   - each package's packed and unpacked size (information).
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/package.ts
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { ensureBuilt, isMain, resultTable, type ResultRow } from "./lib.js";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const MB = 1024 * 1024;
const mb = (bytes: number) => `${(bytes / MB).toFixed(2)} MB`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

interface Packed {
  readonly name: string;
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
}

/** Bytes of every file below `dir`, skipping folders `skip` names. */
function bytesIn(dir: string, skip: (path: string) => boolean = () => false): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (skip(path)) continue;
    if (entry.isDirectory()) bytes += bytesIn(path, skip);
    else if (entry.isFile()) bytes += statSync(path).size;
  }
  return bytes;
}

function installedNames(app: string): string[] {
  const root = join(app, "node_modules");
  return readdirSync(root)
    .filter((n) => !n.startsWith("."))
    .flatMap((n) => (n.startsWith("@") ? readdirSync(join(root, n)).map((m) => `${n}/${m}`) : [n]));
}

function workspaceDependencies(name: string, manifests: Map<string, { dependencies?: Record<string, string> }>): string[] {
  const found = new Set<string>();
  const add = (n: string) => {
    if (found.has(n)) return;
    found.add(n);
    for (const dep of Object.keys(manifests.get(n)?.dependencies ?? {})) if (manifests.has(dep)) add(dep);
  };
  add(name);
  return [...found];
}

export async function runPackageBench(options: { readonly log?: (line: string) => void } = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  ensureBuilt(log);
  log("== package: each package packed, and installed alone as its user installs it");
  const work = mkdtempSync(join(tmpdir(), "turnspec-package-bench-"));
  try {
    const packed = JSON.parse(
      execFileSync("npm", ["pack", "--workspaces", "--json", "--pack-destination", work], { cwd: ROOT, encoding: "utf8" }),
    ) as Packed[];
    const workspaces = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { workspaces: string[] }).workspaces;
    const manifests = new Map(
      workspaces.map((dir) => {
        const manifest = JSON.parse(readFileSync(join(ROOT, dir, "package.json"), "utf8")) as {
          name: string;
          dependencies?: Record<string, string>;
        };
        return [manifest.name, manifest] as const;
      }),
    );
    for (const p of packed) log(`  ${p.name}: ${kib(p.size)} packed, ${kib(p.unpackedSize)} unpacked`);

    // The client developer's install.
    const app = join(work, "client-app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "client-app", private: true, type: "module" }));
    const tarballs = workspaceDependencies("@turnspec/client", manifests).map((name) =>
      join(work, packed.find((p) => p.name === name)!.filename),
    );
    const install = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--foreground-scripts", ...tarballs], {
      cwd: app,
      encoding: "utf8",
    });
    if (install.status !== 0) throw new Error(`npm install of @turnspec/client failed: ${install.stderr}`);
    const names = installedNames(app);
    const bytes = bytesIn(join(app, "node_modules"));
    const native = names.filter((name) => {
      const manifest = JSON.parse(readFileSync(join(app, "node_modules", name, "package.json"), "utf8")) as {
        gypfile?: boolean;
        scripts?: Record<string, string>;
      };
      return manifest.gypfile === true || ["preinstall", "install", "postinstall"].some((s) => manifest.scripts?.[s] !== undefined);
    });
    log(`  @turnspec/client installed alone: ${names.join(", ")}`);

    // What generated TypeScript imports, from a fresh generation of this repository's protocol.
    const out = join(work, "generated");
    execFileSync(
      process.execPath,
      [join(ROOT, "packages/turnspec/bin/turnspec.js"), "generate", "--schemas", join(ROOT, "schemas"), "--out", out],
      { cwd: ROOT },
    );
    const imported = new Set<string>();
    for (const file of readdirSync(out).filter((f) => f.endsWith(".ts"))) {
      for (const match of readFileSync(join(out, file), "utf8").matchAll(/from "([^".][^"]*)"/g)) imported.add(match[1]!);
    }
    const rpcDependencies = Object.keys(manifests.get("@turnspec/rpc")?.dependencies ?? {});

    // The browser entry, bundled for a page that streams one turn.
    const page = join(app, "page");
    mkdirSync(page);
    writeFileSync(
      join(page, "main.ts"),
      `import { connectBrowserWebSocket, GatewayConnection } from "@turnspec/client/browser";
const connection = await GatewayConnection.open({ connect: () => connectBrowserWebSocket("ws://127.0.0.1:8787/", { token: "t" }) });
for await (const event of connection.streamTurn({ thread_id: "thr_1", turn_id: "trn_1", input: [{ type: "text", text: "hi", textElements: [] }] })) {
  if (event.type === "text_delta") document.body.append(event.delta);
}
`,
    );
    const { build } = await import("vite");
    await build({
      configFile: false,
      logLevel: "silent",
      root: page,
      resolve: { conditions: ["browser", "module", "import", "default"] },
      build: {
        outDir: join(page, "dist"),
        emptyOutDir: true,
        lib: { entry: join(page, "main.ts"), formats: ["es"], fileName: () => "page.js" },
        minify: true,
      },
    });
    const bundle = readFileSync(join(page, "dist", "page.js"));
    const gzipped = gzipSync(bundle).length;
    log(`  browser bundle of one streamed turn: ${kib(bundle.length)}, ${kib(gzipped)} gzipped`);

    // The repository as a contributor installs it: npm ci, without the opt-in Codex CLI.
    const modules = join(ROOT, "node_modules");
    const repoBytes = bytesIn(modules, (path) => path === join(modules, "@openai") || path.startsWith(join(modules, ".cache")));
    return [
      { name: "@turnspec/client alone: packages", value: String(names.length), target: "≤ 5", status: names.length <= 5 ? "PASS" : "MISS" },
      { name: "@turnspec/client alone: on disk", value: mb(bytes), target: "≤ 5 MB", status: bytes <= 5 * MB ? "PASS" : "MISS" },
      {
        name: "@turnspec/client alone: native builds",
        value: native.length ? native.join(", ") : "none",
        target: "none",
        status: native.length === 0 ? "PASS" : "MISS",
      },
      {
        name: "@turnspec/rpc runtime dependencies",
        value: String(rpcDependencies.length),
        target: "0",
        status: rpcDependencies.length === 0 ? "PASS" : "MISS",
      },
      {
        name: "generated TypeScript imports",
        value: [...imported].sort().join(", ") || "nothing",
        target: "@turnspec/rpc only",
        status: [...imported].every((s) => s === "@turnspec/rpc") ? "PASS" : "MISS",
      },
      {
        name: "browser bundle, one streamed turn (gzipped)",
        value: `${kib(bundle.length)} (${kib(gzipped)})`,
        target: "(info)",
        status: "info",
      },
      {
        name: "repository node_modules without Codex",
        value: mb(repoBytes),
        target: "≤ 300 MB",
        status: repoBytes <= 300 * MB ? "PASS" : "MISS",
      },
    ];
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) console.log(`\n${resultTable(await runPackageBench())}`);
