/**
 * The client SDK guide (docs/client.md): every example under examples/client is embedded in the
 * guide exactly as the file is, and every Node example runs against a gateway this test
 * starts (WebSocket on 127.0.0.1 with a token; stdio as a child process) and prints what
 * its comments promise. For reconnect.ts the gateway drops the first connection as soon as
 * the turn's command starts. examples/client/browser.ts runs in Chromium in browser.test.ts.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebSocketServer, type RunningWebSocketServer } from "../../packages/rpc/src/transport/websocket.js";
import { startHarness, type Harness } from "../gateway/harness.js";

const DIR = "examples/client";
const files = readdirSync(DIR)
  .filter((f) => f.endsWith(".ts"))
  .sort();
const guide = readFileSync("docs/client.md", "utf8");

/** What each Node example must print (all of it, in order, after trimming). */
const EXPECTED: Record<string, RegExp> = {
  "streaming.ts": /^\[commandExecution\]\n\[approving shell: .+\]\nhello\nThe command said hello\.\n\[Completed\]$/,
  "items.ts": /^printf 'one\\ntwo\\n' -> "one\\ntwo\\n"\nanswer: Two lines\.\nlive and replayed items agree$/,
  "timeline.ts": /^commandExecution completed\ncommandExecution completed\nagentMessage completed\nblock completed, 3 rows$/,
  "status.ts":
    /^running \(on the wire: InProgress\)\nawaiting_hitl \(on the wire: InProgress\)\nrunning \(on the wire: InProgress\)\nsucceeded \(on the wire: Completed\)$/,
  "reconnect.ts":
    /^\[connection disconnected\]\n\[connection reconnected\]\nFinished while you were away\.\n\[Completed\]\n\[connection closed\]$/,
  "stdio.ts": /^Hello over stdio\.\n\[Completed\]$/,
};

describe("the client SDK guide", () => {
  it("embeds every example exactly as the file is, and names no example that does not exist", () => {
    for (const file of files) {
      const embedded = `<!-- ${DIR}/${file} -->\n\`\`\`ts\n${readFileSync(`${DIR}/${file}`, "utf8")}\`\`\``;
      expect(guide.includes(embedded), `docs/client.md does not embed ${DIR}/${file} as it is now: run \`npm run docs\``).toBe(true);
    }
    const named = [...guide.matchAll(/<!-- examples\/client\/(\S+) -->/g)].map((m) => m[1]);
    expect(named.sort()).toEqual(files);
  });

  it("has an expectation for every Node example", () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(files.filter((f) => f !== "browser.ts"));
  });

  describe("runs each example against a gateway", () => {
    let h: Harness;
    let server: RunningWebSocketServer;
    let dropping: RunningWebSocketServer;
    beforeAll(async () => {
      h = await startHarness();
      server = await startWebSocketServer({ token: "guide-token", maxFrameBytes: 1024 * 1024, onConnection: (t) => h.gateway.connect(t) });
      let connections = 0;
      dropping = await startWebSocketServer({
        token: "guide-token",
        maxFrameBytes: 1024 * 1024,
        onConnection: (t) => {
          if (connections++ === 0) {
            const send = t.send.bind(t);
            t.send = async (frame) => {
              await send(frame);
              if (frame.includes('"method":"item/started"') && frame.includes('"type":"commandExecution"'))
                void t.close(1001, "dropped by the test");
            };
          }
          h.gateway.connect(t);
        },
      });
    });
    afterAll(async () => {
      await dropping?.close();
      await server?.close();
      await h?.close();
    });

    it.each(Object.keys(EXPECTED))("%s", async (file) => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["--import", new URL("../../scripts/from-source.mjs", import.meta.url).href, `${DIR}/${file}`],
        {
          env: {
            ...process.env,
            TURNSPEC_URL: file === "reconnect.ts" ? dropping.url : server.url,
            TURNSPEC_TOKEN: "guide-token",
            TURNSPEC_STDIO_COMMAND: `${process.execPath} bin/turnspec.js serve --stdio --memory`,
          },
          timeout: 60_000,
        },
      );
      expect(stdout.trim()).toMatch(EXPECTED[file]!);
    });
  });
});
