/**
 * Route status as of now, and admission: a route admits work only while it is active,
 * unexpired, at the expected generation, under current policy, for an allowed action and
 * from its own source thread. Each refusal has a row; the base route admits.
 */
import { describe, expect, it } from "vitest";
import type { AgentDelegationRouteStatus } from "../../generated/types.js";
import {
  ADMISSION_REFUSALS,
  type AdmissionContext,
  type AdmissionRefusal,
  type AdmissionRoute,
  admission,
  effectiveStatus,
} from "../../packages/gateway/src/routes/status.js";

const NOW = new Date("2026-03-01T12:00:00.000Z");

describe("effectiveStatus", () => {
  const rows: [string, AgentDelegationRouteStatus, string | null, AgentDelegationRouteStatus][] = [
    ["active without expiry", "active", null, "active"],
    ["active, expiring later", "active", "2026-03-01T12:00:00.001Z", "active"],
    ["active, expiring exactly now", "active", "2026-03-01T12:00:00Z", "expired"],
    ["active, expired a millisecond ago", "active", "2026-03-01T11:59:59.999Z", "expired"],
    ["active, expiring now at another offset", "active", "2026-03-01T07:00:00-05:00", "expired"],
    ["active, expiring later at another offset", "active", "2026-03-01T13:00:01+01:00", "active"],
    ["prepared, past its expiry", "prepared", "2026-02-01T00:00:00Z", "expired"],
    ["prepared, before its expiry", "prepared", "2026-04-01T00:00:00Z", "prepared"],
    ["revoked, past its expiry", "revoked", "2026-02-01T00:00:00Z", "revoked"],
    ["revoked without expiry", "revoked", null, "revoked"],
    ["stored as expired", "expired", "2026-02-01T00:00:00Z", "expired"],
    // Fail closed: an expiry that cannot be read must not make the route unbounded.
    ["active with an unreadable expiry", "active", "next week", "expired"],
  ];
  it.each(rows)("%s", (_name, status, expires_at, want) => {
    expect(effectiveStatus({ status, expires_at }, NOW)).toBe(want);
  });
});

describe("admission", () => {
  const route = (): AdmissionRoute => ({
    route_id: "rte_1",
    status: "active",
    expires_at: "2026-03-02T00:00:00Z",
    generation: 2,
    allowed_actions: ["send_message", "create_task"],
    source_policy_generation: 3,
    destination_policy_generation: 5,
    source_workspace_id: "ws_src",
    destination_workspace_id: "ws_dst",
    source_thread_id: "th_src",
    kind: "identity_bound",
    source_execution_id: "ex_src",
  });
  // Different generations per workspace, so a swap of source and destination would show.
  const POLICY: Record<string, number> = { ws_src: 3, ws_dst: 5 };
  const context = (overrides: Partial<AdmissionContext> = {}): AdmissionContext => ({
    now: NOW,
    policyGeneration: (ws) => POLICY[ws] ?? 1,
    action: "send_message",
    sourceThreadId: "th_src",
    ...overrides,
  });

  type Row = { route?: Partial<AdmissionRoute>; ctx?: Partial<AdmissionContext>; want: AdmissionRefusal | undefined; says?: string };
  const rows: [string, Row][] = [
    ["the base route", { want: undefined }],
    ["a revoked route", { route: { status: "revoked" }, want: "revoked", says: "route rte_1 is revoked" }],
    ["a revoked route past its expiry", { route: { status: "revoked", expires_at: "2026-01-01T00:00:00Z" }, want: "revoked" }],
    [
      "an active route past its expiry",
      { route: { expires_at: "2026-03-01T12:00:00Z" }, want: "expired", says: "expired at 2026-03-01T12:00:00Z" },
    ],
    ["a route stored as expired", { route: { status: "expired", expires_at: "2026-03-01T00:00:00Z" }, want: "expired" }],
    ["an active route without expiry", { route: { expires_at: null }, want: undefined }],
    ["a prepared route", { route: { status: "prepared" }, want: "not_active", says: "is prepared, not active" }],
    [
      "another generation than expected",
      { ctx: { expectedGeneration: 1 }, want: "generation_mismatch", says: "is at generation 2, not the expected 1" },
    ],
    ["the expected generation", { ctx: { expectedGeneration: 2 }, want: undefined }],
    ["no expected generation, whatever the route's", { route: { generation: 9 }, want: undefined }],
    [
      "a source policy that changed since",
      {
        ctx: { policyGeneration: (ws) => (ws === "ws_src" ? 4 : 5) },
        want: "source_policy_changed",
        says: "policy generation 3 of workspace ws_src, which is now at 4",
      },
    ],
    [
      "a destination policy that changed since",
      {
        ctx: { policyGeneration: (ws) => (ws === "ws_src" ? 3 : 6) },
        want: "destination_policy_changed",
        says: "policy generation 5 of workspace ws_dst, which is now at 6",
      },
    ],
    [
      "an action the route does not allow",
      {
        ctx: { action: "start_agent" },
        want: "action_not_allowed",
        says: "does not allow start_agent; it allows send_message, create_task",
      },
    ],
    ["another allowed action", { ctx: { action: "create_task" }, want: undefined }],
    [
      "a caller in another thread",
      { ctx: { sourceThreadId: "th_dst" }, want: "wrong_source", says: "leads from thread th_src, not from th_dst" },
    ],
    // Checked in order: the first refusal wins, and a caller from another thread learns
    // nothing about the route beyond that it is not its own.
    ["a revoked route, asked from another thread", { route: { status: "revoked" }, ctx: { sourceThreadId: "th_x" }, want: "wrong_source" }],
    ["a stale generation on a prepared route", { route: { status: "prepared" }, ctx: { expectedGeneration: 1 }, want: "not_active" }],
    ["an unallowed action from another thread", { ctx: { action: "deliver_result", sourceThreadId: "th_x" }, want: "wrong_source" }],
    // Hole 9: an execution_bound route admits its own source execution only.
    [
      "an execution_bound route used by another execution",
      {
        route: { kind: "execution_bound" },
        ctx: { executionId: "ex_other" },
        want: "wrong_execution",
        says: "is bound to execution ex_src, not to ex_other",
      },
    ],
    ["an execution_bound route used by a caller naming none", { route: { kind: "execution_bound" }, want: "wrong_execution" }],
    [
      "an execution_bound route used by its own execution",
      { route: { kind: "execution_bound" }, ctx: { executionId: "ex_src" }, want: undefined },
    ],
  ];

  it.each(rows)("%s", (_name, row) => {
    const verdict = admission({ ...route(), ...row.route }, context(row.ctx));
    if (row.want === undefined) {
      expect(verdict).toEqual({ admitted: true });
      return;
    }
    expect(verdict).toMatchObject({ admitted: false, reason: row.want });
    if (row.says !== undefined && !verdict.admitted) expect(verdict.message).toContain(row.says);
  });

  it("has a row for every refusal reason", () => {
    expect(new Set(rows.map(([, row]) => row.want).filter((want) => want !== undefined))).toEqual(new Set(ADMISSION_REFUSALS));
  });
});
