/**
 * Canonical digests of a route request: the grant fingerprint a route carries as its
 * receipt, and the params digest that tells an idempotent repeat of agent/route/create or
 * agent/route/revoke from a conflicting reuse of its key. Both hash a canonical JSON
 * (object keys sorted at every depth), so the spelling order of keys never matters.
 */
import { createHash } from "node:crypto";
import type { AgentDelegationRouteProjection } from "@turnspec/protocol/types";

/** The fields of a route projection that are its state rather than what it grants. */
type RouteState = "route_id" | "status" | "generation" | "grant_fingerprint" | "created_at" | "updated_at" | "idempotency_key";

/**
 * What a route grants: a route projection without its state. A projection fits as it is:
 * its state (route_id, status, generation, timestamps, idempotency_key) is not read, so
 * revoking a route or creating the same grant again does not change the fingerprint. The
 * nullable ids mean "not constrained" when null.
 */
export type RouteGrant = Readonly<Omit<AgentDelegationRouteProjection, RouteState>>;

/**
 * Every field of a route grant, once: the fingerprint hashes them, each absent one as null
 * (a nullable id that is not given means the same as null: not constrained).
 */
export const GRANT_FIELDS = [
  "kind",
  "allowed_actions",
  "disclosure",
  "source_execution_id",
  "source_capsule_id",
  "source_thread_id",
  "source_workspace_id",
  "source_gateway_id",
  "destination_execution_id",
  "destination_capsule_id",
  "destination_thread_id",
  "destination_workspace_id",
  "destination_gateway_id",
  "destination_identity_id",
  "destination_execution_profile",
  "source_policy_generation",
  "destination_policy_generation",
  "hop_count",
  "max_hops",
  "expires_at",
  "return_route_id",
] as const satisfies readonly (keyof RouteGrant)[];

// Compiles only while GRANT_FIELDS names every field the generated projection type has beside the route's state.
const grantFieldsComplete: [Exclude<keyof RouteGrant, (typeof GRANT_FIELDS)[number]>] extends [never] ? true : never = true;
void grantFieldsComplete;

/**
 * "gfp_" and the hex SHA-256 of the canonical JSON of the grant's fields. Actions are
 * sorted first: a set of permissions does not depend on the order it was listed in.
 * expires_at is hashed as written, so the same instant at another offset is another grant.
 */
export function grantFingerprint(grant: RouteGrant): string {
  const fields = Object.fromEntries(
    GRANT_FIELDS.map((field) => [field, field === "allowed_actions" ? [...grant.allowed_actions].sort() : (grant[field] ?? null)]),
  );
  return `gfp_${sha256(canonicalJson(fields))}`;
}

/**
 * Hex SHA-256 of the canonical JSON of `params` without idempotency_key: the same request
 * sent again digests the same whatever its key order. Array order counts (a route keeps
 * its actions in the order given, so a reordered list is a different request).
 */
export function paramsDigest(params: object): string {
  const { idempotency_key: _key, ...rest } = params as Record<string, unknown>;
  return sha256(canonicalJson(rest));
}

/**
 * JSON with object keys sorted (by UTF-16 code units) at every depth, no white space.
 * Otherwise as JSON.stringify: undefined members are left out, toJSON is honoured.
 * Written out by hand because JSON.stringify puts integer-like keys ("2", "10") first
 * whatever order an object is built in.
 */
export function canonicalJson(value: unknown): string {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return canonicalJson((value as { toJSON(): unknown }).toJSON());
  }
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort()
      .filter((key) => record[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    return `{${members.join(",")}}`;
  }
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`canonicalJson: ${typeof value} has no JSON form`);
  return text;
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
