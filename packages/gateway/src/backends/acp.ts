/**
 * ACP agents as an execution backend (`acpAgentRuntime`), through the official Agent
 * Client Protocol SDK: the gateway starts the configured agent command and is its ACP
 * client. Each thread gets one ACP session (session/new, in the thread's folder); each
 * turn is one session/prompt of the turn's text input.
 *
 * What the agent reports becomes the turn's items: message chunks → an agentMessage with
 * deltas, thoughts → reasoning, tool calls and their updates → the matching tool item
 * (execute → commandExecution, edit/delete/move → fileChange, anything else →
 * dynamicToolCall). session/request_permission goes through the tool gate: the turn's
 * profile decides first, an ask opens turn/permission/request/opened, and the answer is
 * mapped onto the agent's options. The client methods the agent may call (fs/read_text_file,
 * fs/write_text_file, terminal/*) are served under the same gate, so a path outside the
 * turn's roots or a command in a supervised turn is asked about first; each is an item of
 * the turn. turn/cancel sends session/cancel.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { isAbsolute, normalize } from "node:path";
import { Readable, Writable } from "node:stream";
import type * as Acp from "@agentclientprotocol/sdk";
import type { TurnItem } from "@turnspec/protocol/types";
import type { AcpAgentConfig, ResolvedConfig } from "../config.js";
import type { TurnRun } from "../engine/ports.js";
import { ToolGate } from "../turn/tool-gate.js";
import { toolItemOf, type ToolItem, type ToolItemType } from "../turn/tool-items.js";
import { importOptional } from "../optional.js";
import { processEnvironment } from "../permissions/security.js";
import { sandboxedCommand } from "../sandbox/command.js";
import { startTurnSandbox } from "../sandbox/turn.js";
import { fileConfinementOf, openConfined, PathRefused } from "../tools/confined-open.js";
import { killGroup, spawnWatched } from "../tools/watched.js";
import { LazyChildren } from "./children.js";
import { runExternalTurn, type ExternalRuntime, type RuntimePorts } from "./external-run.js";

/** The tool the gate classifies an ACP tool kind as: the built-in tools' rules (roots, scopes) apply. */
function gateToolOf(kind: Acp.ToolKind | null | undefined): string {
  switch (kind) {
    case "execute":
      return "shell";
    case "edit":
    case "delete":
    case "move":
      return "write_file";
    case "read":
    case "search":
      return "read_file";
    case "fetch":
      return "web_fetch";
    default:
      return `acp_${kind ?? "other"}`;
  }
}

/** What the turn currently running in a session reports into. */
interface TurnSink {
  readonly threadId: string;
  readonly turnId: string;
  readonly cwd: string;
  readonly signal: AbortSignal;
  message?: { id: string; text: string };
  /** Tool items by the agent's toolCallId. */
  readonly tools: Map<string, { id: string; item: ToolItem }>;
  /** Terminals the agent created, by terminal id. */
  readonly terminals: Map<string, Terminal>;
}

interface Terminal {
  readonly itemId: string;
  readonly child: ChildProcess;
  output: string;
  truncated: boolean;
  readonly limit: number;
  exit?: { exitCode: number | null; signal: string | null };
  readonly exited: Promise<void>;
}

/** The fields of a tool item being built, checked against its variant (toolItemOf) before it is published. */
type ToolItemFields = Readonly<Record<string, unknown>> & { readonly type: ToolItemType };

/** One running agent process and its ACP connection. */
interface Agent {
  readonly connection: Acp.ClientConnection;
  readonly child: ChildProcess;
  /** ACP session per thread. */
  readonly sessions: Map<string, string>;
  /** The turn each session runs now. */
  readonly running: Map<string, TurnSink>;
  readonly stderr: string[];
}

export class AcpAgents {
  private readonly agents = new LazyChildren<Agent>();
  private readonly gate: ToolGate;

  constructor(
    private readonly ports: RuntimePorts,
    private readonly config: ResolvedConfig,
    private readonly env: Readonly<Record<string, string | undefined>>,
    private readonly log: (message: string) => void,
  ) {
    this.gate = new ToolGate(ports);
  }

  /** Runs one turn whose execution backend is an ACP agent, to its end (the run external runtimes share). */
  run(run: TurnRun): Promise<void> {
    return runExternalTurn(this.runtime, this.ports, this.config.windowLimits, run);
  }

  /** The ACP agents as the shared run drives them: one session/prompt of the turn's input in the thread's session. */
  private readonly runtime: ExternalRuntime<AcpAgentConfig> = {
    backendType: "acpAgentRuntime",
    noun: "ACP agent",
    conversation: "session",
    config: (runtimeId) => this.config.acpAgents.get(runtimeId),
    attach: async (config, { run, thread, input }) => {
      const { threadId, turnId, signal } = run;
      const prompt = input.flatMap((part): Acp.ContentBlock[] => {
        if (part.type === "text") return [{ type: "text", text: part.text }];
        if (part.type === "mention" && "path" in part)
          return [{ type: "resource_link", name: String(part.name), uri: `file://${String(part.path)}` }];
        return [];
      });
      const agent = await this.agent(config);
      const sessionId = await this.session(agent, config, threadId, thread.cwd);
      const sink: TurnSink = { threadId, turnId, cwd: thread.cwd, signal, tools: new Map(), terminals: new Map() };
      let response: Acp.PromptResponse | undefined;
      let failed = false;
      return {
        run: async () => {
          agent.running.set(sessionId, sink);
          try {
            response = await agent.connection.agent.request("session/prompt", { sessionId, prompt });
          } catch (error) {
            failed = true;
            const stderr = agent.stderr.length ? ` (stderr: ${agent.stderr.join(" | ")})` : "";
            return { status: "failed", message: `the ACP agent ${config.runtimeId} failed: ${(error as Error).message}${stderr}` };
          } finally {
            agent.running.delete(sessionId);
          }
          switch (response.stopReason) {
            case "end_turn":
              return { status: "completed" };
            case "cancelled":
              return { status: "interrupted" };
            default:
              return { status: "failed", message: `the ACP agent ${config.runtimeId} stopped: ${response.stopReason}` };
          }
        },
        cancel: () => void agent.connection.agent.notify("session/cancel", { sessionId }).catch(() => undefined),
        closeOpen: (stopped) => {
          this.closeMessage(sink, failed || response?.stopReason === "cancelled" ? "cancelled" : "completed");
          for (const [toolCallId, open] of sink.tools)
            this.finishTool(sink, toolCallId, {
              ...open.item,
              status: stopped ? "cancelled" : "failed",
              outcome: stopped ? "cancelled" : "error",
            });
          for (const terminal of sink.terminals.values()) killGroup(terminal.child);
        },
      };
    },
  };

  /** Stops every agent process. */
  async close(): Promise<void> {
    await this.agents.close((agent) => {
      agent.connection.close();
      agent.child.kill();
    });
  }

  /** The agent process of a runtime id, started on first use and kept. */
  private agent(config: AcpAgentConfig): Promise<Agent> {
    return this.agents.get(config.runtimeId, () => this.start(config));
  }

  private async start(config: AcpAgentConfig): Promise<Agent> {
    const acp = await importOptional<typeof Acp>(
      "@agentclientprotocol/sdk",
      "@agentclientprotocol/sdk",
      `the ACP agent ${config.runtimeId}`,
    );
    const child = spawn(config.command, [...config.args], { stdio: ["pipe", "pipe", "pipe"], env: { ...this.env, ...config.env } });
    const stderr: string[] = [];
    child.stderr!.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
        stderr.push(line);
        if (stderr.length > 5) stderr.shift();
        this.log(`acp ${config.runtimeId}: ${line}`);
      }
    });
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    await spawned;
    // The turn each session runs now: the handlers below read it, the Agent built once connected holds it.
    const running = new Map<string, TurnSink>();
    const sinkOf = (sessionId: string) => running.get(sessionId);
    const app = acp
      .client({ name: "turnspec-gateway" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        const sink = sinkOf(params.sessionId);
        if (!sink) return;
        try {
          this.update(sink, params.update);
        } catch (error) {
          // Nobody to answer a notification: the turn hears of it at its next record.
          this.ports.log.writeFailed(sink.turnId, error);
        }
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => this.permission(sinkOf(params.sessionId), params))
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) =>
        this.readText(this.sinkFor(sinkOf(params.sessionId), acp), params, acp),
      )
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) =>
        this.writeText(this.sinkFor(sinkOf(params.sessionId), acp), params, acp),
      )
      .onRequest(acp.methods.client.terminal.create, ({ params }) =>
        this.createTerminal(this.sinkFor(sinkOf(params.sessionId), acp), params, acp),
      )
      .onRequest(acp.methods.client.terminal.output, ({ params }) => {
        const t = this.terminal(this.sinkFor(sinkOf(params.sessionId), acp), params.terminalId, acp);
        return { output: t.output, truncated: t.truncated, ...(t.exit ? { exitStatus: t.exit } : {}) };
      })
      .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
        const t = this.terminal(this.sinkFor(sinkOf(params.sessionId), acp), params.terminalId, acp);
        await t.exited;
        return t.exit!;
      })
      .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
        killGroup(this.terminal(this.sinkFor(sinkOf(params.sessionId), acp), params.terminalId, acp).child);
        return {};
      })
      .onRequest(acp.methods.client.terminal.release, ({ params }) => {
        const sink = this.sinkFor(sinkOf(params.sessionId), acp);
        const t = this.terminal(sink, params.terminalId, acp);
        killGroup(t.child);
        sink.terminals.delete(params.terminalId);
        return {};
      });
    // Node types its web streams apart from the DOM's, which the SDK takes: the same objects at run time.
    const stream = acp.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
    );
    const connection = app.connect(stream);
    const agent: Agent = { connection, child, sessions: new Map(), running, stderr };
    child.once("exit", (code, signal) => {
      this.log(`acp ${config.runtimeId}: the agent exited (${signal ?? code})`);
      this.agents.forget(config.runtimeId);
      connection.close(new Error(`the agent process exited (${signal ?? `code ${code}`})`));
    });
    await withTimeout(
      connection.agent.request("initialize", {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
        clientInfo: { name: "turnspec-gateway", version: "0.1.0" },
      }),
      config.startupTimeoutMs,
      "initialize",
    );
    return agent;
  }

  private async session(agent: Agent, config: AcpAgentConfig, threadId: string, cwd: string): Promise<string> {
    const known = agent.sessions.get(threadId);
    if (known) return known;
    const { sessionId } = await withTimeout(
      agent.connection.agent.request("session/new", { cwd, mcpServers: [] }),
      config.startupTimeoutMs,
      "session/new",
    );
    agent.sessions.set(threadId, sessionId);
    return sessionId;
  }

  /** The running turn of a session, or the ACP error for a call outside one. */
  private sinkFor(sink: TurnSink | undefined, acp: typeof Acp): TurnSink {
    if (!sink) throw acp.RequestError.invalidParams(undefined, "no turn of this gateway is running in that session");
    return sink;
  }

  private terminal(sink: TurnSink, terminalId: string, acp: typeof Acp): Terminal {
    const terminal = sink.terminals.get(terminalId);
    if (!terminal) throw acp.RequestError.resourceNotFound(terminalId);
    return terminal;
  }

  /** One session/update of the running turn, as items. */
  private update(sink: TurnSink, update: Acp.SessionUpdate): void {
    const g = this.ports;
    const { threadId, turnId } = sink;
    switch (update.sessionUpdate) {
      case "agent_message_chunk": {
        if (update.content.type !== "text") return;
        if (!sink.message) {
          sink.message = { id: g.log.nextItemId(turnId), text: "" };
          g.log.publish(threadId, turnId, "item/started", {
            item_id: sink.message.id,
            item: { type: "agentMessage", id: sink.message.id, status: "in_progress", text: "" },
          });
        }
        sink.message.text += update.content.text;
        g.log.publish(threadId, turnId, "item/agent_message/delta", {
          item_id: sink.message.id,
          stream: "agent_message",
          delta: update.content.text,
        });
        return;
      }
      case "agent_thought_chunk": {
        if (update.content.type !== "text") return;
        this.closeMessage(sink, "completed");
        const id = g.log.nextItemId(turnId);
        const item: TurnItem = { type: "reasoning", id, status: "completed", text: update.content.text };
        g.log.publish(threadId, turnId, "item/started", { item_id: id, item: { ...item, status: "in_progress" } });
        g.log.publish(threadId, turnId, "item/completed", { item_id: id, item });
        return;
      }
      case "tool_call": {
        this.closeMessage(sink, "completed");
        const id = g.log.nextItemId(turnId);
        const item = toolItemOf({ ...toolItem(update, sink.cwd), id, status: "in_progress" });
        sink.tools.set(update.toolCallId, { id, item });
        g.log.publish(threadId, turnId, "item/started", { item_id: id, item });
        if (update.status === "completed" || update.status === "failed")
          this.finishTool(sink, update.toolCallId, withOutcome(item, update.status, update.content));
        return;
      }
      case "tool_call_update": {
        const open = sink.tools.get(update.toolCallId);
        if (!open) return;
        const text = contentText(update.content);
        const item = toolItemOf({ ...open.item, ...(text ? { [open.item.type === "commandExecution" ? "stdout" : "output"]: text } : {}) });
        open.item.status = "in_progress";
        if (update.status === "completed" || update.status === "failed")
          this.finishTool(sink, update.toolCallId, withOutcome(item, update.status, update.content));
        else {
          sink.tools.set(update.toolCallId, { id: open.id, item });
          g.log.publish(threadId, turnId, "item/updated", { item_id: open.id, item });
        }
        return;
      }
      default:
        // Plans, commands, modes and the other session state are the agent's own; the turn has no item for them.
        return;
    }
  }

  private closeMessage(sink: TurnSink, status: "completed" | "cancelled"): void {
    if (!sink.message) return;
    const { id, text } = sink.message;
    sink.message = undefined;
    this.ports.log.publish(sink.threadId, sink.turnId, "item/completed", {
      item_id: id,
      item: { type: "agentMessage", id, status, text, ...(status === "cancelled" ? { partial: true } : {}) },
    });
  }

  private finishTool(sink: TurnSink, toolCallId: string, item: ToolItemFields): void {
    const open = sink.tools.get(toolCallId);
    if (!open) return;
    sink.tools.delete(toolCallId);
    this.ports.log.publish(sink.threadId, sink.turnId, "item/completed", { item_id: open.id, item: toolItemOf({ ...item, id: open.id }) });
  }

  /** session/request_permission: the gate decides (profile first, then the client), and the answer picks one of the agent's options. */
  private async permission(sink: TurnSink | undefined, params: Acp.RequestPermissionRequest): Promise<Acp.RequestPermissionResponse> {
    if (!sink || sink.signal.aborted) return { outcome: { outcome: "cancelled" } };
    const call = params.toolCall;
    const open = sink.tools.get(call.toolCallId);
    const raw = recordOf(call.rawInput);
    const path = call.locations?.[0]?.path;
    const toolName = gateToolOf(
      call.kind ?? (open?.item.type === "commandExecution" ? "execute" : open?.item.type === "fileChange" ? "edit" : undefined),
    );
    const args: Record<string, unknown> =
      toolName === "shell"
        ? { command: typeof raw.command === "string" ? raw.command : (call.title ?? "") }
        : toolName === "web_fetch"
          ? { url: raw.url }
          : path
            ? { path }
            : raw;
    const itemId = open?.id ?? this.ports.log.nextItemId(sink.turnId);
    const verdict = await this.gate.permit(sink.threadId, sink.turnId, toolName, args, sink.cwd, itemId, sink.signal);
    if (sink.signal.aborted) return { outcome: { outcome: "cancelled" } };
    const pick = (...kinds: Acp.PermissionOptionKind[]) =>
      kinds.map((k) => params.options.find((o) => o.kind === k)).find((o) => o !== undefined);
    // An allow_for_turn grant lets the agent stop asking; the gate keeps deciding the calls it makes through the client.
    const option = verdict.allowed
      ? verdict.forTurn
        ? pick("allow_always", "allow_once")
        : pick("allow_once", "allow_always")
      : pick("reject_once", "reject_always");
    return option ? { outcome: { outcome: "selected", optionId: option.optionId } } : { outcome: { outcome: "cancelled" } };
  }

  /**
   * Opens the file an fs/ request names as the gateway's own read_file and write_file do:
   * the path the gate judged, resolved once, opened without following a link swapped in
   * since, confined to the turn's roots and the outside paths this call was approved for,
   * never one of the gateway's own files.
   */
  private openForAgent(sink: TurnSink, path: string, mode: "read" | "write", approvedOutside: readonly string[]) {
    const security = this.ports.log.state(sink.turnId)!.turn.security;
    return openConfined(path, mode, fileConfinementOf(security, approvedOutside), this.ports.ownFiles);
  }

  /** fs/read_text_file, as a dynamicToolCall item of the turn, under the gate. */
  private async readText(sink: TurnSink, params: Acp.ReadTextFileRequest, acp: typeof Acp): Promise<Acp.ReadTextFileResponse> {
    const { id, finish } = this.clientItem(sink, {
      type: "dynamicToolCall",
      tool_name: "fs/read_text_file",
      arguments: { path: params.path },
    });
    // ACP paths are absolute; a relative one would mean one thing to the gate (the thread's folder) and another to the file system (the gateway's).
    const relative = refuseRelative(params.path);
    if (relative) {
      finish({ status: "failed", outcome: "error", error: { message: relative } });
      throw acp.RequestError.invalidParams(undefined, relative);
    }
    const verdict = await this.gate.permit(sink.threadId, sink.turnId, "read_file", { path: params.path }, sink.cwd, id, sink.signal);
    if (!verdict.allowed) {
      finish({ status: "declined", outcome: "declined", error: { message: verdict.message } });
      throw new acp.RequestError(-32000, verdict.message);
    }
    try {
      const file = await this.openForAgent(sink, normalize(params.path), "read", verdict.approvedOutside ?? []);
      let content: string;
      try {
        content = await file.handle.readFile("utf8");
      } finally {
        await file.handle.close();
      }
      if (params.line != null || params.limit != null) {
        const lines = content.split("\n");
        const from = Math.max(0, (params.line ?? 1) - 1);
        content = lines.slice(from, params.limit != null ? from + params.limit : undefined).join("\n");
      }
      finish({ status: "completed", outcome: "success", output: content });
      return { content };
    } catch (error) {
      const message = (error as Error).message;
      finish({ status: "failed", outcome: "error", error: { message } });
      if (error instanceof PathRefused) throw new acp.RequestError(-32000, message);
      throw acp.RequestError.resourceNotFound(params.path);
    }
  }

  /** fs/write_text_file, as a fileChange item of the turn, under the gate. */
  private async writeText(sink: TurnSink, params: Acp.WriteTextFileRequest, acp: typeof Acp): Promise<Acp.WriteTextFileResponse> {
    const relative = refuseRelative(params.path);
    const existed = relative
      ? false
      : await readFile(params.path, "utf8").then(
          () => true,
          () => false,
        );
    const { id, finish } = this.clientItem(sink, {
      type: "fileChange",
      path: params.path,
      change_kind: existed ? "modify" : "add",
      arguments: { path: params.path },
    });
    if (relative) {
      finish({ status: "failed", outcome: "error", error: { message: relative } });
      throw acp.RequestError.invalidParams(undefined, relative);
    }
    const verdict = await this.gate.permit(
      sink.threadId,
      sink.turnId,
      "write_file",
      { path: params.path, content: params.content },
      sink.cwd,
      id,
      sink.signal,
    );
    if (!verdict.allowed) {
      finish({ status: "declined", outcome: "declined", error: { message: verdict.message } });
      throw new acp.RequestError(-32000, verdict.message);
    }
    try {
      const file = await this.openForAgent(sink, normalize(params.path), "write", verdict.approvedOutside ?? []);
      try {
        await file.handle.truncate(0);
        await file.handle.write(params.content, 0, "utf8");
      } finally {
        await file.handle.close();
      }
      finish({ status: "completed", outcome: "success" });
      return {};
    } catch (error) {
      const message = (error as Error).message;
      finish({ status: "failed", outcome: "error", error: { message } });
      if (error instanceof PathRefused) throw new acp.RequestError(-32000, message);
      throw acp.RequestError.internalError(undefined, message);
    }
  }

  /** terminal/create: the command runs as a commandExecution item of the turn, under the gate, in the turn's process environment. */
  private async createTerminal(sink: TurnSink, params: Acp.CreateTerminalRequest, acp: typeof Acp): Promise<Acp.CreateTerminalResponse> {
    const command = [params.command, ...(params.args ?? [])].join(" ");
    const relative = params.cwd == null ? undefined : refuseRelative(params.cwd);
    if (relative) throw acp.RequestError.invalidParams(undefined, `cwd: ${relative}`);
    const cwd = params.cwd ?? sink.cwd;
    const { id, finish } = this.clientItem(sink, { type: "commandExecution", command, cwd, arguments: { command, cwd } });
    const verdict = await this.gate.permit(sink.threadId, sink.turnId, "shell", { command, cwd }, sink.cwd, id, sink.signal);
    if (!verdict.allowed) {
      finish({ status: "declined", outcome: "declined", error: { message: verdict.message } });
      throw new acp.RequestError(-32000, verdict.message);
    }
    const security = this.ports.log.state(sink.turnId)!.turn.security;
    const env = {
      ...(security ? processEnvironment(security, this.env) : this.env),
      ...Object.fromEntries((params.env ?? []).map((v) => [v.name, v.value])),
    };
    // Under the turn's sandbox, as the gateway's own shell tool runs: an agent's terminal is no way around it.
    const sandbox = await startTurnSandbox(security, this.config.sandbox, () => undefined, this.ports.ownFiles);
    const defined = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
    const run = sandbox
      ? sandboxedCommand(sandbox, cwd, [params.command, ...(params.args ?? [])], defined)
      : { file: params.command, args: params.args ?? [], env: defined };
    // As the shell tool's commands run: leading a process group of its own, killed as one
    // (with what it left running once it exits), that dies with the gateway however the
    // gateway dies (tools/watched.ts).
    const child = spawnWatched(run.file, run.args, { cwd, env: run.env });
    const limit = params.outputByteLimit ?? 1024 * 1024;
    const started = Date.now();
    let exitedResolve!: () => void;
    const terminal: Terminal = { itemId: id, child, output: "", truncated: false, limit, exited: new Promise((r) => (exitedResolve = r)) };
    const append = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      terminal.output += text;
      if (Buffer.byteLength(terminal.output) > limit) {
        terminal.output = terminal.output.slice(-limit);
        terminal.truncated = true;
      }
      try {
        this.ports.log.publish(sink.threadId, sink.turnId, "item/command_execution/output_delta", { item_id: id, stream, delta: text });
      } catch (error) {
        // Thrown out of an output handler it would end the process: the turn hears of it at its next record.
        this.ports.log.writeFailed(sink.turnId, error);
      }
    };
    child.stdout!.on("data", append("stdout"));
    child.stderr!.on("data", append("stderr"));
    child.once("error", (error) => {
      terminal.exit = { exitCode: null, signal: null };
      finish({ status: "failed", outcome: "error", error: { message: error.message } });
      exitedResolve();
    });
    child.once("close", (code, signal) => {
      terminal.exit = { exitCode: code, signal };
      finish({
        status: code === 0 ? "completed" : "failed",
        outcome: code === 0 ? "success" : "error",
        stdout: terminal.output,
        exit_code: code,
        duration_ms: Date.now() - started,
      });
      exitedResolve();
    });
    const terminalId = `term_${id}`;
    sink.terminals.set(terminalId, terminal);
    return { terminalId };
  }

  /** Opens an item for a client method the agent called; `finish` completes it once. */
  private clientItem(sink: TurnSink, fields: ToolItemFields): { id: string; finish: (end: Record<string, unknown>) => void } {
    const g = this.ports;
    // What the agent said before the call is one message; what it says after, another.
    this.closeMessage(sink, "completed");
    const id = g.log.nextItemId(sink.turnId);
    const item = toolItemOf({ ...fields, id, status: "in_progress" });
    g.log.publish(sink.threadId, sink.turnId, "item/started", { item_id: id, item });
    let done = false;
    return {
      id,
      finish: (end) => {
        if (done) return;
        done = true;
        g.log.publish(sink.threadId, sink.turnId, "item/completed", {
          item_id: id,
          item: toolItemOf({ ...item, ...end, type: item.type }),
        });
      },
    };
  }
}

/** The fields of the item an ACP tool call is shown as (without its id and status). */
function toolItem(call: Acp.ToolCall, cwd: string): ToolItemFields {
  const args = recordOf(call.rawInput);
  const path = call.locations?.[0]?.path;
  switch (call.kind) {
    case "execute":
      return {
        type: "commandExecution",
        command: typeof args.command === "string" ? args.command : call.title,
        cwd: typeof args.cwd === "string" ? args.cwd : cwd,
        arguments: args,
      };
    case "edit":
    case "delete":
    case "move":
      if (path) return { type: "fileChange", path, change_kind: call.kind === "delete" ? "delete" : "modify", arguments: args };
      break;
  }
  return { type: "dynamicToolCall", tool_name: call.title, arguments: args };
}

function withOutcome(
  item: ToolItem,
  status: "completed" | "failed",
  content: readonly Acp.ToolCallContent[] | null | undefined,
): ToolItemFields {
  const text = contentText(content);
  const field = item.type === "commandExecution" ? "stdout" : item.type === "fileChange" ? "diff" : "output";
  return {
    ...item,
    ...(text ? { [field]: text } : {}),
    status,
    outcome: status === "completed" ? "success" : "error",
    ...(text ? { tool_result: text } : {}),
  };
}

/** A tool call's raw input as the object it should be; anything else (absent, an array, a scalar) as none. */
function recordOf(input: unknown): Record<string, unknown> {
  return typeof input === "object" && input !== null && !Array.isArray(input) ? Object.fromEntries(Object.entries(input)) : {};
}

/** The text of a tool call's content: text blocks and diffs. */
function contentText(content: readonly Acp.ToolCallContent[] | null | undefined): string {
  return (content ?? [])
    .map((c) =>
      c.type === "content" && c.content.type === "text"
        ? c.content.text
        : c.type === "diff"
          ? `--- ${c.path}\n+++ ${c.path}\n${c.newText}`
          : "",
    )
    .filter(Boolean)
    .join("\n");
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to ${what} within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Why an ACP path is refused: it must be absolute, as the protocol says. Undefined for an absolute path. */
function refuseRelative(path: string): string | undefined {
  return isAbsolute(path)
    ? undefined
    : `${JSON.stringify(path)} is not an absolute path: ACP names files by absolute paths, and a relative one would be read against the gateway's own folder, not the thread's`;
}
