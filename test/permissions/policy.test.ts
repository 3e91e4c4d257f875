/**
 * The mode → policy matrix (turns-api.md, "Supported modes"), every action kind in every
 * built-in mode, read through decide() as the engine reads it; and the tool lists.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { PermissionActionKind, PermissionBehavior, TurnPermissionMode } from "../../generated/types.js";
import { decide, policyForMode } from "../../packages/gateway/src/permissions/policy.js";

// The kinds come from the schema, so a kind added there without a row here fails below.
const ACTION_KINDS = (
  JSON.parse(readFileSync(new URL("../../schemas/permission_action_kind.json", import.meta.url), "utf8")) as {
    enum: PermissionActionKind[];
  }
).enum;

// Written out from the spec's table, not derived from policy.ts.
const A = "allow";
const Q = "ask";
const MATRIX: Record<TurnPermissionMode, Record<PermissionActionKind, PermissionBehavior>> = {
  full_access: {
    file_read: A,
    file_write: A,
    shell_command: A,
    network: A,
    mcp_read: A,
    mcp_write_or_unknown: A,
    dynamic_skill_tool: A,
    computer_use: A,
    task_subagent: A,
    unknown: A,
  },
  auto_accept_edits: {
    file_read: A,
    file_write: A,
    shell_command: Q,
    network: Q,
    mcp_read: A,
    mcp_write_or_unknown: Q,
    dynamic_skill_tool: Q,
    computer_use: Q,
    task_subagent: Q,
    unknown: Q,
  },
  supervised: {
    file_read: A,
    file_write: Q,
    shell_command: Q,
    network: Q,
    mcp_read: A,
    mcp_write_or_unknown: Q,
    dynamic_skill_tool: Q,
    computer_use: Q,
    task_subagent: Q,
    unknown: Q,
  },
};

describe("the mode matrix", () => {
  it("covers every action kind the schema defines", () => {
    expect(ACTION_KINDS).toHaveLength(10);
    for (const row of Object.values(MATRIX)) expect(Object.keys(row).sort()).toEqual([...ACTION_KINDS].sort());
  });

  const cases = (Object.keys(MATRIX) as TurnPermissionMode[]).flatMap((mode) =>
    ACTION_KINDS.map((action) => [mode, action, MATRIX[mode][action]] as const),
  );
  it.each(cases)("%s: %s → %s", (mode, action, want) => {
    expect(decide(policyForMode(mode), "some_tool", action)).toBe(want);
  });

  it("routes unknown actions through default_behavior", () => {
    const policy = { ...policyForMode("full_access"), default_behavior: "deny" as const };
    expect(decide(policy, "mystery", "unknown")).toBe("deny");
    expect(decide(policy, "mystery", "file_read")).toBe("allow");
  });
});

describe("the tool lists", () => {
  it("denied_tools wins over the mode and over allowed_tools", () => {
    const policy = { ...policyForMode("full_access"), denied_tools: ["shell"], allowed_tools: ["shell", "read_file"] };
    expect(decide(policy, "shell", "shell_command")).toBe("deny");
    expect(decide(policy, "read_file", "file_read")).toBe("allow");
  });

  it("allowed_tools limits what may run, and the mode still decides the tools on it", () => {
    const full = { ...policyForMode("full_access"), allowed_tools: ["read_file"] };
    expect(decide(full, "read_file", "file_read")).toBe("allow");
    expect(decide(full, "write_file", "file_write")).toBe("deny");
    const supervised = { ...policyForMode("supervised"), allowed_tools: ["shell"] };
    // Listed, but supervised still asks before a shell command: the list does not widen.
    expect(decide(supervised, "shell", "shell_command")).toBe("ask");
    expect(decide(supervised, "read_file", "file_read")).toBe("deny");
  });

  it("an empty allowed_tools list lets nothing run", () => {
    expect(decide({ ...policyForMode("full_access"), allowed_tools: [] }, "read_file", "file_read")).toBe("deny");
  });
});
