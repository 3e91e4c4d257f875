/**
 * @modelcontextprotocol/server-everything (npm, over stdio) driven through its whole surface
 * by the client generated from the import of MCP 2025-11-25's schema.json: initialize, ping,
 * logging, every tool it lists, resources (list, templates, read, subscribe and the update,
 * unsubscribe), every prompt, completion, progress, a cancelled request, the roots changing,
 * the URL elicitation's error (-32042 with its data) and retry, a tool run as a task with
 * tasks/get, tasks/result, tasks/list and tasks/cancel; and the server's own requests
 * (roots/list, sampling/createMessage, elicitation/create, ping) answered by the client's
 * typed handlers. Every frame of the session, both ways, is valid against the import with its
 * sender. Skipped with one line when the published schema is not here.
 *
 * The client declares no tasks capability of its own, so the server does not send its
 * sampling and elicitation requests as client tasks (the recorded session covers those).
 */
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RpcError } from "../../packages/rpc/src/index.js";
import { ChildProcessTransport } from "../../packages/rpc/src/transport/child-process.js";
import { importedPeer, methodsOf, recording, sessionFindings, type Frame, type ImportedPeer } from "./peers.js";
import { sayMissing, SOURCES } from "./published.js";

const source = SOURCES.find((s) => s.name === "MCP 2025-11-25")!;
const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

let peer: ImportedPeer;
beforeAll(async () => {
  if (source.present) peer = await importedPeer(source, "mcp");
}, 300_000);
afterAll(() => peer?.cleanup());

/** Resolves when a frame recorded from now on passes `test`. */
function next(frames: Frame[], test: (f: Frame) => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const start = frames.length;
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const poll = () => {
      if (frames.slice(start).some(test)) resolve();
      else if (Date.now() > deadline) reject(new Error(`no ${what} within ${timeoutMs} ms`));
      else setTimeout(poll, 20);
    };
    poll();
  });
}
const notification =
  (method: string, test: (p: Record<string, unknown>) => boolean = () => true) =>
  (f: Frame) => {
    const m = f.message as { method?: string; id?: unknown; params?: Record<string, unknown> };
    return f.from === "server" && m.method === method && m.id === undefined && test(m.params ?? {});
  };

describe.skipIf(!source.present)("the client generated from MCP 2025-11-25 against @modelcontextprotocol/server-everything", () => {
  it("drives the server's whole surface and answers its requests, every frame valid both ways", async () => {
    const wire = recording(new ChildProcessTransport(process.execPath, [EVERYTHING, "stdio"], { env: { TZ: "UTC" }, stderr: "collect" }));
    const dropped: string[] = [];
    const internal: unknown[] = [];
    let roots = [{ uri: "file:///workspace/project", name: "project" }];
    const noTasks = () => {
      throw new RpcError(-32602, "this client runs no tasks");
    };
    const client = new peer.client.ProtocolClient(wire.transport, {
      validateIncoming: "strict",
      requestTimeoutMs: 30_000,
      onProtocolError: (e: Error, frame: string) => dropped.push(`${e.message}: ${frame.slice(0, 200)}`),
      onInternalError: (e: unknown) => internal.push(e),
      handlers: {
        ping: () => ({}),
        "roots/list": () => ({ roots }),
        "sampling/createMessage": (params: { messages: { content: { type: string; text?: string } }[] }) => ({
          role: "assistant",
          content: { type: "text", text: `An answer to: ${params.messages[0]?.content.text ?? ""}` },
          model: "test-model",
          stopReason: "endTurn",
        }),
        "elicitation/create": (params: { mode?: string; requestedSchema?: { properties?: Record<string, unknown> } }) => {
          if (params.mode === "url") return { action: "accept" };
          const fields = params.requestedSchema?.properties ?? {};
          if ("interpretation" in fields) return { action: "accept", content: { interpretation: "technical" } };
          if ("favoriteColor" in fields)
            return { action: "accept", content: { name: "Ada Lovelace", favoriteColor: "Blue", agreeToTerms: true } };
          // A whole number for the number field: the published ElicitResult takes integers, not decimals.
          return {
            action: "accept",
            content: {
              name: "Ada Lovelace",
              check: true,
              firstLine: "It was a dark and stormy night.",
              email: "ada@example.com",
              homepage: "https://example.com/ada",
              birthdate: "1815-12-10",
              integer: 42,
              number: 7,
              untitledSingleSelectEnum: "Rachel",
              untitledMultipleSelectEnum: ["Piano"],
              titledSingleSelectEnum: "hero-3",
              titledMultipleSelectEnum: ["fish-2"],
              legacyTitledEnum: "pet-2",
            },
          };
        },
        "tasks/get": noTasks,
        "tasks/result": noTasks,
        "tasks/list": noTasks,
        "tasks/cancel": noTasks,
      },
    });
    await client.start();
    const frames = wire.frames;
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      const result = await client.toolsCall({ name, arguments: args });
      expect(result.isError ?? false, `${name}: ${JSON.stringify(result).slice(0, 300)}`).toBe(false);
      return result;
    };

    const rootsSynced = next(
      frames,
      notification("notifications/message", (p) => String(p.data).startsWith("Roots updated")),
      "the log of the first roots/list",
    );
    const init = await client.initialize({
      protocolVersion: "2025-11-25",
      capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: { form: {}, url: {} } },
      clientInfo: { name: "turnspec-test", version: "1.0.0" },
    });
    expect(init.protocolVersion).toBe("2025-11-25");
    await client.notify("notifications/initialized", undefined);
    await rootsSynced;
    await client.ping();
    await client.loggingSetLevel({ level: "debug" });

    const { tools } = await client.toolsList();
    const { resources } = await client.resourcesList();
    await client.resourcesTemplatesList();
    await client.resourcesRead({ uri: resources[0].uri });
    await client.resourcesRead({ uri: "demo://resource/dynamic/text/1" });
    await client.resourcesRead({ uri: "demo://resource/dynamic/blob/2" });
    await expect(client.resourcesRead({ uri: "demo://resource/dynamic/text/0" })).rejects.toBeInstanceOf(RpcError);
    await client.resourcesSubscribe({ uri: "demo://resource/dynamic/text/1" });
    const updated = next(frames, notification("notifications/resources/updated"), "notifications/resources/updated");
    await call("toggle-subscriber-updates");
    await updated;
    await call("toggle-subscriber-updates");
    await client.resourcesUnsubscribe({ uri: "demo://resource/dynamic/text/1" });

    const { prompts } = await client.promptsList();
    expect(prompts).toHaveLength(4);
    await client.promptsGet({ name: "simple-prompt" });
    await client.promptsGet({ name: "args-prompt", arguments: { city: "Lisbon", state: "Lisboa" } });
    await client.promptsGet({ name: "completable-prompt", arguments: { department: "Engineering", name: "Alice" } });
    await client.promptsGet({ name: "resource-prompt", arguments: { resourceType: "Blob", resourceId: "3" } });
    await client.completionComplete({
      ref: { type: "ref/prompt", name: "completable-prompt" },
      argument: { name: "department", value: "S" },
    });
    await client.completionComplete({
      ref: { type: "ref/prompt", name: "completable-prompt" },
      argument: { name: "name", value: "" },
      context: { arguments: { department: "Engineering" } },
    });
    await client.completionComplete({
      ref: { type: "ref/resource", uri: "demo://resource/dynamic/text/{resourceId}" },
      argument: { name: "resourceId", value: "7" },
    });

    await call("echo", { message: "Hello" });
    await call("get-sum", { a: 19, b: 23 });
    await call("get-annotated-message", { messageType: "error", includeImage: true });
    await call("get-tiny-image");
    await call("get-env");
    await call("get-structured-content", { location: "Chicago" });
    await call("get-resource-links", { count: 2 });
    await call("get-resource-reference", { resourceType: "Text", resourceId: 1 });
    await call("get-resource-reference", { resourceType: "Blob", resourceId: 2 });
    const gzip = { name: "greeting.txt.gz", data: "data:text/plain;base64,SGVsbG8sIHJlY29yZGVkIHNlc3Npb24hCg==" };
    await call("gzip-file-as-resource", gzip);
    await client.resourcesRead({ uri: "demo://resource/session/greeting.txt.gz" });
    await call("gzip-file-as-resource", { ...gzip, name: "inline.txt.gz", outputType: "resource" });
    const logged = next(
      frames,
      notification("notifications/message", (p) => /level/.test(String(p.data))),
      "a simulated log message",
    );
    await call("toggle-simulated-logging");
    await logged;
    await call("toggle-simulated-logging");

    // Progress, then a request the client cancels.
    await client.toolsCall({
      name: "trigger-long-running-operation",
      arguments: { duration: 0.4, steps: 2 },
      _meta: { progressToken: "progress-1" },
    });
    expect(frames.some(notification("notifications/progress", (p) => p.progressToken === "progress-1"))).toBe(true);
    const abort = new AbortController();
    const cancelled = client
      .toolsCall({ name: "trigger-long-running-operation", arguments: { duration: 1, steps: 1 } }, { signal: abort.signal })
      .catch(() => "aborted");
    await sleep(200);
    const pending = [...frames].reverse().find((f) => f.from === "client" && (f.message as { method?: string }).method === "tools/call")!
      .message as { id: number };
    await client.notify("notifications/cancelled", { requestId: pending.id, reason: "the test cancels it" });
    abort.abort();
    expect(await cancelled).toBe("aborted");
    await sleep(1500);

    // The roots change: the server asks for them again.
    roots = [...roots, { uri: "file:///workspace/library", name: "library" }];
    const rootsAgain = next(
      frames,
      notification("notifications/message", (p) => String(p.data).startsWith("Roots updated: 2")),
      "the log of the second roots/list",
    );
    await client.notify("notifications/roots/list_changed", undefined);
    await rootsAgain;
    await call("get-roots-list");

    // The server's own requests.
    await call("trigger-sampling-request", { prompt: "Name a colour.", maxTokens: 20 });
    await call("trigger-elicitation-request");
    const urlArgs = {
      url: "https://example.com/authorize",
      message: "Open the page to authorize.",
      elicitationId: "test-elicitation",
      errorPath: true,
    };
    const refused = await client.toolsCall({ name: "trigger-url-elicitation", arguments: urlArgs }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: -32042, data: { elicitations: [expect.objectContaining({ mode: "url" })] } });
    await call("trigger-url-elicitation", urlArgs);

    // A tool run as a task: its result is the task (CreateTaskResult, one of the union's variants); then the task methods.
    const inputRequired = next(
      frames,
      notification("notifications/tasks/status", (p) => p.status === "input_required"),
      "task status input_required",
    );
    const created = await client.toolsCall({
      name: "simulate-research-query",
      arguments: { topic: "Python", ambiguous: true },
      task: { ttl: 60_000 },
    });
    expect(created.task?.taskId).toBeDefined();
    await inputRequired;
    await client.tasksGet({ taskId: created.task.taskId });
    await client.tasksResult({ taskId: created.task.taskId });
    await client.tasksList();
    const second = await client.toolsCall({ name: "simulate-research-query", arguments: { topic: "tides" }, task: { ttl: 60_000 } });
    await client.tasksCancel({ taskId: second.task.taskId });
    await sleep(1500);

    await client.close();
    expect(dropped).toEqual([]);
    expect(internal).toEqual([]);
    const called = new Set(
      frames.flatMap((f) =>
        f.from === "client" && (f.message as { method?: string }).method === "tools/call"
          ? [String((f.message as { params: { name: string } }).params.name)]
          : [],
      ),
    );
    const uncalled = tools.map((t: { name: string }) => t.name).filter((n: string) => !called.has(n) && !/-async$/.test(n));
    expect(uncalled, "tools not called (the -async ones need the client's tasks capability)").toEqual([]);
    const methods = methodsOf(frames);
    for (const m of [
      "server roots/list",
      "server sampling/createMessage",
      "server elicitation/create",
      "client tasks/get",
      "client tasks/result",
      "client tasks/list",
      "client tasks/cancel",
      "client notifications/cancelled",
    ])
      expect(methods.has(m), m).toBe(true);
    expect(sessionFindings(peer.model, frames)).toEqual([]);
    console.log(`server-everything: ${frames.length} frames, ${called.size} of ${tools.length} tools called, all valid both ways`);
  }, 300_000);
});

if (!source.present) sayMissing(source);
