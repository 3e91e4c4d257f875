/**
 * An agent built on @agentclientprotocol/sdk (test/fixtures/acp/agent.mjs, over stdio, one
 * message per line) driven by the client generated from the import of ACP's schema.json:
 * initialize, session/new, and a prompt turn in which the agent streams session/update
 * notifications, announces a tool call, asks session/request_permission (answered by the
 * client's typed handler), reports the call completed and ends the turn. Every frame of the
 * session, both ways, is valid against the import with its sender.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChildProcessTransport } from "../../packages/rpc/src/transport/child-process.js";
import { importedPeer, methodsOf, recording, sessionFindings, type ImportedPeer } from "./peers.js";
import { SOURCES } from "./published.js";

const source = SOURCES.find((s) => s.name === "ACP v1")!;
const agent = fileURLToPath(new URL("../fixtures/acp/agent.mjs", import.meta.url));

let peer: ImportedPeer;
beforeAll(async () => {
  peer = await importedPeer(source, "acp");
}, 300_000);
afterAll(() => peer?.cleanup());

describe("the client generated from ACP's schema against an agent on @agentclientprotocol/sdk", () => {
  it("a prompt turn with a permission request, every frame valid both ways", async () => {
    const wire = recording(new ChildProcessTransport(process.execPath, [agent], { stderr: "collect" }));
    const dropped: string[] = [];
    const asked: unknown[] = [];
    const updates: { update: { sessionUpdate: string } }[] = [];
    const refuse = (name: string) => () => {
      throw new Error(`this client does not serve ${name}`);
    };
    const client = new peer.client.ProtocolClient(wire.transport, {
      validateIncoming: "strict",
      requestTimeoutMs: 30_000,
      onProtocolError: (e: Error, frame: string) => dropped.push(`${e.message}: ${frame.slice(0, 200)}`),
      handlers: {
        "session/request_permission": (params: { options: { optionId: string; kind: string }[] }) => {
          asked.push(params);
          return { outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === "allow_once")!.optionId } };
        },
        "fs/read_text_file": refuse("fs/read_text_file"),
        "fs/write_text_file": refuse("fs/write_text_file"),
        "terminal/create": refuse("terminal/create"),
        "terminal/output": refuse("terminal/output"),
        "terminal/release": refuse("terminal/release"),
        "terminal/wait_for_exit": refuse("terminal/wait_for_exit"),
        "terminal/kill": refuse("terminal/kill"),
        "elicitation/create": refuse("elicitation/create"),
      },
    });
    client.on("session/update", (p: (typeof updates)[number]) => updates.push(p));
    await client.start();

    const init = await client.initialize({
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    expect(init.protocolVersion).toBe(1);
    const { sessionId } = await client.sessionNew({ cwd: "/work/project", mcpServers: [] });
    const steps = [
      { think: "Planning the edit." },
      { say: "I will edit the file." },
      {
        tool: { kind: "edit", title: "Edit README.md", rawInput: { path: "README.md" }, locations: [{ path: "/work/project/README.md" }] },
        ask: true,
      },
      { say: "Done." },
    ];
    const result = await client.sessionPrompt({ sessionId, prompt: [{ type: "text", text: JSON.stringify(steps) }] });
    expect(result.stopReason).toBe("end_turn");
    expect(asked).toHaveLength(1);
    expect(updates.map((u) => u.update.sessionUpdate)).toEqual(
      expect.arrayContaining(["agent_thought_chunk", "agent_message_chunk", "tool_call", "tool_call_update"]),
    );
    await client.close();

    expect(dropped).toEqual([]);
    const methods = methodsOf(wire.frames);
    for (const m of [
      "client initialize",
      "client session/new",
      "client session/prompt",
      "server session/update",
      "server session/request_permission",
    ])
      expect(methods.has(m), m).toBe(true);
    expect(sessionFindings(peer.model, wire.frames)).toEqual([]);
    console.log(`ACP agent: ${wire.frames.length} frames, all valid both ways`);
  }, 300_000);
});
