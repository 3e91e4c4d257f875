/**
 * Records a live MCP session between the official SDK client (@modelcontextprotocol/sdk) and
 * @modelcontextprotocol/server-everything, spawned over stdio, and writes every frame that crossed the
 * wire, in order, to test/fixtures/published/mcp/everything-session.jsonl: one line per frame,
 * `{"from":"client"|"server","message":<the JSON-RPC frame>}`.
 *
 *   node --import ./scripts/from-source.mjs scripts/record-mcp-session.ts            records and writes the file
 *   node --import ./scripts/from-source.mjs scripts/record-mcp-session.ts --check    records, writes nothing, exits 1 if the file differs
 *   node --import ./scripts/from-source.mjs scripts/record-mcp-session.ts --out F    writes F instead
 *
 * Frames are tapped as raw lines at the transport (the client's frame as written to the child's stdin,
 * the server's line as read from its stdout), never rebuilt from what the SDK hands over; each line must
 * parse to JSON that serializes back to the same bytes, so the transcript holds the frames exactly.
 *
 * The session drives the server's whole surface one step at a time: initialize, ping, logging/setLevel,
 * tools/list and a call of each of its 19 tools, resources (list, templates, read of text, blob, static
 * and session resources, subscribe/unsubscribe), prompts (list, get of each), completion/complete, a
 * cancelled request, the roots list changing, and tasks both ways (tools/call as a task with tasks/get,
 * tasks/result, tasks/list and tasks/cancel; the server's sampling and elicitation requests run as client
 * tasks). The client answers the server's roots/list, sampling/createMessage and elicitation/create.
 * Each step waits for what the server sends in return before the next one, so frames are not interleaved
 * by chance.
 *
 * So that two runs give the same bytes, both processes run with their clock and random sources pinned
 * (the PIN module below, loaded with `--import` into the server): `Date` stands still at
 * 2025-11-25T12:00:00Z (the server prints it in resource texts and in task timestamps), `Math.random` is
 * a seeded generator (the server picks a random log level), and `crypto.randomUUID` and the 16-byte
 * `crypto.randomBytes` count up (URL elicitation ids, task ids). The server's environment is `TZ=UTC`
 * alone (its get-env tool prints it). Nothing else is touched.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport as SdkTransport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  McpError,
  type CreateMessageResult,
  type ElicitResult,
  type JSONRPCMessage,
} from "@modelcontextprotocol/sdk/types.js";
import { CreateTaskResultSchema, InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks";
import { ChildProcessTransport } from "@turnspec/rpc/transport";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const DEFAULT_OUT = "test/fixtures/published/mcp/everything-session.jsonl";
const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

/**
 * The module that pins a process's clock and random sources. `tag` starts the ids it makes, so the
 * client's task ids (c1…) and the server's (5e…) differ.
 */
function pinSource(tag: string): string {
  return `
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
const FIXED = Date.UTC(2025, 10, 25, 12, 0, 0);
const RealDate = Date;
class PinnedDate extends RealDate {
  constructor(...args) { if (args.length === 0) super(FIXED); else super(...args); }
  static now() { return FIXED; }
}
globalThis.Date = PinnedDate;
let seed = 0x2f6b1c3d;
Math.random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
let uuids = 0;
crypto.randomUUID = () => "${tag}000000-0000-4000-8000-" + (++uuids).toString(16).padStart(12, "0");
let ids = 0;
const realRandomBytes = crypto.randomBytes;
crypto.randomBytes = (size, callback) => {
  if (size !== 16 || callback !== undefined) return realRandomBytes(size, callback);
  const bytes = Buffer.alloc(16);
  bytes[0] = 0x${tag};
  bytes.writeUInt32BE(++ids, 12);
  return bytes;
};
syncBuiltinESMExports();
`;
}
const pinUrl = (tag: string) => `data:text/javascript,${encodeURIComponent(pinSource(tag))}`;

type Side = "client" | "server";
interface Entry {
  readonly from: Side;
  readonly message: JSONRPCMessage;
}

/** The transcript, with waits on frames still to come. */
class Recorder {
  readonly entries: Entry[] = [];
  private waiters: { test: (entry: Entry) => boolean; resolve: () => void }[] = [];

  record(from: Side, frame: string): void {
    const message = JSON.parse(frame) as JSONRPCMessage;
    if (JSON.stringify(message) !== frame) throw new Error(`a ${from} frame does not serialize back to its bytes: ${frame}`);
    const entry = { from, message };
    this.entries.push(entry);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.test(entry)) return true;
      waiter.resolve();
      return false;
    });
  }

  /** Resolves when a frame recorded from now on passes `test`; fails after `timeoutMs`. */
  next(what: string, test: (entry: Entry) => boolean, timeoutMs = 15_000): Promise<void> {
    return new Promise<void>((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        test,
        resolve: () => {
          clearTimeout(timer);
          resolvePromise();
        },
      });
    });
  }

  jsonl(): string {
    return this.entries.map((entry) => JSON.stringify(entry)).join("\n") + "\n";
  }
}

/** The SDK's transport interface over the project's child-process transport, recording each raw line both ways. */
class TappedTransport implements SdkTransport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  constructor(
    private readonly inner: ChildProcessTransport,
    private readonly recorder: Recorder,
  ) {
    inner.onmessage = (frame) => {
      recorder.record("server", frame);
      this.onmessage?.(JSON.parse(frame) as JSONRPCMessage);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const frame = JSON.stringify(message);
    this.recorder.record("client", frame);
    await this.inner.send(frame);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

const isNotification =
  (method: string, test: (params: Record<string, unknown>) => boolean = () => true) =>
  (entry: Entry) =>
    entry.from === "server" &&
    "method" in entry.message &&
    !("id" in entry.message) &&
    entry.message.method === method &&
    test((entry.message.params ?? {}) as Record<string, unknown>);
const isResponseTo = (from: Side) => (entry: Entry) => entry.from === from && !("method" in entry.message);
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** The text blocks of a tool result, for an error message. */
function textOf(result: object): string {
  const content = ("content" in result && Array.isArray(result.content) ? result.content : []) as { type: string; text?: string }[];
  return content.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join("\n");
}

async function record(): Promise<Recorder> {
  await import(pinUrl("c1"));
  const recorder = new Recorder();
  const child = new ChildProcessTransport(process.execPath, ["--import", pinUrl("5e"), EVERYTHING, "stdio"], {
    env: { TZ: "UTC" },
    stderr: "collect",
  });
  const transport = new TappedTransport(child, recorder);

  let roots = [{ uri: "file:///workspace/project", name: "project" }];
  const taskStore = new InMemoryTaskStore();
  const client = new Client(
    { name: "turnspec-recorder", version: "1.0.0" },
    {
      capabilities: {
        roots: { listChanged: true },
        sampling: {},
        elicitation: { form: {}, url: {} },
        tasks: { list: {}, cancel: {}, requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } },
      },
      taskStore,
    },
  );

  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots }));

  const sampled = (text: string): CreateMessageResult => ({
    role: "assistant",
    content: { type: "text", text: `A recorded answer to: ${text}` },
    model: "recorded-model",
    stopReason: "endTurn",
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
    const first = request.params.messages[0]?.content;
    const prompt = first && !Array.isArray(first) && first.type === "text" ? first.text : "";
    const result = sampled(prompt);
    if (!request.params.task) return result;
    // Run as a client task: answer with the task, then complete it once the answer has gone out.
    const store = extra.taskStore!;
    const task = await store.createTask({ ttl: request.params.task.ttl ?? 60_000, pollInterval: 1000 });
    setTimeout(() => void store.storeTaskResult(task.taskId, "completed", result), 200);
    return { task };
  });

  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const params = request.params;
    let result: ElicitResult;
    if (params.mode === "url") result = { action: "accept" };
    else if ("interpretation" in (params.requestedSchema.properties ?? {}))
      result = { action: "accept", content: { interpretation: "technical" } };
    else if ("favoriteColor" in (params.requestedSchema.properties ?? {}))
      result = { action: "accept", content: { name: "Ada Lovelace", favoriteColor: "Blue", agreeToTerms: true } };
    else
      result = {
        action: "accept",
        content: {
          name: "Ada Lovelace",
          check: true,
          firstLine: "It was a dark and stormy night.",
          email: "ada@example.com",
          homepage: "https://example.com/ada",
          birthdate: "1815-12-10",
          integer: 42,
          number: 3.14,
          untitledSingleSelectEnum: "Rachel",
          untitledMultipleSelectEnum: ["Piano", "Violin"],
          titledSingleSelectEnum: "hero-3",
          titledMultipleSelectEnum: ["fish-2"],
          legacyTitledEnum: "pet-2",
        },
      };
    if (!("task" in params) || !params.task) return result;
    const store = extra.taskStore!;
    const task = await store.createTask({ ttl: params.task.ttl ?? 60_000, pollInterval: 1000 });
    setTimeout(() => void store.storeTaskResult(task.taskId, "completed", result), 200);
    return { task };
  });

  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = await client.callTool({ name, arguments: args }, CallToolResultSchema);
    if (result.isError) throw new Error(`tool ${name} failed: ${textOf(result)}`);
    return result;
  };

  try {
    // The server asks for the roots 350 ms after notifications/initialized, then logs what it got.
    const rootsSynced = recorder.next(
      "log of the first roots/list",
      isNotification("notifications/message", (p) => String(p.data).startsWith("Roots updated")),
    );
    await client.connect(transport);
    await rootsSynced;

    await client.ping();
    await client.setLoggingLevel("debug");

    const { tools } = await client.listTools();
    const toolNames = tools.map((tool) => tool.name).sort();

    // Resources: the static documents, the dynamic templates (text and blob), an unknown one.
    const { resources } = await client.listResources();
    await client.listResourceTemplates();
    const staticDocument = resources.find((resource) => resource.uri.endsWith("/features.md")) ?? resources[0];
    if (!staticDocument) throw new Error("the server lists no resources");
    await client.readResource({ uri: staticDocument.uri });
    await client.readResource({ uri: "demo://resource/dynamic/text/1" });
    await client.readResource({ uri: "demo://resource/dynamic/blob/2" });
    await client.readResource({ uri: "demo://resource/dynamic/text/0" }).then(
      () => {
        throw new Error("reading demo://resource/dynamic/text/0 was expected to fail");
      },
      (error: unknown) => {
        if (!(error instanceof McpError)) throw error;
      },
    );

    // Subscriptions: the update loop sends one notifications/resources/updated at once, then every 5 s.
    await client.subscribeResource({ uri: "demo://resource/dynamic/text/1" });
    const updated = recorder.next("notifications/resources/updated", isNotification("notifications/resources/updated"));
    await call("toggle-subscriber-updates");
    await updated;
    await call("toggle-subscriber-updates");
    await client.unsubscribeResource({ uri: "demo://resource/dynamic/text/1" });

    // Prompts and completion.
    const { prompts } = await client.listPrompts();
    await client.getPrompt({ name: "simple-prompt" });
    await client.getPrompt({ name: "args-prompt", arguments: { city: "Lisbon", state: "Lisboa" } });
    await client.getPrompt({ name: "completable-prompt", arguments: { department: "Engineering", name: "Alice" } });
    await client.getPrompt({ name: "resource-prompt", arguments: { resourceType: "Blob", resourceId: "3" } });
    await client.complete({ ref: { type: "ref/prompt", name: "completable-prompt" }, argument: { name: "department", value: "S" } });
    await client.complete({
      ref: { type: "ref/prompt", name: "completable-prompt" },
      argument: { name: "name", value: "" },
      context: { arguments: { department: "Engineering" } },
    });
    await client.complete({
      ref: { type: "ref/resource", uri: "demo://resource/dynamic/text/{resourceId}" },
      argument: { name: "resourceId", value: "7" },
    });

    // The tools that answer at once.
    await call("echo", { message: "Hello from the recorded session" });
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
    await client.readResource({ uri: "demo://resource/session/greeting.txt.gz" });
    await call("gzip-file-as-resource", { ...gzip, name: "inline.txt.gz", outputType: "resource" });

    // Simulated logging: one message at once, then every 5 s until toggled off.
    const logged = recorder.next(
      "a simulated log message",
      isNotification("notifications/message", (p) => String(p.data).includes("-level message") || String(p.data).includes("level-message")),
    );
    await call("toggle-simulated-logging");
    await logged;
    await call("toggle-simulated-logging");

    // Progress, then a request the client cancels (no progress token, so nothing more comes of it).
    await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 0.4, steps: 2 } }, CallToolResultSchema, {
      onprogress: () => undefined,
    });
    const abort = new AbortController();
    const cancelled = client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 1 } },
      CallToolResultSchema,
      { signal: abort.signal },
    );
    await sleep(200);
    abort.abort("the recorded session cancels this call");
    await cancelled.then(
      () => {
        throw new Error("the cancelled call answered");
      },
      () => undefined,
    );
    await sleep(1500);

    // The roots change: the server asks for them again and logs the count.
    roots = [...roots, { uri: "file:///workspace/library", name: "library" }];
    const rootsAgain = recorder.next(
      "log of the second roots/list",
      isNotification("notifications/message", (p) => String(p.data).startsWith("Roots updated: 2")),
    );
    await client.sendRootsListChanged();
    await rootsAgain;
    await call("get-roots-list");

    // The server's own requests, answered by the handlers above.
    await call("trigger-sampling-request", { prompt: "Name a colour.", maxTokens: 20 });
    await call("trigger-elicitation-request");
    const urlArgs = {
      url: "https://example.com/authorize",
      message: "Open the page to authorize.",
      elicitationId: "recorded-elicitation",
      errorPath: true,
    };
    await client.callTool({ name: "trigger-url-elicitation", arguments: urlArgs }).then(
      () => {
        throw new Error("trigger-url-elicitation with errorPath was expected to fail with -32042");
      },
      (error: unknown) => {
        if (!(error instanceof McpError) || error.code !== -32042) throw error;
      },
    );
    await call("trigger-url-elicitation", urlArgs);

    // A tool run as a server task: its clarification request is delivered through tasks/result.
    const inputRequired = recorder.next(
      "task status input_required",
      isNotification("notifications/tasks/status", (p) => p.status === "input_required"),
    );
    const created = await client.request(
      {
        method: "tools/call",
        params: { name: "simulate-research-query", arguments: { topic: "Python", ambiguous: true }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    await inputRequired;
    await client.experimental.tasks.getTask(created.task.taskId);
    await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    await client.experimental.tasks.listTasks();
    const firstStatus = recorder.next(
      "first status of the second task",
      isNotification("notifications/tasks/status", (p) => p.status === "working" && p.statusMessage === "Gathering sources..."),
    );
    const second = await client.request(
      { method: "tools/call", params: { name: "simulate-research-query", arguments: { topic: "tides" }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    await firstStatus;
    await client.experimental.tasks.cancelTask(second.task.taskId);
    await sleep(1500);

    // The server's sampling and elicitation requests run as client tasks, which the server polls.
    await call("trigger-sampling-request-async", { prompt: "Name a river.", maxTokens: 20 });
    await call("trigger-elicitation-request-async");

    const called = new Set(
      recorder.entries.flatMap((entry) =>
        entry.from === "client" && "method" in entry.message && entry.message.method === "tools/call"
          ? [String((entry.message.params as { name: string }).name)]
          : [],
      ),
    );
    const uncalled = toolNames.filter((name) => !called.has(name));
    if (uncalled.length > 0) throw new Error(`tools not called: ${uncalled.join(", ")}`);
    if (prompts.length !== 4) throw new Error(`expected 4 prompts, the server lists ${prompts.length}`);
  } finally {
    await client.close();
    taskStore.cleanup(); // its expiry timers would keep the process alive
  }
  // The server's log (stderr), with RECORD_VERBOSE=1.
  if (process.env.RECORD_VERBOSE) process.stderr.write(child.stderrText);
  return recorder;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const check = args.includes("--check");
  const outIndex = args.indexOf("--out");
  const out = resolve(ROOT, outIndex >= 0 ? (args[outIndex + 1] ?? DEFAULT_OUT) : DEFAULT_OUT);
  const recorder = await record();
  const text = recorder.jsonl();
  const counts = new Map<string, number>();
  for (const entry of recorder.entries) {
    const key =
      "method" in entry.message
        ? `${entry.from} ${entry.message.method}${"id" in entry.message ? "" : " (notification)"}`
        : `${entry.from} response`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  process.stdout.write(`${recorder.entries.length} frames\n`);
  for (const [key, count] of [...counts].sort()) process.stdout.write(`  ${String(count).padStart(3)}  ${key}\n`);
  if (check) {
    let committed = "";
    try {
      committed = readFileSync(out, "utf8");
    } catch {
      // A missing file differs.
    }
    if (committed !== text) {
      process.stderr.write(
        `${out} differs from a new recording; run \`node --import ./scripts/from-source.mjs scripts/record-mcp-session.ts\` to rewrite it\n`,
      );
      process.exitCode = 1;
    }
    return;
  }
  writeFileSync(out, text);
  process.stdout.write(`wrote ${out}\n`);
}

await main();
