/**
 * A spawn_agent approval names where the child would run: over a route, the destination
 * thread, its workspace and folder, and the agent; without one, a new thread of the
 * parent's workspace. The approval's scope is bound to that destination, so approving one
 * destination for the turn does not approve another.
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AgentDelegationRouteProjection } from "../../generated/types.js";
import { ofTurn, routeParams, script, text } from "../gateway/harness.js";
import { h, opened, setup, terminalOf, usePermissionHarness } from "../gateway/permission-steps.js";

usePermissionHarness();
const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-destination-")));
afterAll(() => rmSync(elsewhere, { recursive: true, force: true }));

async function routeTo(source: string, destination: string, parentTurn: string): Promise<AgentDelegationRouteProjection> {
  return h.client.agentRouteCreate(routeParams(source, destination, { source_execution_id: parentTurn }));
}

describe("the approval of spawn_agent", () => {
  it("over a route names the destination thread, its workspace and folder, and the agent", async () => {
    const source = await setup();
    const destination = await h.thread({ cwd: elsewhere });
    const route = await routeTo(source, destination, "trn_spawn_dest");
    const turn = "trn_spawn_dest";
    await h.client.turnStart({
      thread_id: source,
      turn_id: turn,
      permission_profile: { mode: "auto_accept_edits" },
      input: text(script({ tool: "spawn_agent", args: { prompt: script({ say: "child" }), route_id: route.route_id } }, { say: "done" })),
    });
    await h.waitFor(() => opened(ofTurn(h.received, turn)).length === 1);
    const [request] = opened(ofTurn(h.received, turn));
    expect(request!.summary).toBe(`Start a sub-agent (agent_reference) over route ${route.route_id} in thread ${destination}`);
    expect(request!.reason).toContain(`in thread ${destination} of workspace ws_default, folder ${elsewhere}`);
    expect(request!.details.destination).toEqual({
      route_id: route.route_id,
      thread_id: destination,
      workspace_id: "ws_default",
      cwd: elsewhere,
      agent_id: "agent_reference",
    });
    expect(request!.preview).toEqual({
      title: "Destination",
      text: `thread ${destination} in workspace ws_default\nfolder ${elsewhere}\nagent agent_reference\nroute ${route.route_id}`,
    });
    await h.client.turnPermissionRequestRespond({
      request_id: request!.request_id,
      resolve_token: request!.resolve_token,
      resolution: "deny",
    });
    await terminalOf(turn);
  });

  it("is scoped to its destination: allowing a route's destination for the turn does not allow a new thread", async () => {
    const source = await setup();
    const destination = await h.thread({ cwd: elsewhere });
    const turn = "trn_spawn_scope";
    const route = await routeTo(source, destination, turn);
    await h.client.turnStart({
      thread_id: source,
      turn_id: turn,
      permission_profile: { mode: "auto_accept_edits" },
      input: text(
        script(
          { tool: "spawn_agent", args: { prompt: script({ say: "over the route" }), route_id: route.route_id } },
          { tool: "spawn_agent", args: { prompt: script({ say: "in a new thread" }) } },
          { say: "done" },
        ),
      ),
    });
    await h.waitFor(() => opened(ofTurn(h.received, turn)).length === 1);
    const [first] = opened(ofTurn(h.received, turn));
    await h.client.turnPermissionRequestRespond({
      request_id: first!.request_id,
      resolve_token: first!.resolve_token,
      resolution: "allow_for_turn",
    });
    await h.waitFor(() => opened(ofTurn(h.received, turn)).length === 2);
    const second = opened(ofTurn(h.received, turn))[1]!;
    expect(second.scope_hash).not.toBe(first!.scope_hash);
    expect(second.summary).toBe("Start a sub-agent (agent_reference) in a new thread of workspace ws_default");
    expect(second.details.destination).toMatchObject({ thread_id: null, workspace_id: "ws_default", agent_id: "agent_reference" });
    await h.client.turnPermissionRequestRespond({ request_id: second.request_id, resolve_token: second.resolve_token, resolution: "deny" });
    await terminalOf(turn);
  });
});
