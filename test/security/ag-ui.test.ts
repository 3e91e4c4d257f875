/**
 * The AG-UI endpoint attacked the way a web page, a DNS-rebinding page, another AG-UI
 * thread and a tampered thread map would. Each attack asks for a shell command under the
 * default full_access profile, where it would run without approval; each must be refused
 * before a turn starts, with the status and the reason, and the command must not run.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { HttpAgent } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import { afterEach, describe, expect, it } from "vitest";
import { AgUiBridge, serveAgUi, type AgUiServer, type AgUiServeOptions } from "../../packages/client/src/ag-ui/index.js";
import { script } from "../gateway/harness.js";
import { startClientGateway, type ClientGateway } from "../client/gateway.js";

let g: ClientGateway | undefined;
let server: AgUiServer | undefined;
afterEach(async () => {
  await server?.close();
  await g?.close();
  server = undefined;
  g = undefined;
});

async function setup(options: AgUiServeOptions = {}): Promise<AgUiServer> {
  g = await startClientGateway();
  server = await serveAgUi(await g.open(), 0, options);
  return server;
}

/** One raw HTTP exchange, headers exactly as given (Host included): what a browser or a script would send. */
function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? "POST",
        headers: options.headers ?? {},
        setHost: !Object.keys(options.headers ?? {}).some((h) => h.toLowerCase() === "host"),
      },
      (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** A run whose turn would leave `marker` behind: a shell command, under full_access without approval. */
function runInput(marker: string, threadId = "agui-attack") {
  return JSON.stringify({
    threadId,
    runId: `run_${Math.random().toString(36).slice(2)}`,
    state: {},
    messages: [{ id: "m1", role: "user", content: script({ tool: "shell", args: { command: `touch ${marker}` } }, { say: "done" }) }],
    tools: [],
    context: [],
    forwardedProps: {},
  });
}

const markerIn = () => join(mkdtempSync(join(tmpdir(), "turnspec-agui-attack-")), "ran");

describe("the AG-UI endpoint, attacked", () => {
  it("refuses a cross-site simple POST (text/plain, no token, a foreign Origin) with 403, and nothing runs", async () => {
    const s = await setup();
    const marker = markerIn();
    const res = await send(s.url, { headers: { "content-type": "text/plain", origin: "https://evil.example" }, body: runInput(marker) });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body).error).toContain(
      "pages from origin https://evil.example may not call this endpoint: it allows no browser origin",
    );
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses a request without the token (401), with a wrong one, or with it in the query only", async () => {
    const s = await setup();
    const marker = markerIn();
    for (const headers of [{}, { authorization: "Bearer wrong" }] as Record<string, string>[]) {
      const res = await send(s.url, { headers: { "content-type": "application/json", ...headers }, body: runInput(marker) });
      expect(res.status).toBe(401);
      expect(res.headers["www-authenticate"]).toBe('Bearer realm="turnspec"');
      expect(JSON.parse(res.body).error).toContain("a valid bearer token is required: send Authorization: Bearer <token>");
    }
    const query = await send(`${s.url}?token=${s.token}`, { headers: { "content-type": "application/json" }, body: runInput(marker) });
    expect(query.status).toBe(401);
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses a body not declared application/json (415), even with the token", async () => {
    const s = await setup();
    const marker = markerIn();
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const res = await send(s.url, { headers: { "content-type": type, authorization: `Bearer ${s.token}` }, body: runInput(marker) });
      expect(res.status).toBe(415);
      expect(JSON.parse(res.body).error).toContain(`the body must be declared Content-Type: application/json, got ${JSON.stringify(type)}`);
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses a foreign Host (DNS rebinding) with 421, token or not, Origin or not", async () => {
    const s = await setup();
    const marker = markerIn();
    const port = new URL(s.url).port;
    for (const extra of [{}, { origin: `http://rebind.example:${port}` }] as Record<string, string>[]) {
      const res = await send(s.url, {
        headers: { host: `rebind.example:${port}`, "content-type": "application/json", authorization: `Bearer ${s.token}`, ...extra },
        body: runInput(marker),
      });
      expect(res.status).toBe(421);
      expect(JSON.parse(res.body).error).toContain(
        `this endpoint answers only to its own address (127.0.0.1:${port}, localhost:${port}, [::1]:${port}), not to Host "rebind.example:${port}"`,
      );
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("serves a page of an allowed origin: its preflight is answered, and its POST with the token runs", async () => {
    const s = await setup({ allowedOrigins: ["https://app.example"] });
    const preflight = await send(s.url, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers).toMatchObject({
      "access-control-allow-origin": "https://app.example",
      "access-control-allow-headers": "authorization, content-type",
    });
    const marker = markerIn();
    const res = await send(s.url, {
      headers: { origin: "https://app.example", "content-type": "application/json; charset=utf-8", authorization: `Bearer ${s.token}` },
      body: runInput(marker),
    });
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe("https://app.example");
    expect(res.body).toContain('"RUN_FINISHED"');
    expect(existsSync(marker)).toBe(true);
  });

  it("refuses to serve without a token on an address other than loopback", async () => {
    g = await startClientGateway();
    await expect(serveAgUi(await g.open(), 0, { token: null, host: "0.0.0.0" })).rejects.toThrow(
      "an AG-UI endpoint without a token may listen on a loopback address only",
    );
  });
});

describe("AG-UI threads, attacked", () => {
  const agent = (s: AgUiServer, threadId: string, text: string) => {
    const a = new HttpAgent({ url: s.url, threadId, headers: { authorization: `Bearer ${s.token}` } });
    a.messages = [{ id: "m1", role: "user", content: text }];
    return a;
  };
  const interruptsOf = (events: BaseEvent[]) =>
    (events.at(-1) as unknown as { outcome: { interrupts: { id: string }[] } }).outcome.interrupts;

  it("answers no interrupt of another thread: a resume naming it is refused, and the approval stays open", async () => {
    const s = await setup({ turn: { permission_profile: { mode: "supervised" } } });
    const marker = markerIn();
    const victim: BaseEvent[] = [];
    await agent(s, "victim", script({ tool: "shell", args: { command: `touch ${marker}` } }, { say: "no" })).runAgent(
      { runId: "run_victim" },
      { onEvent: ({ event }) => void victim.push(event) },
    );
    const [approval] = interruptsOf(victim);
    expect(approval).toBeDefined();
    // The attacker's own thread, first with a turn of its own, then resuming the victim's approval.
    await agent(s, "attacker", script({ say: "hi" })).runAgent({ runId: "run_attacker_1" });
    const res = await send(s.url, {
      headers: { "content-type": "application/json", authorization: `Bearer ${s.token}` },
      body: JSON.stringify({
        threadId: "attacker",
        runId: "run_attacker_2",
        messages: [],
        tools: [],
        context: [],
        resume: [{ interruptId: approval!.id, status: "resolved", payload: { resolution: "allow_once" } }],
      }),
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toContain(
      `resume[0].interruptId ${JSON.stringify(approval!.id)} names no open interrupt of thread attacker`,
    );
    expect(existsSync(marker)).toBe(false);
    const victimThread = g!.harness.store.turnThread("run_victim")!;
    expect((await g!.harness.client.threadGet({ thread_id: victimThread })).thread.active_turn_id).toBe("run_victim");
  });

  describe("a tampered thread map", () => {
    const mapFile = () => {
      const file = join(mkdtempSync(join(tmpdir(), "turnspec-agui-map-")), "state", "threads.json");
      mkdirSync(dirname(file), { recursive: true });
      return file;
    };
    const refusedWith = async (file: string) => {
      g ??= await startClientGateway();
      const connection = await g.open();
      try {
        new AgUiBridge(connection, { threadMapFile: file });
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    };

    it("is refused when group or others may write it", async () => {
      const file = mapFile();
      writeFileSync(file, JSON.stringify({ version: 1, threads: { mine: "thr_a" } }));
      chmodSync(file, 0o666);
      expect(await refusedWith(file)).toBe(
        `cannot read the AG-UI thread map ${file}: group or others may write it (mode 666); make it writable by its owner only (chmod 600)`,
      );
      chmodSync(file, 0o644);
      expect(await refusedWith(file)).toBeUndefined();
    });

    it("is refused when it is a link", async () => {
      const file = mapFile();
      const elsewhere = join(dirname(file), "planted.json");
      writeFileSync(elsewhere, JSON.stringify({ version: 1, threads: { mine: "thr_a" } }), { mode: 0o600 });
      symlinkSync(elsewhere, file);
      expect(await refusedWith(file)).toBe(
        `cannot read the AG-UI thread map ${file}: it is a symbolic link; the thread map must be a plain file`,
      );
    });

    it("is refused when it gives one gateway thread to two AG-UI threads (an attacker's thread pointed at the victim's)", async () => {
      const file = mapFile();
      writeFileSync(file, JSON.stringify({ version: 1, threads: { victim: "thr_v", attacker: "thr_v" } }), { mode: 0o600 });
      expect(await refusedWith(file)).toBe(
        `the AG-UI thread map ${file} gives gateway thread thr_v to two AG-UI threads (/threads/victim and /threads/attacker); the bridge starts one gateway thread per AG-UI thread, so the file was changed by hand`,
      );
    });

    it("is written readable and writable by its owner only", async () => {
      const file = mapFile();
      const s = await setup({ threadMapFile: file });
      await agent(s, "t1", script({ say: "hi" })).runAgent({ runId: "run_map" });
      const { statSync } = await import("node:fs");
      expect(statSync(file).mode & 0o777).toBe(0o600);
    });
  });
});
