/**
 * A gateway that drops its HTTP connection to the scripted model: at each point a
 * connection can end early (before the request body ends, in the middle of the answer's
 * stream, before its last chunk), the run still ends, with a verdict for every requirement
 * it ran and no harness fault; the model server serves on and says what happened.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelServer } from "../../packages/conformance/src/model-server.js";
import { certifyWrapped } from "./wrapped.js";

type DropPoint = "before the request body ends" | "in the middle of the stream" | "before the last chunk";

const bodyOf = async (req: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

/**
 * Stands where the gateway's HTTP client would be: it passes every model call on, except
 * the first call of each scenario (found by its token), whose connection to the model it
 * drops at `point`, and whose own answer to the gateway it cuts off at the same point.
 */
async function droppingProxy(modelUrl: string, point: DropPoint, drops: string[]) {
  const upstream = new URL(modelUrl);
  const seen = new Set<string>();
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await bodyOf(req);
      const token = /cert-[0-9a-f]{12}/.exec(body.toString("utf8"))?.[0];
      const drop = token !== undefined && !seen.has(token);
      if (token) seen.add(token);
      if (!drop) {
        const forward = httpRequest(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: req.method,
            path: req.url,
            headers: { "content-type": "application/json", "content-length": body.length },
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        forward.on("error", () => res.destroy());
        forward.end(body);
        return;
      }
      drops.push(point);
      if (point === "before the request body ends") {
        // Half the body is sent, then the connection is closed: the model reads an aborted request.
        const socket = connect(Number(upstream.port), upstream.hostname, () => {
          socket.write(
            `POST ${req.url} HTTP/1.1\r\nhost: ${upstream.host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
          );
          socket.write(body.subarray(0, Math.floor(body.length / 2)), () => setTimeout(() => socket.destroy(), 20));
        });
        socket.on("error", () => undefined);
        res.destroy();
        return;
      }
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { "content-type": "application/json", "content-length": body.length },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          let text = "";
          answer.on("data", (chunk: Buffer) => {
            text += chunk.toString("utf8");
            const events = text.split("\n\n").filter(Boolean);
            const cut = point === "in the middle of the stream" ? events.length >= 2 : text.includes("data: [DONE]");
            if (!cut) return;
            // What the gateway gets is cut there too: the events so far, without the last one.
            res.write(
              point === "in the middle of the stream"
                ? `${events.slice(0, 2).join("\n\n")}\n\n`
                : text.slice(0, text.indexOf("data: [DONE]")),
            );
            answer.destroy();
            forward.destroy();
            res.destroy();
          });
          answer.on("error", () => res.destroy());
        },
      );
      forward.on("error", () => res.destroy());
      forward.end(body);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((done) => (server.closeAllConnections(), server.close(() => done()))),
  };
}

describe("a gateway that drops its connection to the scripted model", () => {
  it.each<DropPoint>(["before the request body ends", "in the middle of the stream", "before the last chunk"])(
    "%s: the run ends with a verdict for every requirement, and no harness fault",
    async (point) => {
      const drops: string[] = [];
      const notices: string[] = [];
      const { report, errored } = await certifyWrapped(
        {},
        {
          patterns: ["TURN-*", "ITEM-*", "THREAD-*"],
          capabilities: ["core"],
          level: "core",
          notices,
          modelProxy: (url) => droppingProxy(url, point, drops),
        },
      );
      expect(drops.length).toBeGreaterThan(3);
      expect(errored).toEqual([]);
      const ran = report.results.filter((r) => r.skipReason === undefined);
      expect(ran.length).toBeGreaterThan(30);
      for (const r of ran) expect(["pass", "fail", "not_reached"], `${r.id}: ${r.message ?? ""}`).toContain(r.outcome);
      expect(report.status).toMatch(/^(certified|not_certified|partial_pass|partial_fail|partial_undetermined)$/);
      if (point === "before the request body ends") expect(notices.some((n) => n.includes("before the request body ended"))).toBe(true);
    },
  );
});

describe("the scripted model server, when a client goes away", () => {
  const server = new ModelServer();
  let url: URL;
  beforeAll(async () => {
    url = new URL(await server.start());
  });
  afterAll(() => server.close());

  it("notes a request abandoned before its body ended and serves the next one", async () => {
    const dropped: string[] = [];
    server.onDrop = (text) => dropped.push(text);
    await new Promise<void>((done) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          `POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n{"model": "m", "mess`,
          () => {
            socket.destroy();
            done();
          },
        );
      });
    });
    await expect.poll(() => dropped).toEqual([expect.stringContaining("the gateway closed the connection before the request body ended")]);
    const token = ModelServer.newToken();
    server.script(token, [{ reply: { text: "still here" } }]);
    const answer = await fetch(`${url.href}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: token }] }),
    });
    expect(((await answer.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("still here");
  });

  it("notes a stream whose client went away while it was held, and writes nothing more to it", async () => {
    const token = ModelServer.newToken();
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const script = server.script(token, [{ reply: { text: "aaaa|bbbb|cccc|dddd", chunks: 4, hold, holdAfterPieces: 2 } }]);
    const controller = new AbortController();
    const answer = await fetch(`${url.href}/chat/completions`, {
      method: "POST",
      signal: controller.signal,
      body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: token }] }),
    });
    const reader = answer.body!.getReader();
    let text = "";
    while (!text.includes('"content":"bbbb|"')) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    await expect.poll(() => script.dropped).toEqual(["model call 1 in the middle of the stream, after 2 of 4 pieces of text"]);
    expect(text).not.toContain("cccc");
  });
});
