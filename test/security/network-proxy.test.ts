/**
 * The filtering proxy of a restricted network, attacked where its lists meet what a client
 * can spell: an absolute-URI request to an allowed address that carries a Host header of
 * its own, every spelling of a denied IPv4 address (short, hex, one number, octal, mapped
 * into IPv6), IPv6 loopback, a trailing dot, and a name that is not `localhost` but
 * resolves to this machine. Each is sent raw on the proxy's Unix socket, as the bridge
 * inside the sandbox would pass it on.
 */
import { lookup } from "node:dns/promises";
import { createServer, request, type Server } from "node:http";
import { connect } from "node:net";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { judgeDomain, normalizeHost } from "../../packages/gateway/src/permissions/domains.js";
import { NetworkProxy, type RefusedConnection } from "../../packages/gateway/src/sandbox/network-proxy.js";

// A name other than localhost that resolves to this machine: the host's own name on most Linux systems.
const ownName = hostname();
const ownAddress = await lookup(ownName).then(
  (a) => normalizeHost(a.address),
  () => undefined,
);

const isLocalAddress = (a: string) =>
  a.startsWith("127.") || a === "::1" || a.startsWith("169.254.") || a === "0.0.0.0" || a.startsWith("fe80:");
let allowed: Server;
let secret: Server;
let allowedPort = 0;
let secretPort = 0;
beforeAll(async () => {
  // The allowed server says which Host it was asked for; the secret one must never answer.
  allowed = createServer((req, res) => res.end(`allowed, Host ${req.headers.host}`));
  secret = createServer((_req, res) => res.end("the secret service"));
  for (const server of [allowed, secret]) await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  allowedPort = (allowed.address() as { port: number }).port;
  secretPort = (secret.address() as { port: number }).port;
});
afterAll(async () => {
  for (const server of [allowed, secret]) await new Promise((done) => server.close(done));
});

/** An absolute-URI request through the proxy, with extra headers as the client wrote them. */
const get = (socketPath: string, url: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    request({ socketPath, path: url, method: "GET", headers, setHost: !("host" in headers) }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    })
      .on("error", reject)
      .end();
  });

/** A CONNECT tunnel through the proxy, then one GET through it; the whole raw answer. */
const tunnel = (socketPath: string, authority: string) =>
  new Promise<string>((resolve) => {
    const socket = connect(socketPath);
    let text = "";
    socket.on("data", (d) => {
      text += d;
      if (text.startsWith("HTTP/1.1 200") && text.endsWith("\r\n\r\n") && !text.includes("secret") && !text.includes("allowed"))
        socket.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    });
    socket.on("close", () => resolve(text));
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  });

async function proxyFor(allow: string[], deny: string[]) {
  const refused: RefusedConnection[] = [];
  const proxy = await NetworkProxy.start({ policy: { allow_domains: allow, deny_domains: deny }, onRefused: (r) => refused.push(r) });
  return { proxy, refused };
}

describe("host spellings", () => {
  it("are one canonical host for the lists: every IPv4 spelling, IPv4 mapped into IPv6, brackets and a trailing dot", () => {
    for (const spelling of [
      "127.0.0.1",
      "127.1",
      "0x7f.1",
      "0x7f.0.0.1",
      "2130706433",
      "0x7f000001",
      "017700000001",
      "::ffff:127.0.0.1",
      "[::ffff:7f00:1]",
      "127.0.0.1.",
    ]) {
      expect(normalizeHost(spelling), spelling).toBe("127.0.0.1");
      expect(judgeDomain({ allow_domains: ["127.0.0.1"], deny_domains: [] }, spelling, 80).verdict, spelling).toBe("allowed");
    }
    expect(normalizeHost("[0:0:0:0:0:0:0:1]")).toBe("::1");
    expect(normalizeHost("Example.COM.")).toBe("example.com");
    expect(normalizeHost("deadbeef")).toBe("deadbeef");
    // A list entry in another spelling covers the canonical host too.
    expect(judgeDomain({ allow_domains: [], deny_domains: ["127.1"] }, "127.0.0.1", 80).verdict).toBe("denied");
    expect(["127.0.0.1", "::1", "169.254.169.254", "0.0.0.0", "fe80::1"].every(isLocalAddress)).toBe(true);
    expect(["10.0.0.1", "93.184.216.34", "2001:db8::1"].some(isLocalAddress)).toBe(false);
  });
});

describe("the filtering proxy, attacked", () => {
  it("refuses every spelling of a denied address and port, both ways, and lets the allowed port through in each", async () => {
    const { proxy, refused } = await proxyFor(["127.0.0.1"], [`127.0.0.1:${secretPort}`]);
    try {
      for (const spelling of ["127.1", "0x7f.1", "2130706433", "017700000001", "[::ffff:127.0.0.1]", "127.0.0.1."]) {
        const plain = await get(proxy.socketPath, `http://${spelling}:${secretPort}/`);
        expect(plain.status, spelling).toBe(403);
        expect(plain.body).not.toContain("the secret service");
        const raw = await tunnel(proxy.socketPath, `${spelling}:${secretPort}`);
        expect(raw, spelling).toMatch(/^HTTP\/1.1 403 Forbidden/);
        expect(raw).not.toContain("the secret service");
      }
      expect(refused.every((r) => r.reason.includes("deny_domains entry"))).toBe(true);
      expect(await tunnel(proxy.socketPath, `0x7f.1:${allowedPort}`)).toContain("allowed, Host x");
    } finally {
      await proxy.close();
    }
  });

  it("forwards an absolute-URI request with the URI's Host, not the one the client sent beside it", async () => {
    const { proxy } = await proxyFor([`127.0.0.1:${allowedPort}`], []);
    try {
      const answer = await get(proxy.socketPath, `http://127.0.0.1:${allowedPort}/`, { host: `127.0.0.1:${secretPort}` });
      expect(answer).toEqual({ status: 200, body: `allowed, Host 127.0.0.1:${allowedPort}` });
      // A request in origin form, led by a Host header alone, is not forwarded anywhere.
      const origin = await get(proxy.socketPath, "/", { host: `127.0.0.1:${secretPort}` });
      expect(origin.status).toBe(400);
      expect(origin.body).not.toContain("the secret service");
    } finally {
      await proxy.close();
    }
  });

  it("refuses IPv6 loopback unless it is listed, and a denied localhost spelled with a trailing dot", async () => {
    const { proxy } = await proxyFor([`127.0.0.1:${allowedPort}`, "localhost"], [`localhost:${secretPort}`]);
    try {
      expect(await tunnel(proxy.socketPath, `[::1]:${secretPort}`)).toMatch(
        /^HTTP\/1.1 403 Forbidden[\s\S]*not in the turn's allow_domains/,
      );
      expect(await tunnel(proxy.socketPath, `localhost.:${secretPort}`)).toMatch(/^HTTP\/1.1 403 Forbidden[\s\S]*deny_domains entry/);
      expect((await get(proxy.socketPath, `http://LOCALHOST.:${secretPort}/`)).status).toBe(403);
    } finally {
      await proxy.close();
    }
  });

  it.runIf(ownAddress !== undefined && isLocalAddress(ownAddress))(
    `refuses an allowed name that resolves to this machine (${ownName} → ${ownAddress}), and a denied address reached through a name`,
    async () => {
      const byName = await proxyFor([ownName], []);
      try {
        const raw = await tunnel(byName.proxy.socketPath, `${ownName}:${secretPort}`);
        expect(raw).toMatch(/^HTTP\/1.1 403 Forbidden/);
        expect(raw).toContain(`${ownName} resolves to ${ownAddress}, an address of this machine or its link`);
        expect(raw).not.toContain("the secret service");
        expect((await get(byName.proxy.socketPath, `http://${ownName}:${secretPort}/`)).status).toBe(403);
      } finally {
        await byName.proxy.close();
      }
      const denied = await proxyFor([ownName, ownAddress!], [`${ownAddress}:${secretPort}`]);
      try {
        expect(await tunnel(denied.proxy.socketPath, `${ownName}:${secretPort}`)).toContain(
          `${ownName} resolves to ${ownAddress}, which the turn's network policy denies`,
        );
        // Listed by its address too: the name goes through.
        expect(await tunnel(denied.proxy.socketPath, `${ownName}:${allowedPort}`)).toContain("allowed, Host x");
      } finally {
        await denied.proxy.close();
      }
    },
  );
});
