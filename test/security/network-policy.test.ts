/**
 * The restricted network's domain lists (config network.allow_domains / deny_domains):
 * the matcher the tool gate and the sandbox's proxy share, the configuration's checks,
 * and web_fetch judged by the lists through the gateway. The shell side, through the
 * proxy, is in test/sandbox/network.test.ts (it needs bubblewrap).
 */
import { existsSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, resolveConfig } from "../../packages/gateway/src/config.js";
import { judgeDomain, parseDomainPattern } from "../../packages/gateway/src/permissions/domains.js";
import { materializeProfile } from "../../packages/gateway/src/permissions/policy.js";
import { securitySnapshot } from "../../packages/gateway/src/permissions/security.js";
import { NetworkProxy, type RefusedConnection } from "../../packages/gateway/src/sandbox/network-proxy.js";
import { ofTurn, script, text } from "../gateway/harness.js";
import { audits, completed, h, opened, setup, terminalOf, usePermissionHarness } from "../gateway/permission-steps.js";

describe("the domain matcher", () => {
  const lists = {
    allow_domains: ["example.com", "*.dev.example.org", "127.0.0.1:8080", "[::1]:9000", "LocalHost."],
    deny_domains: ["secret.dev.example.org", "example.com:25"],
  };
  const rows: [string, number, string][] = [
    ["example.com", 443, "allowed"],
    ["EXAMPLE.com.", 80, "allowed"],
    ["www.example.com", 443, "unlisted"],
    ["api.dev.example.org", 443, "allowed"],
    ["dev.example.org", 443, "unlisted"],
    ["evil-dev.example.org", 443, "unlisted"],
    ["secret.dev.example.org", 443, "denied"],
    ["example.com", 25, "denied"],
    ["127.0.0.1", 8080, "allowed"],
    ["127.0.0.1", 8081, "unlisted"],
    ["[::1]", 9000, "allowed"],
    ["::1", 9001, "unlisted"],
    ["localhost", 1234, "allowed"],
  ];
  it.each(rows)("%s port %d is %s", (host, port, verdict) => {
    expect(judgeDomain(lists, host, port).verdict).toBe(verdict);
  });

  it.each([
    ["", /no host name/],
    ["exa mple.com", /not a host name/],
    ["example.com:http", /port after ":" must be a number/],
    ["example.com:70000", /between 1 and 65535/],
    ["*.10.0.0.1", /not an IP address/],
    ["[example.com]:80", /not an IPv6 address/],
  ])("refuses the entry %j", (entry, message) => {
    expect(() => parseDomainPattern(entry)).toThrow(message);
  });

  it("names the configuration entry that is wrong", () => {
    expect(() => resolveConfig({ network: { allow_domains: ["ok.example", "bad host"] } })).toThrow(ConfigError);
    expect(() => resolveConfig({ network: { allow_domains: ["ok.example", "bad host"] } })).toThrow(
      /^network\.allow_domains\/1: "bad host"/,
    );
    expect(() => resolveConfig({ network: { deny_domains: ["x:0"] } })).toThrow(/^network\.deny_domains\/0: /);
  });
});

describe("the snapshot of a restricted network", () => {
  const base = {
    cwd: "/tmp",
    roots: ["/tmp"],
    shellTimeoutCapMs: 1000,
    network: { allowDomains: ["example.com"], denyDomains: ["bad.example.com"] },
  };
  it("is restricted in the restricted modes with an allow list, and partially_active without a sandbox", () => {
    const snapshot = securitySnapshot({ ...base, profile: materializeProfile({ mode: "auto_accept_edits" }) });
    expect(snapshot.network).toEqual({ mode: "restricted", allow_domains: ["example.com"], deny_domains: ["bad.example.com"] });
    expect(snapshot.sandbox.network_enabled).toBe(true);
    expect(snapshot.enforcement.status).toBe("partially_active");
    expect(snapshot.enforcement.degradations.map((d) => d.capability)).toContain("network_blocking");
    expect(snapshot.backend.capabilities).not.toContain("network_domain_filtering");
  });
  it("stays disabled without an allow list, and full_access stays enabled", () => {
    expect(
      securitySnapshot({
        ...base,
        network: { allowDomains: [], denyDomains: ["x.example"] },
        profile: materializeProfile({ mode: "supervised" }),
      }).network.mode,
    ).toBe("disabled");
    expect(securitySnapshot({ ...base, profile: materializeProfile({ mode: "full_access" }) }).network).toEqual({
      mode: "enabled",
      allow_domains: [],
      deny_domains: [],
    });
  });
});

describe("web_fetch under a restricted network", () => {
  usePermissionHarness();
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((req, res) => res.end(`served ${req.url}`));
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise((done) => server.close(done)));

  it("fetches an allowed host without asking, refuses a denied one without asking, and asks about the rest", async () => {
    const thread = await setup({
      config: { network: { allow_domains: [`127.0.0.1:${port}`, "localhost"], deny_domains: [`localhost:${port}`] } },
    });
    const turn = "trn_fetch_lists";
    await h.client.turnStart({
      thread_id: thread,
      turn_id: turn,
      permission_profile: { mode: "supervised" },
      input: text(
        script(
          { tool: "web_fetch", args: { url: `http://127.0.0.1:${port}/allowed` } },
          { tool: "web_fetch", args: { url: `http://localhost:${port}/denied` } },
          { tool: "web_fetch", args: { url: `http://127.0.0.1:${port + 1}/unlisted` } },
          { say: "done" },
        ),
      ),
    });
    await h.waitFor(() => opened(ofTurn(h.received, turn)).length === 1);
    const [request] = opened(ofTurn(h.received, turn));
    expect(request!.summary).toBe(`Fetch http://127.0.0.1:${port + 1}/unlisted`);
    await h.client.turnPermissionRequestRespond({
      request_id: request!.request_id,
      resolve_token: request!.resolve_token,
      resolution: "deny",
    });
    await terminalOf(turn);
    const fetches = completed(ofTurn(h.received, turn), "webFetch") as { status: string; content?: string }[];
    expect(fetches.map((f) => f.status)).toEqual(["completed", "declined", "declined"]);
    expect(fetches[0]!.content).toBe("served /allowed");
    const byConfig = audits(ofTurn(h.received, turn)).filter((a) => a.decided_by === "config");
    expect(byConfig.map((a) => [a.kind, a.behavior])).toEqual([
      ["decision_allowed", "allow"],
      ["decision_denied", "deny"],
    ]);
    expect(byConfig[1]!.reason).toContain(`deny_domains entry "localhost:${port}"`);
  });
});

describe("the sandbox's filtering proxy, on its Unix socket", () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((req, res) => res.end(`upstream ${req.method} ${req.url}`));
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise((done) => server.close(done)));

  const get = (socketPath: string, url: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      request({ socketPath, path: url, method: "GET" }, (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode!, body }));
      })
        .on("error", reject)
        .end();
    });
  const tunnel = (socketPath: string, authority: string) =>
    new Promise<string>((resolve) => {
      const socket = connect(socketPath);
      let text = "";
      socket.on("data", (d) => {
        text += d;
        if (text.startsWith("HTTP/1.1 200") && text.endsWith("\r\n\r\n") && !text.includes("upstream"))
          socket.write(`GET /t HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`);
      });
      socket.on("close", () => resolve(text));
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    });

  it("forwards what the lists allow, refuses the rest with 403 and reports it, and removes its socket when closed", async () => {
    const refused: RefusedConnection[] = [];
    // A port nothing listens on any more, allowed too.
    const gone = createServer();
    await new Promise<void>((done) => gone.listen(0, "127.0.0.1", done));
    const closedPort = (gone.address() as { port: number }).port;
    await new Promise((done) => gone.close(done));
    const proxy = await NetworkProxy.start({
      policy: { allow_domains: [`127.0.0.1:${port}`, `127.0.0.1:${closedPort}`], deny_domains: [] },
      onRefused: (r) => refused.push(r),
    });
    try {
      expect(await get(proxy.socketPath, `http://127.0.0.1:${port}/x?y=1`)).toEqual({ status: 200, body: "upstream GET /x?y=1" });
      const denied = await get(proxy.socketPath, `http://127.0.0.2:${port}/`);
      expect(denied.status).toBe(403);
      expect(denied.body).toContain(`127.0.0.2:${port} is not in the turn's allow_domains`);
      expect(await get(proxy.socketPath, "/relative")).toMatchObject({ status: 400 });
      expect(await tunnel(proxy.socketPath, `127.0.0.1:${port}`)).toContain("upstream GET /t");
      expect(await tunnel(proxy.socketPath, `localhost:${port}`)).toMatch(/^HTTP\/1.1 403 Forbidden/);
      // Allowed, but nothing listens there: the client is told, not just cut off.
      expect(await tunnel(proxy.socketPath, `127.0.0.1:${closedPort}`)).toMatch(/^HTTP\/1.1 502 Bad Gateway[\s\S]*ECONNREFUSED/);
      expect(refused.map((r) => `${r.host}:${r.port}`)).toEqual([`127.0.0.2:${port}`, `localhost:${port}`]);
    } finally {
      await proxy.close();
    }
    expect(existsSync(proxy.socketPath)).toBe(false);
  });
});
