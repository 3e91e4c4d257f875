/**
 * The client and server generated from the LSP slice (test/fixtures/lsp/schemas) over LSP's
 * own stdio framing (Content-Length headers): the server runs as a child process; the client
 * initializes, opens a document, hovers (once with a window/showMessageRequest back to the
 * client, answered by its typed handler), hears window/logMessage, shuts down and exits.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { RpcError } from "@turnspec/rpc";
import { ContentLengthTransport } from "../../packages/rpc/src/transport/content-length.js";
import { ProtocolClient } from "../fixtures/lsp/expected/client.js";
import type { LogMessageParams, ShowMessageRequestParams } from "../fixtures/lsp/expected/types.js";

const server = fileURLToPath(new URL("../fixtures/lsp/server.ts", import.meta.url));
const URI = "file:///work/hello.txt";

function launch() {
  const child = spawn(process.execPath, ["--import", new URL("../../scripts/from-source.mjs", import.meta.url).href, server], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const asked: ShowMessageRequestParams[] = [];
  const logged: LogMessageParams[] = [];
  const dropped: string[] = [];
  const client = new ProtocolClient(new ContentLengthTransport({ input: child.stdout, output: child.stdin, maxFrameBytes: 1 << 20 }), {
    validateIncoming: "strict",
    requestTimeoutMs: 20_000,
    onProtocolError: (error) => dropped.push(error.message),
    handlers: {
      "window/showMessageRequest": (params) => {
        asked.push(params);
        return params.actions?.[0] ?? null;
      },
    },
  });
  client.on("window/logMessage", (params) => logged.push(params));
  return { client, exited, asked, logged, dropped };
}

describe("the generated LSP client and server over Content-Length framing", () => {
  it("initialize, didOpen, hover with a question back to the client, logMessage, shutdown, exit", async () => {
    const { client, exited, asked, logged, dropped } = launch();
    await client.start();
    const init = await client.initialize({
      processId: process.pid,
      rootUri: "file:///work",
      capabilities: {},
      clientInfo: { name: "turnspec-test" },
    });
    expect(init).toEqual({
      capabilities: { textDocumentSync: 1, hoverProvider: true },
      serverInfo: { name: "turnspec-lsp-fixture", version: "1.0.0" },
    });
    await client.notify("initialized", {});
    await client.notify("textDocument/didOpen", {
      textDocument: { uri: URI, languageId: "plaintext", version: 1, text: "hello wörld\nplease ask me" },
    });

    const hover = await client.textDocumentHover({ textDocument: { uri: URI }, position: { line: 0, character: 2 } });
    expect(hover).toEqual({ contents: { kind: "markdown", value: "**hello**" } });
    expect(logged).toEqual([{ type: 3, message: `opened ${URI} (plaintext, version 1)` }]);

    const asking = await client.textDocumentHover({ textDocument: { uri: URI }, position: { line: 1, character: 8 } });
    expect(asking?.contents.value).toBe("**ask** (chose Yes)");
    expect(asked).toEqual([{ type: 3, message: "Which answer?", actions: [{ title: "Yes" }, { title: "No" }] }]);
    expect(await client.textDocumentHover({ textDocument: { uri: "file:///unknown" }, position: { line: 0, character: 0 } })).toBeNull();

    expect(await client.shutdown({})).toBeNull();
    await client.notify("exit", {});
    expect(await exited).toBe(0);
    expect(dropped).toEqual([]);
    await client.close();
  }, 60_000);

  it("a request before initialize gets LSP's ServerNotInitialized code; exit without shutdown exits 1", async () => {
    const { client, exited } = launch();
    await client.start();
    const error = await client
      .textDocumentHover({ textDocument: { uri: URI }, position: { line: 0, character: 0 } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({ code: -32002, reason: "server_not_initialized" });
    await client.notify("exit", {});
    expect(await exited).toBe(1);
    await client.close();
  }, 60_000);
});
