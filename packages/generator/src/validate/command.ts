/**
 * `turnspec validate`: checks files (or standard input) of JSON-RPC messages, transcripts
 * that record who sent each frame, or bare values, and prints one finding per problem:
 *   session.jsonl:12 turn/start params/permission_profile/mode: must be one of …; got "admin"
 * Exit 0 when everything is valid, 1 when anything is invalid, 2 on usage or unreadable input.
 */
import { readFileSync } from "node:fs";
import { statSync } from "node:fs";
import type { ProtocolView } from "@turnspec/rpc";
import { formatIssue } from "@turnspec/rpc";
import { checkBareValue, MessageChecker, type Finding, type Sender } from "@turnspec/rpc";
import { closest } from "@turnspec/rpc";
import { readJsonValues } from "./read-json.js";
import { measureDepth } from "@turnspec/rpc";

/**
 * Levels of arrays and objects a value may nest to be checked. Checking and reporting walk
 * a value recursively; a value nested deeper (a few kilobytes of brackets are enough to
 * exhaust the stack) is reported as a finding of its own and left unchecked, and the other
 * values of the input are checked as usual.
 */
export const MAX_VALIDATE_DEPTH = 256;

export interface ValidateCommand {
  readonly files: readonly string[];
  /** The schemas folder of the protocol the messages belong to; `builtIn` when absent. */
  readonly schemas?: string;
  /**
   * The protocol used when neither `schemas` nor a config file names a schemas folder (the
   * command line's is the agent-gateway protocol), with where its type names are listed.
   */
  readonly builtIn?: { readonly load: () => Promise<ProtocolView>; readonly typeNamesAt: string };
  readonly type?: string;
  readonly tolerant: boolean;
  readonly json: boolean;
  /** Check the protocol's ordering rules across the messages of each file (default: yes). */
  readonly ordering?: boolean;
}

interface Io {
  readonly out: { write(text: string): unknown };
  readonly err: { write(text: string): unknown };
  readonly stdin: () => string;
}

const defaultIo: Io = { out: process.stdout, err: process.stderr, stdin: () => readFileSync(0, "utf8") };

/** A finding with its place in the input, as printed and as written by --json. */
export interface LocatedFinding {
  readonly file: string;
  readonly line: number;
  readonly method?: string;
  readonly pointer: string;
  readonly message: string;
  readonly expected?: unknown;
  readonly received?: unknown;
}

function suggest(name: string, protocol: ProtocolView, listedAt: string): string {
  const close = closest(name, protocol.typeNames);
  if (close.length) return ` Did you mean ${close.join(", ")}?`;
  return ` The type names are ${listedAt}.`;
}

/** The protocol of --schemas DIR, its validators compiled at run time; a message for exit 2 when it cannot be loaded. */
async function loadProtocol(dir: string): Promise<ProtocolView | string> {
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // Reported below.
  }
  if (!isDir) return `no schemas folder at ${dir}`;
  const [{ loadSchemas }, { compileProtocol }, { SchemaErrors }] = await Promise.all([
    import("../load.js"),
    import("../runtime-protocol.js"),
    import("../schema-error.js"),
  ]);
  try {
    return compileProtocol(loadSchemas(dir));
  } catch (error) {
    if (error instanceof SchemaErrors) return `the schemas in ${dir} have mistakes:\n${error.message}`;
    throw error;
  }
}

/** A line of a transcript that records who sent the frame, or undefined for a bare message. */
function senderRecord(value: unknown): { from: Sender; message: unknown } | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  const record = value as { from?: unknown; message?: unknown };
  if (keys.length !== 2 || !("message" in record) || (record.from !== "client" && record.from !== "server")) return undefined;
  return { from: record.from, message: record.message };
}

export async function runValidate(command: ValidateCommand, io: Io = defaultIo): Promise<number> {
  let schemas = command.schemas;
  if (schemas === undefined) {
    // A project's turnspec.config.json names its schemas folder; without one, the built-in protocol.
    const { loadConfig, ConfigError } = await import("../config.js");
    try {
      schemas = loadConfig(undefined).config.schemas;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      io.err.write(`turnspec validate: ${error.message}\n`);
      return 2;
    }
  }
  if (schemas === undefined && command.builtIn === undefined) {
    io.err.write("turnspec validate: name the protocol's schemas folder with --schemas DIR (or in turnspec.config.json)\n");
    return 2;
  }
  const loaded = schemas === undefined ? await command.builtIn!.load() : await loadProtocol(schemas);
  const typeNamesAt = schemas === undefined ? command.builtIn!.typeNamesAt : `the titles of the schema files in ${schemas}`;
  if (typeof loaded === "string") {
    io.err.write(`turnspec validate: ${loaded}\n`);
    return 2;
  }
  const protocol = loaded;
  if (command.type !== undefined && !protocol.typeNames.includes(command.type)) {
    io.err.write(`turnspec validate: unknown type "${command.type}".${suggest(command.type, protocol, typeNamesAt)}\n`);
    return 2;
  }
  const mode = command.tolerant ? "tolerant" : "strict";
  const inputs = command.files.length === 0 ? ["-"] : command.files;
  const findings: LocatedFinding[] = [];
  const notes: { readonly file: string; readonly line: number; readonly message: string }[] = [];
  let checked = 0;
  for (const file of inputs) {
    const name = file === "-" ? "<stdin>" : file;
    let text: string;
    try {
      text = file === "-" ? io.stdin() : readFileSync(file, "utf8");
    } catch (error) {
      io.err.write(
        `turnspec validate: cannot read ${name}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}\n`,
      );
      return 2;
    }
    const read = readJsonValues(text);
    if (!read.ok) {
      io.err.write(`turnspec validate: ${name}:${read.line}: ${read.message}\n`);
      return 2;
    }
    const bare = command.type;
    const checker = new MessageChecker(mode, { ordering: command.ordering !== false && bare === undefined, protocol });
    const found: Finding[] = [];
    read.values.forEach(({ value }, index) => {
      checked++;
      const deep = measureDepth(value, MAX_VALIDATE_DEPTH);
      if (deep) {
        found.push({
          index,
          part: "",
          issue: {
            pointer: deep.pointer,
            message: `nests ${deep.depth} levels deep, more than the ${MAX_VALIDATE_DEPTH} levels a value may nest to be checked: this value was not checked`,
          },
        });
        return;
      }
      if (bare !== undefined) found.push(...checkBareValue(bare, value, index, mode, protocol));
      else {
        // A transcript that records senders: {"from": "client" | "server", "message": <frame>} per line.
        const recorded = senderRecord(value);
        found.push(...(recorded ? checker.check(recorded.message, index, recorded.from) : checker.check(value, index)));
      }
    });
    found.push(...checker.end());
    for (const n of checker.notes) notes.push({ file: name, line: read.values[n.index]?.line ?? 0, message: n.message });
    // Stable sort: the findings of one message stay in the order they were found.
    for (const f of found.sort((a, b) => a.index - b.index)) {
      findings.push({
        file: name,
        line: read.values[f.index]?.line ?? 0,
        ...(f.method === undefined ? {} : { method: f.method }),
        pointer: f.part === "" ? f.issue.pointer : `${f.part}${f.issue.pointer}`,
        message: f.issue.message,
        ...(f.issue.expected === undefined ? {} : { expected: f.issue.expected }),
        ...(f.issue.received === undefined ? {} : { received: f.issue.received }),
      });
    }
  }
  if (command.json) {
    io.out.write(`${JSON.stringify({ valid: findings.length === 0, checked, findings, ...(notes.length ? { notes } : {}) }, null, 2)}\n`);
  } else {
    for (const n of notes) io.out.write(`${n.file}:${n.line} note: ${n.message}\n`);
    for (const f of findings) {
      const where = formatIssue({
        pointer: f.pointer.startsWith("/") || f.pointer === "" ? f.pointer : `/${f.pointer}`,
        message: f.message,
        received: f.received,
      });
      io.out.write(`${f.file}:${f.line}${f.method ? ` ${f.method}` : ""} ${where}\n`);
    }
    const invalid = new Set(findings.map((f) => `${f.file}:${f.line}`)).size;
    io.out.write(
      findings.length === 0
        ? `${checked} value${checked === 1 ? "" : "s"} checked: all valid\n`
        : `${checked} value${checked === 1 ? "" : "s"} checked: ${invalid} invalid, ${findings.length} finding${findings.length === 1 ? "" : "s"}\n`,
    );
  }
  return findings.length === 0 ? 0 : 1;
}
