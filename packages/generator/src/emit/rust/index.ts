/**
 * `turnspec generate --lang rust`: a crate for the protocol, thin over its support module
 * (written into it, so that it depends on serde, serde_json, tokio and tokio-tungstenite and
 * on nothing of turnspec):
 *
 * - src/types.rs: serde types (types.ts); src/validators.rs: an `impl Schema` per type (checks.ts);
 * - src/registry.rs: the tables, `PROTOCOL` and `ErrorReason`; src/ordering.rs: the ordering rules;
 * - src/client.rs and src/server.rs: tokio endpoints with handler traits for both directions (rpc.ts);
 * - src/bin/testee.rs: the contract testee;
 * - src/jsonrpc/: the support module, the same in every crate.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { GeneratedFile } from "../../generate.js";
import type { ProtocolModel } from "../../model.js";
import { emitRustChecks } from "./checks.js";
import { docLines, rustString, UnsupportedForRust } from "./names.js";
import { emitRustOrdering, emitRustRegistry } from "./registry.js";
import { emitRustClient, emitRustServer } from "./rpc.js";
import { RustTypes } from "./types.js";

export { UnsupportedForRust };

const templates = new URL("../../../templates/rust/jsonrpc/", import.meta.url);

/** The support module's files, copied as they are (with the generated header) into every crate. */
export function rustSupportFiles(): string[] {
  return readdirSync(templates)
    .filter((name) => name.endsWith(".rs"))
    .sort();
}

/** The folders of a crate that hold generated files. */

export interface RustOptions {
  /** The comment every generated file starts with (without the comment marker). */
  readonly note: string;
  /** The crate's name (Cargo.toml's package name, and `use <name>::…` with `-` read as `_`). */
  readonly crate: string;
}

/** Why a crate name is refused, or undefined when it is a good one. */
export function checkCrateName(name: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(name))
    return `the crate name ${JSON.stringify(name)} must start with a letter and hold only letters, digits, _ and - (at most 64)`;
  return undefined;
}

/** The crate name a protocol gets unless one is given: its title in snake case. */
export function defaultCrateName(model: ProtocolModel): string {
  const name = model.title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return /^[a-z]/.test(name) ? name : `protocol_${name}`;
}

/** Every file of the crate, paths relative to its folder. */
export function emitRust(model: ProtocolModel, options: RustOptions): GeneratedFile[] {
  const problem = checkCrateName(options.crate);
  if (problem) throw new UnsupportedForRust(problem);
  const header = `// ${options.note}`;
  const lib = options.crate.replace(/-/g, "_");
  const files: GeneratedFile[] = [
    { path: "Cargo.toml", content: cargoToml(model, options) },
    { path: "src/lib.rs", content: libRs(model, header) },
    { path: "src/types.rs", content: new RustTypes(model).emit(header) },
    { path: "src/validators.rs", content: emitRustChecks(model, header) },
    { path: "src/registry.rs", content: emitRustRegistry(model, header) },
    { path: "src/ordering.rs", content: emitRustOrdering(model, header) },
    { path: "src/client.rs", content: emitRustClient(model, header) },
    { path: "src/server.rs", content: emitRustServer(model, header) },
    {
      path: "src/bin/testee.rs",
      content: [
        header,
        "//! The contract testee: answers the harness's commands on standard input (one JSON object per",
        "//! line) with this crate's validators, types and checkers.",
        "",
        "fn main() -> std::io::Result<()> {",
        `    ${lib}::jsonrpc::testee::run(&${lib}::PROTOCOL)`,
        "}",
      ].join("\n"),
    },
  ];
  for (const name of rustSupportFiles()) {
    const source = readFileSync(new URL(name, templates), "utf8");
    files.push({
      path: `src/jsonrpc/${name}`,
      content: `${header}\n// turnspec's support module for generated Rust, the same in every generated crate.\n${source}`,
    });
  }
  return files
    .map((f) => ({ ...f, content: `${f.content.replace(/\n{3,}/g, "\n\n").trimEnd()}\n` }))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** The crate's version: the protocol's when it is a semantic version, else 0.1.0. */
function crateVersion(model: ProtocolModel): string {
  return /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(model.version) ? model.version : "0.1.0";
}

function cargoToml(model: ProtocolModel, options: RustOptions): string {
  const description = `${model.title} ${model.version}: types, validators, client and server.`;
  return [
    `# ${options.note}`,
    "[package]",
    `name = ${rustString(options.crate)}`,
    `version = ${rustString(crateVersion(model))}`,
    'edition = "2021"',
    'rust-version = "1.80"',
    `description = ${rustString(description)}`,
    "",
    "[dependencies]",
    'serde = { version = "1", features = ["derive"] }',
    'serde_json = "1"',
    'tokio = { version = "1", features = ["io-std", "io-util", "macros", "net", "process", "rt", "sync"] }',
    'tokio-tungstenite = { version = "0.30", default-features = false, features = ["handshake"] }',
    "",
    "# The contract testee (docs/languages.md of turnspec), named after the crate.",
    "[[bin]]",
    `name = ${rustString(`${options.crate}-testee`)}`,
    'path = "src/bin/testee.rs"',
  ].join("\n");
}

/**
 * The crate's modules written from the schemas, beside the runtime (`jsonrpc`, the same in
 * every crate). Their lines are not laid out as rustfmt would (long calls and tables stay on
 * one line), so lib.rs marks them `#[rustfmt::skip]`: a `cargo fmt` of the user's workspace
 * would otherwise rewrite them, and `generate --check` would then report them changed.
 */
const GENERATED_MODULES = ["client", "ordering", "registry", "server", "types", "validators"] as const;

function libRs(model: ProtocolModel, header: string): string {
  return [
    header,
    ...docLines(`${model.title} ${model.version}. ${model.description}`, "", "//!"),
    "//!",
    "//! - [`types`]: a serde type per named type of the schemas;",
    "//! - [`validators`]: their checks, with the verdicts of turnspec's TypeScript validators",
    "//!   (strict or tolerant, on a [`Json`] or a `serde_json::Value`);",
    "//! - [`decode`] and [`encode`]: JSON text to a validated type, and a type to canonical JSON;",
    "//! - [`Client`] and [`serve`]: the two ends of a connection, over the transports of",
    "//!   [`jsonrpc::transport`] and [`jsonrpc::websocket`];",
    "//! - [`registry`]: the method, notification and error tables; [`ordering`]: the ordering rules.",
    "",
    "pub mod jsonrpc;",
    "",
    "// The modules `turnspec generate` writes are kept as it writes them: `cargo fmt` leaves them",
    "// alone, so that `turnspec generate --check` finds them unchanged after it.",
    ...GENERATED_MODULES.flatMap((module) => ["#[rustfmt::skip]", `pub mod ${module};`]),
    "",
    "pub use client::{Client, ClientHandler};",
    "pub use jsonrpc::connection::Options;",
    "pub use jsonrpc::{decode, decode_json, decode_value, encode, Nullable};",
    "pub use jsonrpc::{Error, Json, Mode, RpcError, Schema, Transport, ValidationError};",
    "pub use registry::{ErrorReason, PROTOCOL};",
    "pub use server::{serve, serve_with, ServerConnection, ServerHandler};",
  ].join("\n");
}
