/**
 * Checks that test their statements, and blame where it belongs: the reference gateway
 * behind a wrapper that breaks one thing must fail the requirement that states it, and
 * nothing of another capability; a run always ends; what the harness abandoned is not the
 * gateway's fault.
 */
import { describe, expect, it } from "vitest";
import { loadCatalogue } from "../../packages/conformance/src/catalogue.js";
import { certifyWrapped, type Json } from "./wrapped.js";

const catalogue = loadCatalogue();
const capabilityOf = new Map(catalogue.map((r) => [r.id, r.capability]));
const coversOf = new Map(catalogue.map((r) => [r.id, r.covers]));

describe("checks that test their statements", () => {
  it("TURN-START-RESPONSE fails a gateway that streams turn/started before answering turn/start", async () => {
    const held = new Map<string, Json>();
    const { failed, result } = await certifyWrapped(
      {
        out(frame, pass) {
          const turn = frame.result?.turn as { id?: string } | undefined;
          if (frame.id !== undefined && turn?.id && frame.result && Object.keys(frame.result).length === 1) {
            held.set(turn.id, frame);
            return;
          }
          pass(frame);
          if (frame.method === "turn/started" && held.has(frame.params.turn_id)) {
            pass(held.get(frame.params.turn_id)!);
            held.delete(frame.params.turn_id);
          }
        },
      },
      { patterns: ["TURN-START-RESPONSE", "TURN-STARTED-NOTIFIED"], capabilities: ["core"], level: "core" },
    );
    expect(failed).toEqual(["TURN-START-RESPONSE"]);
    expect(result("TURN-START-RESPONSE").message).toMatch(/streamed turn\/started of turn \S+ before answering turn\/start/);
  });

  it("ITEM-COMPLETED-ONCE fails an item a cancelled turn leaves open", async () => {
    const cancelled = new Set<string>();
    const firstItem = new Map<string, Json>();
    const { result, report } = await certifyWrapped(
      {
        in(frame, pass) {
          if (frame.method === "turn/cancel") cancelled.add(frame.params.turn_id);
          pass(frame);
        },
        out(frame, pass) {
          if (frame.method === "item/started" && !firstItem.has(frame.params.turn_id)) firstItem.set(frame.params.turn_id, frame);
          // Before the cancelled turn's terminal: an item that starts and never completes.
          const copy =
            frame.method === "turn/failed" && cancelled.has(frame.params.turn_id) ? firstItem.get(frame.params.turn_id) : undefined;
          if (copy) {
            const item = { ...copy.params.item, id: "item_left_open" };
            pass({ ...copy, params: { ...copy.params, item_id: "item_left_open", item, sequence: frame.params.sequence } });
            pass({ ...frame, params: { ...frame.params, sequence: frame.params.sequence + 1 } });
            return;
          }
          pass(frame);
        },
      },
      { patterns: ["TURN-*", "ITEM-*"], capabilities: ["core"], level: "core" },
    );
    expect(result("ITEM-COMPLETED-ONCE")).toMatchObject({
      outcome: "fail",
      message: expect.stringMatching(
        /ended with turn\/failed\) has items not completed exactly once before it ended: item_left_open \(userMessage\) completed 0 times/,
      ),
    });
  });

  it("ITEM-COMPLETED-ONCE fails a gateway that leaves its open items unfinished when a turn is cancelled, naming each item, for every kind of item left open", async () => {
    // Per turn: the items open now, and, once the turn is cancelled, those left unfinished.
    const open = new Map<string, Map<string, string>>();
    const leftOpen = new Map<string, Set<string>>();
    const shift = new Map<string, number>();
    const renumber = (frame: Json): Json => {
      const turnId = frame.params?.turn_id as string | undefined;
      const by = turnId === undefined ? 0 : (shift.get(turnId) ?? 0);
      return by && typeof frame.params.sequence === "number"
        ? { ...frame, params: { ...frame.params, sequence: frame.params.sequence - by } }
        : frame;
    };
    const named: string[] = [];
    const { failed, errored, result } = await certifyWrapped(
      {
        in(frame, pass) {
          // The scenarios' own cancels; a turn a stopped scenario abandons is not held against the gateway.
          if (frame.method === "turn/cancel" && frame.params.reason !== "the certification scenario stopped early")
            leftOpen.set(frame.params.turn_id, new Set(open.get(frame.params.turn_id)?.keys()));
          pass(frame);
        },
        out(frame, pass) {
          const turnId = frame.params?.turn_id as string | undefined;
          if (turnId !== undefined && frame.method === "item/started")
            open.set(turnId, (open.get(turnId) ?? new Map()).set(frame.params.item_id, frame.params.item.type));
          if (turnId !== undefined && frame.method === "item/completed") {
            open.get(turnId)?.delete(frame.params.item_id);
            // Never completed: dropped, and the turn's later events renumbered, so that only the missing completion is wrong.
            if (leftOpen.get(turnId)?.has(frame.params.item_id)) {
              named.push(`${frame.params.item_id} (${frame.params.item.type})`);
              shift.set(turnId, (shift.get(turnId) ?? 0) + 1);
              return;
            }
          }
          pass(renumber(frame));
        },
      },
      { patterns: ["TURN-*", "ITEM-*", "PERM-*"], capabilities: ["core", "permissions", "surface"] },
    );
    expect(failed).toEqual(["ITEM-COMPLETED-ONCE"]);
    expect(errored).toEqual([]);
    const message = result("ITEM-COMPLETED-ONCE").message!;
    for (const type of ["agentMessage", "commandExecution", "dynamicToolCall"])
      expect(
        named.some((n) => n.endsWith(`(${type})`)),
        type,
      ).toBe(true);
    for (const item of named) expect(message).toContain(`${item} completed 0 times`);
    expect(message).toMatch(/ended with turn\/failed\) has items not completed exactly once before it ended/);
  });

  it("PERM-GRANT-TURN-SCOPED is a MUST, and a grant that leaks into the next turn fails it (not a timeout error)", async () => {
    const granted = new Set<string>();
    const scopes = new Map<string, string>();
    const hidden = new Set<string>();
    const gaps = new Map<string, number>();
    let next = 0;
    const { failed, errored, result, report } = await certifyWrapped(
      {
        in(frame, pass) {
          if (frame.method === "turn/permission/request/respond" && frame.params.resolution === "allow_for_turn")
            granted.add(scopes.get(frame.params.request_id) ?? "");
          pass(frame);
        },
        out(frame, pass, inject) {
          const request =
            frame.method === "turn/permission/request/opened"
              ? (frame.params.request as { request_id: string; turn_id: string; scope_hash: string; resolve_token?: string })
              : undefined;
          if (request) {
            scopes.set(request.request_id, request.scope_hash);
            if (granted.has(request.scope_hash)) {
              // The leak: the wrapper answers for the client, and the client never hears of it.
              hidden.add(request.request_id);
              if (typeof frame.params?.sequence === "number") gaps.set(request.turn_id, (gaps.get(request.turn_id) ?? 0) + 1);
              const params = {
                request_id: request.request_id,
                resolution: "allow_once",
                ...(request.resolve_token ? { resolve_token: request.resolve_token } : {}),
              };
              // Once the gateway has finished opening the request.
              setTimeout(() => inject({ jsonrpc: "2.0", id: `wrap-${++next}`, method: "turn/permission/request/respond", params }), 20);
              return;
            }
          }
          const turnId = frame.params?.turn_id ?? frame.params?.request?.turn_id;
          if (
            (request && hidden.has(request.request_id)) ||
            (frame.method?.startsWith("turn/permission/") && hidden.has(frame.params?.request_id))
          ) {
            // Hidden, and the turn's sequence renumbered so that nothing else shows the gap.
            if (typeof frame.params?.sequence === "number") gaps.set(turnId, (gaps.get(turnId) ?? 0) + 1);
            return;
          }
          const gap = gaps.get(turnId) ?? 0;
          pass(
            gap && typeof frame.params?.sequence === "number"
              ? { ...frame, params: { ...frame.params, sequence: frame.params.sequence - gap } }
              : frame,
          );
        },
      },
      { patterns: ["PERM-*"], capabilities: ["core", "permissions"] },
    );
    expect(catalogue.find((r) => r.id === "PERM-GRANT-TURN-SCOPED")?.level).toBe("MUST");
    expect(failed).toEqual(["PERM-GRANT-TURN-SCOPED"]);
    expect(errored).toEqual([]);
    expect(result("PERM-GRANT-TURN-SCOPED").message).toMatch(
      /the allow_for_turn grant of turn \S+ leaked into the next turn \S+: it ended with turn\/completed without an approval request, and the command ran/,
    );
    expect(report.certified).toBe(false);
  });

  it("TURN-QUESTION-OPEN fails a turn that blocks before its questions are answered, naming how it ended", async () => {
    const started = new Map<string, Json>();
    const ended = new Set<string>();
    const { failed, result } = await certifyWrapped(
      {
        out(frame, pass) {
          if (frame.method === "turn/started") started.set(frame.params.turn_id, frame);
          const turnId = frame.params?.turn_id;
          if (frame.method === "turn/question/opened" && frame.params.index === 1 && started.has(turnId) && !ended.has(turnId)) {
            // Before the second question: the turn blocks, and a blocked turn sends nothing more on its own.
            ended.add(turnId);
            const { turn, thread_id } = started.get(turnId)!.params;
            pass({
              jsonrpc: "2.0",
              method: "turn/blocked",
              params: {
                thread_id,
                turn_id: turnId,
                sequence: frame.params.sequence,
                turn: { ...turn, status: "Blocked" },
                reason: "max_tool_calls_per_window",
                recovery_job_id: "job_wrapped",
              },
            });
          }
          // Every later event of the turn one further on, so that the sequence shows no gap.
          pass(
            ended.has(turnId) && typeof frame.params?.sequence === "number"
              ? { ...frame, params: { ...frame.params, sequence: frame.params.sequence + 1 } }
              : frame,
          );
        },
      },
      { patterns: ["TURN-QUESTION-*"], capabilities: ["core", "surface"] },
    );
    expect(failed).toContain("TURN-QUESTION-OPEN");
    expect(result("TURN-QUESTION-OPEN").message).toMatch(/the turn ended with turn\/blocked without waiting for the answers/);
  });

  it("names the wrong field of an approval request with expected and received, and what the stopped scenario left open is not held against the gateway", async () => {
    const { failed, result } = await certifyWrapped(
      {
        out(frame, pass) {
          if (frame.method === "turn/permission/request/opened")
            pass({ ...frame, params: { ...frame.params, request: { ...frame.params.request, tool_name: "a_shell" } } });
          else pass(frame);
        },
      },
      {
        patterns: ["PERM-ASK-OPENS-REQUEST", "PERM-ALLOW-ONCE", "PERM-AUDIT", "TURN-ORDER-*", "PERM-ORDER-*"],
        capabilities: ["core", "permissions"],
      },
    );
    expect(failed).toEqual(["PERM-ASK-OPENS-REQUEST"]);
    expect(result("PERM-ASK-OPENS-REQUEST").message).toMatch(/: tool_name is "a_shell", expected "shell" \(the request: \{/);
    expect(result("PERM-ALLOW-ONCE")).toMatchObject({
      outcome: "not_reached",
      message: expect.stringMatching(/^an earlier step of "asking and allow_once" did not pass \(PERM-ASK-OPENS-REQUEST: /),
    });
    for (const id of ["TURN-ORDER-ONE-TERMINAL", "PERM-ORDER-RESOLVED-ONCE"]) expect(result(id).outcome).toBe("pass");
  });
});

describe("blame where it belongs", () => {
  it("a claimed capability the gateway does not do fails only its own requirements: core keeps its level", async () => {
    const { report, failed } = await certifyWrapped(
      {
        out(frame, pass) {
          // Windows are never exhausted (a notification only windows scenarios' turns would carry).
          if (frame.method !== "turn/execution_window/exhausted") pass(frame);
        },
      },
      { patterns: ["RPC-*", "THREAD-*", "TURN-*", "ITEM-*", "WIN-*"], capabilities: ["core", "windows"] },
    );
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.filter((id) => capabilityOf.get(id) !== "windows")).toEqual([]);
    expect(report.results.filter((r) => r.capability === "core" && r.outcome !== "pass").map((r) => `${r.id}: ${r.message}`)).toEqual([]);
    expect(report.achievedLevel).toBe("core");
    expect(report.results.find((r) => r.id === "WIN-EXHAUSTED")?.message).toMatch(
      /^the gateway never sent turn\/execution_window\/exhausted \(waited 4000 ms\)/,
    );
  });

  it("one stray field in turn/start results fails RPC-RESPONSE-MATCHES-REQUEST and what covers turn/start; the rest is not reached", async () => {
    const { failed, errored, result } = await certifyWrapped(
      {
        out(frame, pass) {
          if (frame.id !== undefined && frame.result?.turn && Object.keys(frame.result).length === 1)
            pass({ ...frame, result: { ...frame.result, stray: 1 } });
          else pass(frame);
        },
      },
      { patterns: ["*"], capabilities: ["core", "permissions"] },
    );
    expect(errored).toEqual([]);
    expect(failed).toContain("RPC-RESPONSE-MATCHES-REQUEST");
    expect(failed.filter((id) => id !== "RPC-RESPONSE-MATCHES-REQUEST" && !coversOf.get(id)?.includes("turn/start"))).toEqual([]);
    expect(result("RPC-RESPONSE-MATCHES-REQUEST").message).toMatch(/the result of turn\/start is invalid/);
    expect(result("PERM-DENY")).toMatchObject({
      outcome: "not_reached",
      message: expect.stringMatching(/^the gateway sent an invalid result: the result of turn\/start is invalid/),
    });
  });
});

describe("every wait is bounded", () => {
  it("a gateway that leaves a turn/get unanswered fails that step within the step timeout; the console names the wait; the run ends", async () => {
    let dropped = false;
    const asked = new Set<string | number>();
    const notices: string[] = [];
    const { result, report } = await certifyWrapped(
      {
        in(frame, pass) {
          if (frame.method === "turn/get" && !dropped) {
            dropped = true;
            asked.add(frame.id!);
            return;
          }
          pass(frame);
        },
      },
      {
        patterns: ["TURN-GET", "TURN-COMPLETED-NOTIFIED", "TURN-START-RESPONSE", "TURN-STARTED-NOTIFIED"],
        capabilities: ["core"],
        level: "core",
        stepTimeoutMs: 2000,
        notices,
      },
    );
    expect(result("TURN-GET")).toMatchObject({
      outcome: "fail",
      message: expect.stringMatching(/^the gateway never answered: turn\/get got no response within 2000 ms$/),
    });
    expect(
      notices.some((n) =>
        /^waiting \d+ s for the response to turn\/get \(id \d+\) \(scenario "a Chat-mode turn"\); giving up after 2000 ms$/.test(n),
      ),
    ).toBe(true);
    expect(report.finishedAt).toBeTruthy();
  });
});
