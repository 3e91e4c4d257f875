/**
 * `turnspec serve` as a real process, over stdio and over WebSocket, with the scripted model
 * server as its provider: a turn that mints an invite and asks for every wallet card surfaces
 * each once, after its last item. Then everything the gateway wrote is searched for the
 * invite's code: its stderr, its SQLite file, every request the model received, and what a
 * second connection got live and from turn/items. The code is only in the live frame of the
 * connection that started the turn with private_delivery.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ModelServer } from "../../packages/conformance/src/model-server.js";
import { spawnStdioTransport } from "../../packages/rpc/src/transport/child-process.js";
import { connectWebSocket } from "../../packages/rpc/src/transport/websocket.js";
import { startStrictClient, type StrictClient } from "../../bench/strict-client.js";

const CLI = [resolve("bin/turnspec.js"), "serve"];
const SURFACED = ["turn/invite/delivery", "turn/wallet/link_prompt", "turn/wallet/update_prompt", "turn/wallet/revoke_prompt"];
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setUp() {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-invite-"));
  const config = join(dir, "config.json");
  writeFileSync(
    config,
    JSON.stringify({
      wallet: {
        state: "usable",
        link_url: "https://wallet.example/link",
        update_url: "https://wallet.example/update",
        revoke_url: "https://wallet.example/revoke",
      },
    }),
  );
  return { dir, config, db: join(dir, "gateway.sqlite") };
}

async function modelWithScript() {
  const model = new ModelServer();
  const url = await model.start();
  cleanups.push(() => model.close());
  const token = ModelServer.newToken();
  const script = model.script(token, [
    { reply: { toolCalls: [{ tool: "invite_user", args: { target_user_id: "U042" } }] } },
    { reply: { toolCalls: [{ tool: "wallet_link", args: {} }] } },
    { reply: { toolCalls: [{ tool: "wallet_update_limit", args: { new_limit: "20" } }] } },
    { reply: { toolCalls: [{ tool: "wallet_unlink", args: {} }] } },
    { reply: { text: "Done." } },
  ]);
  return { model, url, token, script };
}

/** Runs the turn on `owner`, with private_delivery; returns the code it was given. */
async function runTurn(owner: StrictClient, cwd: string, token: string, others: StrictClient[] = []) {
  const { thread } = await owner.client.threadStart({ cwd });
  for (const other of others) await other.client.threadGet({ thread_id: thread.id });
  const ended = owner.waitFor((n) => n.method === "turn/completed" || n.method === "turn/failed");
  await owner.client.turnStart({
    thread_id: thread.id,
    turn_id: "trn_invite",
    input: [{ type: "text", text: `Invite <@U042> [${token}]` }],
    private_delivery: { inviter_display: "Ada" },
  });
  expect((await ended).method).toBe("turn/completed");
  // The turn's own events (they carry its sequence), not the derived views' notifications.
  const methods = owner.received
    .filter((n) => "sequence" in n.params && "turn_id" in n.params && n.params.turn_id === "trn_invite")
    .map((n) => n.method);
  expect(methods.slice(-5)).toEqual([...SURFACED, "turn/completed"]);
  const invite = owner.received.find((n) => n.method === "turn/invite/delivery")!.params as { delivery: { kind: string; code?: string } };
  expect(invite.delivery.kind).toBe("private");
  expect(owner.protocolErrors).toEqual([]);
  return { threadId: thread.id, code: invite.delivery.code! };
}

describe("invites and wallet cards end to end", () => {
  it("over stdio: each card once, the code to this connection live and nowhere in the log, the model's requests or stderr", async () => {
    const { dir, config, db } = setUp();
    const { url, token, script } = await modelWithScript();
    const transport = spawnStdioTransport("node", [...CLI, "--stdio", "--db", db, "--config", config, "--provider-url", url], {
      stderr: "collect",
      cwd: dir,
    });
    const owner = await startStrictClient(transport);
    const { threadId, code } = await runTurn(owner, dir, token);
    const { events } = await owner.client.turnItems({ thread_id: threadId, turn_id: "trn_invite" });
    expect(events.find((e) => e.method === "turn/invite/delivery")!.params).toMatchObject({ delivery: { kind: "redacted" } });
    expect(JSON.stringify(events)).not.toContain(code);
    await owner.client.close();
    expect(JSON.stringify(script.calls)).not.toContain(code);
    expect(JSON.stringify(script.calls)).toContain("Invite minted for U042");
    expect(transport.stderrText).not.toContain(code);
    for (const file of readdirSync(dir).filter((f) => f.startsWith("gateway.sqlite")))
      expect(readFileSync(join(dir, file)).includes(code), file).toBe(false);
  });

  it("over WebSocket: a second connection gets the same events with the delivery redacted, live and from turn/items", async () => {
    const { dir, config, db } = setUp();
    const { url, token, script } = await modelWithScript();
    const child: ChildProcess = spawn(
      "node",
      [...CLI, "--port", "0", "--token", "t0ken-ws", "--db", db, "--config", config, "--provider-url", url],
      { cwd: dir, stdio: ["ignore", "ignore", "pipe"] },
    );
    cleanups.push(
      () => new Promise((done) => (child.exitCode !== null ? done(undefined) : (child.once("exit", done), child.kill("SIGTERM")))),
    );
    let stderr = "";
    const wsUrl = await new Promise<string>((found, fail) => {
      child.stderr!.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (ws:\/\/\S+)/.exec(stderr);
        if (match) found(match[1]!);
      });
      child.once("exit", (code) => fail(new Error(`serve exited with ${code}: ${stderr}`)));
    });
    const connect = async () => {
      const s = await startStrictClient(await connectWebSocket(wsUrl, { token: "t0ken-ws" }));
      cleanups.push(() => s.client.close());
      return s;
    };
    const owner = await connect();
    const other = await connect();
    const { threadId, code } = await runTurn(owner, dir, token, [other]);
    await other.waitFor((n) => n.method === "turn/completed");
    const turnEvents = (s: StrictClient) =>
      s.received
        .filter((n) => "sequence" in n.params && "turn_id" in n.params)
        .map((n) => [n.method, (n.params as { sequence: number }).sequence]);
    expect(turnEvents(other)).toEqual(turnEvents(owner));
    expect(other.received.find((n) => n.method === "turn/invite/delivery")!.params).toMatchObject({
      target_user_id: "U042",
      inviter_display: "Ada",
      delivery: { kind: "redacted" },
    });
    const replay = await other.client.turnItems({ thread_id: threadId, turn_id: "trn_invite" });
    expect(JSON.stringify(other.received) + JSON.stringify(replay)).not.toContain(code);
    expect(other.protocolErrors).toEqual([]);
    expect(JSON.stringify(script.calls)).not.toContain(code);
    await owner.client.close();
    await other.client.close();
    expect(stderr).not.toContain(code);
    for (const file of readdirSync(dir).filter((f) => f.startsWith("gateway.sqlite")))
      expect(readFileSync(join(dir, file)).includes(code), file).toBe(false);
  });
});
