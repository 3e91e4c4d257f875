/**
 * JSON-RPC over HTTP: a generated server's dispatcher served by startHttpServer, and a
 * generated client over HttpClientTransport (the batches construct fixture: echo, batches
 * allowed). One POST per message or batch; 204 for notifications only; the HTTP answers
 * for what is not a JSON-RPC POST.
 */
import { rmdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateFiles, writeToDisk } from "../../packages/generator/src/generate.js";
import { RpcError } from "../../packages/rpc/src/index.js";
import { HttpClientTransport, startHttpServer, type RunningHttpServer } from "../../packages/rpc/src/transport/index.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const runDir = join(repoRoot, "test/.tmp-constructs", `${process.pid}-http`);

// The fixture's generated modules, loaded at run time (their types are checked in constructs.test.ts).
type Module = any;
let server: RunningHttpServer;
let generated: { client: Module; server: Module };
const heard: unknown[] = [];

beforeAll(async () => {
  writeToDisk(await generateFiles({ schemasDir: join(repoRoot, "test/fixtures/constructs/batches/schemas") }), runDir);
  generated = {
    client: await import(/* @vite-ignore */ join(runDir, "client.ts")),
    server: await import(/* @vite-ignore */ join(runDir, "server.ts")),
  };
  const dispatcher = generated.server.createDispatcher(
    {
      echo: (params: { text: string }) => {
        if (params.text === "boom") throw new RpcError(-32000, "no booms here");
        return { text: params.text };
      },
    },
    { onNotification: (method: string, params: unknown) => heard.push([method, params]) },
  );
  server = await startHttpServer((frame) => dispatcher.handleFrame(frame, undefined), { maxFrameBytes: 4096, path: "/rpc" });
}, 60_000);

afterAll(async () => {
  await server?.close();
  rmSync(runDir, { recursive: true, force: true });
  try {
    rmdirSync(dirname(runDir));
  } catch {
    // another run's folder is still there
  }
});

describe("JSON-RPC over HTTP", () => {
  it("a generated client calls a generated server, one POST per request, a batch in one POST", async () => {
    const client = new generated.client.ProtocolClient(new HttpClientTransport(server.url));
    await client.start();
    await expect(client.echo({ text: "hi" })).resolves.toEqual({ text: "hi" });
    const outcomes = await client.rpc.batch([
      { method: "echo", params: { text: "a" } },
      { method: "echo", params: { text: "boom" } },
      { method: "echo", params: { text: "c" } },
    ]);
    expect(outcomes.map((o: PromiseSettledResult<unknown>) => (o.status === "fulfilled" ? o.value : (o.reason as RpcError).code))).toEqual([
      { text: "a" },
      -32000,
      { text: "c" },
    ]);
    await expect(client.echo({ text: "boom" })).rejects.toMatchObject({ code: -32000, message: "no booms here" });
    await client.close();
  });

  it("answers what is not a JSON-RPC POST over HTTP alone, and a notification with 204", async () => {
    const post = (body: string, headers: Record<string, string> = { "content-type": "application/json" }, url = server.url) =>
      fetch(url, { method: "POST", headers, body });
    expect((await fetch(server.url)).status).toBe(405);
    expect((await post("{}", { "content-type": "text/plain" })).status).toBe(415);
    expect((await post("{}", undefined, server.url.replace("/rpc", "/other"))).status).toBe(404);
    expect((await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "echo", params: { text: "x".repeat(5000) } }))).status).toBe(413);
    const notified = await post(JSON.stringify({ jsonrpc: "2.0", method: "echo", params: { text: "n" } }));
    expect(notified.status).toBe(204);
    expect(await notified.text()).toBe("");
    const parseError = await post("{not json");
    expect(parseError.status).toBe(200);
    expect(await parseError.json()).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it("a client transport reports a server that answers with something other than JSON", async () => {
    const plain = await startHttpServer(async () => "not json", { maxFrameBytes: 1024 });
    const transport = new HttpClientTransport(plain.url);
    const errors: Error[] = [];
    transport.onerror = (e) => errors.push(e);
    await transport.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "x" }));
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/answered 200 with a body that is not JSON: not json/)]);
    await plain.close();
  });
});
