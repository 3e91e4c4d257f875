/**
 * A token given as `serve --token VALUE` on the command line: once the process runs, its
 * visible command line (/proc/<pid>/cmdline, what `ps` and any unconfined command of the
 * same user read) no longer carries it, the token still authenticates, and the command
 * warns, in words, that the token was exposed and how to give it instead.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { hideCommandLineToken } from "../../packages/turnspec/src/command-line-token.js";
import { connectWebSocket, WebSocketHandshakeError } from "../../packages/rpc/src/transport/websocket.js";

const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    await new Promise((resolve) => {
      child.once("exit", resolve);
      child.kill("SIGTERM");
    });
  }
});

/** Starts the gateway with `args` and resolves once it listens, with its URL and what it printed. */
async function serve(args: string[]): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, ["bin/turnspec.js", "serve", "--port", "0", "--memory", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (ws:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`serve exited with ${code} before listening: ${stderr}`)));
  });
  return { child, url, stderr: () => stderr };
}

describe("the visible command line", () => {
  it("replaces the value of --token VALUE and --token=VALUE, and nothing else", () => {
    expect(hideCommandLineToken(["node", "cli", "serve", "--token", "s3cret", "--port", "1"])).toEqual({
      given: true,
      shown: ["node", "cli", "serve", "--token", "(hidden)", "--port", "1"],
    });
    expect(hideCommandLineToken(["node", "cli", "serve", "--token=s3cret"])).toEqual({
      given: true,
      shown: ["node", "cli", "serve", "--token=(hidden)"],
    });
    expect(hideCommandLineToken(["node", "cli", "serve", "--token-file", "f"])).toEqual({
      given: false,
      shown: ["node", "cli", "serve", "--token-file", "f"],
    });
  });
});

describe.runIf(process.platform === "linux")("turnspec serve --token VALUE", () => {
  it("does not show the token in /proc/<pid>/cmdline, still takes it, and warns", async () => {
    const token = `tok-${randomBytes(12).toString("hex")}`;
    const { child, url, stderr } = await serve(["--token", token]);
    // What any process of the same user reads while the gateway runs.
    const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, "latin1");
    expect(cmdline).toContain("serve");
    expect(cmdline).not.toContain(token);
    expect(cmdline).toContain("--token (hidden)");
    expect(stderr()).toContain("warning: --token puts the token on the command line, where other local users and processes can read it");
    expect(stderr()).toContain("Give the token with --token-file FILE (one line, readable by you only) or $TURNSPEC_TOKEN instead.");
    // The token given is the one the gateway asks for.
    const transport = await connectWebSocket(url, { token });
    await transport.close();
    await expect(connectWebSocket(url, { token: "wrong" })).rejects.toBeInstanceOf(WebSocketHandshakeError);
  });

  it("--token=VALUE is hidden the same way", async () => {
    const token = `tok-${randomBytes(12).toString("hex")}`;
    const { child } = await serve([`--token=${token}`]);
    expect(readFileSync(`/proc/${child.pid}/cmdline`, "latin1")).not.toContain(token);
  });

  it("without --token prints no such warning", async () => {
    const { stderr } = await serve([]);
    expect(stderr()).not.toContain("warning: --token");
  });
});
