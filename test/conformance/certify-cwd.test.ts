/**
 * Where `certify --gateway-cmd` runs its command: the folder certify was run from, or
 * `--cwd DIR`, so that a command relative to the user's project (`node gw.mjs`,
 * `./dist/gateway`) starts the same as it would in the user's shell.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
const turnspec = join(repo, "bin/turnspec.js");

/** A folder holding gw.mjs, a gateway started by a relative path: it runs the reference gateway on its own stdio. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-gw-"));
  writeFileSync(
    join(dir, "gw.mjs"),
    [
      'import { spawn } from "node:child_process";',
      `const child = spawn(process.execPath, [${JSON.stringify(turnspec)}, "serve", "--stdio", "--memory", ...process.argv.slice(2)], { stdio: "inherit" });`,
      'child.on("exit", (code) => process.exit(code ?? 1));',
      "",
    ].join("\n"),
  );
  return dir;
}

const certify = (cwd: string, ...args: string[]) =>
  spawnSync("node", [turnspec, "certify", "--capabilities", "core", "--only", "THREAD-START", ...args], {
    cwd,
    encoding: "utf8",
    timeout: 120_000,
  });

describe("certify --gateway-cmd runs the command where the user is", () => {
  it("starts a relative command from the folder certify was run in", () => {
    const dir = project();
    const run = certify(dir, "--gateway-cmd", "node gw.mjs --provider-url {provider_url}");
    expect(run.stderr).not.toContain("Cannot find module");
    expect(run.stdout).toMatch(/✓ THREAD-START/);
    expect(run.status).toBe(0);
  });

  it("starts it from --cwd DIR when given, relative to the current folder", () => {
    const dir = project();
    const run = certify(tmpdir(), "--cwd", dir.slice(tmpdir().length + 1), "--gateway-cmd", "node gw.mjs --provider-url {provider_url}");
    expect(run.stdout).toMatch(/✓ THREAD-START/);
    expect(run.status).toBe(0);
  });

  it("refuses a --cwd that is not a folder, or one without --gateway-cmd", () => {
    const missing = join(project(), "nowhere");
    const run = certify(repo, "--cwd", missing, "--gateway-cmd", "node gw.mjs");
    expect(run.stderr).toContain(`--cwd: ${missing} is not a folder`);
    expect(run.status).toBe(2);
    const withUrl = certify(repo, "--cwd", ".", "--gateway-url", "ws://127.0.0.1:1");
    expect(withUrl.stderr).toContain("--cwd is the folder --gateway-cmd or --client-cmd runs in");
    expect(withUrl.status).toBe(2);
  });
});
