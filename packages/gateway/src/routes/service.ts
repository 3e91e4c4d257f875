/**
 * Delegation routes (agent/route/create, list, revoke) and their admission: the rules of
 * agent-delegation-routes.md over the event store. Validation, the cycle check, digests
 * and admission are pure modules beside this one; this file sequences them and persists.
 *
 * Terms as this gateway maps them: an agent execution is a turn (execution id = turn id),
 * its capsule is the turn's thread, and the gateway id comes from the configuration. This
 * gateway has one permission configuration for all its workspaces, so every workspace's
 * policy generation is the gateway's: it starts at 1 and goes up by one each time the
 * gateway starts with a permission configuration different from the one before.
 */
import { createHash, randomUUID } from "node:crypto";
import type {
  AgentDelegationRouteAction,
  AgentDelegationRouteCreateParams,
  AgentDelegationRouteListParams,
  AgentDelegationRouteListResponse,
  AgentDelegationRouteProjection,
  AgentDelegationRouteRevokeParams,
} from "@turnspec/protocol/types";
import { protocolError } from "@turnspec/protocol/server";
import { invalidParams } from "@turnspec/rpc";
import type { ResolvedConfig } from "../config.js";
import type { EventStore, RouteRecord } from "../store/store.js";
import { grantFingerprint, paramsDigest, type RouteGrant } from "./fingerprint.js";
import { parseRfc3339 } from "./rfc3339.js";
import { wouldCloseCycle } from "./graph.js";
import { admission, effectiveStatus } from "./status.js";
import { validateCreate } from "./validate.js";

const POLICY_GENERATION = "policy_generation";
const PERMISSION_DIGEST = "permission_config_digest";

export class RouteService {
  constructor(
    private readonly store: EventStore,
    private readonly config: ResolvedConfig,
    private readonly clock: { now(): Date },
  ) {}

  /** The workspace a thread really belongs to; undefined when there is no such thread. */
  private threadWorkspace(threadId: string): string | undefined {
    return this.store.getThread(threadId)?.workspace_id;
  }

  /** The current policy generation of a workspace (see the file comment). */
  policyGeneration(_workspaceId: string): number {
    return Number(this.store.getMeta(POLICY_GENERATION) ?? "1");
  }

  /** Called at start-up: a permission configuration different from the one the store last saw raises the policy generation. */
  noteConfiguration(): void {
    // What may run without asking is the permission configuration; a change makes older routes stale.
    const { allowedPaths, requireResolveToken } = this.config;
    const digest = createHash("sha256").update(JSON.stringify({ allowedPaths, requireResolveToken })).digest("hex");
    const previous = this.store.getMeta(PERMISSION_DIGEST);
    if (previous !== undefined && previous !== digest) this.store.setMeta(POLICY_GENERATION, String(this.policyGeneration("") + 1));
    if (previous !== digest) this.store.setMeta(PERMISSION_DIGEST, digest);
  }

  /** A stored route as clients see it: expiry is read at the time of asking. */
  view(record: RouteRecord): AgentDelegationRouteProjection {
    const route = record.route;
    return { ...route, status: effectiveStatus(route, this.clock.now()) };
  }

  route(routeId: string): AgentDelegationRouteProjection | undefined {
    const record = this.store.getRoute(routeId);
    return record ? this.view(record) : undefined;
  }

  /**
   * The earlier request an idempotency key was used for: its route id when the params are
   * the same, an idempotency_conflict when they differ, undefined for a new key.
   */
  private earlierUse(operation: string, key: string | undefined, params: object): string | undefined {
    if (key === undefined) return undefined;
    const earlier = this.store.getIdempotency(operation, key);
    if (!earlier) return undefined;
    if (earlier.params_digest !== paramsDigest(params)) {
      throw protocolError("idempotency_conflict", `Idempotency key "${key}" was already used for ${operation} with different params`, {
        idempotency_key: key,
        route_id: earlier.route_id,
      });
    }
    return earlier.route_id;
  }

  create(params: AgentDelegationRouteCreateParams): AgentDelegationRouteProjection {
    // On a store shared by several instances, what is read below (the key, the live routes
    // for the cycle check and the per-source limit) and the route written are one decision:
    // a create on another instance for the workspace waits until this one is committed.
    // Routes stay inside one workspace (cross_workspace_destination), so its lock covers
    // every cycle and source the new route can touch; a wrong declared workspace is refused below.
    this.store.shared?.lockRoutes(params.source_workspace_id);
    // The key is recorded with the new route's id before the route is stored, so a repeat
    // after a crash in between completes that same route instead of making a second one.
    const reserved = this.earlierUse("agent/route/create", params.idempotency_key, params);
    const existing = reserved === undefined ? undefined : this.route(reserved);
    if (existing) return existing;
    for (const threadId of [params.source_thread_id, params.destination_thread_id]) {
      if (this.threadWorkspace(threadId) === undefined)
        throw protocolError("thread_not_found", `Thread ${threadId} does not exist`, { thread_id: threadId });
    }
    const now = this.clock.now();
    const checked = validateCreate(params, {
      now,
      gatewayId: this.config.gatewayId,
      policyGeneration: (ws) => this.policyGeneration(ws),
      maxHops: this.config.maxRouteHops,
      route: (id) => this.route(id),
    });
    if (!checked.ok) throw protocolError("route_validation_failed", checked.message, { detail: checked.detail, ...checked.data });
    // The declared workspaces must be the threads' own: a route is checked against where
    // its threads really are, not where the caller says they are.
    for (const [side, threadId, declared] of [
      ["source", params.source_thread_id, params.source_workspace_id],
      ["destination", params.destination_thread_id, params.destination_workspace_id],
    ] as const) {
      const workspace = this.threadWorkspace(threadId);
      if (workspace !== declared) {
        throw protocolError(
          "route_validation_failed",
          `The ${side} thread ${threadId} belongs to workspace ${workspace}, not to the declared ${declared}`,
          {
            detail: "workspace_mismatch",
            thread_id: threadId,
          },
        );
      }
    }

    const live = this.store
      .allRoutes()
      .map((r) => this.view(r))
      .filter((r) => r.status === "active");
    if (!isReturnOnly(checked.actions)) {
      const edges = live
        .filter((r) => !isReturnOnly(r.allowed_actions))
        .map((r) => ({ routeId: r.route_id, source: r.source_thread_id, destination: r.destination_thread_id }));
      const cycle = wouldCloseCycle({ source: params.source_thread_id, destination: params.destination_thread_id }, edges);
      if (cycle) {
        throw protocolError(
          "route_validation_failed",
          `A route from ${params.source_thread_id} to ${params.destination_thread_id} would close a cycle of live routes: ${cycle.join(" → ")}`,
          {
            detail: "cycle_detected",
            cycle,
          },
        );
      }
    }
    // Counted per source thread, which is checked to exist: execution ids are the caller's
    // word, and made-up ones would each start a fresh count.
    const fromSource = live.filter((r) => r.source_thread_id === params.source_thread_id).length;
    if (fromSource >= this.config.maxRoutesPerSource) {
      throw protocolError(
        "route_validation_failed",
        `Thread ${params.source_thread_id} is already the source of ${fromSource} live routes, the most this gateway allows`,
        {
          detail: "edge_limit_exceeded",
          limit: this.config.maxRoutesPerSource,
        },
      );
    }

    const at = now.toISOString();
    const grant: RouteGrant = {
      kind: params.kind,
      allowed_actions: checked.actions,
      disclosure: checked.disclosure,
      source_policy_generation: params.source_policy_generation,
      destination_policy_generation: params.destination_policy_generation,
      hop_count: params.hop_count,
      max_hops: params.max_hops,
      // Stored in UTC: the same instant always reads, and fingerprints, the same.
      expires_at: params.expires_at === undefined ? null : new Date(parseRfc3339(params.expires_at)!).toISOString(),
      return_route_id: params.return_route_id ?? null,
      source_execution_id: params.source_execution_id,
      source_capsule_id: params.source_capsule_id,
      source_thread_id: params.source_thread_id,
      source_workspace_id: params.source_workspace_id,
      source_gateway_id: params.source_gateway_id,
      destination_execution_id: params.destination_execution_id ?? null,
      destination_capsule_id: params.destination_capsule_id ?? null,
      destination_thread_id: params.destination_thread_id,
      destination_workspace_id: params.destination_workspace_id,
      destination_gateway_id: params.destination_gateway_id,
      ...(params.destination_identity_id === undefined ? {} : { destination_identity_id: params.destination_identity_id }),
      ...(params.destination_execution_profile === undefined
        ? {}
        : { destination_execution_profile: params.destination_execution_profile }),
    };
    const routeId = reserved ?? `rte_${randomUUID().replace(/-/g, "")}`;
    if (params.idempotency_key !== undefined && reserved === undefined) {
      this.store.putIdempotency(params.idempotency_key, {
        operation: "agent/route/create",
        params_digest: paramsDigest(params),
        route_id: routeId,
      });
    }
    const route: AgentDelegationRouteProjection = {
      route_id: routeId,
      status: "active",
      generation: 1,
      grant_fingerprint: grantFingerprint(grant),
      ...grant,
      created_at: at,
      updated_at: at,
      ...(params.idempotency_key === undefined ? {} : { idempotency_key: params.idempotency_key }),
    };
    this.store.insertRoute(route);
    return route;
  }

  list(params: AgentDelegationRouteListParams): AgentDelegationRouteListResponse {
    const limit = params.limit ?? 50;
    let after = 0;
    if (params.cursor !== undefined) {
      const decoded = Number(Buffer.from(params.cursor, "base64url").toString("utf8"));
      if (!Number.isSafeInteger(decoded) || decoded < 0) {
        throw invalidParams("agent/route/list", `cursor "${params.cursor}" is not one this gateway issued`, [
          { pointer: "/cursor", message: "is not a cursor of this list", received: params.cursor },
        ]);
      }
      after = decoded;
    }
    // One more than asked: whether another page follows is known without a second query.
    const records = this.store.routesBySource(params.source_execution_id, after, limit + 1);
    const page = records.slice(0, limit);
    const more = records.length > limit;
    return {
      routes: page.map((r) => this.view(r)),
      next_cursor: more ? Buffer.from(String(page.at(-1)!.ordinal)).toString("base64url") : null,
    };
  }

  revoke(params: AgentDelegationRouteRevokeParams): AgentDelegationRouteProjection {
    const repeatedId = this.earlierUse("agent/route/revoke", params.idempotency_key, params);
    const repeated = repeatedId === undefined ? undefined : this.route(repeatedId);
    if (repeated) return repeated;
    const record = this.store.getRoute(params.route_id);
    if (!record) throw protocolError("route_not_found", `Route ${params.route_id} does not exist`, { route_id: params.route_id });
    const current = record.route.generation;
    const conflict = () =>
      protocolError(
        "generation_conflict",
        `Route ${params.route_id} is at generation ${this.store.getRoute(params.route_id)!.route.generation}, not ${params.expected_generation}; it was not changed`,
        {
          route_id: params.route_id,
          current_generation: this.store.getRoute(params.route_id)!.route.generation,
        },
      );
    if (params.expected_generation !== current) throw conflict();
    const route = record.route;
    let result = this.view(record);
    if (route.status !== "revoked") {
      const revoked: AgentDelegationRouteProjection = {
        ...route,
        status: "revoked",
        generation: current + 1,
        updated_at: this.clock.now().toISOString(),
      };
      // Compare-and-set: of two revokes holding the same generation, exactly one wins.
      if (!this.store.updateRoute(revoked, current)) throw conflict();
      result = revoked;
    }
    if (params.idempotency_key !== undefined) {
      this.store.putIdempotency(params.idempotency_key, {
        operation: "agent/route/revoke",
        params_digest: paramsDigest(params),
        route_id: params.route_id,
      });
    }
    return result;
  }

  /** Whether a delegation from `sourceThreadId` may use the route now; the reason when not. */
  admit(routeId: string, sourceThreadId: string, action: AgentDelegationRouteAction, expectedGeneration?: number, executionId?: string) {
    const route = this.route(routeId);
    if (!route) return { admitted: false as const, reason: "not_found", message: `route ${routeId} does not exist` };
    const verdict = admission(route, {
      now: this.clock.now(),
      policyGeneration: (ws) => this.policyGeneration(ws),
      ...(expectedGeneration === undefined ? {} : { expectedGeneration }),
      action,
      sourceThreadId,
      ...(executionId === undefined ? {} : { executionId }),
    });
    return verdict.admitted ? { admitted: true as const, route } : verdict;
  }
}

/** A route that only carries results back: not a delegation edge. */
function isReturnOnly(actions: readonly string[]): boolean {
  return actions.length > 0 && actions.every((a) => a === "deliver_result");
}
