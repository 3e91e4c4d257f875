// The smallest gateway that certifies at core: the generated server over stdio, one
// OpenAI-compatible model, the three reference tools, everything in memory.
//   node --import tsx gateway.ts --provider-url http://127.0.0.1:8080/v1
// Methods of capabilities it does not claim are answered -32601 (method_not_found).
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  errors,
  protocolError,
  serveConnection,
  type Handlers,
  type NotificationParamsOf,
  type ServerConnection,
  type ServerNotificationName,
} from "@turnspec/protocol";
import type {
  Thread,
  ThreadTimelineBlock,
  ToolPermissionPolicySnapshot,
  Turn,
  TurnFailure,
  TurnItem,
  TurnItemEvent,
  TurnStartParams,
  TurnUsage,
} from "@turnspec/protocol";
import { stdioServerTransport } from "@turnspec/rpc/transport";

const { values } = parseArgs({ options: { "provider-url": { type: "string" }, model: { type: "string" } } });
const providerUrl = values["provider-url"] ?? process.env.TURNSPEC_PROVIDER_URL;
if (providerUrl === undefined) {
  process.stderr.write("usage: gateway.ts --provider-url URL [--model NAME]\n");
  process.exit(2);
}
const model = values.model ?? "minimal-model";

// Every turn runs under full_access: all ten fields of the policy it reports are required.
const FULL_ACCESS: ToolPermissionPolicySnapshot = {
  default_behavior: "allow",
  file_read: "allow",
  file_write: "allow",
  shell_command: "allow",
  network: "allow",
  mcp_read: "allow",
  mcp_write_or_unknown: "allow",
  dynamic_skill_tool: "allow",
  computer_use: "allow",
  task_subagent: "allow",
};

// The reference tools, as the model is offered them (docs/certify-contract.md).
const TOOLS = [
  {
    name: "shell",
    description: "Runs a shell command in the thread's folder.",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
  },
  {
    name: "write_file",
    description: "Writes a file in the thread's folder.",
    parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
  },
  {
    name: "read_file",
    description: "Reads a file in the thread's folder.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
];

type ToolCall = { id: string; type: "function"; function: { name: string; arguments: string } };
type Message = { role: "system" | "user" | "assistant" | "tool"; content: string | null; tool_calls?: ToolCall[]; tool_call_id?: string };
type Completion = {
  choices?: { message?: { content?: string | null; reasoning_content?: string; tool_calls?: ToolCall[] } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
};

interface TurnState {
  readonly turn: Turn;
  readonly threadId: string;
  readonly text: string;
  readonly createdMicros: number;
  readonly events: TurnItemEvent[];
  readonly abort: AbortController;
  sequence: number;
  answer?: string;
  ended: boolean;
}
interface ThreadState {
  readonly thread: Thread;
  readonly turns: TurnState[];
}

const threads = new Map<string, ThreadState>();
const turnIds = new Set<string>();

const threadOf = (id: string): ThreadState =>
  threads.get(id) ?? fail(protocolError("thread_not_found", `no thread ${id}`, { thread_id: id }));
const turnOf = (threadId: string, turnId: string): TurnState =>
  threadOf(threadId).turns.find((t) => t.turn.id === turnId) ??
  fail(protocolError("turn_not_found", `thread ${threadId} has no turn ${turnId}`, { thread_id: threadId, turn_id: turnId }));
const notServed = (method: string) => (): never => fail(protocolError("method_not_found", `${method} is not served by this gateway`));
function fail(error: Error): never {
  throw error;
}

/** Sends a notification of the turn under its next sequence number; item events are kept for turn/items. */
async function emit<N extends ServerNotificationName>(
  state: TurnState,
  name: N,
  params: Omit<NotificationParamsOf<N>, "sequence" | "thread_id" | "turn_id">,
): Promise<void> {
  const full = { thread_id: state.threadId, turn_id: state.turn.id, sequence: ++state.sequence, ...params };
  if (name.startsWith("item/"))
    state.events.push({ sequence: full.sequence, method: name, params: structuredClone(full), recorded_at: new Date().toISOString() });
  // The spread of an Omit is not known to the compiler to rebuild the params type; the connection validates it before sending.
  await connection.notify(name, full as unknown as NotificationParamsOf<N>);
}

async function item(state: TurnState, started: TurnItem, completed: TurnItem, between?: () => Promise<void>): Promise<void> {
  await emit(state, "item/started", { item_id: started.id, item: started });
  await between?.();
  await emit(state, "item/completed", { item_id: completed.id, item: completed });
}

/** Ends the turn once, with its one terminal notification. */
async function finish(
  state: TurnState,
  outcome: { usage?: TurnUsage } | { failure: TurnFailure; status: "Failed" | "Interrupted" },
): Promise<void> {
  if (state.ended) return;
  state.ended = true;
  state.abort.abort();
  delete threadOf(state.threadId).thread.active_turn_id;
  state.turn.completed_at = new Date().toISOString();
  if ("failure" in outcome) {
    Object.assign(state.turn, { status: outcome.status, error: outcome.failure });
    await emit(state, "turn/failed", { turn: structuredClone(state.turn), error: outcome.failure });
  } else {
    Object.assign(state.turn, { status: "Completed" }, outcome.usage ? { usage: outcome.usage } : {});
    await emit(state, "turn/completed", { turn: structuredClone(state.turn), ...(outcome.usage ? { usage: outcome.usage } : {}) });
  }
  await connection.notify("thread/timeline/blocks/changed", {
    threadId: state.threadId,
    changedBlockIds: [`blk:${state.turn.id}`],
    turnId: state.turn.id,
  });
}

async function callModel(state: TurnState, messages: Message[], tools: boolean): Promise<Completion> {
  const body = JSON.stringify({
    model: state.turn.model ?? model,
    messages,
    ...(tools ? { tools: TOOLS.map((f) => ({ type: "function", function: f })) } : {}),
  });
  const response = await fetch(`${providerUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    signal: state.abort.signal,
  });
  if (!response.ok) throw new ProviderError(`the model answered HTTP ${response.status}: ${await response.text()}`);
  return (await response.json()) as Completion;
}

/** Runs one tool call: its item, what the model is told. */
async function runTool(state: TurnState, call: ToolCall, cwd: string): Promise<string> {
  let args: Record<string, unknown> = {};
  try {
    args = JSON.parse(call.function.arguments || "{}") as Record<string, unknown>;
  } catch {
    return `error: the arguments of ${call.function.name} are not JSON`;
  }
  const text = (name: string) => (typeof args[name] === "string" ? (args[name] as string) : undefined);
  const inside = (path: string) => {
    const full = resolve(cwd, path);
    if (relative(cwd, full).startsWith("..") || isAbsolute(relative(cwd, full))) throw new Error(`${path} is outside the thread's folder`);
    return full;
  };
  const id = randomUUID();
  if (call.function.name === "shell") {
    const command = text("command");
    const started: TurnItem = {
      type: "commandExecution",
      id,
      status: "in_progress",
      command: command ?? "",
      cwd,
      arguments: args,
      tool_call_id: call.id,
    };
    if (command === undefined) {
      await item(state, started, {
        ...started,
        status: "failed",
        error: { message: "shell: the command argument is missing", retryable: false },
      });
      return "error: shell: the command argument is missing";
    }
    const run = await shell(command, cwd, state.abort.signal);
    await item(
      state,
      started,
      { ...started, status: run.code === 0 ? "completed" : "failed", stdout: run.stdout, stderr: run.stderr, exit_code: run.code },
      async () => {
        for (const stream of ["stdout", "stderr"] as const)
          if (run[stream]) await emit(state, "item/command_execution/output_delta", { item_id: id, stream, delta: run[stream] });
      },
    );
    return run.code === 0 ? run.stdout : `exit code ${run.code}\n${run.stdout}${run.stderr}`;
  }
  if (call.function.name === "write_file") {
    const path = text("path") ?? "";
    const started: TurnItem = {
      type: "fileChange",
      id,
      status: "in_progress",
      path,
      change_kind: "add",
      arguments: args,
      tool_call_id: call.id,
    };
    try {
      await writeFile(inside(path), text("content") ?? "");
      await item(state, started, { ...started, status: "completed" });
      return `wrote ${path}`;
    } catch (error) {
      await item(state, started, { ...started, status: "failed", error: { message: (error as Error).message, retryable: false } });
      return `error: ${(error as Error).message}`;
    }
  }
  if (call.function.name === "read_file")
    return readFile(inside(text("path") ?? ""), "utf8").catch((error: Error) => `error: ${error.message}`);
  return `error: there is no tool ${call.function.name}`;
}

function shell(command: string, cwd: string, signal: AbortSignal): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, failed) => {
    const child = spawn("sh", ["-c", command], { cwd, signal, stdio: ["ignore", "pipe", "pipe"] });
    const out = { stdout: "", stderr: "" };
    child.stdout.on("data", (chunk: Buffer) => (out.stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out.stderr += chunk.toString()));
    child.once("error", failed);
    child.once("close", (code) => done({ code, ...out }));
  });
}

/** The turn: the user's message, then model calls (and, in Agent mode, tool calls) until an answer. */
async function run(thread: ThreadState, state: TurnState, input: TurnStartParams["input"]): Promise<void> {
  await emit(state, "turn/started", { turn: structuredClone(state.turn) });
  const user: TurnItem = { type: "userMessage", id: randomUUID(), status: "in_progress", content: input };
  await item(state, user, { ...user, status: "completed" });
  // History: the thread's earlier questions and answers, then this turn's text.
  const messages: Message[] = thread.turns
    .filter((t) => t !== state)
    .flatMap((t): Message[] => [
      { role: "user", content: t.text },
      ...(t.answer ? [{ role: "assistant" as const, content: t.answer }] : []),
    ]);
  messages.push({ role: "user", content: state.text });
  const usage: TurnUsage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  for (;;) {
    const completion = await callModel(state, messages, state.turn.mode === "Agent");
    usage.input_tokens += completion.usage?.prompt_tokens ?? 0;
    usage.output_tokens += completion.usage?.completion_tokens ?? 0;
    usage.total_tokens = usage.input_tokens + usage.output_tokens;
    const message = completion.choices?.[0]?.message;
    if (!message) throw new ProviderError("the model's answer has no message");
    if (message.reasoning_content) {
      const reasoning: TurnItem = { type: "reasoning", id: randomUUID(), status: "in_progress", text: "" };
      await item(state, reasoning, { ...reasoning, status: "completed", text: message.reasoning_content });
    }
    if (message.content) {
      const answer: TurnItem = { type: "agentMessage", id: randomUUID(), status: "in_progress", text: "" };
      const content = message.content;
      await item(state, answer, { ...answer, status: "completed", text: content }, () =>
        emit(state, "item/agent_message/delta", { item_id: answer.id, stream: "agent_message", delta: content }),
      );
    }
    const calls = state.turn.mode === "Agent" ? (message.tool_calls ?? []) : [];
    if (calls.length === 0) {
      if (message.content) state.answer = message.content;
      break;
    }
    messages.push({ role: "assistant", content: message.content ?? null, tool_calls: calls });
    for (const call of calls)
      messages.push({ role: "tool", tool_call_id: call.id, content: await runTool(state, call, thread.thread.cwd) });
  }
  // Usage is reported when the model reported some.
  await finish(state, usage.total_tokens > 0 ? { usage } : {});
}

class ProviderError extends Error {}

/** Refuses what this gateway does not serve, naming it (a field accepted and ignored would mislead the client). */
function refuseUnserved(params: TurnStartParams): void {
  if (params.execution_backend !== undefined)
    throw protocolError("execution_backend_unavailable", "this gateway serves only its own model provider", {
      execution_backend: params.execution_backend,
    });
  for (const field of ["model_provider", "cli_runtime_options", "sandbox_policy"] as const) {
    if (params[field] !== undefined) throw protocolError("invalid_params", `turn/start: ${field} is not served by this gateway`, { field });
  }
  const profile = params.permission_profile;
  if (profile !== undefined && (profile.mode !== "full_access" || Object.keys(profile).length > 1))
    throw protocolError(
      "invalid_params",
      "turn/start: this gateway runs every turn under full_access and serves no other permission profile",
      { field: "permission_profile" },
    );
  if (params.input.some((i) => i.type !== "text"))
    throw protocolError("invalid_params", "turn/start: this gateway takes text input only", { field: "input" });
}

const handlers: Handlers<ServerConnection> = {
  "thread/start": (params) => {
    if (params.model_provider !== undefined)
      throw protocolError("invalid_params", "thread/start: model_provider is not served by this gateway", { field: "model_provider" });
    const thread: Thread = {
      id: `thr_${randomUUID()}`,
      workspace_id: params.workspace_id ?? "ws_minimal",
      cwd: params.cwd ?? process.cwd(),
      mode: params.mode ?? "Chat",
      created_at: new Date().toISOString(),
      ...(params.model ? { model: params.model } : {}),
    };
    threads.set(thread.id, { thread, turns: [] });
    return { thread: structuredClone(thread) };
  },
  "thread/get": (params) => ({ thread: structuredClone(threadOf(params.thread_id).thread) }),
  "thread/timeline/page": (params) => {
    if (params.cursor !== undefined)
      throw protocolError("invalid_params", "thread/timeline/page: this gateway gives out no cursors", { field: "cursor" });
    const blocks: ThreadTimelineBlock[] = threadOf(params.threadId).turns.map((t) => ({
      blockId: `blk:${t.turn.id}`,
      kind: "turn_work",
      turnId: t.turn.id,
      status: t.turn.status,
      createdAtUnixMicros: t.createdMicros,
      userText: t.text,
    }));
    const page = blocks.slice(0, params.limit ?? blocks.length);
    return { threadId: params.threadId, blocks: page, page: { nextCursor: null, hasMore: page.length < blocks.length } };
  },
  "turn/start": (params) => {
    const thread = threadOf(params.thread_id);
    if (turnIds.has(params.turn_id))
      throw protocolError("duplicate_turn_id", `turn id ${params.turn_id} is already used`, { turn_id: params.turn_id });
    if (thread.thread.active_turn_id)
      throw protocolError("turn_in_progress", `thread ${thread.thread.id} is running turn ${thread.thread.active_turn_id}`, {
        active_turn_id: thread.thread.active_turn_id,
      });
    refuseUnserved(params);
    const turn: Turn = {
      id: params.turn_id,
      thread_id: thread.thread.id,
      workspace_id: thread.thread.workspace_id,
      status: "InProgress",
      mode: params.mode ?? thread.thread.mode,
      model: params.model ?? thread.thread.model ?? model,
      created_at: new Date().toISOString(),
      prompt_manifest: null,
      permission_profile: {
        mode: "full_access",
        source: params.permission_profile ? "composer" : "defaulted",
        effective_policy: FULL_ACCESS,
      },
      // It has no skills, MCP servers or tools to offer beyond the three: every capability asked for is not found.
      ...(params.capabilities
        ? {
            capabilities: params.capabilities.map((c) => ({
              capabilityId: c.id,
              status: "rejected" as const,
              reason: "not_found" as const,
            })),
          }
        : {}),
    };
    const state: TurnState = {
      turn,
      threadId: thread.thread.id,
      text: params.input.map((i) => (i.type === "text" ? i.text : "")).join("\n"),
      createdMicros: Date.now() * 1000,
      events: [],
      abort: new AbortController(),
      sequence: 0,
      ended: false,
    };
    turnIds.add(turn.id);
    thread.turns.push(state);
    thread.thread.active_turn_id = turn.id;
    // The turn runs once the response is on its way; whatever stops it early fails it.
    setImmediate(
      () =>
        void run(thread, state, params.input).catch((error: unknown) =>
          finish(state, {
            failure: {
              kind: error instanceof ProviderError ? "provider_error" : "internal",
              message: error instanceof Error ? error.message : String(error),
              retryable: false,
            },
            status: "Failed",
          }),
        ),
    );
    return { turn: structuredClone(turn) };
  },
  "turn/cancel": async (params) => {
    const state = turnOf(params.thread_id, params.turn_id);
    if (state.ended)
      throw protocolError("turn_not_active", `turn ${state.turn.id} already ended ${state.turn.status}`, {
        turn_id: state.turn.id,
        status: state.turn.status,
      });
    await finish(state, {
      failure: { kind: "cancelled", message: params.reason ?? "cancelled by the client", retryable: false },
      status: "Interrupted",
    });
    return { turn: structuredClone(state.turn) };
  },
  // No turn of this gateway ever blocks.
  "turn/resume": (params) => {
    const state = turnOf(params.thread_id, params.turn_id);
    throw protocolError("turn_not_blocked", `turn ${state.turn.id} is ${state.turn.status}, not Blocked`, {
      turn_id: state.turn.id,
      status: state.turn.status,
    });
  },
  "turn/get": (params) => ({ turn: structuredClone(turnOf(params.thread_id, params.turn_id).turn) }),
  "turn/items": (params) => {
    const state = turnOf(params.thread_id, params.turn_id);
    const after = params.after_sequence ?? 0;
    const events = state.events.filter((e) => e.sequence > after).slice(0, params.limit ?? state.events.length);
    return {
      thread_id: state.threadId,
      workspace_id: state.turn.workspace_id ?? "ws_minimal",
      turn_id: state.turn.id,
      events: structuredClone(events),
      last_sequence: events.at(-1)?.sequence ?? after,
    };
  },
  // Capabilities it does not claim: permissions, routes, work, windows, recovery, surface.
  "turn/permission/request/respond": notServed("turn/permission/request/respond"),
  "turn/question/respond": notServed("turn/question/respond"),
  "turn/work/page": notServed("turn/work/page"),
  "turn/work/items/get": notServed("turn/work/items/get"),
  "agent/route/create": notServed("agent/route/create"),
  "agent/route/list": notServed("agent/route/list"),
  "agent/route/revoke": notServed("agent/route/revoke"),
};

const transport = stdioServerTransport({
  maxFrameBytes: 4 * 1024 * 1024,
  oversizedReply: (limit, bytes) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: errors.payload_too_large.code,
        message: `a frame of ${bytes} bytes is over the limit of ${limit}`,
        data: { reason: "payload_too_large", limit, bytes },
      },
    }),
});
const connection = serveConnection(transport, handlers, {
  validationMode: "strict",
  onInternalError: (error, method) => void process.stderr.write(`${method}: ${String(error)}\n`),
});
await connection.start();
// stdin ended: the client is gone, and so is the gateway.
const closed = transport.onclose;
transport.onclose = () => {
  closed?.();
  process.exit(0);
};
