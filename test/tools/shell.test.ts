/**
 * The shell tool runs real commands: output streams as it comes, a failing command is a
 * result, and a timeout or a cancelled turn kills the command with everything it started.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createShellTool, SHELL_MODEL_LIMIT, shellTool } from "../../packages/gateway/src/tools/shell.js";
import { testContext } from "./context.js";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-shell-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("shell tool", () => {
  it("describes itself as a commandExecution with the resolved cwd", () => {
    expect(shellTool.spec.name).toBe("shell");
    expect(shellTool.itemType).toBe("commandExecution");
    expect(shellTool.describe({ command: "ls", cwd: "sub" }, { cwd: dir })).toEqual({ command: "ls", cwd: join(dir, "sub") });
    expect(shellTool.describe({ command: "ls" }, { cwd: dir })).toEqual({ command: "ls", cwd: dir });
  });

  it("runs a command and reports exit code, output and duration", async () => {
    const ctx = testContext(dir);
    const result = await shellTool.run({ command: "echo hello; echo warn >&2" }, ctx);
    expect(result.ok).toBe(true);
    expect(result.item).toMatchObject({
      command: "echo hello; echo warn >&2",
      cwd: dir,
      stdout: "hello\n",
      stderr: "warn\n",
      exit_code: 0,
      timed_out: false,
    });
    expect(Number.isInteger(result.item.duration_ms)).toBe(true);
    expect(result.content).toBe("exit code: 0\nstdout:\nhello\nstderr:\nwarn");
  });

  it("streams stdout and stderr chunks in the order the command writes them", async () => {
    // The command waits on a FIFO after each write until the test has seen that write, so
    // the order is fixed by the command, not by timing.
    const gates = [join(dir, "gate1"), join(dir, "gate2")];
    for (const gate of gates) execFileSync("mkfifo", [gate]);
    const ctx = testContext(dir, {
      emit: (stream, delta) => {
        if (stream === "stdout" && delta.includes("one")) void writeFile(gates[0]!, "go\n");
        if (stream === "stderr" && delta.includes("two")) void writeFile(gates[1]!, "go\n");
      },
    });
    const result = await shellTool.run({ command: "echo one; read x < gate1; echo two >&2; read x < gate2; echo three" }, ctx);
    expect(ctx.emitted).toEqual([
      { stream: "stdout", delta: "one\n" },
      { stream: "stderr", delta: "two\n" },
      { stream: "stdout", delta: "three\n" },
    ]);
    expect(result.item).toMatchObject({ stdout: "one\nthree\n", stderr: "two\n", exit_code: 0 });
  });

  it("reports a non-zero exit as a result that is not ok", async () => {
    const result = await shellTool.run({ command: "echo oops >&2; exit 3" }, testContext(dir));
    expect(result.ok).toBe(false);
    expect(result.item).toMatchObject({ exit_code: 3, stdout: "", stderr: "oops\n", timed_out: false });
    expect(result.item).not.toHaveProperty("error");
    expect(result.content).toBe("exit code: 3\nstderr:\noops");
  });

  it("kills the whole process group at the timeout", { timeout: 10_000 }, async () => {
    // The background subshell holds stdout open: the result can only come before its 30 s
    // are up if the kill reached it too, not only the shell.
    const result = await shellTool.run({ command: "(sleep 30; echo late) & echo started; wait", timeout_ms: 300 }, testContext(dir));
    expect(result.ok).toBe(false);
    expect(result.item).toMatchObject({ exit_code: null, timed_out: true, stdout: "started\n" });
    expect(result.item.duration_ms as number).toBeGreaterThanOrEqual(290);
    expect(result.content).toBe("timed out after 300 ms: the command was killed\nstdout:\nstarted");
  });

  it("caps the timeout at the context's maxTimeoutMs", { timeout: 10_000 }, async () => {
    const result = await shellTool.run({ command: "sleep 30", timeout_ms: 60_000 }, testContext(dir, { maxTimeoutMs: 200 }));
    expect(result.item).toMatchObject({ exit_code: null, timed_out: true });
    expect(result.timeout).toEqual({ deadline_ms: 200, elapsed_ms: result.item.duration_ms });
    expect(result.retryable, "a command may have side effects: it is never retried").toBeUndefined();
    expect(result.content).toContain("timed out after 200 ms");
  });

  it("uses the configured default timeout when the call names none", { timeout: 10_000 }, async () => {
    const result = await createShellTool({ defaultTimeoutMs: 150 }).run({ command: "sleep 30" }, testContext(dir));
    expect(result.item).toMatchObject({ exit_code: null, timed_out: true });
    expect(result.content).toContain("timed out after 150 ms");
  });

  it("kills the command when the turn is cancelled", { timeout: 10_000 }, async () => {
    const controller = new AbortController();
    const ctx = testContext(dir, {
      signal: controller.signal,
      emit: (stream, delta) => {
        if (stream === "stdout" && delta.includes("started")) controller.abort();
      },
    });
    const result = await shellTool.run({ command: "echo started; sleep 30 & wait" }, ctx);
    expect(result.ok).toBe(false);
    expect(result.item).toMatchObject({ exit_code: null, timed_out: false, stdout: "started\n" });
    expect(result.content).toBe("cancelled: the command was killed\nstdout:\nstarted");
  });

  it("kills the command, with what it left in the background, when the process running it is killed", { timeout: 20_000 }, async () => {
    const pids = join(dir, "pids");
    // The command's shell and a background job, both sleeping far past the test.
    const host = spawn(
      process.execPath,
      [
        "--import",
        "./scripts/from-source.mjs",
        "test/tools/shell-host.ts",
        dir,
        `sleep 60 & echo $$ $! > ${pids}.tmp; mv ${pids}.tmp ${pids}; sleep 60`,
      ],
      { stdio: "ignore" },
    );
    await expect.poll(() => existsSync(pids), { timeout: 10_000 }).toBe(true);
    const started = readFileSync(pids, "utf8").trim().split(" ").map(Number);
    expect(started.filter(alive)).toEqual(started);
    host.kill("SIGKILL");
    // Gone (or only a zombie waiting for its reaper) once the host is: nothing of the command runs on.
    await expect.poll(() => started.filter(alive), { timeout: 5_000 }).toEqual([]);
  });

  it("does not start a command when the turn is already cancelled", async () => {
    const controller = new AbortController();
    controller.abort();
    const marker = join(dir, "must-not-exist");
    const result = await shellTool.run({ command: `touch ${marker}` }, testContext(dir, { signal: controller.signal }));
    expect(result).toMatchObject({ ok: false, content: "the command was not run: the turn was cancelled" });
    expect(() => execFileSync("test", ["-e", marker])).toThrow();
  });

  it("resolves a relative cwd against the thread's directory and passes the context's env", async () => {
    mkdirSync(join(dir, "sub"), { recursive: true });
    const result = await shellTool.run(
      { command: 'pwd; echo "$GREETING"', cwd: "sub" },
      testContext(dir, { env: { PATH: process.env.PATH, GREETING: "hi there", SKIPPED: undefined } }),
    );
    expect(result.item).toMatchObject({ cwd: join(dir, "sub"), stdout: `${join(dir, "sub")}\nhi there\n`, exit_code: 0 });
    // Only the context's env reaches the command, not the gateway's own.
    const env = await shellTool.run({ command: "env" }, testContext(dir, { env: { ONLY: "this" } }));
    expect((env.item.stdout as string).split("\n").filter((l) => l.startsWith("ONLY="))).toEqual(["ONLY=this"]);
    expect(env.item.stdout as string).not.toContain("SKIPPED");
  });

  it("reports a missing or non-directory cwd as a result", async () => {
    const missing = await shellTool.run({ command: "true", cwd: "nope" }, testContext(dir));
    expect(missing).toMatchObject({ ok: false, content: `the command was not run: cwd ${join(dir, "nope")} does not exist` });
    expect(missing.item).toMatchObject({ exit_code: null, error: { message: missing.content } });
    writeFileSync(join(dir, "plain"), "x");
    expect((await shellTool.run({ command: "true", cwd: "plain" }, testContext(dir))).content).toBe(
      `the command was not run: cwd ${join(dir, "plain")} is not a directory`,
    );
  });

  it("closes stdin, so a command reading it does not hang", { timeout: 10_000 }, async () => {
    const result = await shellTool.run({ command: "cat; echo after" }, testContext(dir));
    expect(result.item).toMatchObject({ stdout: "after\n", exit_code: 0 });
  });

  it("shortens long output for the model, keeping both ends and saying so", async () => {
    const result = await shellTool.run(
      { command: `printf 'START'; head -c ${SHELL_MODEL_LIMIT * 3} /dev/zero | tr '\\0' a; printf 'END'` },
      testContext(dir),
    );
    const stdout = result.item.stdout as string;
    expect(stdout).toHaveLength(SHELL_MODEL_LIMIT * 3 + 8);
    expect(result.content).toMatch(/^exit code: 0\nstdout:\nSTARTa+\n\[… \d+ characters omitted …\]\na+END$/);
    expect(result.content.length).toBeLessThan(SHELL_MODEL_LIMIT + 200);
  });
});

/** Whether a process runs: it exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}
