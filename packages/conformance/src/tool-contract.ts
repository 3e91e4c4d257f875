/**
 * The tool contract of the scripted model: the tools the scenarios have the model call,
 * by their reference names, with the arguments each call carries and what the scenarios
 * expect of its result. A gateway whose tools are named otherwise, or take other argument
 * names, maps them with `--tool-map`. `turnspec certify --explain tools` prints this, and
 * docs/certify-contract.md describes it for people.
 */

export interface ToolArgument {
  readonly name: string;
  readonly type: "string" | "integer";
  /** Whether every call of the tool carries it (a call that leaves it out on purpose is listed in `result`). */
  readonly always: boolean;
  readonly means: string;
}

export interface ReferenceTool {
  readonly name: string;
  /** What the model uses the tool for. */
  readonly does: string;
  readonly args: readonly ToolArgument[];
  /** What the scenarios expect of the call: its item, and the tool result the model gets back. */
  readonly result: string;
}

export const TOOL_CONTRACT: readonly ReferenceTool[] = [
  {
    name: "shell",
    does: "runs a shell command in the thread's working folder",
    args: [
      { name: "command", type: "string", always: false, means: "the command line, run by a POSIX shell (`echo`, `$((6*7))`, `sleep`)" },
      {
        name: "timeout_ms",
        type: "integer",
        always: false,
        means: "how long the command may run before the gateway stops it (only REC-TIMEOUT sends it)",
      },
    ],
    result:
      "a commandExecution item that completes with exit code 0 and the command's stdout (streamed as output deltas that join up to it); the model's next call carries a tool message, under the call's id, whose text holds that stdout. A call without `command` (ITEM-TOOL-ERROR) must end its item failed and give the model a non-empty error under the call's id, and the turn goes on. Under a supervised profile the call first opens an approval request naming the tool.",
  },
  {
    name: "write_file",
    does: "writes a file, creating it",
    args: [
      { name: "path", type: "string", always: true, means: "a file name relative to the thread's working folder" },
      { name: "content", type: "string", always: true, means: "the whole text to write" },
    ],
    result: "a fileChange item that completes; a later read_file of the same path returns the content.",
  },
  {
    name: "read_file",
    does: "reads a file",
    args: [{ name: "path", type: "string", always: true, means: "a file name relative to the thread's working folder" }],
    result:
      "the model's next call carries a tool message, under the call's id, whose text holds the file's content. Under a supervised profile a read inside the working folder asks nothing.",
  },
  {
    name: "web_fetch",
    does: "fetches a URL over HTTP",
    args: [
      {
        name: "url",
        type: "string",
        always: true,
        means: "an http:// URL on the scripted model server, which answers 503 before it answers 200",
      },
    ],
    result: "the gateway retries the 503 answers (REC-TOOL-RETRY) and the model gets the page's body.",
  },
  {
    name: "spawn_agent",
    does: "delegates a task to another agent over a route",
    args: [
      { name: "prompt", type: "string", always: true, means: "the delegated task's text (it carries the scenario's token)" },
      { name: "route_id", type: "string", always: true, means: "the delegation route to run it over" },
    ],
    result: "the route's destination runs a child turn; see the ROUTE-* requirements.",
  },
];

/** The reference tool names. */
export const REFERENCE_TOOLS: readonly string[] = TOOL_CONTRACT.map((t) => t.name);

/** One reference tool as the gateway knows it: its own name, and its own argument names. */
export interface ToolMapping {
  readonly name: string;
  /** Reference argument name → the gateway's. */
  readonly args: Readonly<Record<string, string>>;
}

/**
 * `--tool-map` as given: reference tool name → the gateway's name, or
 * `{ "name": "...", "args": { "reference_arg": "gateway_arg" } }` (either part optional).
 */
export type ToolMapInput = Readonly<Record<string, string | { readonly name?: string; readonly args?: Readonly<Record<string, string>> }>>;

export type ToolMap = Readonly<Record<string, ToolMapping>>;

/** The mapping of every reference tool (the identity where `input` says nothing). */
export function normalizeToolMap(input: ToolMapInput = {}): ToolMap {
  const map: Record<string, ToolMapping> = {};
  for (const tool of TOOL_CONTRACT) {
    const entry = input[tool.name];
    map[tool.name] =
      typeof entry === "string" ? { name: entry, args: {} } : { name: entry?.name ?? tool.name, args: { ...(entry?.args ?? {}) } };
  }
  return map;
}

/**
 * Checks a `--tool-map` value (already parsed JSON) and returns it; each problem names
 * where it is (`where#/tool/args/arg`) and what was expected.
 */
export function checkToolMap(value: unknown, where: string): ToolMapInput {
  const problems: string[] = [];
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ToolMapError(
      `${where} must be a JSON object mapping reference tool names to the gateway's (a name, or {"name": ..., "args": {...}})`,
    );
  }
  for (const [key, entry] of Object.entries(value)) {
    const tool = TOOL_CONTRACT.find((t) => t.name === key);
    if (!tool) {
      problems.push(`${where}#/${key}: not a reference tool; the reference tools are ${REFERENCE_TOOLS.join(", ")}`);
      continue;
    }
    if (typeof entry === "string") {
      if (entry === "") problems.push(`${where}#/${key}: must be the gateway's tool name, a non-empty string; got ""`);
      continue;
    }
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      problems.push(`${where}#/${key}: must be the gateway's tool name or {"name": ..., "args": {...}}; got ${JSON.stringify(entry)}`);
      continue;
    }
    for (const [field, v] of Object.entries(entry as Record<string, unknown>)) {
      if (field === "name") {
        if (typeof v !== "string" || v === "") problems.push(`${where}#/${key}/name: must be a non-empty string; got ${JSON.stringify(v)}`);
      } else if (field === "args") {
        if (typeof v !== "object" || v === null || Array.isArray(v)) {
          problems.push(
            `${where}#/${key}/args: must be an object mapping ${key}'s argument names to the gateway's; got ${JSON.stringify(v)}`,
          );
          continue;
        }
        for (const [arg, name] of Object.entries(v as Record<string, unknown>)) {
          if (!tool.args.some((a) => a.name === arg))
            problems.push(
              `${where}#/${key}/args/${arg}: not an argument of ${key}; its arguments are ${tool.args.map((a) => a.name).join(", ")}`,
            );
          else if (typeof name !== "string" || name === "")
            problems.push(
              `${where}#/${key}/args/${arg}: must be the gateway's argument name, a non-empty string; got ${JSON.stringify(name)}`,
            );
        }
      } else {
        problems.push(`${where}#/${key}/${field}: unknown field; a tool's mapping has "name" and "args"`);
      }
    }
  }
  if (problems.length) throw new ToolMapError(problems.join("\n"));
  return value as ToolMapInput;
}

export class ToolMapError extends Error {
  override readonly name = "ToolMapError";
}

/** The contract as text, with the gateway's names where `map` renames them. */
export function toolContractText(map: ToolMap = normalizeToolMap()): string {
  const lines = [
    "The scripted model calls these tools (reference names; --tool-map renames tools and arguments).",
    'Each call is an OpenAI tool call: {"type": "function", "function": {"name", "arguments": JSON text of the arguments}}.',
    "",
  ];
  for (const tool of TOOL_CONTRACT) {
    const mapped = map[tool.name]!;
    lines.push(`${tool.name}${mapped.name !== tool.name ? ` (the gateway's ${mapped.name})` : ""}: ${tool.does}`);
    for (const a of tool.args) {
      const own = mapped.args[a.name];
      lines.push(`  ${a.name}${own ? ` → ${own}` : ""} (${a.type}${a.always ? "" : ", not in every call"}): ${a.means}`);
    }
    lines.push(`  expects: ${tool.result}`);
    lines.push("");
  }
  lines.push(
    'Map names with --tool-map \'{"write_file": {"name": "create_file", "args": {"path": "file_path"}}, "shell": "bash"}\' (or a file holding that object).',
  );
  return lines.join("\n");
}
