/**
 * The Rust toolchain for the tests of generated Rust: whether cargo runs here, and one build
 * of the repository's Cargo workspace (Cargo.toml at the root: the golden crates and what is
 * built on them) into target/, shared by every test that needs a binary of it. Their
 * dependencies come from crates.io; .ci/run fetches them first (cargo fetch).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../..", import.meta.url));

/** The golden crates: the schemas each comes from, where it is, and its name. */
export const RUST_CRATES = {
  "agent-gateway": { schemas: "schemas", crate: "test/languages/rust/agent_gateway", name: "agent_gateway" },
  mini: { schemas: "test/fixtures/mini-protocol/schemas", crate: "test/fixtures/mini-protocol/rust/kv_protocol", name: "kv_protocol" },
  mcp: { schemas: "test/fixtures/mcp/schemas", crate: "test/fixtures/mcp/rust/mcp_protocol", name: "mcp_protocol" },
  lsp: { schemas: "test/fixtures/lsp/schemas", crate: "test/fixtures/lsp/rust/lsp_protocol", name: "lsp_protocol" },
  // The construct fixture whose errors carry typed data: the message checker validates it.
  "error-data": {
    schemas: "test/fixtures/constructs/error-data/schemas",
    crate: "test/fixtures/constructs/error-data/rust/error_data_protocol",
    name: "error_data_protocol",
  },
} as const;

/** Whether cargo runs. */
export const CARGO_AVAILABLE = spawnSync("cargo", ["--version"], { stdio: "ignore" }).status === 0;

/** One line naming what a skipped test needs. */
export const NO_CARGO = "the cargo command is not on PATH: the tests of generated Rust are skipped";

/** Runs cargo with arguments at the root of the repository; throws with cargo's output when it fails. */
export function cargo(args: readonly string[], cwd = root): string {
  try {
    return execFileSync("cargo", [...args], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`cargo ${args.join(" ")} failed in ${cwd}:\n${e.stdout ?? ""}${e.stderr ?? e.message}`);
  }
}

/**
 * Builds every binary of the workspace (cargo does nothing when they are fresh; two test
 * files building at once wait for each other on cargo's lock) and returns the folder holding
 * them.
 */
export function buildWorkspace(): string {
  cargo(["build", "--workspace", "--bins", "--locked"]);
  return join(root, "target", "debug");
}
