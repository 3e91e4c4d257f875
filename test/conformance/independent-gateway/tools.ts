/**
 * The independent gateway's own tools. Their names and argument names differ from the
 * suite's reference tools on purpose (certify maps them with --tool-map, see TOOL_MAP).
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve } from "node:path";

/** How `turnspec certify --tool-map` maps the reference tools onto these. */
export const TOOL_MAP = {
  shell: { name: "run_command", args: { command: "cmd" } },
  write_file: { name: "create_file", args: { path: "file_path", content: "body" } },
  read_file: { name: "open_file", args: { path: "file_path" } },
  spawn_agent: { name: "delegate", args: { prompt: "task", route_id: "route" } },
} as const;

/** What a tool needs permission for, under a supervised profile. */
export type ToolKind = "shell_command" | "file_write" | "file_read" | "task_subagent";

export interface ToolSpec {
  readonly name: string;
  readonly kind: ToolKind;
  readonly description: string;
  readonly parameters: {
    type: "object";
    properties: Record<string, { type: string; description: string }>;
    required: string[];
    additionalProperties: false;
  };
}

export const TOOLS: readonly ToolSpec[] = [
  {
    name: "run_command",
    kind: "shell_command",
    description: "Runs a POSIX shell command in the thread's folder and returns its standard output.",
    parameters: {
      type: "object",
      properties: { cmd: { type: "string", description: "the command line" } },
      required: ["cmd"],
      additionalProperties: false,
    },
  },
  {
    name: "create_file",
    kind: "file_write",
    description: "Writes a file (relative to the thread's folder), replacing what was there.",
    parameters: {
      type: "object",
      properties: {
        file_path: { type: "string", description: "where, relative to the thread's folder" },
        body: { type: "string", description: "the whole new content" },
      },
      required: ["file_path", "body"],
      additionalProperties: false,
    },
  },
  {
    name: "open_file",
    kind: "file_read",
    description: "Returns the content of a file (relative to the thread's folder).",
    parameters: {
      type: "object",
      properties: { file_path: { type: "string", description: "which file, relative to the thread's folder" } },
      required: ["file_path"],
      additionalProperties: false,
    },
  },
  {
    name: "delegate",
    kind: "task_subagent",
    description: "Hands a task to the agent at the other end of a delegation route and returns its answer.",
    parameters: {
      type: "object",
      properties: {
        task: { type: "string", description: "what the other agent is to do" },
        route: { type: "string", description: "the delegation route's id" },
      },
      required: ["task", "route"],
      additionalProperties: false,
    },
  },
];

export const toolNamed = (name: string) => TOOLS.find((t) => t.name === name);

/** A tool call the tool refuses before running: its message goes back to the model. */
export class ToolArgumentError extends Error {}

/** The string argument `name`, or a ToolArgumentError naming it. */
export function stringArg(args: Record<string, unknown>, tool: string, name: string): string {
  const value = args[name];
  if (typeof value !== "string" || value === "")
    throw new ToolArgumentError(`${tool}: argument "${name}" must be a non-empty string, got ${JSON.stringify(value)}`);
  return value;
}

/** A path inside the folder, or a ToolArgumentError. */
export function inside(folder: string, path: string, tool: string): string {
  const full = resolve(folder, path);
  const rel = relative(folder, full);
  if (rel.startsWith("..") || isAbsolute(rel)) throw new ToolArgumentError(`${tool}: ${path} is outside the thread's folder ${folder}`);
  return full;
}

export interface CommandRun {
  readonly done: Promise<{ exitCode: number | null; stdout: string; stderr: string }>;
  kill(): void;
}

/** Runs `cmd` with sh in `cwd`, handing each chunk of output to `onOutput` as it comes. */
export function runCommand(cmd: string, cwd: string, onOutput: (stream: "stdout" | "stderr", text: string) => void): CommandRun {
  const child = spawn("sh", ["-c", cmd], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  const out = { stdout: "", stderr: "" };
  for (const stream of ["stdout", "stderr"] as const) {
    child[stream].setEncoding("utf8");
    child[stream].on("data", (text: string) => {
      out[stream] += text;
      onOutput(stream, text);
    });
  }
  const done = new Promise<{ exitCode: number | null; stdout: string; stderr: string }>((done, fail) => {
    child.once("error", fail);
    child.once("close", (exitCode) => done({ exitCode, ...out }));
  });
  return { done, kill: () => void child.kill("SIGKILL") };
}

export async function writeInside(folder: string, path: string, body: string): Promise<"add" | "modify"> {
  const full = inside(folder, path, "create_file");
  const existed = await readFile(full).then(
    () => true,
    () => false,
  );
  await mkdir(dirname(full), { recursive: true });
  await writeFile(full, body, "utf8");
  return existed ? "modify" : "add";
}

export async function readInside(folder: string, path: string): Promise<string> {
  const full = inside(folder, path, "open_file");
  try {
    return await readFile(full, "utf8");
  } catch (error) {
    throw new ToolArgumentError(`open_file: cannot read ${path}: ${(error as Error).message}`);
  }
}
