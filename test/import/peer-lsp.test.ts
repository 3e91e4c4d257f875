/**
 * typescript-language-server (npm, over the repository's TypeScript 6) driven by the client
 * generated from the import of LSP 3.17's meta model, over LSP's Content-Length framing:
 * initialize → initialized → textDocument/didOpen → textDocument/hover → textDocument/completion
 * → shutdown → exit. The server's own messages (window/logMessage, $/progress,
 * textDocument/publishDiagnostics, and the requests it sends back) are heard, answered and
 * checked like the rest: every frame of the session, both ways, is valid against the import
 * with its sender. Skipped with one line when the published meta model is not here.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContentLengthTransport } from "../../packages/rpc/src/transport/content-length.js";
import { importedPeer, methodsOf, recording, sessionFindings, type ImportedPeer } from "./peers.js";
import { sayMissing, SOURCES } from "./published.js";

const source = SOURCES.find((s) => s.name === "LSP 3.17")!;
const require = createRequire(import.meta.url);

let peer: ImportedPeer;
let workspace: string;

beforeAll(async () => {
  if (!source.present) return;
  peer = await importedPeer(source, "lsp");
  workspace = mkdtempSync(join(tmpdir(), "turnspec-lsp-workspace-"));
  writeFileSync(
    join(workspace, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { strict: true, target: "ES2022", module: "NodeNext" } }),
  );
}, 300_000);

afterAll(() => {
  peer?.cleanup();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

describe.skipIf(!source.present)("the client generated from LSP's meta model against typescript-language-server", () => {
  it("initialize, didOpen, hover, completion, shutdown and exit over Content-Length framing, every frame valid both ways", async () => {
    const cli = require.resolve("typescript-language-server/lib/cli.mjs");
    const child = spawn(process.execPath, [cli, "--stdio"], { stdio: ["pipe", "pipe", "pipe"], cwd: workspace });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const wire = recording(new ContentLengthTransport({ input: child.stdout, output: child.stdin, maxFrameBytes: 16 << 20 }));
    const dropped: string[] = [];
    const internal: unknown[] = [];
    const logged: unknown[] = [];
    const diagnostics: unknown[] = [];
    // The requests a server may send its client, answered as a small editor would.
    const handlers: Record<string, (params: unknown) => unknown> = {};
    for (const m of peer.model.methods.filter((x) => x.direction !== "client_to_server")) {
      handlers[m.name] = () => {
        throw new Error(`the test's editor does not serve ${m.name}`);
      };
    }
    Object.assign(handlers, {
      "window/workDoneProgress/create": () => null,
      "client/registerCapability": () => null,
      "client/unregisterCapability": () => null,
      "workspace/configuration": (params: { items: unknown[] }) => params.items.map(() => null),
      "window/showMessageRequest": () => null,
    });
    const client = new peer.client.ProtocolClient(wire.transport, {
      validateIncoming: "strict",
      requestTimeoutMs: 60_000,
      handlers,
      onProtocolError: (e: Error, frame: string) => dropped.push(`${e.message}: ${frame.slice(0, 200)}`),
      onInternalError: (e: unknown) => internal.push(e),
    });
    client.on("window/logMessage", (p: unknown) => logged.push(p));
    client.on("textDocument/publishDiagnostics", (p: unknown) => diagnostics.push(p));
    await client.start();

    const rootUri = pathToFileURL(workspace).href;
    const init = await client.initialize({
      processId: process.pid,
      rootUri,
      workspaceFolders: [{ uri: rootUri, name: "workspace" }],
      capabilities: {
        textDocument: {
          hover: { contentFormat: ["markdown", "plaintext"] },
          completion: { completionItem: { snippetSupport: false } },
          publishDiagnostics: {},
        },
        window: { workDoneProgress: true },
      },
      clientInfo: { name: "turnspec-test", version: "1.0.0" },
    });
    expect(init.capabilities.hoverProvider).toBe(true);
    expect(init.capabilities.completionProvider).toBeDefined();
    await client.notify("initialized", {});

    const uri = `${rootUri}/hello.ts`;
    const text = "const greeting: string = 'hello';\ngreeting.toUpperCase();\ngreeting.\n";
    await client.notify("textDocument/didOpen", { textDocument: { uri, languageId: "typescript", version: 1, text } });

    const hover = await client.textDocumentHover({ textDocument: { uri }, position: { line: 1, character: 2 } });
    expect(JSON.stringify(hover)).toContain("greeting");
    const completion = await client.textDocumentCompletion({
      textDocument: { uri },
      position: { line: 2, character: 9 },
      context: { triggerKind: 2, triggerCharacter: "." },
    });
    const items = Array.isArray(completion) ? completion : completion?.items;
    expect(items.map((i: { label: string }) => i.label)).toContain("toUpperCase");

    expect(await client.shutdown()).toBeNull();
    await client.notify("exit", undefined);
    expect(await exited).toBe(0);

    // The one frame outside LSP: typescript-language-server's own $/typescriptVersion. LSP
    // lets an implementation add $/ messages that the other side may ignore; the meta model
    // does not list it, so the client drops it and says so, and the check finds it.
    const extension = (m: unknown) => (m as { method?: string }).method === "$/typescriptVersion";
    expect(dropped).toEqual([
      expect.stringMatching(
        /^notification \$\/typescriptVersion is invalid: params: "\$\/typescriptVersion" is not a notification the server sends/,
      ),
    ]);
    expect(internal).toEqual([]);
    const sent = methodsOf(wire.frames);
    for (const m of [
      "client initialize",
      "client initialized",
      "client textDocument/didOpen",
      "client textDocument/hover",
      "client textDocument/completion",
      "client shutdown",
      "client exit",
    ])
      expect(sent.has(m), m).toBe(true);
    const at = wire.frames.findIndex((f) => extension(f.message)) + 1;
    expect(sessionFindings(peer.model, wire.frames)).toEqual([
      `${at} $/typescriptVersion /method: is not a notification of the protocol (got "$/typescriptVersion")`,
    ]);
    expect(
      sessionFindings(
        peer.model,
        wire.frames.filter((f) => !extension(f.message)),
      ),
    ).toEqual([]);
    console.log(
      `typescript-language-server: ${wire.frames.length} frames (from the server: ${[...sent]
        .filter((m) => m.startsWith("server"))
        .map((m) => m.slice(7))
        .join(", ")}), every frame of LSP valid both ways; $/typescriptVersion is the server's own`,
    );
  }, 300_000);
});

if (!source.present) sayMissing(source);
