/**
 * What a user of the whole toolkit gets from npm: every package packed, the `turnspec`
 * tarball installed with the others into an app of its own (outside this repository, so
 * nothing resolves to this repo's node_modules), and there the app
 *   - runs the `turnspec` command;
 *   - imports every entry point of every package from a plain .mjs file under node;
 *   - generates code from a small protocol of its own, with and without --standalone;
 *   - builds code written against that output with tsc (strict, NodeNext,
 *     noUncheckedIndexedAccess, exactOptionalPropertyTypes) and runs the build with node;
 *   - runs the same code with tsx, bundles it with esbuild and with vite, and runs the bundles.
 * Each package alone is test/package/packages.test.ts.
 *
 * Slow (packs, an npm install from the registry or its cache, several compilations): it
 * lives in its own file. Install scripts are skipped: the native SQLite module is not used
 * by anything tested here.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appSource, EXPECTED_OUTPUT, writeGreeterSchemas } from "./greeter.js";
import { makeApp, packAll, run as runAt, STRICT_TSCONFIG, versionOf, WORKSPACES, type App, type Packs } from "./packs.js";

const SLOW = 10 * 60_000;
const version = WORKSPACES.find((w) => w.manifest.name === "turnspec")!.manifest.version;

let packs: Packs;
let a: App;
let app: string;
let work: string;
const run = (file: string, args: readonly string[], cwd = app) => runAt(file, args, cwd);
const node = (...args: string[]) => a.node(...args);
const bin = (name: string) => a.bin(name);
const write = (path: string, content: string | object) => a.write(path, content);

/** Module hooks (run on the loader thread) that report the name of each package resolved. */
const TRACE_HOOKS = String.raw`let port;
export function initialize(data) {
  port = data.port;
}
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(resolved.url);
  if (match) port.postMessage(match[1]);
  return resolved;
}
`;
/** Preloaded with --import: registers the hooks and appends each name to $TRACE_FILE. */
const TRACE_REGISTER = String.raw`import { appendFileSync } from "node:fs";
import { register } from "node:module";
const { port1, port2 } = new MessageChannel();
port1.on("message", (name) => appendFileSync(process.env.TRACE_FILE, name + "\n"));
port1.unref();
register("./trace-hooks.mjs", import.meta.url, { data: { port: port2 }, transferList: [port2] });
`;

beforeAll(async () => {
  packs = await packAll();
  work = packs.work;
  a = await makeApp(
    work,
    "app",
    [
      ...WORKSPACES.map((w) => packs.tarball(w.manifest.name)),
      `typescript@${versionOf("typescript")}`,
      `esbuild@${versionOf("esbuild")}`,
      `vite@${versionOf("vite")}`,
      `@types/node@${versionOf("@types/node")}`,
      `tsx@${versionOf("tsx")}`,
      // The optional peer of @turnspec/client/ag-ui, so that every entry point can be imported.
      `@ag-ui/core@${versionOf("@ag-ui/core")}`,
      `zod@${versionOf("zod")}`,
      // The optional peer of --typecheck.
      `ts-morph@${versionOf("ts-morph")}`,
    ],
    { ignoreScripts: true },
  );
  app = a.dir;
  writeGreeterSchemas(write);
}, SLOW);

afterAll(() => packs?.remove());

describe("the packed package, installed in an app of its own", () => {
  it("installs every package with its compiled JavaScript, declarations and licence, and no tests or TypeScript sources but @turnspec/rpc's", () => {
    for (const { manifest } of WORKSPACES) {
      const root = join(app, "node_modules", manifest.name);
      expect(readFileSync(join(root, "LICENSE"), "utf8"), manifest.name).toContain("Apache License");
      const all = readdirSync(root, { recursive: true }) as string[];
      expect(
        all.some((f) => f.startsWith("test")),
        manifest.name,
      ).toBe(false);
      // @turnspec/rpc ships its sources: `generate --standalone` copies them, `--typecheck` reads them;
      // turnspec ships the examples its guides show.
      const sources = all.filter((f) => /\.ts$/.test(f) && !f.endsWith(".d.ts"));
      const shipped = (f: string) =>
        (manifest.name === "@turnspec/rpc" && f.startsWith("src")) || (manifest.name === "turnspec" && f.startsWith("examples"));
      expect(
        sources.filter((f) => !shipped(f)),
        manifest.name,
      ).toEqual([]);
    }
    expect(existsSync(join(app, "node_modules", "turnspec", "dist", "cli.js"))).toBe(true);
  });

  it("carries its guides, with every relative link leading to a file installed beside them", () => {
    const docs = join(app, "node_modules", "turnspec", "docs");
    const broken: string[] = [];
    for (const name of readdirSync(docs, { recursive: true }) as string[]) {
      if (!name.endsWith(".md")) continue;
      // Links outside fenced code blocks.
      const text = readFileSync(join(docs, name), "utf8").replace(/^(```|~~~)[^]*?^\1/gm, "");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!) || target!.startsWith("#")) continue;
        const path = target!.split("#")[0]!;
        if (!existsSync(join(docs, name, "..", path))) broken.push(`${name}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
    // No package keeps a lifecycle script: nothing runs at install, and nothing refers to the repository's build.
    for (const { manifest } of WORKSPACES) {
      const installed = JSON.parse(readFileSync(join(app, "node_modules", manifest.name, "package.json"), "utf8")) as { scripts?: object };
      expect(installed.scripts, manifest.name).toBeUndefined();
    }
  });

  it("runs the turnspec command: --version is turnspec's own, --help lists the commands", async () => {
    expect((await run(bin("turnspec"), ["--version"])).trim()).toBe(version);
    const help = await run(bin("turnspec"), ["--help"]);
    for (const command of ["generate", "validate", "serve", "certify"]) expect(help).toContain(`turnspec ${command}`);
    // The bin answers --help from the text the build wrote: exactly what the command line itself prints.
    const cliHelp = spawnSync(process.execPath, [join(app, "node_modules", "turnspec", "dist", "cli.js"), "--help"], {
      cwd: app,
      encoding: "utf8",
    });
    expect(help).toBe(cliHelp.stdout);
    // In another language, yargs answers (its texts follow the locale), so nothing stale is shown.
    const german = spawnSync(bin("turnspec"), ["--help"], { cwd: app, encoding: "utf8", env: { ...process.env, LC_ALL: "de_DE.UTF-8" } });
    expect(german.status).toBe(0);
    expect(german.stdout).toContain("Kommandos:");
    // validate and certify read the protocol's schemas and catalogue from the installed package.
    write(
      "session.jsonl",
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: "ws_default", cwd: "/srv", mode: "Agent" } })}\n`,
    );
    await run(bin("turnspec"), ["validate", "session.jsonl"]);
    write("bad.jsonl", `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: 7 } })}\n`);
    await expect(run(bin("turnspec"), ["validate", "bad.jsonl"])).rejects.toThrow(/workspace_id/);
    const catalogue = await run(bin("turnspec"), ["certify", "--list"]);
    expect(catalogue).toMatch(/^core \(\d+\)$/m);
    expect(catalogue).toContain("RPC-METHOD-NOT-FOUND");
  });

  it("loads neither SQLite, the OpenAI client, ws, ts-morph nor the TypeScript compiler for --help, generate and validate", async () => {
    // A module hook that lists every package the command resolves, by name.
    write("trace-hooks.mjs", TRACE_HOOKS);
    write("trace-packages.mjs", TRACE_REGISTER);
    write(
      "one-message.jsonl",
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: "ws_default", cwd: "/srv", mode: "Agent" } })}\n`,
    );
    const cli = join(app, "node_modules", "turnspec", "bin", "turnspec.js");
    for (const args of [["--help"], ["generate", "--schemas", "schemas", "--out", "traced-out"], ["validate", "one-message.jsonl"]]) {
      const traceFile = join(app, `trace-${args[0]}.txt`);
      writeFileSync(traceFile, "");
      const traced = spawnSync(process.execPath, ["--import", "./trace-packages.mjs", cli, ...args], {
        cwd: app,
        encoding: "utf8",
        env: { ...process.env, NODE_OPTIONS: "", TRACE_FILE: traceFile },
      });
      expect(traced.status, traced.stderr).toBe(0);
      const loaded = new Set(readFileSync(traceFile, "utf8").split("\n").filter(Boolean));
      if (args[0] === "--help") {
        // Answered from the help text the build wrote: no package is loaded but the command's own.
        expect([...loaded], "turnspec --help").toEqual(["turnspec"]);
        expect(traced.stdout).toContain("turnspec generate");
      } else {
        // Every other command resolves some package (yargs, or for generate's quick path, the generator's own).
        expect(loaded.size, `the trace of ${args[0]} saw no package at all`).toBeGreaterThan(0);
      }
      expect(
        [...loaded].filter((name) => ["better-sqlite3", "openai", "ws", "ts-morph", "typescript"].includes(name)),
        `turnspec ${args.join(" ")}`,
      ).toEqual([]);
    }
  });

  it("serves the reference gateway over stdio from the installed package", () => {
    const request = { jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: "ws_default", cwd: "/srv", mode: "Agent" } };
    const served = spawnSync(bin("turnspec"), ["serve", "--stdio", "--memory"], {
      cwd: app,
      input: `${JSON.stringify(request)}\n`,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(served.status, served.stderr).toBe(0);
    expect(JSON.parse(served.stdout.trim())).toMatchObject({
      jsonrpc: "2.0",
      id: 1,
      result: { thread: { workspace_id: "ws_default", cwd: "/srv" } },
    });
  });

  it("starts `turnspec inspect` from the installed package and serves the page bundle it ships", async () => {
    expect(await run(bin("turnspec"), ["inspect", "--help"])).toContain("--gateway-cmd");
    const shipped = readFileSync(join(app, "node_modules", "@turnspec/inspect", "dist", "assets", "inspector.js"), "utf8");
    const child = spawn(bin("turnspec"), ["inspect", "--gateway-cmd", `${bin("turnspec")} serve --stdio --memory`], {
      cwd: app,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on(
        "data",
        (chunk: Buffer) => (out += chunk.toString("utf8")) && /open (\S+)/.exec(out) && resolve(/open (\S+)/.exec(out)![1]!),
      );
      void exited.then((code) => reject(new Error(`turnspec inspect exited with ${code}`)));
    });
    // The page and its script are served to anyone; the token in the address's fragment opens the API.
    expect(await (await fetch(new URL("/assets/inspector.js", url))).text()).toBe(shipped);
    const token = new URLSearchParams(new URL(url).hash.slice(1)).get("token");
    expect((await fetch(new URL("/api/info", url), { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    child.kill("SIGINT");
    expect(await exited).toBe(0);
  }, 60_000);

  it("imports every entry point from a plain .mjs file under node", async () => {
    const entries = WORKSPACES.flatMap(({ manifest }) =>
      Object.keys(manifest.exports)
        .filter((key) => key.endsWith(".json") === false && !key.includes("*") && key !== "./package.json")
        .map((key) => (key === "." ? manifest.name : `${manifest.name}/${key.slice(2)}`)),
    );
    expect(entries).toEqual(
      expect.arrayContaining([
        "@turnspec/rpc",
        "@turnspec/rpc/transport",
        "@turnspec/protocol",
        "@turnspec/client",
        "@turnspec/client/browser",
        "@turnspec/generator",
        "@turnspec/gateway",
      ]),
    );
    write(
      "imports.mjs",
      `const out = {};
for (const name of ${JSON.stringify(entries)}) out[name] = Object.keys(await import(name)).length;
const { validate, isTypeName } = await import("@turnspec/protocol");
out.known = isTypeName("TurnStartParams");
out.invalid = validate("TurnStartParams", { unexpected: true }).ok;
const { checkSchemas } = await import("@turnspec/generator");
out.schemas = checkSchemas("schemas").ok;
const { stdioServerTransport, startWebSocketServer, connectWebSocket } = await import("@turnspec/rpc/transport");
out.transport = [typeof stdioServerTransport, typeof startWebSocketServer, typeof connectWebSocket].join();
console.log(JSON.stringify(out));
`,
    );
    const out = JSON.parse(await node("imports.mjs")) as Record<string, unknown>;
    for (const entry of entries) expect(out[entry], entry).toBeGreaterThan(0);
    expect(out).toMatchObject({ known: true, invalid: false, schemas: true, transport: "function,function,function" });
  });

  it("generates from the app's own schemas, type-checked, and the same files twice", async () => {
    await run(bin("turnspec"), ["generate", "--schemas", "schemas", "--out", "src/generated", "--typecheck"]);
    const first = readdirSync(join(app, "src/generated")).map((f) => [f, readFileSync(join(app, "src/generated", f), "utf8")]);
    expect(first.map(([f]) => f)).toEqual(
      expect.arrayContaining(["client.ts", "server.ts", "validators.ts", "validators.strict.ts", "index.ts"]),
    );
    expect(await run(bin("turnspec"), ["generate", "--schemas", "schemas", "--out", "src/generated", "--check"])).toContain("up to date");
  });

  it("builds code written against the output with tsc under strict NodeNext settings, and runs it with node", async () => {
    write("src/main.ts", appSource("./generated", "@turnspec/rpc"));
    write("tsconfig.json", STRICT_TSCONFIG);
    await run(bin("tsc"), ["-p", "tsconfig.json"]);
    expect(existsSync(join(app, "build/generated/validators.strict.js"))).toBe(true);
    expect((await node("build/main.js")).trim()).toBe(EXPECTED_OUTPUT);
  });

  it("declares every entry point in a way the app's strict tsc accepts, library declarations included", async () => {
    write(
      "types-check/entries.ts",
      `import type { RpcError, Transport } from "@turnspec/rpc";
import { stdioServerTransport, startWebSocketServer, type WebSocketServerOptions } from "@turnspec/rpc/transport";
import type { TypeName } from "@turnspec/protocol";
import type { GatewayConnection } from "@turnspec/client";
import type { connectBrowserWebSocket } from "@turnspec/client/browser";
import { checkSchemas, generateFileMap, type GeneratedFile } from "@turnspec/generator";

export type Used = [RpcError, Transport, WebSocketServerOptions, TypeName, GatewayConnection, typeof connectBrowserWebSocket, GeneratedFile];
export const used = [stdioServerTransport, startWebSocketServer, checkSchemas, generateFileMap];
`,
    );
    // Node projects have @types/node; the transports' declarations use Node's stream types.
    const { outDir: _outDir, rootDir: _rootDir, ...strict } = STRICT_TSCONFIG.compilerOptions;
    write("types-check/tsconfig.json", { compilerOptions: { ...strict, types: ["node"], noEmit: true }, include: ["entries.ts"] });
    await run(bin("tsc"), ["-p", "types-check/tsconfig.json"]);
  });

  it("runs the same code with tsx, straight from the TypeScript", async () => {
    expect((await run(bin("tsx"), ["src/main.ts"])).trim()).toBe(EXPECTED_OUTPUT);
  });

  it("bundles the same code with esbuild and runs the bundle", async () => {
    await run(bin("esbuild"), [
      "src/main.ts",
      "--bundle",
      "--platform=node",
      "--format=esm",
      "--outfile=bundle/esbuild.mjs",
      "--log-level=warning",
    ]);
    expect((await node("bundle/esbuild.mjs")).trim()).toBe(EXPECTED_OUTPUT);
  });

  it("bundles the same code with vite and runs the bundle", async () => {
    write(
      "vite.config.mjs",
      `export default { logLevel: "warn", build: { ssr: "src/main.ts", outDir: "bundle/vite", target: "node20", rollupOptions: { output: { entryFileNames: "main.mjs" } } }, ssr: { noExternal: true } };\n`,
    );
    await run(bin("vite"), ["build"]);
    expect((await node("bundle/vite/main.mjs")).trim()).toBe(EXPECTED_OUTPUT);
  });

  it("with --standalone, writes the support module beside the output, and the app then needs no turnspec at all", async () => {
    await run(bin("turnspec"), ["generate", "--schemas", "schemas", "--out", "standalone/src/generated", "--standalone", "--typecheck"]);
    const generated = join(app, "standalone/src/generated");
    const sources = readdirSync(generated, { recursive: true }) as string[];
    const imports = sources
      .filter((f) => f.endsWith(".ts"))
      .flatMap((f) => [...readFileSync(join(generated, f), "utf8").matchAll(/from "([^"]+)"/g)].map((m) => m[1]!));
    expect(imports.filter((specifier) => !specifier.startsWith("."))).toEqual([]);
    write("standalone/src/main.ts", appSource("./generated", "./generated/support/index.js"));
    write("standalone/tsconfig.json", STRICT_TSCONFIG);
    write("standalone/package.json", { type: "module", private: true });
    await run(bin("tsc"), ["-p", "standalone/tsconfig.json"]);
    // Moved away from the app's node_modules: nothing can resolve turnspec from there.
    const alone = join(work, "alone");
    rmSync(alone, { recursive: true, force: true });
    mkdirSync(alone);
    await run("cp", ["-r", join(app, "standalone/build"), join(app, "standalone/package.json"), alone]);
    expect((await run(process.execPath, ["build/main.js"], alone)).trim()).toBe(EXPECTED_OUTPUT);
  });
});
