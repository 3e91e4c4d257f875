/**
 * The client under test as a process: started through `sh` in the user's folder, told what
 * to do on its standard input and answering on its standard output, one JSON object a line
 * (`conformance/schemas/client-commands.schema.json`). Each command gets exactly one answer
 * with its id, within the wait the caller gives; an answer that breaks the protocol, a
 * line that is not JSON, or the process going away is reported as what it is.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import Ajv2020 from "ajv/dist/2020.js";
import { formatIssue, toIssues } from "@turnspec/rpc";
import type { TranscriptEntry } from "../results.js";

type Json = Record<string, unknown>;

const schema = JSON.parse(readFileSync(new URL("../schemas/client-commands.schema.json", import.meta.url), "utf8")) as { $id: string };
const ajv = new Ajv2020({ allErrors: true, strict: true });
ajv.addSchema(schema);
const validator = (def: string) => ajv.getSchema(`${schema.$id}#/$defs/${def}`)!;

/** The result shapes of the commands, by command. */
const RESULTS = {
  hello: "helloResult",
  connect: "emptyResult",
  start_thread: "threadResult",
  run_turn: "turnResult",
  close: "emptyResult",
} as const;
export type CommandName = keyof typeof RESULTS;

/** The error a client answered a command with. */
export class ClientAnswerError extends Error {
  override readonly name = "ClientAnswerError";
  constructor(
    readonly kind: string,
    message: string,
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** The client broke the command protocol (an answer that does not fit it), or never answered in time. */
export class ClientProtocolError extends Error {
  override readonly name = "ClientProtocolError";
}

/** The client process went away: how it ended and the end of its stderr. */
export class ClientGone extends Error {
  override readonly name = "ClientGone";
}

/** How many lines of a client's stderr a message keeps. */
const STDERR_LINES = 12;

export class ClientProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, { command: string; resolve: (answer: Json) => void; reject: (error: Error) => void }>();
  private counter = 0;
  private stderr = "";
  /** Set once the process has exited, saying how. */
  exited: string | undefined;
  private readonly exitWaiters: (() => void)[] = [];
  /** Called with each line the client wrote that is not JSON. */
  onStray?: (line: string) => void;

  constructor(
    command: string,
    options: { readonly cwd: string; readonly env?: NodeJS.ProcessEnv },
    private readonly transcript: TranscriptEntry[],
    private readonly startedAt: number,
  ) {
    this.child = spawn("sh", ["-c", `exec ${command}`], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stdin.on("error", () => undefined);
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-20_000);
    });
    createInterface({ input: this.child.stdout }).on("line", (line) => this.receive(line));
    this.child.on("error", (error) => this.gone(`the client could not be started: ${error.message}`));
    this.child.on("close", (code, signal) => this.gone(`the client ${signal ? `exited on ${signal}` : `exited with code ${code}`}`));
  }

  /** The last lines the client wrote on stderr. */
  get stderrTail(): string {
    return this.stderr.trim().split("\n").slice(-STDERR_LINES).join("\n");
  }

  /** Resolves once the process has exited. */
  whenExited(): Promise<void> {
    return this.exited !== undefined ? Promise.resolve() : new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  /**
   * Sends a command and resolves with its result (checked against the protocol); rejects
   * with ClientAnswerError when the client answers an error, ClientProtocolError when its
   * answer breaks the protocol or does not come within `timeoutMs`, ClientGone when it exits.
   */
  command(name: CommandName, args: Json, timeoutMs: number): Promise<Json> {
    if (this.exited !== undefined) return Promise.reject(new ClientGone(this.exitText()));
    const id = ++this.counter;
    const frame = { id, command: name, ...args };
    this.record("sent", frame);
    this.child.stdin.write(`${JSON.stringify(frame)}\n`);
    return new Promise<Json>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ClientProtocolError(`the client never answered ${name} (id ${id}) (waited ${timeoutMs} ms)`));
      }, timeoutMs);
      timer.unref();
      this.pending.set(id, {
        command: name,
        resolve: (answer) => (clearTimeout(timer), resolve(answer)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
    }).then((answer) => {
      if ("error" in answer) {
        const error = answer.error as { kind: string; message: string; reason?: string };
        throw new ClientAnswerError(error.kind, error.message, error.reason);
      }
      const check = validator(RESULTS[name]);
      if (!check(answer.result)) {
        throw new ClientProtocolError(
          `the client's answer to ${name} does not fit the command protocol: ${toIssues(check.errors ?? [], answer.result)
            .map((i) => formatIssue(i, "result"))
            .join("; ")}`,
        );
      }
      return answer.result as Json;
    });
  }

  /** Ends the client: its standard input closes, and it is killed if it has not exited within `graceMs`. */
  async stop(graceMs = 2000): Promise<void> {
    if (this.exited !== undefined) return;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    timer.unref();
    await this.whenExited();
    clearTimeout(timer);
  }

  private exitText(): string {
    const tail = this.stderrTail;
    return `${this.exited ?? "the client exited"}${tail ? `; its stderr ends with:\n${tail}` : ""}`;
  }

  private gone(how: string): void {
    if (this.exited !== undefined) return;
    this.exited = how;
    const error = new ClientGone(this.exitText());
    for (const [, waiter] of this.pending) waiter.reject(error);
    this.pending.clear();
    for (const w of this.exitWaiters.splice(0)) w();
  }

  private receive(line: string): void {
    if (line.trim() === "") return;
    let answer: unknown;
    try {
      answer = JSON.parse(line);
    } catch {
      this.record("received", line);
      this.onStray?.(line);
      return;
    }
    this.record("received", answer);
    const check = validator("answer");
    const id = (answer as { id?: unknown } | null)?.id;
    const waiter = typeof id === "number" ? this.pending.get(id) : undefined;
    if (!check(answer)) {
      const problem = new ClientProtocolError(
        `the client answered with a line that does not fit the command protocol: ${toIssues(check.errors ?? [], answer)
          .map((i) => formatIssue(i, "answer"))
          .join("; ")}`,
      );
      if (waiter) {
        this.pending.delete(id as number);
        waiter.reject(problem);
      } else this.onStray?.(line);
      return;
    }
    if (!waiter) {
      this.onStray?.(`an answer to no command waiting for one: ${line}`);
      return;
    }
    this.pending.delete(id as number);
    waiter.resolve(answer as Json);
  }

  private record(direction: TranscriptEntry["direction"], frame: unknown): void {
    this.transcript.push({ direction, peer: "client", atMs: Math.round(performance.now() - this.startedAt), frame });
  }
}
