/**
 * The second, independent reference: a gateway written from the documentation with the
 * generated server (test/conformance/independent-gateway/), not from runtime/, that takes
 * the other road wherever the documentation allows one, and must certify at Full for the
 * capabilities it claims. If the suite starts to expect the reference gateway's habits,
 * this fails.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createInMemoryPair } from "@turnspec/rpc";
import { serveIndependentGateway } from "./independent-gateway/gateway.js";
import { TOOL_MAP } from "./independent-gateway/tools.js";

const GATEWAY = "node --import tsx test/conformance/independent-gateway/main.ts --provider-url {provider_url}";
/** The same gateway on the generated server's whole connection (serveConnection) instead of its dispatcher. */
const ON_CONNECTION = "node --import tsx test/conformance/independent-gateway/main.ts --serve-connection --provider-url {provider_url}";
const CLAIMED = "core,permissions,routes,work";

type Frame = { id?: unknown; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: unknown };

describe("the independent gateway", () => {
  it.each([
    ["the generated dispatcher", GATEWAY],
    ["serveConnection", ON_CONNECTION],
  ])(
    "certifies at Full for core, permissions, routes and work, its tools mapped with --tool-map, served through %s",
    (_how, gateway) => {
      const dir = mkdtempSync(join(tmpdir(), "turnspec-independent-"));
      const run = spawnSync(
        "node",
        [
          "bin/turnspec.js",
          "certify",
          "--gateway-cmd",
          gateway,
          "--capabilities",
          CLAIMED,
          "--tool-map",
          JSON.stringify(TOOL_MAP),
          "--certificate",
          join(dir, "certificate.json"),
        ],
        { encoding: "utf8", timeout: 180_000 },
      );
      const failing = run.stdout.split("\n").filter((l) => /^[✗!]/.test(l) || /^ {4}/.test(l));
      expect(failing, run.stderr).toEqual([]);
      expect(run.stdout).toContain("Certified Full (Full requested) for core, permissions, routes, work");
      expect(run.status).toBe(0);
      const { certificate } = JSON.parse(readFileSync(join(dir, "certificate.json"), "utf8")) as {
        certificate: { certified: boolean; certifiedCapabilities: string[] };
      };
      expect(certificate).toMatchObject({ certified: true, certifiedCapabilities: ["core", "permissions", "routes", "work"] });
    },
    200_000,
  );

  it("is certified in docs/certify.md with the command and tool map this test uses", () => {
    const page = readFileSync("docs/certify.md", "utf8");
    expect(page).toContain(`--gateway-cmd "${GATEWAY}"`);
    expect(page).toContain(`--capabilities ${CLAIMED}`);
    expect(JSON.parse(/--tool-map '([^']+)'\n```\n$/.exec(page)?.[1] ?? "null")).toEqual(TOOL_MAP);
  });

  it("is not the reference gateway: it imports nothing from runtime/", () => {
    const folder = "test/conformance/independent-gateway";
    for (const file of readdirSync(folder)) {
      const source = readFileSync(join(folder, file), "utf8");
      expect(source, file).not.toMatch(/from\s+["'][^"']*runtime\//);
    }
  });

  it("takes the other allowed roads: non-streamed model calls, its own ids and tools, the terminal before the turn/cancel response", async () => {
    // A model that records each call and holds its answer until the test lets it go.
    const calls: Record<string, unknown>[] = [];
    const held: ServerResponse[] = [];
    const model = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        calls.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>);
        held.push(res);
      });
    });
    await new Promise<void>((done) => model.listen(0, "127.0.0.1", done));
    const [client, server] = createInMemoryPair();
    const received: Frame[] = [];
    client.onmessage = (frame) => void received.push(JSON.parse(frame) as Frame);
    await serveIndependentGateway(server, { providerUrl: `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1` });
    await client.start();
    let next = 0;
    const call = async (method: string, params: Record<string, unknown>) => {
      const id = `req-${++next}`;
      await client.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      await expect.poll(() => received.some((f) => f.id === id)).toBe(true);
      return received.find((f) => f.id === id)!;
    };
    try {
      const thread = (await call("thread/start", { cwd: tmpdir(), mode: "Agent" })).result!.thread as { id: string };
      expect(thread.id).toMatch(/^thread-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const started = await call("turn/start", {
        thread_id: thread.id,
        turn_id: "turn-one",
        input: [{ type: "text", text: "hello" }],
        mode: "Agent",
      });
      expect(started.result!.turn).toMatchObject({ id: "turn-one", status: "InProgress" });
      await expect.poll(() => calls.length).toBe(1);
      expect(calls[0]).toMatchObject({ stream: false });
      expect(calls[0]).not.toHaveProperty("stream_options");
      const tools = (calls[0]!.tools as { function: { name: string; parameters: { required: string[] } } }[]).map((t) => [
        t.function.name,
        t.function.parameters.required,
      ]);
      expect(tools).toEqual([
        ["run_command", ["cmd"]],
        ["create_file", ["file_path", "body"]],
        ["open_file", ["file_path"]],
        ["delegate", ["task", "route"]],
      ]);
      const userItem = received.find((f) => f.method === "item/started")!.params!.item as { id: string; type: string };
      expect(userItem).toMatchObject({ type: "userMessage", id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-/) });

      const cancel = await call("turn/cancel", { thread_id: thread.id, turn_id: "turn-one" });
      expect(cancel.result!.turn).toMatchObject({ id: "turn-one", status: "Interrupted" });
      const failedAt = received.findIndex((f) => f.method === "turn/failed" && f.params!.turn_id === "turn-one");
      expect(failedAt).toBeGreaterThan(-1);
      expect(failedAt).toBeLessThan(received.indexOf(cancel));
    } finally {
      for (const res of held) res.destroy();
      model.closeAllConnections();
      await new Promise<void>((done) => model.close(() => done()));
      await client.close();
    }
  });
});
