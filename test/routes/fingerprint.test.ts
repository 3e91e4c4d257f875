/**
 * Canonical digests of route requests: the same grant or params fingerprint the same
 * however their keys are ordered, and any change to what they say changes the digest.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson, grantFingerprint, paramsDigest, type RouteGrant } from "../../packages/gateway/src/routes/fingerprint.js";

function grant(): Required<{ -readonly [K in keyof RouteGrant]: RouteGrant[K] }> {
  return {
    kind: "execution_bound",
    allowed_actions: ["send_message", "create_task", "deliver_result"],
    disclosure: { text: true, artifacts: false, context: false, userInput: true, resultReturn: "summary_only" },
    source_execution_id: "exe_1",
    source_capsule_id: "cap_1",
    source_thread_id: "th_1",
    source_workspace_id: "ws_1",
    source_gateway_id: "gw_1",
    destination_execution_id: "exe_2",
    destination_capsule_id: "cap_2",
    destination_thread_id: "th_2",
    destination_workspace_id: "ws_1",
    destination_gateway_id: "gw_1",
    destination_identity_id: "agent_2",
    destination_execution_profile: "profile_2",
    source_policy_generation: 3,
    destination_policy_generation: 3,
    hop_count: 1,
    max_hops: 3,
    expires_at: "2026-03-02T12:00:00Z",
    return_route_id: "rte_back",
  };
}

/** The same object with its keys, and those of nested objects, in reverse order. */
function reversedKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(reversedKeys) as T;
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reversedKeys(v)]),
  ) as T;
}

describe("canonicalJson", () => {
  it("sorts keys at every depth and keeps array order", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it("sorts integer-like keys as strings too, which JSON.stringify does not", () => {
    expect(JSON.stringify({ a: 1, 10: 2, 2: 3 })).toBe('{"2":3,"10":2,"a":1}');
    expect(canonicalJson({ a: 1, 10: 2, 2: 3 })).toBe('{"10":2,"2":3,"a":1}');
  });

  it("leaves out undefined members as JSON does", () => {
    expect(canonicalJson({ a: undefined, b: [undefined], c: "x" })).toBe('{"b":[null],"c":"x"}');
  });
});

describe("grantFingerprint", () => {
  it('is "gfp_" and a hex SHA-256, pinned for a known grant', () => {
    // Fingerprints are stored as route receipts: a change to the recipe shows up here, and
    // must be deliberate, since stored receipts would stop matching regenerated ones. The
    // value was computed apart from this code, with Python's
    // json.dumps(fields, sort_keys=True, separators=(",", ":")) and hashlib.sha256.
    const fingerprint = grantFingerprint(grant());
    expect(fingerprint).toMatch(/^gfp_[0-9a-f]{64}$/);
    expect(fingerprint).toBe("gfp_de481fd13f67a39e30421a8620dc84b508ca7e802e763a311123899866933fa3");
  });

  it("is the same whatever the order of keys or actions", () => {
    const reordered = reversedKeys(grant());
    reordered.allowed_actions = ["deliver_result", "send_message", "create_task"];
    expect(Object.keys(reordered)[0]).toBe("return_route_id");
    expect(grantFingerprint(reordered)).toBe(grantFingerprint(grant()));
  });

  it("reads only the grant, not the route's state", () => {
    const projection = {
      ...grant(),
      route_id: "rte_1",
      status: "revoked",
      generation: 7,
      grant_fingerprint: "gfp_old",
      created_at: "2026-03-01T00:00:00Z",
      updated_at: "2026-03-01T01:00:00Z",
      idempotency_key: "k",
    };
    expect(grantFingerprint(projection)).toBe(grantFingerprint(grant()));
  });

  it("treats an absent optional id and a null one alike", () => {
    const optional = [
      "destination_execution_id",
      "destination_capsule_id",
      "destination_identity_id",
      "destination_execution_profile",
      "expires_at",
      "return_route_id",
    ] as const;
    const absent: Record<string, unknown> = grant();
    const nulls: Record<string, unknown> = grant();
    for (const field of optional) {
      delete absent[field];
      nulls[field] = null;
    }
    expect(grantFingerprint(absent as unknown as RouteGrant)).toBe(grantFingerprint(nulls as unknown as RouteGrant));
    expect(grantFingerprint(absent as unknown as RouteGrant)).not.toBe(grantFingerprint(grant()));
  });

  type G = ReturnType<typeof grant>;
  const changes: [keyof G, (g: G) => void][] = [
    ["kind", (g) => void (g.kind = "identity_bound")],
    ["allowed_actions", (g) => void (g.allowed_actions = g.allowed_actions.slice(0, -1))],
    ["disclosure", (g) => void (g.disclosure.context = true)],
    ["source_execution_id", (g) => void (g.source_execution_id = "exe_9")],
    ["source_capsule_id", (g) => void (g.source_capsule_id = "cap_9")],
    ["source_thread_id", (g) => void (g.source_thread_id = "th_9")],
    ["source_workspace_id", (g) => void (g.source_workspace_id = "ws_9")],
    ["source_gateway_id", (g) => void (g.source_gateway_id = "gw_9")],
    ["destination_execution_id", (g) => void (g.destination_execution_id = null)],
    ["destination_capsule_id", (g) => void (g.destination_capsule_id = "cap_9")],
    ["destination_thread_id", (g) => void (g.destination_thread_id = "th_9")],
    ["destination_workspace_id", (g) => void (g.destination_workspace_id = "ws_9")],
    ["destination_gateway_id", (g) => void (g.destination_gateway_id = "gw_9")],
    ["destination_identity_id", (g) => void (g.destination_identity_id = "agent_9")],
    ["destination_execution_profile", (g) => void (g.destination_execution_profile = "profile_9")],
    ["source_policy_generation", (g) => void (g.source_policy_generation = 4)],
    ["destination_policy_generation", (g) => void (g.destination_policy_generation = 4)],
    ["hop_count", (g) => void (g.hop_count = 2)],
    ["max_hops", (g) => void (g.max_hops = 4)],
    ["expires_at", (g) => void (g.expires_at = "2026-03-02T12:00:01Z")],
    ["return_route_id", (g) => void (g.return_route_id = null)],
  ];

  it.each(changes)("changes with %s", (_field, change) => {
    const changed = grant();
    change(changed);
    expect(grantFingerprint(changed)).not.toBe(grantFingerprint(grant()));
  });

  it("changes with each disclosure class", () => {
    const seen = new Set([grantFingerprint(grant())]);
    for (const change of [
      (g: G) => void (g.disclosure.text = false),
      (g: G) => void (g.disclosure.artifacts = true),
      (g: G) => void (g.disclosure.userInput = false),
      (g: G) => void (g.disclosure.resultReturn = "full_result"),
    ]) {
      const changed = grant();
      change(changed);
      seen.add(grantFingerprint(changed));
    }
    expect(seen.size).toBe(5);
  });

  it("has a change row for every grant field", () => {
    expect(changes.map(([field]) => field).sort()).toEqual(Object.keys(grant()).sort());
  });
});

describe("paramsDigest", () => {
  const params = () => ({
    kind: "execution_bound",
    source_thread_id: "th_1",
    allowed_actions: ["send_message", "create_task"],
    disclosure: { text: true, resultReturn: "none" },
    hop_count: 0,
    idempotency_key: "key-1",
  });

  it("is the hex SHA-256 of the canonical params without idempotency_key", () => {
    const { idempotency_key: _key, ...rest } = params();
    expect(paramsDigest(params())).toBe(createHash("sha256").update(canonicalJson(rest)).digest("hex"));
    expect(paramsDigest(params())).toMatch(/^[0-9a-f]{64}$/);
  });

  it("ignores the idempotency key, and does not remove it from the params", () => {
    const withKey = params();
    const otherKey = { ...params(), idempotency_key: "key-2" };
    const { idempotency_key: _key, ...withoutKey } = params();
    expect(paramsDigest(otherKey)).toBe(paramsDigest(withKey));
    expect(paramsDigest(withoutKey)).toBe(paramsDigest(withKey));
    expect(withKey.idempotency_key).toBe("key-1");
  });

  it("is the same whatever the key order", () => {
    expect(paramsDigest(reversedKeys(params()))).toBe(paramsDigest(params()));
  });

  const changes: [string, (p: ReturnType<typeof params>) => void][] = [
    ["a changed value", (p) => void (p.source_thread_id = "th_2")],
    ["a nested change", (p) => void (p.disclosure.text = false)],
    ["a number for another", (p) => void (p.hop_count = 1)],
    // A route keeps its actions in the order given, so another order is another request.
    ["reordered actions", (p) => void p.allowed_actions.reverse()],
    ["an added field", (p) => Object.assign(p, { return_route_id: "rte_1" })],
    ["a removed field", (p) => void delete (p as Partial<typeof p>).kind],
  ];
  it.each(changes)("changes with %s", (_name, change) => {
    const changed = params();
    change(changed);
    expect(paramsDigest(changed)).not.toBe(paramsDigest(params()));
  });
});
