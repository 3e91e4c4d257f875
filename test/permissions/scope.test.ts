/**
 * Scope hashes: what an allow_for_turn grant remembers. The same action on the same
 * target, however spelled, hashes the same; anything else hashes differently.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { scopeOf, type ScopeTarget } from "../../packages/gateway/src/permissions/scope.js";
import type { PermissionActionKind } from "../../generated/types.js";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-scope-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
mkdirSync(join(dir, "src"));
writeFileSync(join(dir, "src", "a.txt"), "a");
symlinkSync(join(dir, "src", "a.txt"), join(dir, "alias.txt"));
symlinkSync(join(dir, "loop"), join(dir, "loop"));

type Row = [PermissionActionKind, ScopeTarget];

describe("scopeOf", () => {
  it("hashes `${action}\\n${normalized}` with SHA-256, in hex", () => {
    const scope = scopeOf("shell_command", { command: "ls -la" });
    expect(scope).toEqual({ normalized: "ls -la", hash: createHash("sha256").update("shell_command\nls -la").digest("hex") });
    expect(scope.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  const same: [string, Row, Row][] = [
    [
      "a command with other spacing",
      ["shell_command", { command: "git  status\t--short" }],
      ["shell_command", { command: "  git status --short\n" }],
    ],
    [
      "a command in a cwd spelled through a link",
      ["shell_command", { command: "make", cwd: join(dir, "src") }],
      ["shell_command", { command: "make", cwd: `${dir}/src/../src` }],
    ],
    [
      "a URL's host with its default port named or not",
      ["network", { domain: "example.com", port: 443 }],
      ["network", { domain: "EXAMPLE.com.", port: 443 }],
    ],
    ["a path spelled with `..`", ["file_read", { path: join(dir, "src", "a.txt") }], ["file_read", { path: `${dir}/src/../src/./a.txt` }]],
    ["a path through a link", ["file_write", { path: join(dir, "src", "a.txt") }], ["file_write", { path: join(dir, "alias.txt") }]],
    ["a domain in another case or with a trailing dot", ["network", { domain: "Example.COM." }], ["network", { domain: "example.com" }]],
    // Only the action's own target counts, so a classification can be passed whole.
    [
      "a shell command with another path field",
      ["shell_command", { command: "make", path: "/a" }],
      ["shell_command", { command: "make", path: "/b" }],
    ],
  ];
  it.each(same)("is the same for %s", (_name, [actionA, a], [actionB, b]) => {
    expect(scopeOf(actionA, a)).toEqual(scopeOf(actionB, b));
  });

  const different: [string, Row, Row][] = [
    ["another command", ["shell_command", { command: "ls" }], ["shell_command", { command: "ls -la" }]],
    ["spacing inside a word", ["shell_command", { command: "rm -rf a b" }], ["shell_command", { command: "rm -rf ab" }]],
    ["another file", ["file_read", { path: join(dir, "src", "a.txt") }], ["file_read", { path: join(dir, "src", "b.txt") }]],
    [
      "the same file read and written",
      ["file_read", { path: join(dir, "src", "a.txt") }],
      ["file_write", { path: join(dir, "src", "a.txt") }],
    ],
    ["a subdomain", ["network", { domain: "example.com" }], ["network", { domain: "api.example.com" }]],
    ["another tool of an unknown kind", ["unknown", { tool: "mcp__a" }], ["unknown", { tool: "mcp__b" }]],
    ["the same tool name under another kind", ["unknown", { tool: "x" }], ["task_subagent", { tool: "x" }]],
    ["a target and none", ["network", { domain: "example.com" }], ["network", {}]],
    // Hole 2: a grant for a command in the workspace does not cover it in another cwd.
    [
      "the same command in another cwd",
      ["shell_command", { command: "make", cwd: "/a" }],
      ["shell_command", { command: "make", cwd: "/b" }],
    ],
    // Hole 3: a newline separates commands, so it never folds into a space.
    ["a newline where a space was", ["shell_command", { command: "echo cat /x" }], ["shell_command", { command: "echo\ncat /x" }]],
    // Hole 17: a grant for one port of a host is not one for another port.
    ["another port of the same host", ["network", { domain: "127.0.0.1", port: 9 }], ["network", { domain: "127.0.0.1", port: 8080 }]],
  ];
  it.each(different)("differs for %s", (_name, [actionA, a], [actionB, b]) => {
    expect(scopeOf(actionA, a).hash).not.toBe(scopeOf(actionB, b).hash);
  });

  it("normalizes each kind of target", () => {
    expect(scopeOf("shell_command", { command: " a \t b\n\nc " }).normalized).toBe("a b\n\nc");
    expect(scopeOf("shell_command", { command: "make", cwd: join(dir, "src", "..") }).normalized).toBe(`make\ncwd=${dir}`);
    expect(scopeOf("network", { domain: "Example.org", port: 8443 }).normalized).toBe("example.org:8443");
    // A path that cannot be resolved (a loop) is kept as written, not thrown: the call fails, not the turn (hole 13).
    expect(scopeOf("file_read", { path: join(dir, "loop", "x") }).normalized).toBe(join(dir, "loop", "x"));
    expect(scopeOf("file_read", { path: join(dir, "alias.txt") }).normalized).toBe(join(dir, "src", "a.txt"));
    expect(scopeOf("file_write", { path: join(dir, "new", "file.txt") }).normalized).toBe(join(dir, "new", "file.txt"));
    expect(scopeOf("network", { domain: "WWW.Example.org." }).normalized).toBe("www.example.org");
    expect(scopeOf("task_subagent", { tool: "spawn_agent" }).normalized).toBe("spawn_agent");
    expect(scopeOf("task_subagent", {}).normalized).toBe("");
  });

  it("refuses a relative path and an action kind that is not one", () => {
    expect(() => scopeOf("file_read", { path: "src/a.txt" })).toThrow(/absolute path/);
    expect(() => scopeOf("launch_missiles" as PermissionActionKind, { tool: "x" })).toThrow(
      /"launch_missiles" is not a permission action kind/,
    );
  });
});
