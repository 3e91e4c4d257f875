/**
 * The inspector's token against another local web server: browsers send a cookie of
 * 127.0.0.1 to every port of 127.0.0.1, so whatever the inspector put in a cookie, any other
 * local server the browser visits receives, and can replay with a forged Origin (a script
 * sets any header it likes). The inspector therefore takes its token only in a header or a
 * WebSocket subprotocol that its own page fills from sessionStorage (per origin, port
 * included): a request with the cookie alone, whatever its Origin, is refused, and the
 * gateway behind the inspector is never reached.
 */
import { join } from "node:path";
import { WebSocket } from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { INSPECTOR_PROTOCOL, TOKEN_PROTOCOL_PREFIX } from "../../packages/inspect/src/page-token.js";
import { startInspector, type RunningInspector } from "../../packages/inspect/src/server.js";

const running: RunningInspector[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});

/** The token of the printed address, wherever in it the inspector put it. */
const tokenOf = (url: string) => {
  const parsed = new URL(url);
  return new URLSearchParams(parsed.hash.slice(1)).get("token") ?? parsed.searchParams.get("token")!;
};

/** The HTTP status of an upgrade to the bridge with these headers and subprotocols; 101 when it opened. */
function upgrade(port: number, headers: Record<string, string>, protocols: string[] = []): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/gateway`, protocols, { headers });
    socket.once("open", () => {
      socket.close();
      resolve(101);
    });
    socket.once("unexpected-response", (_request, response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    socket.once("error", reject);
  });
}

describe("the inspector's token, replayed from a cookie by another local server", () => {
  it("is refused on the bridge and on every /api/ request, with this server's own Origin forged", async () => {
    const inspector = await startInspector({
      gatewayCmd: `node ${JSON.stringify(join(import.meta.dirname, "../inspector/fake-gateway.mjs"))}`,
      log: () => undefined,
    });
    running.push(inspector);
    const token = tokenOf(inspector.url);
    const port = inspector.port;
    // What the harvesting server holds: the cookie, named for the port, with the token.
    const cookie = `turnspec_inspect_${port}=${token}`;
    const forged = { cookie, origin: `http://127.0.0.1:${port}`, host: `127.0.0.1:${port}` };

    expect(await upgrade(port, forged)).toBe(401);
    const info = await fetch(`http://127.0.0.1:${port}/api/info`, { headers: forged });
    expect(info.status).toBe(401);
    expect(await info.text()).toContain("a cookie is not accepted: browsers send cookies of 127.0.0.1 to every port");
    const target = await fetch(`http://127.0.0.1:${port}/api/target`, {
      method: "POST",
      headers: { ...forged, "content-type": "application/json" },
      body: JSON.stringify({ url: "ws://127.0.0.1:1/" }),
    });
    expect(target.status).toBe(401);
    // The first visit sets no cookie to harvest.
    const first = await fetch(inspector.url, { redirect: "manual" });
    expect(first.headers.get("set-cookie")).toBeNull();

    // The page's own way in works: the same token, in the subprotocol only the page fills.
    expect(await upgrade(port, { origin: `http://127.0.0.1:${port}` }, [INSPECTOR_PROTOCOL, `${TOKEN_PROTOCOL_PREFIX}${token}`])).toBe(101);
  });
});
