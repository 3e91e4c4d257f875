/**
 * The wire surface the references define, checked against schemas/: every named schema
 * file, method, notification and enum value is there, spelled as on the wire.
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { methods, notifications } from "../../generated/registry.js";

const schema = (file: string) => JSON.parse(readFileSync(`schemas/${file}.json`, "utf8"));

const NAMED_FILES = [
  "turn_permission_mode", "turn_permission_profile_selection", "turn_permission_profile_snapshot", "tool_permission_policy_snapshot",
  "turn_execution_security_snapshot", "turn_sandbox_snapshot", "turn_sandbox_mode", "turn_filesystem_sandbox_policy",
  "turn_filesystem_sandbox_entry", "turn_network_policy_snapshot", "turn_process_policy_snapshot", "turn_security_backend_snapshot",
  "turn_security_enforcement_status", "turn_security_degradation", "turn_security_parent_cap_snapshot", "permission_behavior",
  "turn_permission_approval_request", "turn_permission_approval_resolution", "turn_permission_request_opened_notification",
  "turn_permission_request_resolved_notification", "turn_permission_request_respond_params", "turn_permission_request_respond_response",
  "turn_permission_audit_event", "turn_work_block", "turn_work_item", "turn_work_page_params", "turn_work_page_response",
  "turn_work_items_changed_notification", "turn_work_state_changed_notification", "agent_delegation_route_projection",
  "agent_delegation_route_create_params", "agent_delegation_route_list_params", "agent_delegation_route_list_response",
  "agent_delegation_route_revoke_params", "agent_presentation_snapshot",
];

const METHODS = [
  "turn/start", "turn/cancel", "turn/resume", "turn/get", "turn/items", "turn/work/page", "turn/work/items/get",
  "turn/permission/request/respond", "agent/route/create", "agent/route/list", "agent/route/revoke",
  "thread/start", "thread/get", "thread/timeline/page",
  // turnspec's own extension for questions (turn-event-stream.md's QuestionPending has no wire form there).
  "turn/question/respond",
];

const NOTIFICATIONS = [
  "turn/started", "item/started", "item/agent_message/delta", "item/command_execution/output_delta", "item/file_change/output_delta",
  "item/tool/progress", "item/completed", "item/updated", "turn/completed", "turn/failed", "turn/blocked",
  "thread/timeline/blocks/changed", "turn/work/items/changed", "turn/work/state/changed",
  "turn/permission/request/opened", "turn/permission/request/resolved", "turn/permission/audit",
  "turn/execution_window/started", "turn/execution_window/exhausted", "turn/execution_window/checkpointed",
  "turn/execution_window/continued", "turn/execution_window/blocked",
  "item/timeout_detected", "item/recovery_opened", "item/recovery_attached", "item/retry_scheduled", "item/retry_attempt_started",
  "item/recovery_succeeded", "item/recovery_exhausted", "item/tool/retry_scheduled", "item/tool/retry_resolved",
  "item/tool/retry_exhausted", "turn/tool_loop/budget_exceeded", "context/compressing", "context/compressed",
  // turnspec's own extension for questions and handoffs (turn-event-stream.md's QuestionPending and HandoffStarted).
  "turn/question/opened", "turn/question/resolved", "turn/handoff/started",
  // turnspec's own extension for the invite delivery and the wallet prompts (turn-event-stream.md's InviteDelivery,
  // WalletLinkPrompt, WalletUpdatePrompt and WalletRevokePrompt).
  "turn/invite/delivery", "turn/wallet/link_prompt", "turn/wallet/update_prompt", "turn/wallet/revoke_prompt",
];

describe("the wire surface", () => {
  it.each(NAMED_FILES)("has the schema file the references name: %s.json", (file) => {
    expect(existsSync(`schemas/${file}.json`)).toBe(true);
  });

  it("keeps action normalization inline: there is no agent_action.json", () => {
    expect(existsSync("schemas/agent_action.json")).toBe(false);
  });

  it("declares exactly the methods and notifications of the surface", () => {
    expect(Object.keys(methods).sort()).toEqual([...METHODS].sort());
    expect(Object.keys(notifications).sort()).toEqual([...NOTIFICATIONS].sort());
  });

  it("returns the route projection directly from create and revoke", () => {
    expect(methods["agent/route/create"].result).toBe("AgentDelegationRouteProjection");
    expect(methods["agent/route/revoke"].result).toBe("AgentDelegationRouteProjection");
  });

  it.each([
    ["turn_permission_mode", ["full_access", "auto_accept_edits", "supervised"]],
    ["turn_permission_profile_source", ["composer", "defaulted", "inherited_from_parent_turn", "task_permission_cap", "system"]],
    ["permission_behavior", ["allow", "ask", "deny"]],
    ["turn_sandbox_mode", ["unrestricted", "workspace_write", "read_only"]],
    ["turn_security_enforcement_status", ["active", "partially_active", "unavailable"]],
    ["turn_permission_approval_resolution", ["allow_once", "allow_for_turn", "deny", "cancelled", "expired"]],
    ["turn_permission_approval_scope", ["allow_once", "allow_for_turn"]],
    ["turn_mode", ["Chat", "Agent"]],
    ["item_delta_stream", ["agent_message", "stdout", "stderr", "tool_progress", "file_change", "generic"]],
    ["turn_execution_window_status", ["running", "exhausted", "checkpointed", "continued", "completed", "interrupted", "blocked", "failed"]],
    ["turn_execution_window_exhaustion_reason", ["max_agent_rounds_per_window", "max_tool_calls_per_window", "max_wall_clock_ms_per_window", "max_provider_tokens_per_window", "provider_failure_continuation", "runtime_shutdown_continuation"]],
    ["agent_delegation_route_kind", ["execution_bound", "identity_bound"]],
    ["agent_delegation_route_status", ["prepared", "active", "expired", "revoked"]],
    ["agent_delegation_route_action", ["send_message", "start_agent", "create_task", "schedule_task", "review_task_result", "deliver_result"]],
    ["agent_delegation_result_return", ["none", "summary_only", "full_result"]],
  ])("enum %s has exactly the wire values", (file, values) => {
    expect(schema(file).enum).toEqual(values);
  });

  it("starts the wire turn status at InProgress", () => {
    expect(schema("turn_status").enum[0]).toBe("InProgress");
  });

  it.each([
    ["user_input", "type", ["text", "localFile", "localImage", "image", "artifact", "mention"]],
    ["turn_item", "type", ["userMessage", "agentMessage", "reasoning", "systemEvent", "task", "commandExecution", "fileChange", "webSearch", "webFetch", "download", "dynamicToolCall"]],
    ["turn_capability_kind", "type", ["skill", "mcpServer", "mcpTool"]],
    ["execution_backend", "type", ["apiProvider", "cliAgentRuntime", "acpAgentRuntime"]],
  ])("%s is a union tagged by %s with the wire variants", (file, tag, variants) => {
    const union = schema(file);
    expect(union.discriminator).toEqual({ propertyName: tag });
    const tags = union.oneOf.map((branch: { $ref: string }) => JSON.parse(readFileSync(`schemas/${branch.$ref}`, "utf8")).properties[tag].const);
    expect(tags).toEqual(expect.arrayContaining(variants));
  });

  it("has every policy action kind on the policy snapshot, in the wire spelling", () => {
    const policy = schema("tool_permission_policy_snapshot");
    expect(policy.required).toEqual(
      expect.arrayContaining(["default_behavior", "file_read", "file_write", "shell_command", "network", "mcp_read", "mcp_write_or_unknown", "dynamic_skill_tool", "computer_use", "task_subagent"]),
    );
    expect(Object.keys(policy.properties)).toEqual(expect.arrayContaining(["allowed_tools", "denied_tools", "allowed_paths"]));
  });

  it("keeps the prompt manifest fields", () => {
    expect(Object.keys(schema("prompt_manifest").properties)).toEqual(
      expect.arrayContaining(["compiler_version", "profile", "section_ids", "fingerprint_stable", "fingerprint_dynamic", "fingerprint_full", "diagnostics"]),
    );
  });

  it("lists every error reason the references and the gateway rely on", () => {
    const reasons = JSON.parse(readFileSync("schemas/errors.json", "utf8")).errors.map((e: { reason: string }) => e.reason);
    expect(reasons).toEqual(
      expect.arrayContaining([
        "thread_not_found", "turn_not_found", "turn_in_progress", "duplicate_turn_id", "turn_not_blocked", "permission_request_not_found",
        "permission_request_resolved", "route_not_found", "route_validation_failed", "generation_conflict", "idempotency_conflict",
        "unauthorized", "payload_too_large",
      ]),
    );
  });
});
