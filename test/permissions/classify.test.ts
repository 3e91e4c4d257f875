/** Every built-in tool call classified from its arguments, before it runs. */
import { describe, expect, it } from "vitest";
import { ACTION_OF_TOOL, classifyToolCall, type ToolCallClassification } from "../../packages/gateway/src/permissions/classify.js";
import { builtinTools } from "../../packages/gateway/src/tools/registry.js";
import { createShellTool } from "../../packages/gateway/src/tools/shell.js";

const cwd = "/work/ws";

const cases: [string, string, Record<string, unknown>, ToolCallClassification][] = [
  [
    "shell without cwd touches the thread's directory",
    "shell",
    { command: "ls -la" },
    { action: "shell_command", paths: [cwd], command: "ls -la", escapeSandbox: false, write: false },
  ],
  [
    "shell with a relative cwd",
    "shell",
    { command: "make", cwd: "sub/../build" },
    { action: "shell_command", paths: ["/work/ws/build"], command: "make", escapeSandbox: false, write: false },
  ],
  [
    "shell with an absolute cwd",
    "shell",
    { command: "cat passwd", cwd: "/etc" },
    { action: "shell_command", paths: ["/etc"], command: "cat passwd", escapeSandbox: false, write: false },
  ],
  [
    "shell asking to escape",
    "shell",
    { command: "sudo true", escape_sandbox: true },
    { action: "shell_command", paths: [cwd], command: "sudo true", escapeSandbox: true, write: false },
  ],
  [
    "shell with escape_sandbox false",
    "shell",
    { command: "true", escape_sandbox: false },
    { action: "shell_command", paths: [cwd], command: "true", escapeSandbox: false, write: false },
  ],
  // Only a real true asks for an escape: a truthy string is not one (and fails the schema anyway).
  [
    "shell with escape_sandbox as a string",
    "shell",
    { command: "true", escape_sandbox: "true" },
    { action: "shell_command", paths: [cwd], command: "true", escapeSandbox: false, write: false },
  ],
  [
    "read_file, relative",
    "read_file",
    { path: "src/../README.md" },
    { action: "file_read", paths: ["/work/ws/README.md"], escapeSandbox: false, write: false },
  ],
  [
    "read_file, absolute outside",
    "read_file",
    { path: "/etc/passwd" },
    { action: "file_read", paths: ["/etc/passwd"], escapeSandbox: false, write: false },
  ],
  [
    "read_file climbing out",
    "read_file",
    { path: "../../etc/shadow" },
    { action: "file_read", paths: ["/etc/shadow"], escapeSandbox: false, write: false },
  ],
  [
    "write_file",
    "write_file",
    { path: "out/a.txt", content: "x" },
    { action: "file_write", paths: ["/work/ws/out/a.txt"], escapeSandbox: false, write: true },
  ],
  [
    "web_fetch lowercases the host and keeps the port apart",
    "web_fetch",
    { url: "https://Docs.Example.COM:8443/a?b=1" },
    { action: "network", paths: [], domain: "docs.example.com", port: 8443, escapeSandbox: false, write: false },
  ],
  [
    "web_fetch takes the scheme's default port",
    "web_fetch",
    { url: "http://127.0.0.1/admin" },
    { action: "network", paths: [], domain: "127.0.0.1", port: 80, escapeSandbox: false, write: false },
  ],
  [
    "web_fetch with a bad URL has no domain",
    "web_fetch",
    { url: "not a url" },
    { action: "network", paths: [], escapeSandbox: false, write: false },
  ],
  ["spawn_agent", "spawn_agent", { prompt: "do it" }, { action: "task_subagent", paths: [], escapeSandbox: false, write: false }],
  [
    "anything else is unknown",
    "mcp__github__create_issue",
    { path: "/etc/passwd", command: "rm -rf /" },
    { action: "unknown", paths: [], escapeSandbox: false, write: false },
  ],
];

describe("classifyToolCall", () => {
  it.each(cases)("%s", (_name, tool, args, want) => {
    expect(classifyToolCall(tool, args, cwd)).toEqual(want);
  });

  it("adds nothing for arguments of the wrong type instead of throwing", () => {
    expect(classifyToolCall("read_file", { path: 42 }, cwd)).toEqual({
      action: "file_read",
      paths: [],
      escapeSandbox: false,
      write: false,
    });
    expect(classifyToolCall("shell", { command: ["ls"] }, cwd)).toEqual({
      action: "shell_command",
      paths: [cwd],
      escapeSandbox: false,
      write: false,
    });
  });

  it("refuses a relative cwd", () => {
    expect(() => classifyToolCall("read_file", { path: "a" }, "relative/dir")).toThrow(/absolute cwd.*"relative\/dir"/);
  });

  it("knows the action kind of every built-in tool", () => {
    for (const tool of builtinTools()) expect(ACTION_OF_TOOL[tool.spec.name], tool.spec.name).toBeDefined();
  });
});

describe("the shell tool's escape_sandbox argument", () => {
  it("is an optional boolean the model can see", () => {
    const { parameters } = createShellTool().spec;
    const properties = parameters.properties as Record<string, { type: string; description: string }>;
    expect(properties.escape_sandbox).toMatchObject({
      type: "boolean",
      description: expect.stringMatching(/outside the sandbox.*one-time approval/),
    });
    expect(parameters.required).toEqual(["command"]);
  });
});
