/**
 * `shell`: runs a command line with `/bin/sh -c` and streams its output. When the turn has
 * an OS sandbox (ctx.sandbox) the command runs inside it (sandbox/); a call that
 * sets `escape_sandbox`, which the gate only lets through after a one-time approval, runs
 * unconfined. Either way the command leads its own process group, and that group is
 * killed at the timeout, when the turn is cancelled, and as soon as the shell itself
 * exits, so a job it left in the background does not outlive the call. Nor does it outlive
 * the gateway (watched.ts): when the gateway dies, however it dies, the group is killed.
 */
import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { sandboxedCommand } from "../sandbox/command.js";
import { defineTool } from "./arguments.js";
import { killGroup, spawnWatched } from "./watched.js";
import { OutputCapture, truncateMiddle } from "./output-limit.js";
import type { ToolContext, ToolResult } from "./tool.js";

/** Timeout when the call names none; the context's maxTimeoutMs caps both. */
export const DEFAULT_SHELL_TIMEOUT_MS = 30_000;
/** Characters of each stream kept on the item (the event log and the wire). */
export const SHELL_CAPTURE_LIMIT = 200_000;
/** Characters of each stream the model sees. */
export const SHELL_MODEL_LIMIT = 10_000;
/**
 * Characters of each stream streamed as deltas. Every delta is stored in the turn's log and
 * sent to every client of the thread, so a command printing without end would grow both
 * without end; past this the stream says so once and the rest is read and dropped (the
 * item keeps its start and end, SHELL_CAPTURE_LIMIT).
 */
export const SHELL_STREAM_LIMIT = 1_000_000;

export interface ShellToolOptions {
  /** Timeout of a call that names none (default DEFAULT_SHELL_TIMEOUT_MS); maxTimeoutMs still caps it. */
  readonly defaultTimeoutMs?: number;
}

/** The shell tool with the gateway's configured default timeout. */
export function createShellTool(options: ShellToolOptions = {}) {
  const defaultTimeoutMs = options.defaultTimeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS;
  return defineTool({
    spec: {
      name: "shell",
      description:
        "Run a command line with /bin/sh -c and return its exit code, stdout and stderr. " +
        "The command gets no stdin. It is killed, with everything it started, at its timeout.",
      parameters: {
        type: "object",
        additionalProperties: false,
        required: ["command"],
        properties: {
          command: { type: "string", minLength: 1, description: "The command line, as given to /bin/sh -c." },
          cwd: { type: "string", description: "Working directory; a relative path resolves against the thread's directory." },
          timeout_ms: {
            type: "integer",
            minimum: 1,
            description: `Milliseconds before the command is killed (default ${defaultTimeoutMs}).`,
          },
          // Read by the permission layer before the call runs (permissions/classify.ts): an
          // escape is always put to a human, once; once approved, the tool runs it unconfined.
          escape_sandbox: { type: "boolean", description: "Run outside the sandbox; always needs an explicit one-time approval." },
        },
      },
    },
    itemType: "commandExecution",

    describe({ command, cwd }, ctx) {
      return { command, cwd: resolve(ctx.cwd, cwd ?? ".") };
    },

    async run({ command, cwd: cwdArg, timeout_ms, escape_sandbox }, ctx) {
      const escape = escape_sandbox === true;
      const cwd = resolve(ctx.cwd, cwdArg ?? ".");
      const timeoutMs = Math.min(timeout_ms ?? defaultTimeoutMs, ctx.maxTimeoutMs);
      const notRun = (message: string): ToolResult => ({
        ok: false,
        content: message,
        item: { command, cwd, stdout: "", stderr: "", exit_code: null, duration_ms: 0, timed_out: false, error: { message } },
      });
      if (ctx.signal.aborted) return notRun("the command was not run: the turn was cancelled");
      // spawn reports a missing cwd as `spawn /bin/sh ENOENT`, which blames the shell.
      const where = await stat(cwd).catch(() => undefined);
      if (!where) return notRun(`the command was not run: cwd ${cwd} does not exist`);
      if (!where.isDirectory()) return notRun(`the command was not run: cwd ${cwd} is not a directory`);
      const env = Object.fromEntries(Object.entries(ctx.env).filter((e): e is [string, string] => e[1] !== undefined));
      const argv =
        ctx.sandbox && !escape
          ? sandboxedCommand(ctx.sandbox, cwd, ["/bin/sh", "-c", command], env)
          : { file: "/bin/sh", args: ["-c", command], env };
      return runCommand(command, cwd, argv, timeoutMs, ctx);
    },
  });
}

export const shellTool = createShellTool();

function runCommand(
  command: string,
  cwd: string,
  argv: { readonly file: string; readonly args: readonly string[]; readonly env: Record<string, string> },
  timeoutMs: number,
  ctx: ToolContext,
): Promise<ToolResult> {
  const started = performance.now();
  const stdout = new OutputCapture(SHELL_CAPTURE_LIMIT);
  const stderr = new OutputCapture(SHELL_CAPTURE_LIMIT);

  return new Promise((done) => {
    // The shell (or bwrap) leads a process group of its own, which is what gets killed, and
    // which dies with the gateway (watched.ts). stdin is closed so a command that reads it
    // ends instead of waiting for the timeout.
    const child = spawnWatched(argv.file, argv.args, { cwd, env: argv.env });
    let killedFor: "timeout" | "cancel" | undefined;
    const kill = (why: "timeout" | "cancel") => {
      if (killedFor || child.pid === undefined) return;
      killedFor = why;
      killGroup(child);
    };
    // When the shell is done, whatever it left running in its group goes with it
    // (spawnWatched): no background job outlives the call and the turn.
    const timer = setTimeout(() => kill("timeout"), timeoutMs);
    const onAbort = () => kill("cancel");
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();

    // utf8 decoding on the stream keeps a character split across two reads whole.
    child.stdout!.setEncoding("utf8");
    child.stderr!.setEncoding("utf8");
    const streamed = { stdout: 0, stderr: 0 };
    const stream = (name: "stdout" | "stderr", chunk: string) => {
      const before = streamed[name];
      streamed[name] += chunk.length;
      if (before >= SHELL_STREAM_LIMIT) return;
      if (streamed[name] <= SHELL_STREAM_LIMIT) return ctx.emit(name, chunk);
      ctx.emit(
        name,
        `${chunk.slice(0, SHELL_STREAM_LIMIT - before)}\n[… ${name} past ${SHELL_STREAM_LIMIT} characters is not streamed; the command goes on]\n`,
      );
    };
    child.stdout!.on("data", (chunk: string) => {
      stdout.push(chunk);
      stream("stdout", chunk);
    });
    child.stderr!.on("data", (chunk: string) => {
      stderr.push(chunk);
      stream("stderr", chunk);
    });

    let finished = false;
    const finish = (exitCode: number | null, error?: string) => {
      // A failed spawn may report both 'error' and 'close'.
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      ctx.signal.removeEventListener("abort", onAbort);
      const item: Record<string, unknown> = {
        command,
        cwd,
        stdout: stdout.text(),
        stderr: stderr.text(),
        // A command we killed has no exit status of its own, even if it raced us to exit.
        exit_code: killedFor ? null : exitCode,
        duration_ms: Math.round(performance.now() - started),
        timed_out: killedFor === "timeout",
        ...(error ? { error: { message: error } } : {}),
      };
      const timeout = killedFor === "timeout" ? { timeout: { deadline_ms: timeoutMs, elapsed_ms: item.duration_ms as number } } : {};
      done({ ok: item.exit_code === 0, content: summary(item, timeoutMs, killedFor, error), item, ...timeout });
    };
    // 'close' rather than 'exit': it comes once the pipes are drained, so no output is lost.
    child.on("close", (code) => finish(code));
    child.on("error", (error) => finish(null, `the command could not be started: ${error.message}`));
  });
}

/** The text the model sees: how the command ended, then each non-empty stream, shortened. */
function summary(
  item: Record<string, unknown>,
  timeoutMs: number,
  killedFor: "timeout" | "cancel" | undefined,
  error: string | undefined,
): string {
  const lines: string[] = [];
  if (error) lines.push(error);
  else if (killedFor === "timeout") lines.push(`timed out after ${timeoutMs} ms: the command was killed`);
  else if (killedFor === "cancel") lines.push("cancelled: the command was killed");
  else lines.push(`exit code: ${String(item.exit_code ?? "none (killed by a signal)")}`);
  for (const name of ["stdout", "stderr"] as const) {
    const text = item[name] as string;
    if (text !== "") lines.push(`${name}:`, truncateMiddle(text, SHELL_MODEL_LIMIT).replace(/\n$/, ""));
  }
  if (item.stdout === "" && item.stderr === "") lines.push("(no output)");
  return lines.join("\n");
}
