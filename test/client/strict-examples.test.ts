/**
 * The client guide's TypeScript, compiled as a user's project compiles it: the files under
 * examples/client/, every `ts` block of docs/client.md and the minimal gateway of
 * docs/minimal-gateway.md, under strict settings with exactOptionalPropertyTypes and
 * noUncheckedIndexedAccess (the settings docs/install.md recommends), which this
 * repository's own tsconfig does not turn on. `{ token: process.env.TURNSPEC_TOKEN }` is
 * what a user writes; the SDK's options must take it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "turnspec-strict-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The `ts` code blocks of a guide, each as a file of its own. */
function guideBlocks(guide: string): string[] {
  const text = readFileSync(join(repo, guide), "utf8");
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m, i) => {
    const file = join(dir, `${guide.replace(/\W/g, "_")}_${i}.ts`);
    writeFileSync(file, m[1]!);
    return file;
  });
}

/** What the strict compiler says of `files`, one line per diagnostic. */
function compile(files: readonly string[]): string[] {
  const source = (path: string) => [join(repo, path)];
  const options: ts.CompilerOptions = {
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    noImplicitReturns: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    types: ["node"],
    typeRoots: [join(repo, "node_modules/@types")],
    resolveJsonModule: true,
    verbatimModuleSyntax: true,
    skipLibCheck: true,
    noEmit: true,
    // The package's entry points, as its exports map them.
    paths: {
      "@turnspec/rpc": source("packages/rpc/src/index.ts"),
      "@turnspec/rpc/transport": source("packages/rpc/src/transport/index.ts"),
      "@turnspec/protocol": source("generated/index.ts"),
      "@turnspec/protocol/*": source("generated/*.ts"),
      "@turnspec/client": source("packages/client/src/index.ts"),
      "@turnspec/client/browser": source("packages/client/src/browser.ts"),
      "@turnspec/generator": source("packages/generator/src/index.ts"),
    },
  };
  const program = ts.createProgram(files, options);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file
      ? `${d.file.fileName.replace(`${repo}/`, "")}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
      : "(options)";
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  });
}

describe("the client guide's TypeScript under strict settings", () => {
  it("compiles: examples/client/*.ts, the ts blocks of docs/client.md and the minimal gateway", () => {
    const examples = readdirSync(join(repo, "examples/client"))
      .filter((f) => f.endsWith(".ts"))
      .map((f) => join(repo, "examples/client", f));
    const blocks = guideBlocks("docs/client.md");
    expect(examples.length).toBeGreaterThan(5);
    expect(blocks.length).toBeGreaterThan(5);
    expect(compile([...examples, ...blocks, join(repo, "examples/gateways/minimal/gateway.ts")])).toEqual([]);
  }, 120_000);

  it("takes an optional setting a user has as `T | undefined` (the environment's token, say)", () => {
    const file = join(dir, "undefined-options.ts");
    writeFileSync(
      file,
      [
        'import { connectWebSocket, GatewayConnection, spawnStdioTransport } from "@turnspec/client";',
        'import { connectBrowserWebSocket } from "@turnspec/client/browser";',
        "const token: string | undefined = process.env.TURNSPEC_TOKEN;",
        "const timeout: number | undefined = undefined;",
        'export const a = GatewayConnection.open({ connect: () => connectWebSocket("ws://127.0.0.1:8787/", { token, handshakeTimeoutMs: timeout, maxFrameBytes: timeout }), reconnect: undefined });',
        'export const b = connectBrowserWebSocket("ws://127.0.0.1:8787/", { token, WebSocket: undefined });',
        'export const c = spawnStdioTransport("turnspec", ["serve", "--stdio"], { cwd: process.env.GATEWAY_CWD, killTimeoutMs: timeout });',
        "export async function d(connection: GatewayConnection, signal: AbortSignal | undefined) {",
        '  for await (const event of connection.streamTurn({ thread_id: "t", turn_id: "u", input: [] }, { signal, cancelReason: process.env.REASON })) void event;',
        "}",
        "",
      ].join("\n"),
    );
    expect(compile([file])).toEqual([]);
  }, 120_000);
});
