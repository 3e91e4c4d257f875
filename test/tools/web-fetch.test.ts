/** web_fetch against a local server: what it reports, what it cuts, and failures as results. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createWebFetchTool,
  WEB_FETCH_CONTENT_LIMIT,
  WEB_FETCH_MAX_BYTES,
  webFetchTool,
} from "../../packages/gateway/src/tools/web-fetch.js";
import { testContext } from "./context.js";

const big = "b".repeat(WEB_FETCH_CONTENT_LIMIT + 1234);
/** Resolved when the /hang route has a request: the fetch is then in flight. */
let hanging: () => void = () => undefined;

const server = createServer((req, res) => {
  switch (req.url) {
    case "/text":
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
      return res.end("héllo");
    case "/json":
      res.writeHead(201, { "content-type": "application/json" });
      return res.end('{"a":1}');
    case "/big":
      res.writeHead(200, { "content-type": "text/html" });
      return res.end(big);
    case "/missing":
      res.writeHead(404, { "content-type": "text/plain" });
      return res.end("not here");
    case "/binary":
      res.writeHead(200, { "content-type": "image/png" });
      return res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00]));
    case "/huge":
    case "/huge-declared": {
      // More than the tool downloads, in pieces; with or without a declared length.
      const piece = Buffer.alloc(64 * 1024, "h");
      const pieces = Math.ceil(WEB_FETCH_MAX_BYTES / piece.length) + 4;
      res.writeHead(200, {
        "content-type": "text/plain",
        ...(req.url === "/huge-declared" ? { "content-length": String(pieces * piece.length) } : {}),
      });
      for (let i = 0; i < pieces; i++) res.write(piece);
      return res.end();
    }
    case "/same-host-redirect":
      res.writeHead(302, { location: "/text" });
      return res.end();
    case "/other-host-redirect":
      // localhost is another host name than 127.0.0.1, though it reaches the same server.
      res.writeHead(301, { location: `http://localhost:${(server.address() as AddressInfo).port}/text` });
      return res.end();
    case "/loop":
      res.writeHead(302, { location: "/loop" });
      return res.end();
    case "/hang":
      // Never answers: only a timeout or a cancel ends the fetch.
      return hanging();
    default:
      res.writeHead(500);
      return res.end();
  }
});
let base: string;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const ctx = () => testContext("/");

describe("web_fetch redirects", () => {
  it("follows a redirect on the same host", async () => {
    const result = await webFetchTool.run({ url: `${base}/same-host-redirect` }, ctx());
    expect(result).toMatchObject({ ok: true, item: { status_code: 200, content: "héllo" } });
  });

  it("does not follow a redirect to another host: the call was judged for this one", async () => {
    const result = await webFetchTool.run({ url: `${base}/other-host-redirect` }, ctx());
    expect(result.ok).toBe(false);
    expect(result.item).toMatchObject({ status_code: 301 });
    expect(result.content).toContain("on another host: fetch that URL to follow it");
    expect(result.content).toContain("http://localhost:");
  });

  it("gives up after a few redirects", async () => {
    const result = await webFetchTool.run({ url: `${base}/loop` }, ctx());
    expect(result).toMatchObject({ ok: false });
    expect(result.content).toMatch(/more than \d+ redirects/);
  });
});

describe("web_fetch", () => {
  it("shows as a webFetch of the URL", () => {
    expect(webFetchTool.spec.name).toBe("web_fetch");
    expect(webFetchTool.itemType).toBe("webFetch");
    expect(webFetchTool.describe({ url: "https://example.com/" }, { cwd: "/" })).toEqual({ url: "https://example.com/" });
  });

  it("reports status, content type, size and the body as text", async () => {
    const result = await webFetchTool.run({ url: `${base}/text` }, ctx());
    expect(result.item).toEqual({
      url: `${base}/text`,
      status_code: 200,
      content_type: "text/plain; charset=utf-8",
      bytes: 6,
      content: "héllo",
    });
    expect(result).toMatchObject({ ok: true, content: "HTTP 200 OK, text/plain; charset=utf-8, 6 bytes\n\nhéllo" });
    expect((await webFetchTool.run({ url: `${base}/json` }, ctx())).item).toMatchObject({ status_code: 201, content: '{"a":1}' });
  });

  it("cuts a long body and says so, reporting the full size", async () => {
    const result = await webFetchTool.run({ url: `${base}/big` }, ctx());
    expect(result.item.bytes).toBe(big.length);
    expect(result.item.content).toBe(
      `${"b".repeat(WEB_FETCH_CONTENT_LIMIT)}\n[… truncated: showing the first ${WEB_FETCH_CONTENT_LIMIT} of ${big.length} characters]`,
    );
  });

  it("stops downloading at its byte limit, reporting the size when it is declared", async () => {
    const undeclared = await webFetchTool.run({ url: `${base}/huge` }, ctx());
    expect(undeclared.item.bytes).toBe(WEB_FETCH_MAX_BYTES);
    expect(undeclared.content.startsWith(`HTTP 200 OK, text/plain, ${WEB_FETCH_MAX_BYTES} bytes (not all downloaded)\n\nhhh`)).toBe(true);
    expect(
      (undeclared.item.content as string).endsWith(
        `\n[… truncated: showing the first ${WEB_FETCH_CONTENT_LIMIT} of ${WEB_FETCH_MAX_BYTES} characters]`,
      ),
    ).toBe(true);
    const declared = await webFetchTool.run({ url: `${base}/huge-declared` }, ctx());
    expect(declared.item.bytes).toBe((Math.ceil(WEB_FETCH_MAX_BYTES / 65536) + 4) * 65536);
  });

  it("returns an error status as a result that is not ok, with its body", async () => {
    const result = await webFetchTool.run({ url: `${base}/missing` }, ctx());
    expect(result.ok).toBe(false);
    expect(result.item).toMatchObject({ status_code: 404, content: "not here" });
    expect(result.content).toBe("HTTP 404 Not Found, text/plain, 8 bytes\n\nnot here");
    expect(result.retryable, "a client error is the answer, not worth retrying").toBeUndefined();
  });

  it("marks a server error as retryable", async () => {
    const result = await webFetchTool.run({ url: `${base}/server-error` }, ctx());
    expect(result).toMatchObject({ ok: false, retryable: true, item: { status_code: 500 } });
  });

  it("does not show binary content as text", async () => {
    const result = await webFetchTool.run({ url: `${base}/binary` }, ctx());
    expect(result.item).toMatchObject({ status_code: 200, content_type: "image/png", bytes: 5, content: "" });
    expect(result.content).toBe("HTTP 200 OK, image/png, 5 bytes\n\n(binary content, not shown)");
  });

  it.each([
    ["not a url", "not a valid URL: not a url"],
    ["file:///etc/passwd", "only http and https URLs can be fetched, not file:"],
    ["ftp://example.com/x", "only http and https URLs can be fetched, not ftp:"],
  ])("refuses %s as a result", async (url, message) => {
    const result = await webFetchTool.run({ url }, ctx());
    expect(result).toEqual({ ok: false, content: message, item: { url, error: { message } } });
  });

  it("reports a refused connection as a result", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise((resolve) => closed.close(resolve));
    const result = await webFetchTool.run({ url }, ctx());
    expect(result).toMatchObject({
      ok: false,
      retryable: true,
      content: `fetching ${url} failed: connect ECONNREFUSED ${url.slice(7, -1)}`,
    });
    expect(result.timeout).toBeUndefined();
  });

  it("gives up at the timeout, capped by maxTimeoutMs", { timeout: 10_000 }, async () => {
    const result = await webFetchTool.run({ url: `${base}/hang` }, testContext("/", { maxTimeoutMs: 200 }));
    expect(result).toMatchObject({
      ok: false,
      retryable: true,
      content: `fetching ${base}/hang failed: timed out after 200 ms`,
      timeout: { deadline_ms: 200 },
    });
    expect(result.timeout!.elapsed_ms).toBeGreaterThanOrEqual(200);
    const configured = await createWebFetchTool({ timeoutMs: 100 }).run({ url: `${base}/hang` }, ctx());
    expect(configured).toMatchObject({ ok: false, content: `fetching ${base}/hang failed: timed out after 100 ms` });
  });

  it("stops when the turn is cancelled", { timeout: 10_000 }, async () => {
    const controller = new AbortController();
    const arrived = new Promise<void>((resolve) => (hanging = resolve));
    const running = webFetchTool.run({ url: `${base}/hang` }, testContext("/", { signal: controller.signal }));
    await arrived;
    controller.abort();
    const result = await running;
    expect(result).toMatchObject({ ok: false, content: `fetching ${base}/hang failed: cancelled` });
    expect(result.retryable, "a cancelled turn is not retried").toBeUndefined();
  });
});
