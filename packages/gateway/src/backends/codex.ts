/**
 * The Codex CLI as a CLI agent runtime (`cliAgentRuntime`, kind codex): the gateway starts
 * `codex app-server` with its model provider pointed at the configured endpoint and
 * drives it over stdio (JSON-RPC, one message a line). Each gateway thread gets one Codex
 * thread (thread/start in the thread's folder); each turn is one Codex turn/start.
 *
 * Codex's items become the turn's items (agentMessage with deltas, reasoning,
 * commandExecution with its output deltas, fileChange; any other kind a dynamicToolCall).
 * Codex runs with approval policy `untrusted`, so it asks before what is not known to be
 * safe, and each approval request goes through the tool gate: the turn's profile decides
 * first, an ask opens turn/permission/request/opened, the answer is Codex's decision.
 * turn/cancel is turn/interrupt. cli_runtime_options map onto turn/start (effort,
 * summary, personality) and the sandbox policy.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createInterface } from "node:readline";
import type { CliRuntimeOptions, TurnItem } from "@turnspec/protocol/types";
import type { CliRuntimeConfig, ResolvedConfig } from "../config.js";
import type { TurnRun } from "../engine/ports.js";
import { ToolGate } from "../turn/tool-gate.js";
import { LazyChildren } from "./children.js";
import { runExternalTurn, type ExternalRuntime, type RuntimePorts } from "./external-run.js";

const SANDBOXES: Record<string, { type: string }> = {
  "read-only": { type: "readOnly" },
  "workspace-write": { type: "workspaceWrite" },
  "danger-full-access": { type: "dangerFullAccess" },
};
const SUMMARIES = ["auto", "concise", "detailed", "none"];
const PERSONALITIES = ["none", "friendly", "pragmatic"];

/** What in cli_runtime_options Codex cannot take, or undefined. */
export function codexOptionsProblem(options: CliRuntimeOptions | undefined): string | undefined {
  if (!options) return undefined;
  if (options.sandbox !== undefined && !(options.sandbox in SANDBOXES))
    return `cli_runtime_options.sandbox ${JSON.stringify(options.sandbox)} is not a Codex sandbox (${Object.keys(SANDBOXES).join(", ")})`;
  if (options.summary !== undefined && !SUMMARIES.includes(options.summary))
    return `cli_runtime_options.summary ${JSON.stringify(options.summary)} is not a Codex reasoning summary (${SUMMARIES.join(", ")})`;
  if (options.personality !== undefined && !PERSONALITIES.includes(options.personality))
    return `cli_runtime_options.personality ${JSON.stringify(options.personality)} is not a Codex personality (${PERSONALITIES.join(", ")})`;
  if (options.effort !== undefined && options.effort.trim() === "") return "cli_runtime_options.effort is empty";
  // The gateway runs one turn per thread: there is never an active Codex turn to steer.
  if (options.steer_if_active === true)
    return "cli_runtime_options.steer_if_active cannot be served: a thread runs one turn at a time on this gateway, so there is no active turn to steer";
  return undefined;
}

type Json = Record<string, unknown>;
/** The kinds of turn item a Codex item is shown as. */
type CodexItem = Extract<TurnItem, { type: "agentMessage" | "reasoning" | "commandExecution" | "fileChange" | "dynamicToolCall" }>;

/** A line-delimited JSON-RPC peer over the app-server's stdio. */
class AppServer {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void }>();
  notification: (method: string, params: Json) => void = () => undefined;
  request: (method: string, params: Json) => Promise<Json> = async (method) => {
    throw new Error(`${method} is not served`);
  };
  readonly exited: Promise<string>;

  constructor(
    readonly child: ChildProcess,
    private readonly log: (message: string) => void,
  ) {
    createInterface({ input: child.stdout! }).on("line", (line) => this.receive(line));
    this.exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => {
        const why = `the runtime exited (${signal ?? `code ${code}`})`;
        for (const p of this.pending.values()) p.reject(new Error(why));
        this.pending.clear();
        resolve(why);
      }),
    );
  }

  call(method: string, params: Json): Promise<Json> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ id, method, params });
    });
  }

  notify(method: string, params?: Json): void {
    this.send({ method, ...(params ? { params } : {}) });
  }

  private send(message: Json): void {
    this.child.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
  }

  private receive(line: string): void {
    let message: Json;
    try {
      message = JSON.parse(line) as Json;
    } catch {
      this.log(`codex: not JSON on stdout: ${line.slice(0, 200)}`);
      return;
    }
    const id = message.id as number | string | undefined;
    if (typeof message.method === "string") {
      if (id === undefined) return this.notification(message.method, (message.params ?? {}) as Json);
      this.request(message.method, (message.params ?? {}) as Json).then(
        (result) => this.send({ id, result }),
        (error: Error) => this.send({ id, error: { code: -32601, message: error.message } }),
      );
      return;
    }
    const pending = this.pending.get(id as number);
    if (!pending) return;
    this.pending.delete(id as number);
    if (message.error) pending.reject(new Error(String((message.error as Json).message ?? JSON.stringify(message.error))));
    else pending.resolve((message.result ?? {}) as Json);
  }
}

/** The gateway turn a Codex turn reports into. */
interface Sink {
  readonly threadId: string;
  readonly turnId: string;
  readonly cwd: string;
  readonly signal: AbortSignal;
  /** The open items as shown so far (our item ids), by Codex item id. */
  readonly items: Map<string, CodexItem>;
  codexTurnId?: string;
  done?: (status: string, error?: string) => void;
}

interface Runtime {
  readonly server: AppServer;
  /** Codex thread per gateway thread. */
  readonly threads: Map<string, string>;
  /** The running turn of each Codex thread. */
  readonly running: Map<string, Sink>;
}

export class CodexRuntimes {
  private readonly runtimes = new LazyChildren<Runtime>();
  private readonly gate: ToolGate;

  constructor(
    private readonly ports: RuntimePorts,
    private readonly config: ResolvedConfig,
    private readonly env: Readonly<Record<string, string | undefined>>,
    private readonly log: (message: string) => void,
  ) {
    this.gate = new ToolGate(ports);
  }

  /** Runs one turn whose execution backend is a CLI runtime, to its end (the run external runtimes share). */
  run(run: TurnRun): Promise<void> {
    return runExternalTurn(this.runtime, this.ports, this.config.windowLimits, run);
  }

  /** The CLI runtimes as the shared run drives them: one Codex turn/start of the turn's input in the thread's Codex thread. */
  private readonly runtime: ExternalRuntime<CliRuntimeConfig> = {
    backendType: "cliAgentRuntime",
    noun: "CLI runtime",
    conversation: "thread",
    config: (runtimeId) => this.config.cliRuntimes.get(runtimeId),
    attach: async (config, { run, state, thread, input: content }) => {
      const { threadId, turnId, signal } = run;
      const options = run.prepared?.cliRuntimeOptions;
      const input = content.flatMap((c): Json[] =>
        c.type === "text"
          ? [{ type: "text", text: c.text, text_elements: [] }]
          : c.type === "localImage"
            ? [{ type: "localImage", path: c.path }]
            : [],
      );
      const runtime = await this.started(config);
      const codexThread = await this.thread(runtime, config, threadId, thread.cwd);
      const sink: Sink = { threadId, turnId, cwd: thread.cwd, signal, items: new Map() };
      const interrupt = () => {
        if (sink.codexTurnId)
          void runtime.server.call("turn/interrupt", { threadId: codexThread, turnId: sink.codexTurnId }).catch(() => undefined);
      };
      const failed = (why: string) =>
        ({ status: "failed", message: `the CLI runtime ${config.runtimeId} failed the turn: ${why}` }) as const;
      return {
        run: async () => {
          const ended = new Promise<{ status: string; error?: string }>(
            (resolve) => (sink.done = (status, error) => resolve({ status, ...(error ? { error } : {}) })),
          );
          runtime.running.set(codexThread, sink);
          try {
            const started = await runtime.server.call("turn/start", {
              threadId: codexThread,
              input,
              model: state.turn.model ?? config.model,
              approvalPolicy: "untrusted",
              ...(options?.sandbox ? { sandboxPolicy: SANDBOXES[options.sandbox] } : {}),
              ...(options?.effort ? { effort: options.effort } : {}),
              ...(options?.summary ? { summary: options.summary } : {}),
              ...(options?.personality ? { personality: options.personality } : {}),
            });
            sink.codexTurnId = (started.turn as Json).id as string;
            if (signal.aborted) interrupt();
            const outcome = await Promise.race([ended, runtime.server.exited.then((why) => ({ status: "failed", error: why }))]);
            if (outcome.status === "completed") return { status: "completed" };
            if (outcome.status === "interrupted") return { status: "interrupted" };
            return failed(outcome.error ?? outcome.status);
          } catch (error) {
            return failed((error as Error).message);
          } finally {
            runtime.running.delete(codexThread);
          }
        },
        cancel: interrupt,
        closeOpen: (stopped) => {
          for (const [codexId, open] of sink.items) this.complete(sink, codexId, { ...open, status: stopped ? "cancelled" : "failed" });
        },
      };
    },
  };

  async close(): Promise<void> {
    await this.runtimes.close((runtime) => runtime.server.child.kill());
  }

  /** The app-server of a runtime id, started on first use and kept. */
  private started(config: CliRuntimeConfig): Promise<Runtime> {
    return this.runtimes.get(config.runtimeId, () => this.start(config));
  }

  private async start(config: CliRuntimeConfig): Promise<Runtime> {
    mkdirSync(config.codexHome, { recursive: true });
    const provider = "turnspec";
    const overrides = [
      `model_provider="${provider}"`,
      `model_providers.${provider}.name="${provider}"`,
      `model_providers.${provider}.base_url=${JSON.stringify(config.baseURL)}`,
      `model_providers.${provider}.wire_api="responses"`,
      `model_providers.${provider}.env_key="TURNSPEC_CODEX_API_KEY"`,
      `model=${JSON.stringify(config.model)}`,
    ].flatMap((o) => ["-c", o]);
    const child = spawn(config.command, [...config.args, "app-server", ...overrides], {
      stdio: ["pipe", "pipe", "pipe"],
      env: {
        ...this.env,
        CODEX_HOME: config.codexHome,
        TURNSPEC_CODEX_API_KEY: this.env[config.apiKeyEnv] ?? "not-needed-for-local-servers",
      },
    });
    const stderr: string[] = [];
    createInterface({ input: child.stderr! }).on("line", (line) => {
      stderr.push(line);
      if (stderr.length > 5) stderr.shift();
      this.log(`codex ${config.runtimeId}: ${line}`);
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    const server = new AppServer(child, this.log);
    const runtime: Runtime = { server, threads: new Map(), running: new Map() };
    void server.exited.then(() => this.runtimes.forget(config.runtimeId));
    server.notification = (method, params) => {
      const sink = runtime.running.get(params.threadId as string);
      if (!sink) return;
      try {
        this.onNotification(sink, method, params);
      } catch (error) {
        // Nobody to answer a notification: the turn hears of it at its next record.
        this.ports.log.writeFailed(sink.turnId, error);
      }
    };
    server.request = (method, params) => this.onRequest(runtime.running.get(params.threadId as string), method, params);
    try {
      await withTimeout(
        server.call("initialize", { clientInfo: { name: "turnspec-gateway", version: "0.1.0" } }),
        config.startupTimeoutMs,
        "initialize",
        server,
      );
    } catch (error) {
      child.kill();
      throw new Error(`${(error as Error).message}${stderr.length ? ` (stderr: ${stderr.join(" | ")})` : ""}`);
    }
    server.notify("initialized");
    return runtime;
  }

  private async thread(runtime: Runtime, config: CliRuntimeConfig, threadId: string, cwd: string): Promise<string> {
    const known = runtime.threads.get(threadId);
    if (known) return known;
    const result = await withTimeout(
      runtime.server.call("thread/start", { cwd, approvalPolicy: "untrusted" }),
      config.startupTimeoutMs,
      "thread/start",
      runtime.server,
    );
    const id = (result.thread as Json).id as string;
    runtime.threads.set(threadId, id);
    return id;
  }

  private onNotification(sink: Sink, method: string, params: Json): void {
    const g = this.ports;
    if (params.turnId !== undefined && sink.codexTurnId !== undefined && params.turnId !== sink.codexTurnId) return;
    switch (method) {
      case "item/started": {
        const codex = params.item as Json;
        if (codex.type === "userMessage") return;
        const open = itemOf(codex, sink.cwd, g.log.nextItemId(sink.turnId));
        sink.items.set(codex.id as string, open);
        g.log.publish(sink.threadId, sink.turnId, "item/started", { item_id: open.id, item: open });
        return;
      }
      case "item/agentMessage/delta":
      case "item/commandExecution/outputDelta": {
        const open = sink.items.get(params.itemId as string);
        if (!open) return;
        const delta = String(params.delta ?? "");
        // A delta grows the item it names, and only an item of its kind.
        if (method === "item/agentMessage/delta" && open.type === "agentMessage") {
          sink.items.set(params.itemId as string, { ...open, text: open.text + delta });
          g.log.publish(sink.threadId, sink.turnId, "item/agent_message/delta", { item_id: open.id, stream: "agent_message", delta });
        } else if (method === "item/commandExecution/outputDelta" && open.type === "commandExecution") {
          sink.items.set(params.itemId as string, { ...open, stdout: (open.stdout ?? "") + delta });
          g.log.publish(sink.threadId, sink.turnId, "item/command_execution/output_delta", { item_id: open.id, stream: "stdout", delta });
        }
        return;
      }
      case "item/completed": {
        const codex = params.item as Json;
        const open = sink.items.get(codex.id as string);
        if (!open || codex.type === "userMessage") return;
        this.complete(sink, codex.id as string, completedItem(open, codex, sink.cwd));
        return;
      }
      case "turn/completed": {
        const turn = params.turn as Json;
        const error = turn.error as Json | null | undefined;
        sink.done?.(String(turn.status), error ? String(error.message ?? JSON.stringify(error)) : undefined);
        return;
      }
      default:
        return;
    }
  }

  private complete(sink: Sink, codexId: string, item: CodexItem): void {
    if (!sink.items.delete(codexId)) return;
    this.ports.log.publish(sink.threadId, sink.turnId, "item/completed", { item_id: item.id, item });
  }

  /** Codex's requests of the client: approvals go through the gate; anything else is refused, visibly, with an error. */
  private async onRequest(sink: Sink | undefined, method: string, params: Json): Promise<Json> {
    if (method !== "item/commandExecution/requestApproval" && method !== "item/fileChange/requestApproval")
      throw new Error(`${method} is not served by the gateway`);
    if (!sink || sink.signal.aborted) return { decision: "cancel" };
    const open = sink.items.get(params.itemId as string);
    const itemId = open?.id ?? this.ports.log.nextItemId(sink.turnId);
    const [toolName, args] =
      method === "item/commandExecution/requestApproval"
        ? [
            "shell",
            {
              command: commandOf(params.command ?? (open?.type === "commandExecution" ? open.command : undefined)),
              cwd: String(params.cwd ?? sink.cwd),
            },
          ]
        : ["write_file", { path: String((open?.type === "fileChange" ? open.path : undefined) ?? params.grantRoot ?? sink.cwd) }];
    const verdict = await this.gate.permit(sink.threadId, sink.turnId, toolName, args, sink.cwd, itemId, sink.signal);
    if (sink.signal.aborted) return { decision: "cancel" };
    return { decision: verdict.allowed ? (verdict.forTurn ? "acceptForSession" : "accept") : "decline" };
  }
}

/** The gateway item, in progress, that a Codex item other than the user's own message (the turn has it) is shown as. */
function itemOf(codex: Json, cwd: string, id: string): CodexItem {
  const status = "in_progress";
  switch (codex.type) {
    case "agentMessage":
      return { type: "agentMessage", id, status, text: String(codex.text ?? "") };
    case "reasoning": {
      const parts = [...((codex.summary as string[] | undefined) ?? []), ...((codex.content as string[] | undefined) ?? [])];
      return { type: "reasoning", id, status, text: parts.join("\n") };
    }
    case "commandExecution": {
      const command = commandOf(codex.command);
      const where = String(codex.cwd ?? cwd);
      return { type: "commandExecution", id, status, command, cwd: where, arguments: { command, cwd: where } };
    }
    case "fileChange": {
      const change = ((codex.changes as Json[] | undefined) ?? [])[0];
      const kind = ((change?.kind as Json | undefined)?.type as string | undefined) ?? "update";
      const path = String(change?.path ?? "");
      return {
        type: "fileChange",
        id,
        status,
        path,
        change_kind: kind === "add" ? "add" : kind === "delete" ? "delete" : "modify",
        arguments: { path },
      };
    }
    default:
      return { type: "dynamicToolCall", id, status, tool_name: String(codex.type), arguments: {} };
  }
}

/**
 * The item as Codex completed it: its final fields over what was shown while it ran, with
 * its status, outcome, output and exit code. An output Codex does not repeat at the end
 * stays what its deltas made.
 */
function completedItem(open: CodexItem, codex: Json, cwd: string): CodexItem {
  const done = itemOf(codex, cwd, open.id);
  const status = String(codex.status ?? "completed");
  const ok = status === "completed";
  const mapped = ok ? "completed" : status === "declined" ? "declined" : "failed";
  const outcome = ok ? "success" : mapped === "declined" ? "declined" : "error";
  switch (done.type) {
    case "agentMessage":
    case "reasoning":
      return { ...done, status: "completed" };
    case "commandExecution": {
      const stdout =
        typeof codex.aggregatedOutput === "string" ? codex.aggregatedOutput : open.type === "commandExecution" ? open.stdout : undefined;
      return {
        ...done,
        status: mapped,
        outcome,
        ...(stdout === undefined ? {} : { stdout }),
        ...(typeof codex.aggregatedOutput === "string" ? { tool_result: codex.aggregatedOutput } : {}),
        ...(typeof codex.exitCode === "number" ? { exit_code: codex.exitCode } : {}),
        ...(typeof codex.durationMs === "number" ? { duration_ms: codex.durationMs } : {}),
      };
    }
    case "fileChange": {
      const diff = ((codex.changes as Json[] | undefined) ?? []).map((c) => String(c.diff ?? "")).join("\n");
      return { ...done, status: mapped, outcome, ...(diff ? { diff } : {}) };
    }
    default:
      return { ...done, status: mapped, outcome: ok ? "success" : "error" };
  }
}

/** Codex's command line; the `/bin/bash -lc '…'` wrapper it runs commands in is shown as the command. */
function commandOf(command: unknown): string {
  const text = Array.isArray(command) ? command.join(" ") : String(command ?? "");
  const wrapped = /^\/bin\/(?:ba)?sh -lc '([\s\S]*)'$/.exec(text);
  return wrapped ? wrapped[1]!.replace(/'\\''/g, "'") : text;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string, server: AppServer): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    server.exited.then((why) => {
      throw new Error(`${why} before answering ${what}`);
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to ${what} within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
