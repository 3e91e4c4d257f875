/**
 * The tool gate: whether one tool call may run, decided apart from the round loop that
 * asks. In order: the policy of the turn's profile; the rules no mode overrides (a sandbox
 * escape is always asked; a path outside the turn's roots is never allowed silently); an
 * earlier allow_for_turn grant for the same scope; and finally the client's answer to an
 * approval request. Every decision is audited.
 */
import type { PermissionActionKind } from "@turnspec/protocol/types";
import { classifyToolCall, scopeTargetOf } from "../permissions/classify.js";
import { judgeDomain } from "../permissions/domains.js";
import type { GatewayFiles } from "../permissions/own-files.js";
import { outsideRoots } from "../permissions/paths.js";
import { decide } from "../permissions/policy.js";
import { rootsOf } from "../permissions/roots.js";
import { scopeOf } from "../permissions/scope.js";
import type { ApprovalContext } from "../tools/tool.js";
import type { Approvals } from "../flows/approvals.js";
import type { EventLog, ThreadLookup, TurnReader } from "../engine/ports.js";

export interface ToolGatePorts {
  readonly log: TurnReader & Pick<EventLog, "audit">;
  readonly threads: ThreadLookup;
  readonly approvals: Pick<Approvals, "ask">;
  /** The gateway's own files, which no tool may read or write (own-files.ts). */
  readonly ownFiles?: GatewayFiles;
}

/** The gate's verdict: run, or do not, with what the model is told. */
export type GateVerdict =
  | {
      allowed: true;
      /** The allowance holds for the rest of the turn (an allow_for_turn grant). */
      forTurn?: boolean;
      /** The outside paths this one call may reach. */
      approvedOutside?: readonly string[];
    }
  | { allowed: false; message: string };

export class ToolGate {
  constructor(private readonly ports: ToolGatePorts) {}

  async permit(
    threadId: string,
    turnId: string,
    toolName: string,
    args: Record<string, unknown>,
    cwd: string,
    itemId: string,
    signal: AbortSignal,
    /** The tool's own permission kind (a dynamic tool's), over the classification by name. */
    action?: PermissionActionKind,
    /** What the tool says an approval of this call must name (Tool.approvalContext). */
    context?: ApprovalContext,
  ): Promise<GateVerdict> {
    const g = this.ports;
    const state = g.log.state(turnId)!;
    const profile = state.turn.permission_profile;
    const classified = classifyToolCall(toolName, args, cwd);
    const call = action ? { ...classified, action } : classified;
    // The roots the turn's snapshot records: for a child turn, capped to its parent's.
    const roots = state.turn.security
      ? rootsOf(state.turn.security)
      : [g.threads.thread(threadId).cwd, ...(profile.effective_policy.allowed_paths ?? [])];
    const outside = profile.mode === "full_access" ? [] : outsideRoots(call.paths, roots);
    const target = scopeTargetOf(toolName, call);
    // A call the tool names more of (spawn_agent's destination) is scoped by that too.
    const scope = scopeOf(call.action, context ? { ...target, tool: `${toolName}\n${context.scopeKey}` } : target);
    const audit = { tool_name: toolName, action: call.action, scope_hash: scope.hash };
    // The gateway's own files are out of every tool's reach, in every mode: refused before anyone is asked.
    if (call.action === "file_read" || call.action === "file_write") {
      for (const path of call.paths) {
        const own = g.ownFiles?.match(path);
        if (own === undefined) continue;
        const why = `${path} is ${own}, which no tool may ${call.write ? "write" : "read"} in any permission mode`;
        g.log.audit(threadId, turnId, { kind: "decision_denied", ...audit, behavior: "deny", decided_by: "config", reason: why });
        return { allowed: false, message: `${toolName} is not allowed here: ${why}` };
      }
    }
    let behavior = decide(profile.effective_policy, toolName, call.action);
    let reason = policyReason(profile.mode, call.action, behavior);
    const policyAllows = behavior === "allow";
    if (behavior === "deny") {
      g.log.audit(threadId, turnId, { kind: "decision_denied", ...audit, behavior, decided_by: "policy", reason });
      return { allowed: false, message: `${toolName} is not allowed in this turn: ${reason}` };
    }
    // A restricted network's lists (config network.*): a denied host is refused outright, an
    // allowed one needs no approval; any other host is asked about as the profile says.
    const network = state.turn.security?.network;
    if (network?.mode === "restricted" && call.action === "network" && call.domain !== undefined && call.port !== undefined) {
      const judged = judgeDomain(network, call.domain, call.port);
      if (judged.verdict === "denied") {
        const why = `${call.domain}:${call.port} is denied by the turn's network policy (deny_domains entry ${JSON.stringify(judged.entry)})`;
        g.log.audit(threadId, turnId, { kind: "decision_denied", ...audit, behavior: "deny", decided_by: "config", reason: why });
        return { allowed: false, message: `${toolName} is not allowed to reach ${call.domain}:${call.port} in this turn: ${why}` };
      }
      if (judged.verdict === "allowed") {
        const why = `${call.domain}:${call.port} is in the turn's allow_domains (${JSON.stringify(judged.entry)})`;
        g.log.audit(threadId, turnId, { kind: "decision_allowed", ...audit, behavior: "allow", decided_by: "config", reason: why });
        return { allowed: true };
      }
    }
    if (call.escapeSandbox) {
      behavior = "ask";
      reason = "the call asks to run outside the sandbox, which always needs a one-time approval";
    } else if (outside.length > 0) {
      behavior = "ask";
      reason = `the call reaches ${outside.join(", ")}, outside the turn's roots`;
    }
    if (behavior === "allow") {
      g.log.audit(threadId, turnId, { kind: "decision_allowed", ...audit, behavior, decided_by: "policy", reason });
      return { allowed: true };
    }
    // A grant never covers a call that leaves the roots: such a call is approved once, for
    // exactly the paths it names (approvals.ts offers only allow_once for it).
    if (!call.escapeSandbox && outside.length === 0 && state.grants.has(scope.hash)) {
      g.log.audit(threadId, turnId, {
        kind: "decision_allowed",
        ...audit,
        behavior,
        decided_by: "turn_grant",
        reason: "an earlier allow_for_turn covers this scope",
      });
      return { allowed: true, forTurn: true };
    }
    const resolution = await g.approvals.ask(
      {
        threadId,
        turnId,
        itemId,
        toolName,
        action: call.action,
        scopeHash: scope.hash,
        reason: context ? `${reason}; ${context.reason}` : reason,
        summary: context?.summary ?? summaryOf(toolName, call, args),
        details: {
          arguments: args,
          ...(call.paths.length ? { paths: call.paths } : {}),
          ...(outside.length ? { resolved_outside_paths: outside } : {}),
          ...context?.details,
          scope: scope.normalized,
        },
        outsidePaths: outside,
        sandboxEscape: call.escapeSandbox,
        title: TOOL_TITLES[toolName] ?? "",
        argsJson: JSON.stringify(args),
        ...(policyAllows ? { overrideReason: reason } : {}),
        ...(context?.preview ? { preview: context.preview } : previewOf(toolName, args)),
      },
      signal,
    );
    if (resolution === "allow_once" || resolution === "allow_for_turn") {
      g.log.audit(threadId, turnId, {
        kind: "decision_allowed",
        ...audit,
        behavior,
        decided_by: "resolution",
        resolution,
        reason: `approved ${resolution}`,
      });
      // The outside paths this one call may reach: the tools open those and nothing else outside.
      return {
        allowed: true,
        ...(resolution === "allow_for_turn" ? { forTurn: true } : {}),
        ...(outside.length ? { approvedOutside: outside } : {}),
      };
    }
    g.log.audit(threadId, turnId, {
      kind: "decision_denied",
      ...audit,
      behavior,
      decided_by: "resolution",
      resolution,
      reason: DECLINED[resolution] ?? resolution,
    });
    return { allowed: false, message: `${toolName} did not run: ${DECLINED[resolution] ?? resolution}` };
  }
}

/** A one-line description of a call for the approval prompt. */
function summaryOf(toolName: string, call: ReturnType<typeof classifyToolCall>, args: Record<string, unknown>): string {
  if (call.command !== undefined) return `${call.escapeSandbox ? "Run outside the sandbox" : "Run"}: ${call.command}`;
  if (call.domain !== undefined) return `Fetch ${String(args.url)}`;
  if (call.paths[0] !== undefined) return `${call.write ? "Write" : "Read"} ${call.paths[0]}`;
  return `Use ${toolName}`;
}

/** Why a decision went the way it did, in words for the audit log and the model. */
function policyReason(mode: string, action: string, behavior: string): string {
  return `the ${mode} profile ${behavior === "allow" ? "allows" : behavior === "deny" ? "denies" : "asks before"} ${action}`;
}

/** What the model is told when a call it made does not run. */
const DECLINED: Record<string, string> = {
  deny: "the user denied this call",
  expired: "the approval request expired without an answer, which counts as a denial",
  cancelled: "the approval request was cancelled with the turn",
};

/** Display labels of the built-in tools on an approval card; any other tool gets none (the client derives one). */
const TOOL_TITLES: Readonly<Record<string, string>> = {
  shell: "Run a command",
  read_file: "Read a file",
  write_file: "Write a file",
  web_fetch: "Fetch a web page",
  spawn_agent: "Start a sub-agent",
};

const PREVIEW_CHARS = 400;

/** What a call would do, from its arguments, when that can be shown: the command, the file and its new content, the URL. */
function previewOf(toolName: string, args: Record<string, unknown>): { preview?: { title: string; text: string } } {
  const cut = (text: string) => (text.length <= PREVIEW_CHARS ? text : `${text.slice(0, PREVIEW_CHARS - 1)}…`);
  if (toolName === "shell" && typeof args.command === "string") return { preview: { title: "Command", text: cut(args.command) } };
  if (toolName === "write_file" && typeof args.path === "string" && typeof args.content === "string")
    return { preview: { title: args.path, text: cut(args.content) } };
  if (toolName === "web_fetch" && typeof args.url === "string") return { preview: { title: "URL", text: cut(args.url) } };
  return {};
}
