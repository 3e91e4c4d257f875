/**
 * Each package installed alone, as its user installs it, into an app of its own, and used
 * there the way that user would:
 *   - @turnspec/client (a client developer): few packages, a few megabytes, nothing built
 *     natively, no install script; a turn streamed from a gateway over stdio; the browser
 *     entry bundled with no Node built-in;
 *   - @turnspec/rpc (a protocol team shipping generated code): no dependencies at all; the
 *     generated TypeScript of the team's protocol builds and runs with it alone;
 *   - @turnspec/protocol: the agent-gateway protocol's validators with @turnspec/rpc alone;
 *   - @turnspec/generator: generate and check in code, with --typecheck naming ts-morph when
 *     it is missing;
 *   - @turnspec/gateway: a gateway served in memory with none of the optional drivers and
 *     SDKs, and each missing one named when the configuration asks for it;
 *   - @turnspec/conformance: a certification run against a gateway started by command.
 * The whole set through the turnspec command is test/package/tarball.test.ts.
 *
 * Slow (packs and installs): a file of its own.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appSource, EXPECTED_OUTPUT, writeGreeterSchemas } from "./greeter.js";
import { makeApp, packAll, repoRoot, STRICT_TSCONFIG, versionOf, WORKSPACES, type Packs } from "./packs.js";

const SLOW = 10 * 60_000;
const REPO_GATEWAY = `${process.execPath} ${join(repoRoot, "bin/turnspec.js")} serve --stdio --memory`;
const manifest = (name: string) => WORKSPACES.find((w) => w.manifest.name === name)!.manifest;

let packs: Packs;
beforeAll(async () => {
  packs = await packAll();
}, SLOW);
afterAll(() => packs?.remove());

/** The tarballs of a package and of the workspace packages it depends on, transitively. */
function withWorkspaceDependencies(name: string): string[] {
  const names = new Set<string>();
  const add = (n: string) => {
    if (names.has(n)) return;
    names.add(n);
    for (const dep of Object.keys(manifest(n).dependencies ?? {})) if (WORKSPACES.some((w) => w.manifest.name === dep)) add(dep);
  };
  add(name);
  return [...names].map((n) => packs.tarball(n));
}

describe("@turnspec/rpc alone", () => {
  it(
    "has no runtime dependencies, and generated TypeScript builds and runs with it alone",
    async () => {
      expect(manifest("@turnspec/rpc").dependencies ?? {}).toEqual({});
      const app = await makeApp(packs.work, "rpc-app", [packs.tarball("@turnspec/rpc"), `typescript@${versionOf("typescript")}`]);
      expect(app.installed()).toEqual(["@turnspec/rpc", "typescript"]);
      // The protocol team generates with the toolkit (here, this repository's) and ships the output.
      writeGreeterSchemas(app.write);
      const generated = spawnSync(
        process.execPath,
        [join(repoRoot, "bin/turnspec.js"), "generate", "--schemas", join(app.dir, "schemas"), "--out", join(app.dir, "src/generated")],
        { encoding: "utf8" },
      );
      expect(generated.status, generated.stderr).toBe(0);
      const imports = readFileSync(join(app.dir, "src/generated/client.ts"), "utf8");
      expect(imports).toContain('from "@turnspec/rpc"');
      app.write("src/main.ts", appSource("./generated", "@turnspec/rpc"));
      app.write("tsconfig.json", STRICT_TSCONFIG);
      await app.run(app.bin("tsc"), ["-p", "tsconfig.json"]);
      expect((await app.node("build/main.js")).trim()).toBe(EXPECTED_OUTPUT);
    },
    SLOW,
  );
});

describe("@turnspec/protocol alone", () => {
  it(
    "validates the agent-gateway protocol's messages with @turnspec/rpc as its only dependency",
    async () => {
      expect(Object.keys(manifest("@turnspec/protocol").dependencies ?? {})).toEqual(["@turnspec/rpc"]);
      const app = await makeApp(packs.work, "protocol-app", withWorkspaceDependencies("@turnspec/protocol"));
      expect(app.installed()).toEqual(["@turnspec/protocol", "@turnspec/rpc"]);
      app.write(
        "check.mjs",
        `import { validate, methods } from "@turnspec/protocol";
import { MessageChecker } from "@turnspec/rpc";
import { protocolView } from "@turnspec/protocol/view";
const bad = validate("TurnStartParams", { thread_id: "thr_1" }, "strict");
const checker = new MessageChecker("strict", { protocol: protocolView });
const findings = checker.check({ jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: 7 } }, 0);
console.log(JSON.stringify({ methods: Object.keys(methods).length, ok: bad.ok, findings: findings.length }));
`,
      );
      const out = JSON.parse(await app.node("check.mjs")) as { methods: number; ok: boolean; findings: number };
      expect(out.methods).toBeGreaterThan(10);
      expect(out.ok).toBe(false);
      expect(out.findings).toBeGreaterThan(0);
    },
    SLOW,
  );
});

describe("@turnspec/client alone", () => {
  it(
    "installs in a few packages and megabytes, builds nothing natively, and streams a turn over stdio",
    async () => {
      const app = await makeApp(packs.work, "client-app", withWorkspaceDependencies("@turnspec/client"));
      const installed = app.installed();
      expect(installed).toEqual(["@turnspec/client", "@turnspec/protocol", "@turnspec/rpc", "ws"]);
      expect(installed.length).toBeLessThanOrEqual(5);
      expect(app.installedBytes()).toBeLessThanOrEqual(5 * 1024 * 1024);
      // Nothing to compile and nothing run at install.
      for (const name of installed) {
        const pkg = JSON.parse(readFileSync(join(app.dir, "node_modules", name, "package.json"), "utf8")) as {
          scripts?: Record<string, string>;
          gypfile?: boolean;
        };
        expect(
          Object.keys(pkg.scripts ?? {}).filter((s) => ["preinstall", "install", "postinstall"].includes(s)),
          name,
        ).toEqual([]);
        expect(pkg.gypfile ?? false, name).toBe(false);
      }
      app.write(
        "turn.mjs",
        readFileSync(join(repoRoot, "examples/client/stdio.ts"), "utf8").replace(" as const", "").replace("command!", "command"),
      );
      const out = await app.run(process.execPath, ["turn.mjs"], { TURNSPEC_STDIO_COMMAND: REPO_GATEWAY });
      expect(out).toContain("Hello over stdio.");
      expect(out).toContain("[Completed]");
    },
    SLOW,
  );
});

describe("@turnspec/generator alone", () => {
  it(
    "generates and checks a protocol's code, and names ts-morph when --typecheck is asked without it",
    async () => {
      const app = await makeApp(packs.work, "generator-app", withWorkspaceDependencies("@turnspec/generator"));
      expect(app.installed()).not.toContain("@turnspec/gateway");
      expect(app.installed()).not.toContain("better-sqlite3");
      expect(app.installed()).not.toContain("ts-morph");
      writeGreeterSchemas(app.write);
      app.write(
        "gen.mjs",
        `import { checkSchemas, generate, staleFiles, typeCheckFiles, generateFiles } from "@turnspec/generator";
const check = checkSchemas("schemas");
const written = await generate({ schemasDir: "schemas", outDir: "generated" });
const stale = await staleFiles({ schemasDir: "schemas", outDir: "generated" });
let typecheck;
try {
  await typeCheckFiles(await generateFiles({ schemasDir: "schemas" }), "generated");
  typecheck = "ran";
} catch (error) {
  typecheck = error.message;
}
console.log(JSON.stringify({ ok: check.ok, written: written.length, stale: stale.length, typecheck }));
`,
      );
      const out = JSON.parse(await app.node("gen.mjs")) as { ok: boolean; written: number; stale: number; typecheck: string };
      expect(out).toMatchObject({ ok: true, stale: 0 });
      expect(out.written).toBeGreaterThan(5);
      expect(out.typecheck).toContain("needs the npm package ts-morph");
    },
    SLOW,
  );
});

describe("@turnspec/gateway alone", () => {
  it(
    "serves in memory with none of its optional drivers, and names the missing one a configuration needs",
    async () => {
      const peers = manifest("@turnspec/gateway").peerDependencies ?? {};
      expect(Object.keys(peers).sort()).toEqual([
        "@agentclientprotocol/sdk",
        "@modelcontextprotocol/sdk",
        "better-sqlite3",
        "openai",
        "pg",
      ]);
      const app = await makeApp(packs.work, "gateway-app", withWorkspaceDependencies("@turnspec/gateway"));
      for (const peer of Object.keys(peers)) expect(app.installed()).not.toContain(peer);
      app.write(
        "serve.mjs",
        `import { serve } from "@turnspec/gateway";
await serve({ stdio: true, memory: process.argv[2] !== "sqlite", ...(process.argv[2] === "sqlite" ? { store: "gateway.sqlite" } : {}), noAuth: false, host: "127.0.0.1" });
`,
      );
      const request = { jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: "ws_default", cwd: "/srv", mode: "Agent" } };
      const served = spawnSync(process.execPath, ["serve.mjs"], {
        cwd: app.dir,
        input: `${JSON.stringify(request)}\n`,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, NODE_OPTIONS: "" },
      });
      expect(served.status, served.stderr).toBe(0);
      expect(JSON.parse(served.stdout.trim())).toMatchObject({ id: 1, result: { thread: { workspace_id: "ws_default" } } });
      const sqlite = spawnSync(process.execPath, ["serve.mjs", "sqlite"], {
        cwd: app.dir,
        input: "",
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, NODE_OPTIONS: "" },
      });
      expect(sqlite.status).not.toBe(0);
      expect(sqlite.stderr).toContain(
        "the SQLite event store needs the npm package better-sqlite3, which is not installed: run npm install better-sqlite3@",
      );
    },
    SLOW,
  );
});

describe("@turnspec/conformance alone", () => {
  it(
    "certifies a gateway started by command, from the app's own folder",
    async () => {
      const app = await makeApp(packs.work, "conformance-app", withWorkspaceDependencies("@turnspec/conformance"));
      expect(app.installed()).not.toContain("@turnspec/gateway");
      app.write(
        "certify.mjs",
        `import { runCertify } from "@turnspec/conformance/certify-command";
process.exitCode = await runCertify({ gatewayCmd: process.argv[2], level: "core", capabilities: "core", only: ["RPC-*", "THREAD-*"], skip: [], list: false, reports: { json: "report.json" } });
`,
      );
      const certified = spawnSync(process.execPath, ["certify.mjs", `${REPO_GATEWAY} --provider-url {provider_url}`], {
        cwd: app.dir,
        encoding: "utf8",
        timeout: 120_000,
        env: { ...process.env, NODE_OPTIONS: "" },
      });
      expect(certified.status, `${certified.stdout}\n${certified.stderr}`).toBe(0);
      const report = JSON.parse(readFileSync(join(app.dir, "report.json"), "utf8")) as { results: { id: string; outcome: string }[] };
      expect(report.results.filter((r) => r.outcome === "pass").map((r) => r.id)).toContain("RPC-METHOD-NOT-FOUND");
    },
    SLOW,
  );
});
