/**
 * The Go toolchain for the tests of generated Go: whether `go` runs here, and builds of a
 * module's commands into a folder of the test's own. The modules' one dependency
 * (github.com/coder/websocket) comes through the Go module proxy; .ci/run downloads it first.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The golden Go modules: the schemas each comes from, where it is, and its module path. */
export const GO_MODULES = {
  "agent-gateway": { schemas: "schemas", module: "test/languages/go/agp", path: "turnspec.dev/agp" },
  mini: { schemas: "test/fixtures/mini-protocol/schemas", module: "test/fixtures/mini-protocol/go", path: "turnspec.dev/examples/kv" },
  mcp: { schemas: "test/fixtures/mcp/schemas", module: "test/fixtures/mcp/go", path: "turnspec.dev/examples/mcp" },
  lsp: { schemas: "test/fixtures/lsp/schemas", module: "test/fixtures/lsp/go", path: "turnspec.dev/examples/lsp" },
} as const;

/** Whether the go command runs. */
export const GO_AVAILABLE = spawnSync("go", ["version"], { stdio: "ignore" }).status === 0;

/** One line naming what a skipped test needs. */
export const NO_GO = "the go command is not on PATH: the tests of generated Go are skipped";

/** Runs go with arguments in a folder; throws with go's output when it fails. */
export function go(args: readonly string[], cwd: string, env: Record<string, string> = {}): string {
  try {
    return execFileSync("go", [...args], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env }, maxBuffer: 64 << 20 });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`go ${args.join(" ")} failed in ${cwd}:\n${e.stdout ?? ""}${e.stderr ?? e.message}`);
  }
}

/** Builds the package at `pkg` (e.g. ./cmd/testee) of the module in `cwd` into a new folder; returns the binary. */
export function buildGo(cwd: string, pkg: string, name: string): string {
  const out = join(mkdtempSync(join(tmpdir(), "turnspec-go-")), name);
  go(["build", "-o", out, pkg], cwd);
  return out;
}

/** Runs the toolchain's gofmt with arguments in a folder. */
export function gofmt(args: readonly string[], cwd: string): string {
  const goroot = execFileSync("go", ["env", "GOROOT"], { encoding: "utf8" }).trim();
  return execFileSync(join(goroot, "bin", "gofmt"), [...args], { cwd, encoding: "utf8", maxBuffer: 64 << 20 });
}
