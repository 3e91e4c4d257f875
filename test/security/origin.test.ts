/**
 * Browser pages on other sites (hole 15): a WebSocket upgrade carrying an Origin the
 * server does not allow is refused with 403 before anything is read, with or without a
 * token, and logged with the flag that would allow it; a refused token is logged with its
 * cause; --no-auth serves on loopback only, with a warning.
 */
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { ConfigError } from "../../packages/gateway/src/config.js";
import { serve, type RunningGateway } from "../../packages/gateway/src/serve.js";

let running: RunningGateway | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** The HTTP status of an upgrade to `port` with these headers (101 when it became a WebSocket). */
function upgradeStatus(port: number, headers: Record<string, string>): Promise<number> {
  return new Promise((done, fail) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/`, { headers });
    socket.on("open", () => {
      socket.close();
      done(101);
    });
    socket.on("unexpected-response", (_request, response) => done(response.statusCode ?? 0));
    socket.on("error", (error) => fail(error));
  });
}

const start = async (extra: { noAuth?: boolean; allowedOrigins?: string[] } = {}) => {
  const logs: string[] = [];
  running = await serve({ stdio: false, port: 0, host: "127.0.0.1", token: "the-token", noAuth: false, memory: true, ...extra }, (m) =>
    logs.push(m),
  );
  return { port: running.server!.port, logs };
};

describe("the Origin of a WebSocket upgrade", () => {
  it("refuses a cross-site page even with the right token; a client without Origin connects", async () => {
    const { port } = await start();
    expect(await upgradeStatus(port, { Origin: "https://evil.example", Authorization: "Bearer the-token" })).toBe(403);
    expect(await upgradeStatus(port, { Authorization: "Bearer the-token" })).toBe(101);
  });

  it("lets the configured origins in, still behind the token", async () => {
    const { port } = await start({ allowedOrigins: ["https://app.example.com"] });
    expect(await upgradeStatus(port, { Origin: "https://app.example.com", Authorization: "Bearer the-token" })).toBe(101);
    expect(await upgradeStatus(port, { Origin: "https://app.example.com" })).toBe(401);
    expect(await upgradeStatus(port, { Origin: "https://app.example.com.evil.example", Authorization: "Bearer the-token" })).toBe(403);
  });

  it("logs each refused upgrade with its cause, and for an origin the flag that allows it", async () => {
    const { port, logs } = await start({ allowedOrigins: ["https://app.example.com"] });
    expect(await upgradeStatus(port, { Origin: "http://localhost:5173", Authorization: "Bearer the-token" })).toBe(403);
    expect(logs).toContain(
      "refused a WebSocket upgrade from origin http://localhost:5173: not allowed; start with --allow-origin http://localhost:5173 to allow it",
    );
    expect(await upgradeStatus(port, {})).toBe(401);
    expect(logs).toContain(
      "refused a WebSocket upgrade from 127.0.0.1: no bearer token; a client sends it as Authorization: Bearer <token>, a browser page as ?token=<token>",
    );
    expect(await upgradeStatus(port, { Origin: "https://app.example.com", Authorization: "Bearer not-the-token" })).toBe(401);
    expect(logs).toContain(
      "refused a WebSocket upgrade from 127.0.0.1 (origin https://app.example.com): the bearer token does not match the one this gateway was started with (--token, --token-file or $TURNSPEC_TOKEN)",
    );
    expect(logs.join("\n")).not.toContain("not-the-token");
    // An accepted connection is not logged as refused.
    const before = logs.length;
    expect(await upgradeStatus(port, { Authorization: "Bearer the-token" })).toBe(101);
    expect(logs.slice(before).filter((l) => l.startsWith("refused"))).toEqual([]);
  });

  it("with --no-auth, still refuses any page on loopback and warns", async () => {
    const { port, logs } = await start({ noAuth: true });
    expect(await upgradeStatus(port, { Origin: "http://attacker.example" })).toBe(403);
    expect(await upgradeStatus(port, {})).toBe(101);
    expect(logs.join("\n")).toMatch(/warning: authentication is off/);
  });
});

describe("--no-auth", () => {
  it("is refused on an address other machines reach", async () => {
    await expect(serve({ stdio: false, port: 0, host: "0.0.0.0", noAuth: true, memory: true }, () => undefined)).rejects.toThrow(
      ConfigError,
    );
    await expect(serve({ stdio: false, port: 0, host: "0.0.0.0", noAuth: true, memory: true }, () => undefined)).rejects.toThrow(
      /loopback address only/,
    );
  });
});
