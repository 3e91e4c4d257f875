/**
 * What a user gets from npm: the project is packed (which builds dist/), the tarball is
 * installed into a temporary app of its own (outside this repository, so nothing resolves
 * to this repo's node_modules), and there the app
 *   - runs the `turnspec` command;
 *   - imports every entry point from a plain .mjs file under node;
 *   - generates code from a small protocol of its own, with and without --standalone;
 *   - builds code written against that output with tsc (strict, NodeNext,
 *     noUncheckedIndexedAccess, exactOptionalPropertyTypes) and runs the build with node;
 *   - runs the same code with tsx, bundles it with esbuild and with vite, and runs the bundles.
 *
 * Slow (a pack, an npm install from the registry or its cache, several compilations): it
 * lives in its own file. Install scripts are skipped: the native SQLite module is not used
 * by anything tested here.
 */
import { execFile, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const repoPackage = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string; exports: Record<string, unknown> };
const exec = promisify(execFile);
const SLOW = 10 * 60_000;

/** The version of a tool this repository has installed, so that the app's install is served from the npm cache. */
const versionOf = (name: string): string => (createRequire(join(repoRoot, "package.json"))(`${name}/package.json`) as { version: string }).version;

let app: string;
let work: string;

/** Runs a command in the app; the failure message carries its output. */
async function run(file: string, args: readonly string[], cwd = app): Promise<string> {
  try {
    const { stdout } = await exec(file, args, { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NODE_OPTIONS: "" } });
    return stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`\`${file} ${args.join(" ")}\` failed in ${cwd}:\n${stderr ?? ""}\n${stdout ?? ""}`, { cause: error });
  }
}
const node = (...args: string[]) => run(process.execPath, args);
const bin = (name: string) => join(app, "node_modules", ".bin", name);

function write(path: string, content: string | object): void {
  const full = join(app, path);
  mkdirSync(join(full, ".."), { recursive: true });
  writeFileSync(full, typeof content === "string" ? content : `${JSON.stringify(content, null, 2)}\n`);
}

const STANDARD_ERRORS = [
  [-32700, "parse_error", "Parse error"],
  [-32600, "invalid_request", "Invalid Request"],
  [-32601, "method_not_found", "Method not found"],
  [-32602, "invalid_params", "Invalid params"],
  [-32603, "internal_error", "Internal error"],
] as const;

/** The app's own protocol: one method, one domain error, no notifications. */
function writeGreeterSchemas(): void {
  const schema = (name: string, title: string, body: object) => ({
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `https://example.test/greeter/${name}`,
    title,
    ...body,
  });
  write("schemas/errors.json", {
    description: "Errors of the greeter protocol.",
    errors: [
      ...STANDARD_ERRORS.map(([code, reason, message]) => ({ code, reason, message, description: `${message}.`, standard: true })),
      { code: -32001, reason: "unknown_name", message: "Unknown name", description: "Nobody of that name is known." },
    ],
  });
  write("schemas/protocol.json", {
    title: "greeter protocol",
    version: "1.0.0",
    description: "Says hello.",
    schemaBaseUri: "https://example.test/greeter/",
    errors: { $ref: "errors.json" },
    methods: [
      {
        name: "greet/say",
        direction: "client_to_server",
        summary: "Greets someone.",
        params: { $ref: "greet_say_params.json" },
        result: { $ref: "greet_say_result.json" },
        errors: ["unknown_name"],
      },
    ],
    notifications: [],
  });
  write(
    "schemas/greet_say_params.json",
    schema("greet_say_params.json", "GreetSayParams", {
      description: "Who to greet.",
      type: "object",
      additionalProperties: false,
      required: ["name"],
      properties: { name: { type: "string", minLength: 1, description: "The name." }, shout: { type: "boolean", description: "In capitals." } },
    }),
  );
  write(
    "schemas/greet_say_result.json",
    schema("greet_say_result.json", "GreetSayResult", {
      description: "The greeting.",
      type: "object",
      additionalProperties: false,
      required: ["text"],
      properties: { text: { type: "string", description: "The greeting." } },
    }),
  );
}

/**
 * Code a protocol team writes against the generated output: a server from the generated
 * dispatcher and a client from the generated client, linked by an in-memory pair. `gen` is
 * the folder of the output, `support` where the JSON-RPC support module comes from.
 */
function appSource(gen: string, support: string): string {
  return `import { createInMemoryPair, RpcError } from "${support}";
import { ProtocolClient, createDispatcher, protocolError, isGreetSayParams, type GreetSayParams } from "${gen}/index.js";

const dispatcher = createDispatcher({
  "greet/say": (params: GreetSayParams) => {
    if (params.name === "nobody") throw protocolError("unknown_name");
    const text = \`hello, \${params.name}\`;
    return { text: params.shout === true ? text.toUpperCase() : text };
  },
});
const [clientSide, serverSide] = createInMemoryPair();
serverSide.onmessage = (frame: string) => {
  void dispatcher.handleFrame(frame, undefined).then((reply) => (reply === undefined ? undefined : serverSide.send(reply)));
};
await serverSide.start();
const client = new ProtocolClient(clientSide);
await client.start();
const lines: string[] = [];
lines.push((await client.greetSay({ name: "ada", shout: true })).text);
try {
  await client.greetSay({ name: "nobody" });
} catch (error) {
  lines.push(error instanceof RpcError ? \`rpc error \${error.code}\` : \`other error \${String(error)}\`);
}
const wire = await dispatcher.handleFrame(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "greet/say", params: { name: "" } }), undefined);
lines.push(String(JSON.parse(wire ?? "null").error.code));
lines.push(String(isGreetSayParams({ name: "x", extra: 1 })));
await client.close();
console.log(lines.join("\\n"));
`;
}
const EXPECTED_OUTPUT = ["HELLO, ADA", "rpc error -32001", "-32602", "false"].join("\n");

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

const STRICT_TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    skipLibCheck: false,
    types: [],
    outDir: "build",
    rootDir: "src",
  },
  include: ["src"],
};

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "turnspec-package-"));
  // `npm pack` runs prepare, which builds dist/ from the sources.
  const packed = JSON.parse(await run("npm", ["pack", "--json", "--pack-destination", work], repoRoot)) as Array<{ filename: string }>;
  const tarball = join(work, packed[0]!.filename);
  app = join(work, "app");
  mkdirSync(app);
  write("package.json", { name: "greeter-app", version: "9.9.9", private: true, type: "module" });
  await run("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--prefer-offline",
    "--ignore-scripts",
    tarball,
    `typescript@${versionOf("typescript")}`,
    `esbuild@${versionOf("esbuild")}`,
    `vite@${versionOf("vite")}`,
    `@types/node@${versionOf("@types/node")}`,
    `tsx@${versionOf("tsx")}`,
  ]);
  writeGreeterSchemas();
}, SLOW);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the packed package, installed in an app of its own", () => {
  it("ships compiled JavaScript, its declarations and the license, and no tests or TypeScript sources outside support/", () => {
    const root = join(app, "node_modules", "turnspec");
    expect(readFileSync(join(root, "LICENSE"), "utf8")).toContain("Apache License");
    const all = readdirSync(root, { recursive: true }) as string[];
    expect(all.some((f) => f.startsWith("test"))).toBe(false);
    expect(all.filter((f) => /\.ts$/.test(f) && !f.endsWith(".d.ts") && !f.startsWith(join("dist", "support")))).toEqual([]);
    expect(existsSync(join(root, "dist", "bin", "cli.js"))).toBe(true);
  });

  it("runs the turnspec command: --version is turnspec's own, --help lists the commands", async () => {
    expect((await run(bin("turnspec"), ["--version"])).trim()).toBe(repoPackage.version);
    const help = await run(bin("turnspec"), ["--help"]);
    for (const command of ["generate", "validate", "serve", "certify"]) expect(help).toContain(`turnspec ${command}`);
    // validate and certify read the protocol's schemas and catalogue from the installed package.
    write("session.jsonl", `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: "ws_default", cwd: "/srv", mode: "Agent" } })}\n`);
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
    write("one-message.jsonl", `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: "ws_default", cwd: "/srv", mode: "Agent" } })}\n`);
    const cli = join(app, "node_modules", "turnspec", "dist", "bin", "cli.js");
    for (const args of [["--help"], ["generate", "--schemas", "schemas", "--out", "traced-out"], ["validate", "one-message.jsonl"]]) {
      const traceFile = join(app, `trace-${args[0]}.txt`);
      writeFileSync(traceFile, "");
      const traced = spawnSync(process.execPath, ["--import", "./trace-packages.mjs", cli, ...args], { cwd: app, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "", TRACE_FILE: traceFile } });
      expect(traced.status, traced.stderr).toBe(0);
      const loaded = new Set(readFileSync(traceFile, "utf8").split("\n").filter(Boolean));
      expect(loaded.has("yargs"), `the trace of ${args[0]} saw no package at all`).toBe(true);
      expect([...loaded].filter((name) => ["better-sqlite3", "openai", "ws", "ts-morph", "typescript"].includes(name)), `turnspec ${args.join(" ")}`).toEqual([]);
    }
  });

  it("serves the reference gateway over stdio from the installed package", () => {
    const request = { jsonrpc: "2.0", id: 1, method: "thread/start", params: { workspace_id: "ws_default", cwd: "/srv", mode: "Agent" } };
    const served = spawnSync(bin("turnspec"), ["serve", "--stdio", "--memory"], { cwd: app, input: `${JSON.stringify(request)}\n`, encoding: "utf8", timeout: 60_000 });
    expect(served.status, served.stderr).toBe(0);
    expect(JSON.parse(served.stdout.trim())).toMatchObject({ jsonrpc: "2.0", id: 1, result: { thread: { workspace_id: "ws_default", cwd: "/srv" } } });
  });

  it("starts `turnspec inspect` from the installed package and serves the page bundle it ships", async () => {
    expect(await run(bin("turnspec"), ["inspect", "--help"])).toContain("--gateway-cmd");
    const shipped = readFileSync(join(app, "node_modules", "turnspec", "dist", "client", "inspector", "assets", "inspector.js"), "utf8");
    const child = spawn(bin("turnspec"), ["inspect", "--gateway-cmd", `${bin("turnspec")} serve --stdio --memory`], { cwd: app, stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")) && /open (\S+)/.exec(out) && resolve(/open (\S+)/.exec(out)![1]!));
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
    const entries = Object.keys(repoPackage.exports).filter((key) => key !== "./package.json").map((key) => (key === "." ? "turnspec" : `turnspec/${key.slice(2)}`));
    expect(entries).toEqual(expect.arrayContaining(["turnspec/rpc", "turnspec/transport", "turnspec/generated", "turnspec/client", "turnspec/client/browser", "turnspec/generator"]));
    write(
      "imports.mjs",
      `const out = {};
for (const name of ${JSON.stringify(entries)}) out[name] = Object.keys(await import(name)).length;
const { validate, isTypeName } = await import("turnspec/generated");
out.known = isTypeName("TurnStartParams");
out.invalid = validate("TurnStartParams", { unexpected: true }).ok;
const { checkSchemas } = await import("turnspec/generator");
out.schemas = checkSchemas("schemas").ok;
const { stdioServerTransport, startWebSocketServer, connectWebSocket } = await import("turnspec/transport");
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
    expect(first.map(([f]) => f)).toEqual(expect.arrayContaining(["client.ts", "server.ts", "validators.ts", "validators.strict.ts", "index.ts"]));
    expect(await run(bin("turnspec"), ["generate", "--schemas", "schemas", "--out", "src/generated", "--check"])).toContain("up to date");
  });

  it("builds code written against the output with tsc under strict NodeNext settings, and runs it with node", async () => {
    write("src/main.ts", appSource("./generated", "turnspec/rpc"));
    write("tsconfig.json", STRICT_TSCONFIG);
    await run(bin("tsc"), ["-p", "tsconfig.json"]);
    expect(existsSync(join(app, "build/generated/validators.strict.js"))).toBe(true);
    expect((await node("build/main.js")).trim()).toBe(EXPECTED_OUTPUT);
  });

  it("declares every entry point in a way the app's strict tsc accepts, library declarations included", async () => {
    write(
      "types-check/entries.ts",
      `import type { RpcError, Transport } from "turnspec/rpc";
import { stdioServerTransport, startWebSocketServer, type WebSocketServerOptions } from "turnspec/transport";
import type { TypeName } from "turnspec/generated";
import type { GatewayConnection } from "turnspec/client";
import type { connectBrowserWebSocket } from "turnspec/client/browser";
import { checkSchemas, generateFileMap, type GeneratedFile } from "turnspec/generator";
import { loadSchemas } from "turnspec";

export type Used = [RpcError, Transport, WebSocketServerOptions, TypeName, GatewayConnection, typeof connectBrowserWebSocket, GeneratedFile];
export const used = [stdioServerTransport, startWebSocketServer, checkSchemas, generateFileMap, loadSchemas];
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
    await run(bin("esbuild"), ["src/main.ts", "--bundle", "--platform=node", "--format=esm", "--outfile=bundle/esbuild.mjs", "--log-level=warning"]);
    expect((await node("bundle/esbuild.mjs")).trim()).toBe(EXPECTED_OUTPUT);
  });

  it("bundles the same code with vite and runs the bundle", async () => {
    write("vite.config.mjs", `export default { logLevel: "warn", build: { ssr: "src/main.ts", outDir: "bundle/vite", target: "node20", rollupOptions: { output: { entryFileNames: "main.mjs" } } }, ssr: { noExternal: true } };\n`);
    await run(bin("vite"), ["build"]);
    expect((await node("bundle/vite/main.mjs")).trim()).toBe(EXPECTED_OUTPUT);
  });

  it("with --standalone, writes the support module beside the output, and the app then needs no turnspec at all", async () => {
    await run(bin("turnspec"), ["generate", "--schemas", "schemas", "--out", "standalone/src/generated", "--standalone", "--typecheck"]);
    const generated = join(app, "standalone/src/generated");
    const sources = readdirSync(generated, { recursive: true }) as string[];
    const imports = sources.filter((f) => f.endsWith(".ts")).flatMap((f) => [...readFileSync(join(generated, f), "utf8").matchAll(/from "([^"]+)"/g)].map((m) => m[1]!));
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
