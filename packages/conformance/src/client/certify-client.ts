/**
 * A client certification run (`turnspec certify --client-cmd`): the suite plays the
 * gateway (the generated dispatcher over WebSocket, each scenario scripting its answers and
 * streams) and drives the client under test through the command protocol. Each scenario
 * gets a client process of its own, so that a client that crashes fails the scenario it
 * crashed in and no other. The results come out as a run report like a gateway's, with the
 * client capability claimed.
 */
import { randomBytes } from "node:crypto";
import { protocol } from "@turnspec/protocol/registry";
import type { Requirement } from "../catalogue.js";
import type { RequirementResult, RunReport, TranscriptEntry } from "../results.js";
import { computeVerdict, toRunReport, type ExpectedFailure, type RunMeta } from "../verdict.js";
import { isAbort, judge, ClientContext, type ClientScenario, type ClientStepRecord } from "./context.js";
import { ScriptedGateway, Stage, type ClientFinding } from "./gateway.js";
import { ClientGone, ClientProcess } from "./process.js";
import { clientScenarios } from "./scenarios.js";

export interface ClientCertifyOptions {
  /** The command that starts the client under test (run through sh). */
  readonly clientCmd: string;
  /** The folder it runs in (default: the current one). */
  readonly cwd?: string;
  /** The client requirements of the suite version certified against. */
  readonly catalogue: readonly Requirement[];
  readonly suite: RunMeta["suite"];
  readonly subject?: string;
  readonly level: "core" | "full";
  readonly selected: ReadonlySet<string>;
  readonly expectedFailures: readonly ExpectedFailure[];
  /** Longest wait of one step. Default 15 s. */
  readonly stepTimeoutMs?: number;
  readonly onStart?: (meta: RunMeta, ids: readonly string[]) => void;
  readonly onResult?: (result: RequirementResult) => void;
  readonly onNotice?: (text: string) => void;
}

/** Requirements checked over every frame of the run rather than by one scenario. */
export const CLIENT_RUN_CHECKS: ReadonlyMap<string, string> = new Map([["CLIENT-REQUESTS-VALID", "every request of the run"]]);

export async function runClientCertification(options: ClientCertifyOptions): Promise<RunReport> {
  const started = performance.now();
  const meta: RunMeta = {
    suite: options.suite,
    schemaHash: protocol.digest,
    client: { command: options.clientCmd },
    ...(options.subject === undefined ? {} : { subject: options.subject }),
    startedAt: new Date().toISOString(),
    capabilities: ["client"],
    requestedLevel: options.level,
  };
  options.onStart?.(
    meta,
    options.catalogue.map((r) => r.id),
  );
  const stepTimeoutMs = options.stepTimeoutMs ?? 15_000;
  const gateway = new ScriptedGateway();
  await gateway.start();
  const runId = randomBytes(3).toString("hex");
  const decided = new Map<string, { record: ClientStepRecord; transcript: TranscriptEntry[] }>();
  const findings: (ClientFinding & { transcript: TranscriptEntry[] })[] = [];
  const running = new Set(options.catalogue.filter((r) => options.selected.has(r.id)).map((r) => r.id));
  const decide = (id: string, record: ClientStepRecord, transcript: TranscriptEntry[]) => {
    const earlier = decided.get(id);
    if (earlier && SEVERITY[earlier.record.outcome] >= SEVERITY[record.outcome]) return;
    decided.set(id, { record, transcript });
  };

  try {
    for (const [n, scenario] of clientScenarios.entries()) {
      if (!scenario.checks.some((id) => running.has(id))) continue;
      const transcript: TranscriptEntry[] = [];
      const records = await runScenario(scenario, { ...options, stepTimeoutMs }, gateway, `${runId}c${n + 1}`, transcript, started);
      for (const [id, record] of records.records) decide(id, record, transcript);
      for (const f of records.findings) findings.push({ ...f, transcript });
    }
  } finally {
    await gateway.close();
  }

  const results: RequirementResult[] = [];
  for (const r of options.catalogue) {
    const base = { id: r.id, level: r.level, capability: r.capability, statement: r.statement, reference: r.reference };
    let result: RequirementResult;
    if (!running.has(r.id))
      result = { ...base, outcome: "skipped", durationMs: 0, message: "not selected by --only/--skip", skipReason: "not_selected" };
    else if (CLIENT_RUN_CHECKS.has(r.id)) {
      const own = findings.filter((f) => f.requirement === r.id);
      result = own.length
        ? {
            ...base,
            outcome: "fail",
            durationMs: 0,
            message: own
              .slice(0, 10)
              .map((f) => f.message)
              .join("\n"),
            transcript: own[0]!.transcript,
          }
        : { ...base, outcome: "pass", durationMs: 0 };
    } else {
      const found = decided.get(r.id);
      if (!found) result = { ...base, outcome: "error", durationMs: 0, message: "no client scenario checks it" };
      else {
        const { record, transcript } = found;
        const failed = record.outcome === "fail" || record.outcome === "error";
        result = {
          ...base,
          outcome: record.outcome,
          durationMs: Math.round(record.durationMs),
          ...(record.message === undefined ? {} : { message: record.message }),
          ...(failed ? { transcript } : {}),
        };
      }
    }
    results.push(result);
    options.onResult?.(result);
  }
  const partial = options.catalogue.some((r) => !options.selected.has(r.id));
  const verdict = computeVerdict(results, {
    capabilities: ["client"],
    requestedLevel: options.level,
    expectedFailures: options.expectedFailures,
    partial,
  });
  return toRunReport(meta, new Date().toISOString(), verdict);
}

/** Worse outcomes first when two scenarios decide one requirement. */
const SEVERITY: Record<RequirementResult["outcome"], number> = { pass: 0, skipped: 1, not_reached: 2, error: 3, fail: 4 };

/**
 * One scenario: a stage of the suite's gateway, a client process that says hello and
 * connects to it, the scenario's steps, then the client closed and stopped.
 */
async function runScenario(
  scenario: ClientScenario,
  options: ClientCertifyOptions & { stepTimeoutMs: number },
  gateway: ScriptedGateway,
  prefix: string,
  transcript: TranscriptEntry[],
  started: number,
): Promise<{ records: Map<string, ClientStepRecord>; findings: ClientFinding[] }> {
  const token = `cert-client-${randomBytes(8).toString("hex")}`;
  const stage = new Stage(token, `/${prefix}`, transcript, started);
  gateway.add(stage);
  const url = gateway.urlOf(stage);
  const client = new ClientProcess(
    options.clientCmd,
    { cwd: options.cwd ?? process.cwd(), env: { TURNSPEC_GATEWAY_URL: url, TURNSPEC_TOKEN: token } },
    transcript,
    started,
  );
  client.onStray = (line) => options.onNotice?.(`the client wrote a line that is not an answer: ${JSON.stringify(line.slice(0, 200))}`);
  const ctx = new ClientContext(client, stage, options.stepTimeoutMs, prefix);
  const first = scenario.checks[0]!;
  try {
    await ctx.step(first, async () => {
      await client.command("hello", { protocol: 1 }, options.stepTimeoutMs);
      await client.command("connect", { url, token }, options.stepTimeoutMs);
    });
    await scenario.run(ctx);
    ctx.settle(scenario.checks, "error", `the scenario "${scenario.name}" ended without checking it`);
  } catch (error) {
    if (!isAbort(error)) {
      const judged = judge(error);
      ctx.settle([scenario.checks.find((id) => !ctx.records.has(id)) ?? first], judged.outcome, judged.message);
    }
    const cause = [...ctx.records].find(([, r]) => r.outcome === "fail" || r.outcome === "error");
    ctx.settle(
      scenario.checks,
      "not_reached",
      `an earlier step of "${scenario.name}" did not pass (${cause?.[0] ?? first}: ${firstLine(cause?.[1].message ?? "")})`,
    );
  } finally {
    // A client that went away after its last answer crashed all the same: the scenario's last step answers for it.
    const crashed = await client.command("close", {}, Math.min(options.stepTimeoutMs, 2_000)).then(
      () => undefined,
      (error: unknown) => (error instanceof ClientGone ? error.message : undefined),
    );
    const last = ctx.lastStep;
    if (crashed && last !== undefined && ctx.records.get(last)?.outcome === "pass")
      ctx.records.set(last, {
        outcome: "fail",
        message: `after its last answer, ${crashed}`,
        durationMs: ctx.records.get(last)!.durationMs,
      });
    await client.stop();
    await gateway.remove(stage);
  }
  // A fault of the suite's own script makes what the scenario decided a harness error.
  if (stage.faults.length)
    for (const id of scenario.checks)
      ctx.records.set(id, {
        outcome: "error",
        message: `harness fault in "${scenario.name}": ${stage.faults.join("; ")}`,
        durationMs: ctx.records.get(id)?.durationMs ?? 0,
      });
  return { records: ctx.records, findings: stage.findings };
}

function firstLine(text: string): string {
  const [line = "", ...rest] = text.split("\n");
  return rest.length ? `${line} …` : line;
}
