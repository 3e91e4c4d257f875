/**
 * Hole 8: a child over a route runs in the destination thread, but its roots are capped to
 * its parent's. With the destination's folder outside the parent's roots, a write there
 * is asked about (here left to expire) instead of running silently.
 */
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { TurnPermissionApprovalRequest } from "../../generated/types.js";
import { ofTurn, routeParams, script, startHarness, text, type Harness } from "../gateway/harness.js";

const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-destination-")));
afterAll(() => rmSync(elsewhere, { recursive: true, force: true }));
let h: Harness;
afterEach(async () => {
  expect(h.protocolErrors).toEqual([]);
  await h.close();
});

describe("a child turn over a route", () => {
  it("does not take the destination thread's folder as a root beyond its parent's", async () => {
    // Unanswered requests expire quickly: the child's write is then denied.
    h = await startHarness({ config: { permissions: { request_timeout_ms: 300 } } });
    const source = await h.thread();
    const destination = await h.thread({ cwd: elsewhere });
    const route = await h.client.agentRouteCreate(routeParams(source, destination, { source_execution_id: "trn_route_parent" }));
    const planted = join(elsewhere, "planted.txt");
    const child = script({ tool: "write_file", args: { path: planted, content: "x" } }, { say: "child done" });
    const terminal = h.waitFor(
      (n) => (n.method === "turn/completed" || n.method === "turn/failed") && n.params.turn_id === "trn_route_parent",
    );
    await h.client.turnStart({
      thread_id: source,
      turn_id: "trn_route_parent",
      permission_profile: { mode: "auto_accept_edits" },
      input: text(script({ tool: "spawn_agent", args: { prompt: child, route_id: route.route_id } }, { say: "parent done" })),
    });
    // The launch itself is asked about under auto_accept_edits: approve it.
    const launch = await h.waitFor((n) => n.method === "turn/permission/request/opened" && n.params.turn_id === "trn_route_parent");
    const request = (launch.params as { request: TurnPermissionApprovalRequest }).request;
    await h.client.turnPermissionRequestRespond({
      request_id: request.request_id,
      resolve_token: request.resolve_token!,
      resolution: "allow_once",
    });
    await terminal;
    expect(existsSync(planted)).toBe(false);
    const childTurn = h.store.allTurns().find((t) => t.thread_id === destination)!;
    const childState = h.gateway.turnState(childTurn.turn_id)!;
    expect(childState.turn.security!.sandbox.filesystem.entries.map((e) => e.path)).not.toContain(elsewhere);
    const write = childState.items.find((i) => i.type === "fileChange")!;
    expect(write.status).toBe("declined");
    expect(ofTurn(h.received, "trn_route_parent").some((n) => n.method === "turn/completed")).toBe(true);
  });
});
