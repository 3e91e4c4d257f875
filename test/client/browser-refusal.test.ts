/**
 * A browser is told nothing of why its WebSocket did not open: connectBrowserWebSocket's
 * error names the likely causes (the page's origin first, with the flag that allows it), and
 * the gateway's log says which one it was. Run with `ws` standing in for the browser's
 * WebSocket, sending the Origin a page would.
 */
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { connectBrowserWebSocket } from "../../packages/client/src/browser.js";
import { serve, type RunningGateway } from "../../packages/gateway/src/serve.js";

let running: RunningGateway | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** A WebSocket that sends `origin` with its upgrade, as a page served from there would. */
const fromPage = (origin: string) =>
  class extends WebSocket {
    constructor(url: string) {
      super(url, { origin });
      // A browser reports a refused handshake as an error event then a close; `ws` throws an error nobody listens to.
      this.on("error", () => undefined);
    }
  } as unknown as typeof globalThis.WebSocket;

const refusal = async (url: string, options: Parameters<typeof connectBrowserWebSocket>[1]) => {
  try {
    await connectBrowserWebSocket(url, options);
    return "connected";
  } catch (error) {
    return (error as Error).message;
  }
};

describe("a browser connection the gateway refuses", () => {
  it("names the page's origin and --allow-origin among the likely causes, and the gateway logs the flag", async () => {
    const logs: string[] = [];
    running = await serve({ stdio: false, port: 0, host: "127.0.0.1", token: "the-token", noAuth: false, memory: true }, (m) =>
      logs.push(m),
    );
    const url = running.server!.url;
    const message = await refusal(url, { token: "the-token", WebSocket: fromPage("http://localhost:5173") });
    expect(message).toContain(`cannot connect to ${url}`);
    expect(message).toContain("this page's origin is not allowed by the gateway (start it with --allow-origin ORIGIN)");
    expect(message).toContain("the token is wrong");
    expect(message).toContain("the URL is wrong or no gateway listens there");
    expect(message).not.toContain("the-token");
    expect(logs).toContain(
      "refused a WebSocket upgrade from origin http://localhost:5173: not allowed; start with --allow-origin http://localhost:5173 to allow it",
    );
  });

  it("says no token was given when none was, and connects once the origin is allowed and the token given", async () => {
    const logs: string[] = [];
    running = await serve(
      {
        stdio: false,
        port: 0,
        host: "127.0.0.1",
        token: "the-token",
        noAuth: false,
        memory: true,
        allowedOrigins: ["http://localhost:5173"],
      },
      (m) => logs.push(m),
    );
    const url = running.server!.url;
    expect(await refusal(url, { WebSocket: fromPage("http://localhost:5173") })).toContain("no token was given (pass options.token)");
    expect(logs.some((l) => /^refused a WebSocket upgrade from [^ ]+ \(origin http:\/\/localhost:5173\): no bearer token/.test(l))).toBe(
      true,
    );
    const transport = await connectBrowserWebSocket(url, { token: "the-token", WebSocket: fromPage("http://localhost:5173") });
    await transport.close();
  });
});
