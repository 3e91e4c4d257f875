/**
 * A client's transport to a gateway it starts itself: the gateway runs as a child process
 * and frames travel over its stdin and stdout, one per line (see stdio.ts). The child's
 * stderr is its log: passed through to ours, collected for error messages, or ignored.
 * Closing the transport ends the child's stdin and stops the process.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Transport } from "../index.js";
import { CLIENT_MAX_FRAME_BYTES } from "./frame-limit.js";
import { StdioTransport } from "./stdio.js";

export interface SpawnStdioOptions {
  readonly cwd?: string | undefined;
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** What happens to the child's stderr: "inherit" (default) passes it through, "collect" keeps its tail, "ignore" drops it. */
  readonly stderr?: "inherit" | "collect" | "ignore" | undefined;
  /** With stderr "collect": how much of the end of stderr is kept. Default 64 KiB. */
  readonly stderrLimitBytes?: number | undefined;
  /** Largest frame accepted from the child. Default `CLIENT_MAX_FRAME_BYTES`. */
  readonly maxFrameBytes?: number | undefined;
  /** Called for each frame from the child that was over the limit and discarded; without it, `onerror` hears of it. */
  readonly onOversized?: ((bytes: number) => void) | undefined;
  /** Milliseconds between SIGTERM and SIGKILL when the child does not exit on close. Default 2000. */
  readonly killTimeoutMs?: number | undefined;
}

/** How the child ended. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export class ChildProcessTransport implements Transport {
  onmessage?: (frame: string) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  /** The running child. */
  readonly child: ChildProcess;
  /** Settles when the child has exited (resolves at once with nulls when it never started). */
  readonly exited: Promise<ChildExit>;
  /** Resolves once the child has exited and its stdio pipes have closed. */
  private readonly childClosed: Promise<void>;

  private readonly description: string;
  private readonly stdio: StdioTransport;
  private readonly spawned: Promise<void>;
  private readonly killTimeoutMs: number;
  private readonly stderrLimitBytes: number;
  private stderrChunks: Buffer[] = [];
  private stderrBytes = 0;
  private didSpawn = false;
  private closing: Promise<void> | undefined;
  private closeNotified = false;

  constructor(command: string, args: readonly string[], options: SpawnStdioOptions = {}) {
    this.description = [command, ...args].join(" ");
    this.killTimeoutMs = options.killTimeoutMs ?? 2000;
    this.stderrLimitBytes = options.stderrLimitBytes ?? 64 * 1024;
    const stderr = options.stderr ?? "inherit";
    this.child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", stderr === "collect" ? "pipe" : stderr],
      windowsHide: true,
    });
    if (stderr === "collect") this.child.stderr!.on("data", (chunk: Buffer) => this.keepStderr(chunk));

    // 'spawn' or 'error' comes first: the command started, or it could not (ENOENT, EACCES).
    this.spawned = new Promise<void>((resolve, reject) => {
      this.child.once("spawn", () => {
        this.didSpawn = true;
        resolve();
      });
      this.child.once("error", (error) => reject(new Error(`could not start \`${this.description}\`: ${error.message}`, { cause: error })));
    });
    this.spawned.catch(() => undefined); // Reported by start(); a transport never started must not crash the process.
    this.exited = new Promise<ChildExit>((resolve) => {
      this.child.once("exit", (code, signal) => resolve({ code, signal }));
      this.spawned.catch(() => resolve({ code: null, signal: null }));
    });

    this.stdio = new StdioTransport({
      input: this.child.stdout!,
      output: this.child.stdin!,
      maxFrameBytes: options.maxFrameBytes ?? CLIENT_MAX_FRAME_BYTES,
      ...(options.onOversized ? { onOversized: options.onOversized } : {}),
    });
    this.stdio.onmessage = (frame) => this.onmessage?.(frame);
    // Once closing, a broken pipe is the expected end of a child being stopped, not news.
    this.stdio.onerror = (error) => {
      if (!this.closing) this.onerror?.(error);
    };
    // The child's stdout ended: every frame it wrote has been delivered, nothing more can come.
    this.stdio.onclose = () => this.notifyClose();
    this.childClosed = new Promise<void>((resolve) => this.child.once("close", () => resolve()));
    // 'close' comes after the child exited and its stdio closed, so the stderr tail is complete.
    this.child.once("close", (code: number | null, signal: NodeJS.Signals | null) => {
      // A child that never started reports through start(); one that is being closed is meant to exit.
      if (this.didSpawn && !this.closing && (code !== 0 || signal !== null)) {
        this.onerror?.(new Error(`\`${this.description}\` exited ${signal ? `on ${signal}` : `with code ${code}`}${this.stderrSuffix()}`));
      }
      this.notifyClose();
    });
  }

  /** The end of the child's stderr, with stderr "collect"; empty otherwise. */
  get stderrText(): string {
    return Buffer.concat(this.stderrChunks).toString("utf8");
  }

  /** Resolves once the child is running and its stdout is being read; rejects when it could not start. */
  async start(): Promise<void> {
    await this.spawned;
    await this.stdio.start();
  }

  send(frame: string): Promise<void> {
    return this.stdio.send(frame);
  }

  /** Ends the child's stdin, stops the child (SIGTERM, then SIGKILL) and resolves once it has exited. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const running = await this.spawned.then(
      () => true,
      () => false,
    );
    if (running && this.child.exitCode === null && this.child.signalCode === null) {
      // EOF on stdin lets a well-behaved gateway finish; SIGTERM makes sure it does.
      void this.stdio.close();
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), this.killTimeoutMs);
      await this.exited;
      clearTimeout(timer);
    }
    await this.stdio.close();
    // 'close' means the pipes are drained too (the stderr tail is complete). A grandchild
    // may hold them open past the child's exit: then they are dropped after a grace period.
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([this.childClosed, new Promise<void>((resolve) => (grace = setTimeout(resolve, this.killTimeoutMs)))]);
    clearTimeout(grace);
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
    this.notifyClose();
  }

  private keepStderr(chunk: Buffer): void {
    this.stderrChunks.push(chunk);
    this.stderrBytes += chunk.length;
    // Keep whole chunks while possible, then trim the oldest: only the tail explains an exit.
    while (this.stderrBytes - this.stderrChunks[0]!.length >= this.stderrLimitBytes) {
      this.stderrBytes -= this.stderrChunks.shift()!.length;
    }
    if (this.stderrBytes > this.stderrLimitBytes) {
      const first = this.stderrChunks[0]!;
      const cut = this.stderrBytes - this.stderrLimitBytes;
      this.stderrChunks[0] = first.subarray(cut);
      this.stderrBytes -= cut;
    }
  }

  private stderrSuffix(): string {
    const text = this.stderrText.trim();
    return text === "" ? "" : `; its stderr ends with:\n${text}`;
  }

  private notifyClose(): void {
    if (this.closeNotified) return;
    this.closeNotified = true;
    this.onclose?.();
  }
}

/**
 * Starts `command` with `args` and returns a transport over its stdin and stdout. The
 * child is spawned at once; `start()` reports whether it could be.
 */
export function spawnStdioTransport(command: string, args: readonly string[] = [], options: SpawnStdioOptions = {}): ChildProcessTransport {
  return new ChildProcessTransport(command, args, options);
}
