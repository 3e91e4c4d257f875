/**
 * `turnspec inspect` through the real command line, from the sources: it prints the URL
 * with its token, serves the page (bundled from the sources on start), stops on SIGINT
 * with exit 0 and the gateway it started with it; usage mistakes exit 2 with a message.
 */
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const fake = join(import.meta.dirname, "fake-gateway.mjs");

describe("turnspec inspect", () => {
  it("prints its URL, serves the page with the token, and stops on SIGINT", async () => {
    const child = spawn(process.execPath, ["bin/turnspec.js", "inspect", "--gateway-cmd", `node ${fake}`], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString("utf8");
        const found = /open (http:\/\/127\.0\.0\.1:\d+\/#token=\S+) to inspect the gateway `node /.exec(out);
        if (found) resolve(found[1]!);
      });
      void exited.then((code) => reject(new Error(`turnspec inspect exited with ${code}: ${stderr}`)));
    });
    const base = new URL(url).origin;
    const authorization = `Bearer ${new URLSearchParams(new URL(url).hash.slice(1)).get("token")}`;
    expect(await (await fetch(`${base}/`)).text()).toContain("/assets/inspector.js");
    const script = await fetch(`${base}/assets/inspector.js`);
    expect(script.status).toBe(200);
    expect((await script.text()).length).toBeGreaterThan(100_000);
    expect((await fetch(`${base}/api/info`)).status).toBe(401);
    expect((await fetch(`${base}/api/info`, { headers: { authorization } })).status).toBe(200);
    child.kill("SIGINT");
    expect(await exited).toBe(0);
  }, 60_000);

  it.each([
    [["--gateway-cmd", "x", "--gateway-url", "ws://127.0.0.1:1/"], "mutually exclusive"],
    [["--token", "t"], "--token is the token of --gateway-url"],
    [["--port", "70000"], "--port must be an integer from 0 to 65535"],
    [["--gateway-url", "http://127.0.0.1:1/"], "must start with ws:// or wss://"],
  ])("exits 2 for %j", (args, message) => {
    const result = spawnSync(process.execPath, ["bin/turnspec.js", "inspect", ...args], { encoding: "utf8", timeout: 30_000 });
    expect(result.stderr).toContain(message);
    expect(result.status).toBe(2);
  });
});
