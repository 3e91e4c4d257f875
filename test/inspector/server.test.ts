/**
 * The inspector's server without a browser: the one-time token (in the URL's fragment, sent
 * by the page in a header or a WebSocket subprotocol, never taken from a cookie), the Host
 * and Origin checks, the page and its assets, and
 * the bridge to a stdio gateway it starts and to a WebSocket gateway it connects to.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket } from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { INSPECTOR_PROTOCOL, TOKEN_PROTOCOL_PREFIX } from "../../packages/inspect/src/page-token.js";
import { startInspector, type RunningInspector } from "../../packages/inspect/src/server.js";
import { startWebSocketServer, type RunningWebSocketServer } from "@turnspec/rpc/transport";
import { startHarness, type Harness } from "../gateway/harness.js";

/** A stand-in page bundle: these tests are about the server, not the page. */
function fakeAssets(): string {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-inspector-assets-"));
  writeFileSync(join(dir, "inspector.js"), "console.log('inspector');\n");
  writeFileSync(join(dir, "inspector.css"), "body {}\n");
  return dir;
}

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

async function inspector(
  options: Parameters<typeof startInspector>[0] = {},
): Promise<RunningInspector & { token: string; auth: Record<string, string>; origin: string }> {
  const started = await startInspector({ assetsDir: fakeAssets(), log: () => undefined, ...options });
  running.push(started);
  const token = new URLSearchParams(new URL(started.url).hash.slice(1)).get("token")!;
  return {
    ...started,
    close: started.close,
    token,
    auth: { authorization: `Bearer ${token}` },
    origin: `http://127.0.0.1:${started.port}`,
  };
}

/** The subprotocols the page offers: its own, and the one that carries the token. */
const protocolsFor = (token: string | undefined) => (token === undefined ? [] : [INSPECTOR_PROTOCOL, `${TOKEN_PROTOCOL_PREFIX}${token}`]);

/** Opens the bridge socket as the page would; resolves once open, rejects with the HTTP status of a refusal. */
function openBridge(port: number, headers: Record<string, string>, token?: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/gateway`, protocolsFor(token), { headers });
    socket.once("open", () => resolve(socket));
    socket.once("unexpected-response", (_request, response) => reject(new Error(`HTTP ${response.statusCode}`)));
    socket.once("error", reject);
  });
}

/** The HTTP answer to a bridge upgrade the server refuses. */
function refusal(port: number, headers: Record<string, string>, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/gateway`, protocolsFor(token), { headers });
    socket.once("open", () => reject(new Error("the bridge accepted the socket")));
    socket.once("unexpected-response", (_request, response) => {
      let body = "";
      response.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    socket.once("error", () => undefined);
  });
}

/** Sends one request over the socket and resolves with the response of the same id. */
function request(socket: WebSocket, id: number, method: string, params: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const onMessage = (data: Buffer) => {
      const message = JSON.parse(data.toString("utf8")) as Record<string, unknown>;
      if (message.id !== id) return;
      socket.off("message", onMessage);
      resolve(message);
    };
    socket.on("message", onMessage);
    socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  });
}

describe("the inspector's server", () => {
  it("serves the page without the token, and refuses every /api/ request without it in the Authorization header", async () => {
    const i = await inspector({ gatewayCmd: `node ${JSON.stringify(join(import.meta.dirname, "fake-gateway.mjs"))}` });
    // The token is in the fragment, which a browser never sends to a server.
    expect(i.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=[\w-]{20,}$/);
    const base = `http://127.0.0.1:${i.port}`;
    for (const headers of [{}, { authorization: "Bearer wrong" }, { cookie: `turnspec_inspect_${i.port}=${i.token}` }] as Record<
      string,
      string
    >[]) {
      const refused = await fetch(`${base}/api/info`, { headers });
      expect(refused.status).toBe(401);
      expect(await refused.text()).toContain("needs the token");
    }
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("set-cookie")).toBeNull();
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await page.text()).toContain('<script type="module" src="/assets/inspector.js">');
    const script = await fetch(`${base}/assets/inspector.js`);
    expect(script.headers.get("content-type")).toContain("text/javascript");
    expect(await script.text()).toContain("inspector");
    expect((await fetch(`${base}/assets/other.js`)).status).toBe(404);
    const info = await (await fetch(`${base}/api/info`, { headers: i.auth })).json();
    expect(info).toEqual({
      gateway: { kind: "command", label: expect.stringContaining("fake-gateway.mjs") },
      choosable: false,
      problem: null,
    });
    // Another name for this machine is not this server's (a rebound DNS name, say).
    const rebound = await new Promise<number>((resolve, reject) => {
      get({ host: "127.0.0.1", port: i.port, path: "/", headers: { ...i.auth, host: `evil.example:${i.port}` } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      }).once("error", reject);
    });
    expect(rebound).toBe(421);
  });

  it("bridges the page's socket to the stdio gateway it started, and refuses sockets without the token or from another origin", async () => {
    const i = await inspector({ gatewayCmd: `node ${JSON.stringify(join(import.meta.dirname, "fake-gateway.mjs"))}` });
    await expect(openBridge(i.port, { origin: i.origin })).rejects.toThrow("HTTP 401");
    await expect(openBridge(i.port, { origin: "http://evil.example" }, i.token)).rejects.toThrow("HTTP 403");
    await expect(openBridge(i.port, {}, i.token)).rejects.toThrow("HTTP 403");
    const socket = await openBridge(i.port, { origin: i.origin }, i.token);
    // Passed through unchanged, invalid mode and all: the page is the one that checks.
    const answer = await request(socket, 1, "thread/start", {});
    expect(answer).toEqual({ jsonrpc: "2.0", id: 1, result: { thread: expect.objectContaining({ id: "thr_fake", mode: "Bogus" }) } });
    // A second page takes the gateway over; the first is told why.
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    const second = await openBridge(i.port, { origin: i.origin }, i.token);
    expect(await closed).toEqual({ code: 4002, reason: "another inspector page took the gateway over" });
    expect(await request(second, 2, "turn/get", { thread_id: "thr_fake", turn_id: "t" })).toMatchObject({ id: 2, error: { code: -32601 } });
    second.close();
  });

  it("keeps the answer to a page that went away from the page that took the stdio gateway over", async () => {
    const i = await inspector({ gatewayCmd: `node ${JSON.stringify(join(import.meta.dirname, "fake-gateway.mjs"))}` });
    const first = await openBridge(i.port, { origin: i.origin }, i.token);
    first.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "turn/get", params: { thread_id: "thr_fake", turn_id: "t" } }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await openBridge(i.port, { origin: i.origin }, i.token);
    const heard: unknown[] = [];
    second.on("message", (data: Buffer) => heard.push(JSON.parse(data.toString("utf8"))));
    // The same id as the first page's request, still unanswered: a new page's client counts from 1 too.
    expect(await request(second, 1, "thread/start", {})).toMatchObject({ id: 1, result: { thread: { id: "thr_fake" } } });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(heard).toEqual([expect.objectContaining({ id: 1, result: expect.anything() })]);
    second.close();
  });

  it("reports a gateway command that exits, in words, on /api/info", async () => {
    const i = await inspector({ gatewayCmd: `node -e "console.error('no gateway here'); process.exit(3)"` });
    const info = async () =>
      (await (await fetch(`http://127.0.0.1:${i.port}/api/info`, { headers: i.auth })).json()) as { problem: string | null };
    await expect.poll(async () => (await info()).problem).toMatch(/exited with code 3; its stderr ends with:\nno gateway here/);
    // The page's socket is refused, saying why, rather than opened onto nothing.
    const refused = await refusal(i.port, { origin: i.origin }, i.token);
    expect(refused.status).toBe(502);
    expect(refused.body).toMatch(/exited with code 3; its stderr ends with:\nno gateway here/);
  });

  describe("with a WebSocket gateway", () => {
    let h: Harness;
    let gateway: RunningWebSocketServer;

    async function startGateway(): Promise<void> {
      h = await startHarness();
      gateway = await startWebSocketServer({ token: "gw-token", maxFrameBytes: 1024 * 1024, onConnection: (t) => h.gateway.connect(t) });
      running.push(h, gateway);
    }

    it("connects to it with the token, one connection per page socket", async () => {
      await startGateway();
      const i = await inspector({ gatewayUrl: gateway.url, gatewayToken: "gw-token" });
      const socket = await openBridge(i.port, { origin: i.origin }, i.token);
      const answer = await request(socket, 1, "thread/start", { cwd: h.cwd });
      expect(answer).toMatchObject({ id: 1, result: { thread: { cwd: h.cwd } } });
      socket.close();
    });

    it("closes the page's socket when the gateway refuses the token, and says why", async () => {
      await startGateway();
      const i = await inspector({ gatewayUrl: gateway.url, gatewayToken: "wrong" });
      const refused = await refusal(i.port, { origin: i.origin }, i.token);
      expect(refused.status).toBe(502);
      expect(refused.body).toContain("HTTP 401");
      const info = (await (await fetch(`http://127.0.0.1:${i.port}/api/info`, { headers: i.auth })).json()) as { problem: string };
      expect(info.problem).toContain("HTTP 401");
      expect(info.problem).not.toContain("wrong");
    });

    it("lets the page name the gateway when none was given, trying it first", async () => {
      await startGateway();
      const i = await inspector();
      const post = (body: unknown) =>
        fetch(`http://127.0.0.1:${i.port}/api/target`, {
          method: "POST",
          headers: { ...i.auth, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      expect(await refusal(i.port, { origin: i.origin }, i.token)).toEqual({
        status: 503,
        body: "no gateway chosen yet: name one on the page\n",
      });
      const noUrl = await post({ url: "http://127.0.0.1:1/" });
      expect(noUrl.status).toBe(400);
      expect(await noUrl.text()).toContain("must start with ws:// or wss://");
      const refused = await post({ url: gateway.url, token: "wrong" });
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain("HTTP 401");
      const elsewhere = await fetch(`http://127.0.0.1:${i.port}/api/target`, {
        method: "POST",
        headers: { ...i.auth, origin: "http://evil.example" },
        body: JSON.stringify({ url: gateway.url, token: "gw-token" }),
      });
      expect(elsewhere.status).toBe(403);
      const accepted = await post({ url: gateway.url, token: "gw-token" });
      expect(accepted.status).toBe(200);
      const socket = await openBridge(i.port, { origin: i.origin }, i.token);
      expect(await request(socket, 1, "thread/start", { cwd: h.cwd })).toMatchObject({ result: { thread: { cwd: h.cwd } } });
      socket.close();
    });

    it("does not let the page change a gateway given on the command line", async () => {
      await startGateway();
      const i = await inspector({ gatewayUrl: gateway.url, gatewayToken: "gw-token" });
      const response = await fetch(`http://127.0.0.1:${i.port}/api/target`, {
        method: "POST",
        headers: i.auth,
        body: JSON.stringify({ url: gateway.url }),
      });
      expect(response.status).toBe(409);
    });
  });

  it("refuses two gateways at once and a token without a URL", async () => {
    await expect(startInspector({ gatewayCmd: "true", gatewayUrl: "ws://127.0.0.1:1/", assetsDir: fakeAssets() })).rejects.toThrow(
      "name one gateway",
    );
    await expect(startInspector({ gatewayToken: "t", assetsDir: fakeAssets() })).rejects.toThrow("--token is the token of --gateway-url");
    await expect(startInspector({ gatewayUrl: "127.0.0.1:8787", assetsDir: fakeAssets() })).rejects.toThrow(
      'the gateway URL "127.0.0.1:8787" is not a URL',
    );
    await expect(startInspector({ gatewayUrl: "http://127.0.0.1:8787/", assetsDir: fakeAssets() })).rejects.toThrow(
      "must start with ws:// or wss://, got http://",
    );
    await expect(startInspector({ host: "0.0.0.0", assetsDir: fakeAssets() })).rejects.toThrow("--host must be a loopback address");
  });
});
