/**
 * Approval requests: a tool call the policy asks about waits here until the client
 * answers with turn/permission/request/respond, the request expires (a denial), or the
 * turn is cancelled. Every step is an event in the turn's log (opened, resolved, audit),
 * so a request's state is read back from the log like everything else.
 */
import { randomUUID } from "node:crypto";
import type {
  PermissionActionKind,
  TurnPermissionApprovalRequest,
  TurnPermissionApprovalResolution,
  TurnPermissionRequestRespondParams,
  TurnPermissionRequestRespondResponse,
} from "@turnspec/protocol/types";
import { protocolError } from "@turnspec/protocol/server";
import { invalidParams } from "@turnspec/rpc";
import type { ResolvedConfig } from "../config.js";
import { asNotification } from "../log/fold.js";
import { TOKEN_REJECTION_WORDS, type ResolveTokens } from "../permissions/tokens.js";
import { isTurnFenced } from "../store/rules.js";
import type { StoredEvent } from "../store/store.js";
import { SOLE_INSTANCE, type Clock, type EventLog, type ResolutionPorts, type ThreadLookup, type TurnReader } from "../engine/ports.js";

/** What approvals are built from. */
export interface ApprovalPorts {
  readonly log: EventLog & TurnReader;
  readonly threads: ThreadLookup;
  readonly clock: Clock;
}

export interface ApprovalAsk {
  readonly threadId: string;
  readonly turnId: string;
  readonly itemId: string;
  readonly toolName: string;
  readonly action: PermissionActionKind;
  readonly scopeHash: string;
  readonly reason: string;
  readonly summary: string;
  readonly details: Record<string, unknown>;
  readonly outsidePaths: readonly string[];
  readonly sandboxEscape: boolean;
  /** Display label of the tool; may be empty. */
  readonly title: string;
  readonly argsJson: string;
  /** Why the pause overrides a call the policy allows; absent for an ordinary gated call. */
  readonly overrideReason?: string;
  readonly preview?: { readonly title: string; readonly text: string };
}

interface Waiting {
  readonly threadId: string;
  readonly turnId: string;
  readonly scopeHash: string;
  /** Lets the waiting call go on: its expiry timer and its listener on the turn's signal are dropped first. */
  readonly resolve: (resolution: TurnPermissionApprovalResolution) => void;
}

export class Approvals {
  private readonly waiting = new Map<string, Waiting>();
  /** Where every request this gateway knows of lives: open ones and resolved ones, for a late or repeated answer. */
  private readonly index = new Map<string, { readonly threadId: string; readonly turnId: string }>();

  constructor(
    private readonly ports: ApprovalPorts,
    private readonly config: ResolvedConfig,
    private readonly tokens: ResolveTokens,
    /** On a store shared by several instances: where the turn runs, and who records a resolution. */
    private readonly cluster: ResolutionPorts = SOLE_INSTANCE,
  ) {}

  /**
   * An event another instance committed: a request it opened is remembered (an answer may
   * come here), and when it recorded the answer to a request, the tool call waiting for it
   * here goes on. Nothing is recorded again: the answer is in the log already.
   */
  readonly onForeignEvent = (event: StoredEvent): void => {
    const n = asNotification(event);
    if (n.method === "turn/permission/request/opened") this.remember(n.params.request.request_id, event.thread_id, event.turn_id);
    else if (n.method === "turn/permission/request/resolved") this.letGo(n.params.request_id, n.params.resolution);
  };

  /** Lets the call waiting for a request go on with `resolution`, recording nothing. */
  private letGo(requestId: string, resolution: TurnPermissionApprovalResolution): void {
    const waiting = this.waiting.get(requestId);
    if (!waiting) return;
    this.waiting.delete(requestId);
    waiting.resolve(resolution);
  }

  /** Records where a request lives (start-up walks the log and tells this of every request). */
  remember(requestId: string, threadId: string, turnId: string): void {
    this.index.set(requestId, { threadId, turnId });
  }

  /** Opens a request and resolves with its resolution. An aborted signal resolves it as cancelled. */
  ask(ask: ApprovalAsk, signal: AbortSignal): Promise<TurnPermissionApprovalResolution> {
    const g = this.ports;
    const requestId = `perm_${randomUUID().replace(/-/g, "")}`;
    const created = g.clock.now();
    const expiresAt = new Date(created.getTime() + this.config.permissionRequestTimeoutMs).toISOString();
    const workspaceId = g.threads.thread(ask.threadId).workspace_id;
    const request: TurnPermissionApprovalRequest = {
      request_id: requestId,
      workspace_id: workspaceId,
      thread_id: ask.threadId,
      turn_id: ask.turnId,
      tool_name: ask.toolName,
      action: ask.action,
      scope_hash: ask.scopeHash,
      reason: ask.reason,
      title: ask.title,
      args_json: ask.argsJson,
      ...(ask.overrideReason ? { override_reason: ask.overrideReason } : {}),
      ...(ask.preview ? { preview: ask.preview } : {}),
      summary: ask.summary,
      details: ask.details,
      // A sandbox escape, or a call reaching outside the roots, runs only after an
      // allow_once for that very request (turn_permission_approval_request.json).
      allowed_scopes: ask.sandboxEscape || ask.outsidePaths.length > 0 ? ["allow_once"] : ["allow_once", "allow_for_turn"],
      ...(ask.outsidePaths.length ? { outside_paths: [...ask.outsidePaths] } : {}),
      ...(ask.sandboxEscape ? { sandbox_escape: true } : {}),
      item_id: ask.itemId,
      created_at: created.toISOString(),
      expires_at: expiresAt,
      resolve_token: this.tokens.mint({ request_id: requestId, turn_id: ask.turnId, thread_id: ask.threadId, expires_at: expiresAt }),
    };
    this.remember(requestId, ask.threadId, ask.turnId);
    g.log.publish(ask.threadId, ask.turnId, "turn/permission/request/opened", { request });
    g.log.audit(ask.threadId, ask.turnId, {
      kind: "request_opened",
      request_id: requestId,
      tool_name: ask.toolName,
      action: ask.action,
      scope_hash: ask.scopeHash,
      reason: ask.reason,
    });
    return new Promise((resolve) => {
      // Resolved by the gateway itself, nobody is answered: a failure to record it is the turn's to report.
      const resolveQuietly = (resolution: TurnPermissionApprovalResolution) => {
        try {
          this.resolve(requestId, resolution);
        } catch {
          // The waiting call goes on (never allowed: this is an expiry or a cancel), even when
          // the store failed before the resolution was decided; the turn's next record throws the failure.
          this.letGo(requestId, resolution);
        }
      };
      const timer = setTimeout(() => resolveQuietly("expired"), this.config.permissionRequestTimeoutMs);
      const cancel = () => resolveQuietly("cancelled");
      // A turn may ask many times: each request's listener goes with it, not with the turn.
      const letGo = (resolution: TurnPermissionApprovalResolution) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", cancel);
        resolve(resolution);
      };
      this.waiting.set(requestId, { threadId: ask.threadId, turnId: ask.turnId, scopeHash: ask.scopeHash, resolve: letGo });
      if (signal.aborted) cancel();
      else signal.addEventListener("abort", cancel, { once: true });
    });
  }

  /** Records a resolution and lets the waiting tool call go on. Returns when it was resolved, or undefined if it no longer waits. */
  private resolve(requestId: string, resolution: TurnPermissionApprovalResolution): string | undefined {
    const waiting = this.waiting.get(requestId);
    if (!waiting) return undefined;
    if (!this.cluster.claim(waiting.turnId, `permission:${requestId}`)) {
      // Another instance recorded an answer first: the call waits on for it, which the
      // log has now, and this resolution is not recorded (an answer is told it was too late).
      this.cluster.catchUp(waiting.turnId);
      return undefined;
    }
    this.waiting.delete(requestId);
    const resolvedAt = this.ports.clock.nowIso();
    try {
      // Recorded for the request: a commit the turn lost is left for the turn to report.
      this.ports.log.publish(
        waiting.threadId,
        waiting.turnId,
        "turn/permission/request/resolved",
        { request_id: requestId, resolution, resolved_at: resolvedAt, scope_hash: waiting.scopeHash },
        "request",
      );
      this.ports.log.audit(
        waiting.threadId,
        waiting.turnId,
        { kind: "request_resolved", request_id: requestId, resolution, scope_hash: waiting.scopeHash },
        "request",
      );
    } finally {
      // The waiting call goes on either way: if the log lost the turn's events, its next record fails the turn.
      waiting.resolve(resolution);
    }
    return resolvedAt;
  }

  /**
   * The answer to a request whose turn another instance runs: recorded here, in the
   * turn's log; that instance reads it there and lets its waiting tool call go on.
   */
  private resolveForElsewhere(
    requestId: string,
    where: { readonly threadId: string; readonly turnId: string },
    scopeHash: string,
    resolution: TurnPermissionApprovalResolution,
  ): string | undefined {
    if (!this.cluster.runsElsewhere(where.turnId)) return undefined;
    if (!this.cluster.claim(where.turnId, `permission:${requestId}`)) {
      this.cluster.catchUp(where.turnId);
      throw alreadyResolved(requestId, this.ports.log.state(where.turnId)?.requests.get(requestId)?.resolution);
    }
    const resolvedAt = this.ports.clock.nowIso();
    this.ports.log.publish(
      where.threadId,
      where.turnId,
      "turn/permission/request/resolved",
      { request_id: requestId, resolution, resolved_at: resolvedAt, scope_hash: scopeHash },
      "request",
    );
    this.ports.log.audit(
      where.threadId,
      where.turnId,
      { kind: "request_resolved", request_id: requestId, resolution, scope_hash: scopeHash },
      "request",
    );
    return resolvedAt;
  }

  /** turn/permission/request/respond. */
  respond(params: TurnPermissionRequestRespondParams): TurnPermissionRequestRespondResponse {
    const where = this.index.get(params.request_id);
    const state = where && this.ports.log.state(where.turnId)?.requests.get(params.request_id);
    if (!where || !state) {
      throw protocolError("permission_request_not_found", `No permission request ${params.request_id} exists`, {
        request_id: params.request_id,
      });
    }
    if (state.resolution) throw alreadyResolved(params.request_id, state.resolution);
    if (this.config.requireResolveToken || params.resolve_token !== undefined) {
      const check = this.tokens.verify(
        params.resolve_token,
        { request_id: params.request_id, turn_id: where.turnId, thread_id: where.threadId },
        this.ports.clock.now(),
      );
      if (!check.ok) {
        throw protocolError(
          "unauthorized",
          `The resolve token for ${params.request_id} is ${TOKEN_REJECTION_WORDS[check.reason]}; the request stays open`,
          {
            request_id: params.request_id,
            detail: check.reason,
          },
        );
      }
    }
    if (params.resolution !== "deny" && !state.request.allowed_scopes.includes(params.resolution)) {
      throw invalidParams(
        "turn/permission/request/respond",
        `request ${params.request_id} can only be approved with ${state.request.allowed_scopes.join(" or ")}; the request stays open`,
        [
          {
            pointer: "/resolution",
            message: `must be one of ${[...state.request.allowed_scopes, "deny"].join(", ")} for this request`,
            received: params.resolution,
          },
        ],
      );
    }
    const waitedHere = this.waiting.has(params.request_id);
    let resolvedAt: string | undefined;
    try {
      resolvedAt = waitedHere
        ? this.resolve(params.request_id, params.resolution)
        : this.resolveForElsewhere(params.request_id, where, state.request.scope_hash, params.resolution);
    } catch (error) {
      // This instance's run of the turn was fenced off it (another instance took the turn over): it records nothing.
      if (isTurnFenced(error)) throw notRunningHere(params.request_id);
      throw error;
    }
    if (resolvedAt === undefined && waitedHere) {
      // Another instance's answer was recorded first.
      throw alreadyResolved(params.request_id, this.ports.log.state(where.turnId)?.requests.get(params.request_id)?.resolution);
    }
    // Open in the log but not waited for: its turn is no longer running here.
    if (resolvedAt === undefined) throw notRunningHere(params.request_id);
    return {
      request_id: params.request_id,
      thread_id: where.threadId,
      turn_id: where.turnId,
      resolution: params.resolution,
      resolved_at: resolvedAt,
    };
  }
}

function alreadyResolved(requestId: string, resolution: TurnPermissionApprovalResolution | undefined) {
  return protocolError(
    "permission_request_resolved",
    `Permission request ${requestId} was already resolved${resolution ? ` (${resolution})` : " on another instance"}; nothing runs twice`,
    { request_id: requestId, ...(resolution ? { resolution } : {}) },
  );
}

/** The answer to a request whose turn no longer runs here (it ended, or another instance took it over). */
function notRunningHere(requestId: string) {
  return protocolError(
    "permission_request_resolved",
    `Permission request ${requestId} can no longer be answered: its turn is not running`,
    {
      request_id: requestId,
    },
  );
}
