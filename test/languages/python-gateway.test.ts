/**
 * Slow: the Python gateway of examples/gateways/python, written on the package `turnspec
 * generate --lang python` makes. It certifies at Full for core and permissions, run as its README
 * says (from the repository root, through the virtual environment); the copy of the generated
 * package it imports is what `generate --check` expects; it passes pyright --strict. And what
 * certification does not reach: the requests it refuses rather than ignores, an approval answered
 * only with the request's own resolve token, and a cancelled command stopped with whatever it
 * started.
 */
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { TurnPermissionApprovalRequest, UserInput } from "../../generated/types.js";
import { ModelServer } from "../../packages/conformance/src/model-server.js";
import type { RunReport } from "../../packages/conformance/src/results.js";
import { RpcError } from "../../packages/rpc/src/index.js";
import { spawnStdioTransport } from "../../packages/rpc/src/transport/child-process.js";
import { startStrictClient } from "../../bench/strict-client.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const python = join(root, ".venv/bin/python");
const folder = "examples/gateways/python";
const GATEWAY = `.venv/bin/python ${folder}/gateway.py --provider-url {provider_url}`;
const CLAIMED = ["core", "permissions"];

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The gateway on a scripted model, with a strict client over its stdio, and a folder for its threads. */
async function startGateway() {
  const model = new ModelServer();
  const url = await model.start();
  cleanups.push(() => model.close());
  const transport = spawnStdioTransport(python, [join(folder, "gateway.py"), "--provider-url", url], { cwd: root, stderr: "collect" });
  cleanups.push(() => transport.close());
  const strict = await startStrictClient(transport);
  cleanups.push(() => expect(strict.protocolErrors).toEqual([]));
  const { thread } = await strict.client.threadStart({ cwd: mkdtempSync(join(tmpdir(), "turnspec-pygw-")), mode: "Agent" });
  return { model, ...strict, thread };
}

const text = (value: string): UserInput[] => [{ type: "text", text: value }];

/** The reason of the error a request was refused with. */
async function refusal(request: Promise<unknown>): Promise<{ reason: string | undefined; data: unknown }> {
  const error = await request.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof RpcError)) throw new Error(`expected an error answer, got ${error === undefined ? "a result" : String(error)}`);
  return { reason: error.reason, data: error.data };
}

const ofTurn = (turnId: string) => (n: AnyNotification) => (n.params as { turn_id?: string }).turn_id === turnId;

/** Whether process `pid` is gone (or a zombie nobody has reaped yet: it runs nothing). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
}

describe.skipIf(!existsSync(python))("the Python gateway on the generated package", () => {
  it("certifies at Full for core and permissions", () => {
    const report = join(mkdtempSync(join(tmpdir(), "turnspec-pygw-")), "report.json");
    const run = spawnSync("node", ["bin/turnspec.js", "certify", "--gateway-cmd", GATEWAY, "--capabilities", CLAIMED.join(","), "--json", report], { cwd: root, encoding: "utf8", timeout: 240_000 });
    const result = JSON.parse(readFileSync(report, "utf8")) as RunReport;
    // Every requirement of the claimed capabilities passes, SHOULD and MAY included.
    expect(result.results.filter((r) => CLAIMED.includes(r.capability) && r.outcome !== "pass").map((r) => `${r.id} ${r.outcome}: ${r.message ?? ""}`)).toEqual([]);
    expect(result).toMatchObject({ status: "certified", achievedLevel: "full", capabilities: CLAIMED });
    expect(run.stdout).toContain("Certified Full (Full requested) for core, permissions");
    expect(run.status, run.stderr).toBe(0);
  }, 300_000);

  it("imports a copy of the generated package that generate --check finds up to date, and passes pyright --strict", async () => {
    const check = spawnSync("node", ["bin/turnspec.js", "generate", "--lang", "python", "--schemas", "schemas", "--out", `${folder}/agent_gateway`, "--check"], { cwd: root, encoding: "utf8" });
    expect(check.stdout).toContain(`${folder}/agent_gateway/ is up to date`);
    expect(check.status, check.stderr).toBe(0);
    const { stdout } = await promisify(execFile)(join(root, "node_modules/.bin/pyright"), ["-p", `${folder}/pyrightconfig.json`], { cwd: root, maxBuffer: 16 * 1024 * 1024 }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    expect(stdout).toContain("0 errors, 0 warnings, 0 informations");
  }, 300_000);

  it("refuses what it does not serve, naming it, and starts nothing", async () => {
    const { client, thread, model } = await startGateway();
    expect(await refusal(client.threadStart({ cwd: join(thread.cwd, "no-such-folder") }))).toMatchObject({ reason: "invalid_params", data: { field: "cwd" } });
    const lists = await refusal(client.turnStart({ thread_id: thread.id, turn_id: "trn_lists", input: text("never runs"), permission_profile: { mode: "supervised", allowed_tools: ["shell"] } }));
    expect(lists).toMatchObject({ reason: "invalid_params", data: { field: "permission_profile.allowed_tools" } });
    const image = await refusal(client.turnStart({ thread_id: thread.id, turn_id: "trn_image", input: [...text("look"), { type: "image", url: "https://example.com/a.png" }] }));
    expect(image).toMatchObject({ reason: "invalid_params", data: { pointer: "/input/1" } });
    const runtime = await refusal(client.turnStart({ thread_id: thread.id, turn_id: "trn_runtime", input: text("never runs"), cli_runtime_options: { effort: "high" } }));
    expect(runtime).toMatchObject({ reason: "invalid_params", data: { field: "cli_runtime_options" } });
    for (const turnId of ["trn_lists", "trn_image", "trn_runtime"]) expect((await refusal(client.turnGet({ thread_id: thread.id, turn_id: turnId }))).reason).toBe("turn_not_found");
    expect(model.unscripted).toEqual([]);
  }, 60_000);

  it("runs an approved call only when the answer carries the request's own resolve token", async () => {
    const { client, thread, model, waitFor } = await startGateway();
    const token = ModelServer.newToken();
    const script = model.script(token, [{ reply: { toolCalls: [{ tool: "shell", args: { command: "echo approved > approved.txt; echo ran" } }] } }, { reply: { text: "done" } }]);
    await client.turnStart({ thread_id: thread.id, turn_id: "trn_token", input: text(`Run it ${token}`), mode: "Agent", permission_profile: { mode: "supervised" } });
    const opened = await waitFor((n) => n.method === "turn/permission/request/opened" && ofTurn("trn_token")(n));
    const request = (opened.params as { request: TurnPermissionApprovalRequest }).request;
    expect(request).toMatchObject({ tool_name: "shell", action: "shell_command", allowed_scopes: ["allow_once", "allow_for_turn"] });
    expect(request.resolve_token).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const answer = { request_id: request.request_id, resolution: "allow_once" } as const;
    expect((await refusal(client.turnPermissionRequestRespond(answer))).reason).toBe("unauthorized");
    const altered = `${request.resolve_token!.slice(0, -1)}${request.resolve_token!.endsWith("A") ? "B" : "A"}`;
    expect((await refusal(client.turnPermissionRequestRespond({ ...answer, resolve_token: altered }))).reason).toBe("unauthorized");
    expect(existsSync(join(thread.cwd, "approved.txt"))).toBe(false);
    await client.turnPermissionRequestRespond({ ...answer, resolve_token: request.resolve_token! });
    const end = await waitFor((n) => n.method === "turn/completed" && ofTurn("trn_token")(n));
    expect((end.params as { turn: { status: string } }).turn.status).toBe("Completed");
    expect(readFileSync(join(thread.cwd, "approved.txt"), "utf8")).toBe("approved\n");
    expect(script.problems).toEqual([]);
  }, 60_000);

  it("stops a cancelled command with what it started, and completes its item before the turn's end", async () => {
    const { client, thread, model, waitFor, received } = await startGateway();
    const token = ModelServer.newToken();
    // The sleep holds none of the command's pipes: only stopping the command's whole process group stops it.
    model.script(token, [{ reply: { toolCalls: [{ tool: "shell", args: { command: "sleep 300 > /dev/null 2>&1 & echo $! > sleep.pid; echo started; wait" } }] } }]);
    await client.turnStart({ thread_id: thread.id, turn_id: "trn_cancel", input: text(`Wait ${token}`), mode: "Agent" });
    await waitFor((n) => n.method === "item/command_execution/output_delta" && ofTurn("trn_cancel")(n));
    const sleeping = Number(readFileSync(join(thread.cwd, "sleep.pid"), "utf8"));
    cleanups.push(() => gone(sleeping) || process.kill(sleeping, "SIGKILL"));
    expect(gone(sleeping)).toBe(false);
    const { turn } = await client.turnCancel({ thread_id: thread.id, turn_id: "trn_cancel", reason: "enough" });
    expect(turn).toMatchObject({ status: "Interrupted", error: { kind: "cancelled", message: "cancelled: enough" } });
    // Signalled before the answer; gone once the kernel has run its exit, which a loaded machine may take a moment to.
    await expect.poll(() => gone(sleeping)).toBe(true);
    const events = received.filter(ofTurn("trn_cancel")).map((n) => `${n.method}${n.method === "item/completed" ? ` ${(n.params as { item: { type: string; status: string } }).item.type} ${(n.params as { item: { status: string } }).item.status}` : ""}`);
    expect(events.slice(-2)).toEqual(["item/completed commandExecution cancelled", "turn/failed"]);
  }, 60_000);
});
