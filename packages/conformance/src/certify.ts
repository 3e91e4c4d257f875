/**
 * A certification run: starts the scripted model server, starts the gateway under test
 * (a command on stdio) or connects to it (a WebSocket URL), runs the scenarios of the
 * selected requirements side by side over one connection, and turns what they found into
 * one result per requirement of the catalogue.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { orderingRules } from "@turnspec/protocol/ordering";
import { protocol } from "@turnspec/protocol/registry";
import type { Transport } from "@turnspec/rpc";
import { spawnStdioTransport } from "@turnspec/rpc/transport";
import { connectWebSocket } from "@turnspec/rpc/transport";
import { loadCatalogue, loadSuite, requirementsAt, type Requirement } from "./catalogue.js";
import { ModelServer } from "./model-server.js";
import type { ToolMapInput } from "./tool-contract.js";
import type { Capability, GatewayStop, RequirementResult, RunReport, TranscriptEntry } from "./results.js";
import { isAbort, ScenarioContext, type Scenario, type StepRecord } from "./scenario.js";
import { scenarios } from "./scenarios/index.js";
import { CLIENT_RUN_CHECKS } from "./client/certify-client.js";
import { clientScenarios } from "./client/scenarios.js";
import { QUESTION_TIMEOUT_MS } from "./scenarios/questions.js";
import { GatewaySession, type Finding, type ScenarioChannel } from "./session.js";
import { computeVerdict, toRunReport, type ExpectedFailure, type RunMeta } from "./verdict.js";

/** What `{question_timeout_ms}` in a gateway command becomes (see the questions scenarios). */
export { QUESTION_TIMEOUT_MS };

export interface CertifyOptions {
  /** The suite version to certify against (default: the current one): its requirements, with their levels then. */
  readonly suite?: string;
  /** What the vendor calls the gateway, for the reports and the certificate. */
  readonly subject?: string;
  /**
   * The gateway command (stdio); `{provider_url}` is replaced by the model server's URL and
   * `{question_timeout_ms}` by QUESTION_TIMEOUT_MS, a question timeout this run can wait out.
   */
  readonly gatewayCmd?: string;
  /** The gateway's WebSocket URL. */
  readonly gatewayUrl?: string;
  /** An open transport to a gateway run in this process (with `model`, which it must already use). */
  readonly transport?: Transport;
  readonly token?: string;
  /** Claimed capabilities (core is always run). */
  readonly capabilities: readonly Capability[];
  readonly level: "core" | "full";
  /** The requirement ids to run; the others are reported skipped. */
  readonly selected: ReadonlySet<string>;
  readonly expectedFailures: readonly ExpectedFailure[];
  /** The gateway's own id, named by delegation routes. Default gw_local. */
  readonly gatewayId?: string;
  /** Reference tool and argument names → the gateway's own (see tool-contract.ts). */
  readonly toolMap?: ToolMapInput;
  /** Port of the scripted model server (default: a free one); a gateway started beforehand is pointed at it. */
  readonly providerPort?: number;
  /** An already started model server to use instead of starting one (its gateway already points at it). */
  readonly model?: ModelServer;
  /** Longest wait of one step. Default 15 s. */
  readonly stepTimeoutMs?: number;
  /** How long a turn may stay quiet before turn/get is asked whether it ended. Default 3 s. */
  readonly quietMs?: number;
  /** Scenarios run side by side. Default 4. */
  readonly concurrency?: number;
  /** Where the gateway command runs (default: the current working folder, as a shell would run it). */
  readonly cwd?: string;
  /** Receives each result as it is decided. */
  readonly onStart?: (meta: RunMeta, ids: readonly string[]) => void;
  readonly onResult?: (result: RequirementResult) => void;
  /**
   * Receives what the console should say while the run goes on: a wait that passed a few
   * seconds (what for, in which scenario), a line the gateway wrote that is not JSON.
   */
  readonly onNotice?: (text: string) => void;
  /** Told once, before the results it decides, when the gateway went away before the run ended. */
  readonly onStop?: (stop: GatewayStop) => void;
  /** After how long a wait is named through onNotice. Default 3 s. */
  readonly noticeAfterMs?: number;
}

/** How a requirement is checked: by a scenario, or over the whole run; `does` is the catalogue's `observes`. */
export interface CheckSource {
  readonly kind: "scenario" | "run";
  readonly name: string;
  readonly does: string;
}

/** Checks that watch every frame of the run rather than a scenario: the connection, and each ordering rule. */
export function runChecks(): Map<string, { name: string; rule?: string }> {
  const checks = new Map<string, { name: string; rule?: string }>();
  checks.set("RPC-RESPONSE-MATCHES-REQUEST", { name: "connection" });
  for (const rule of orderingRules)
    checks.set(rule.requirement, { name: "ordering checker", rule: `rule ${rule.id} (${rule.kind}): ${rule.description}` });
  return checks;
}

/** Every requirement id with what checks it and what that check observes (from the catalogue). */
export function checkSources(catalogue: readonly Requirement[] = loadCatalogue()): Map<string, CheckSource[]> {
  const observes = new Map(catalogue.map((r) => [r.id, r.observes]));
  const sources = new Map<string, CheckSource[]>();
  const add = (id: string, source: CheckSource) => sources.set(id, [...(sources.get(id) ?? []), source]);
  for (const scenario of [...scenarios, ...clientScenarios])
    for (const id of scenario.checks) add(id, { kind: "scenario", name: scenario.name, does: observes.get(id) ?? "" });
  for (const [id, { name, rule }] of runChecks())
    add(id, { kind: "run", name, does: `${observes.get(id) ?? ""}${rule ? ` The ${rule}` : ""}` });
  for (const [id, name] of CLIENT_RUN_CHECKS) add(id, { kind: "run", name, does: observes.get(id) ?? "" });
  return sources;
}

export function packageVersion(): string {
  // Through the package's own export, so that it is found from the sources and from dist/ alike.
  return (createRequire(import.meta.url)("@turnspec/conformance/package.json") as { version: string }).version;
}

/** A failure of the harness itself, before any requirement could run (exit 2). */
export class HarnessError extends Error {
  override readonly name = "HarnessError";
}

/** The gateway requirements of a suite version (the current one by default), with their levels then. */
export function gatewayCatalogue(version?: string): Requirement[] {
  const suite = loadSuite();
  return requirementsAt(suite, version ?? suite.current).filter((r) => r.capability !== "client");
}

export async function runCertification(options: CertifyOptions): Promise<RunReport> {
  const suite = loadSuite();
  const version = options.suite ?? suite.current;
  const catalogue = gatewayCatalogue(version);
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const claimed = new Set<Capability>(["core", ...options.capabilities]);
  const meta: RunMeta = {
    suite: { name: "turnspec", version, package: packageVersion() },
    schemaHash: protocol.digest,
    gateway:
      options.gatewayCmd !== undefined
        ? { command: options.gatewayCmd }
        : options.gatewayUrl !== undefined
          ? { url: redact(options.gatewayUrl) }
          : {},
    ...(options.subject === undefined ? {} : { subject: options.subject }),
    startedAt,
    capabilities: [...claimed],
    requestedLevel: options.level,
  };
  options.onStart?.(
    meta,
    catalogue.map((r) => r.id),
  );

  const model = options.model ?? new ModelServer(options.toolMap ? { toolMap: options.toolMap } : {});
  let providerUrl: string;
  try {
    providerUrl = options.model ? model.url : await model.start(options.providerPort);
  } catch (error) {
    throw new HarnessError((error as Error).message);
  }
  // A model connection the gateway drops is the gateway's business: told on the console, never fatal to the run.
  const onDrop = model.onDrop;
  model.onDrop = (text) => options.onNotice?.(text);
  const stopModel = () => {
    model.onDrop = onDrop;
    return options.model ? Promise.resolve() : model.close();
  };
  const results = new Map<string, RequirementResult>();
  const emit = (r: Requirement, outcome: RequirementResult["outcome"], extra: Partial<RequirementResult> = {}) => {
    const result: RequirementResult = {
      id: r.id,
      level: r.level,
      capability: r.capability,
      statement: r.statement,
      reference: r.reference,
      outcome,
      durationMs: 0,
      ...extra,
    };
    results.set(r.id, result);
    options.onResult?.(result);
  };

  // Requirements not run: capability not claimed, or not selected.
  const toRun: Requirement[] = [];
  for (const r of catalogue) {
    if (!claimed.has(r.capability)) emit(r, "skipped", { message: `capability ${r.capability} is not claimed`, skipReason: "not_claimed" });
    else if (!options.selected.has(r.id)) emit(r, "skipped", { message: "not selected by --only/--skip", skipReason: "not_selected" });
    else toRun.push(r);
  }
  const running = new Set(toRun.map((r) => r.id));
  const sources = checkSources(catalogue);
  for (const r of toRun) {
    if (!sources.has(r.id)) emit(r, "error", { message: "this suite has no check for it yet" });
  }

  let transport: Transport;
  /** How the gateway process ended, once it has: exit code or signal and the end of its stderr. */
  let processExit: (() => Promise<ProcessExit>) | undefined;
  try {
    if (options.transport) {
      transport = options.transport;
    } else if (options.gatewayCmd !== undefined) {
      const command = options.gatewayCmd
        .replaceAll("{provider_url}", providerUrl)
        .replaceAll("{question_timeout_ms}", String(QUESTION_TIMEOUT_MS));
      const child = spawnStdioTransport("sh", ["-c", `exec ${command}`], {
        // The user's folder, never the suite's: `node gw.mjs` and `./dist/gateway` are relative to where certify was run.
        cwd: options.cwd ?? process.cwd(),
        env: { ...process.env, TURNSPEC_PROVIDER_URL: providerUrl },
        stderr: "collect",
      });
      // 'close' comes once the process exited and its pipes are drained: the stderr tail is whole.
      const closed = new Promise<{ code: number | null; signal: string | null }>((done) =>
        child.child.once("close", (code, signal) => done({ code, signal })),
      );
      processExit = async () => {
        const { code, signal } = await closed;
        const tail = child.stderrText.trim().split("\n").slice(-STDERR_LINES).join("\n");
        return { ...(code === null ? {} : { code }), ...(signal === null ? {} : { signal }), ...(tail ? { stderr: tail } : {}) };
      };
      transport = child;
    } else {
      transport = await connectWebSocket(options.gatewayUrl!, options.token === undefined ? {} : { token: options.token });
    }
  } catch (error) {
    await stopModel();
    throw new HarnessError(`cannot reach the gateway: ${(error as Error).message}`);
  }
  const stepTimeoutMs = options.stepTimeoutMs ?? 15_000;
  const session = new GatewaySession(transport, started, { requestTimeoutMs: stepTimeoutMs });
  session.onStray = (text) => options.onNotice?.(`the gateway wrote a line that is not JSON: ${JSON.stringify(text)}`);
  const noticeAfterMs = options.noticeAfterMs ?? 3_000;
  const ticker = setInterval(() => {
    const now = performance.now();
    for (const wait of session.waits) {
      if (wait.noticed || now - wait.since < noticeAfterMs) continue;
      wait.noticed = true;
      options.onNotice?.(
        `waiting ${((now - wait.since) / 1000).toFixed(0)} s for ${wait.what}${wait.scenario ? ` (scenario "${wait.scenario}")` : ""}; giving up after ${stepTimeoutMs} ms`,
      );
    }
  }, 500);
  ticker.unref();
  try {
    await session.start();
  } catch (error) {
    clearInterval(ticker);
    await stopModel();
    throw new HarnessError(`cannot start the gateway: ${(error as Error).message}`);
  }
  const workdir = options.gatewayCmd !== undefined ? mkdtempSync(join(tmpdir(), "turnspec-certify-")) : undefined;
  const runId = randomBytes(3).toString("hex");
  /** Findings scenarios hand to the run: missing terminals, items of other capabilities' turns, invalid results. */
  const handed: Finding[] = [];
  const capabilityOf = new Map(catalogue.map((r) => [r.id, r.capability]));
  const coversOf = new Map(catalogue.map((r) => [r.id, r.covers]));
  /** A method's capability: core when a core requirement covers it, else that of the first requirement covering it. */
  const capabilityOfMethod = (method: string): Capability | undefined => {
    const covering = catalogue.filter((r) => r.covers.includes(method));
    return covering.some((r) => r.capability === "core") ? "core" : covering[0]?.capability;
  };
  /** Each scenario's channel, its capability, and the requirement its findings of other capabilities go to. */
  const ran: { scenario: Scenario; channel: ScenarioChannel; capability: Capability; stoppedEarly: boolean }[] = [];
  const quietMs = options.quietMs ?? 3_000;

  const scenarioRecords = new Map<string, { record: StepRecord; transcript: TranscriptEntry[]; channel: ScenarioChannel }>();
  const queue = scenarios.filter((s) => s.checks.some((id) => running.has(id) && !results.has(id)));
  let index = 0;
  const worker = async () => {
    for (;;) {
      const scenario = queue[index++];
      if (!scenario) return;
      await runScenario(scenario);
    }
  };
  const runScenario = async (scenario: Scenario) => {
    const channel = session.channel();
    channel.scenario = scenario.name;
    const entry = { scenario, channel, capability: capabilityOf.get(scenario.checks[0]!) ?? "core", stoppedEarly: false };
    ran.push(entry);
    const ctx = new ScenarioContext({
      session,
      channel,
      checks: scenario.checks,
      model,
      gatewayId: options.gatewayId ?? "gw_local",
      token: ModelServer.newToken(),
      idPrefix: `${runId}s${index}`,
      ...(workdir ? { cwd: workdir } : {}),
      stepTimeoutMs,
      quietMs,
      missingTerminal: (turnId, status) =>
        handed.push({
          requirement: "TURN-COMPLETED-NOTIFIED",
          message: `turn ${turnId} ended ${status} (per turn/get) but no terminal notification arrived within ${quietMs} ms of quiet`,
          channel,
          turnId,
        }),
      finding: (f) => handed.push({ ...f, channel }),
      covers: (id) => coversOf.get(id) ?? [],
    });
    const ids = [...scenario.checks];
    const closed = () => session.closedBecause;
    /** What the rest of the scenario did not get to, once a step failed (or could not go on). */
    const notReachedAfter = () => {
      const cause = [...ctx.records].find(([, r]) => r.outcome === "fail" || r.outcome === "error" || r.outcome === "not_reached");
      if (closed()) ctx.settle(ids, "not_reached", closed()!, { afterStop: true });
      else if (cause)
        ctx.settle(
          ids,
          "not_reached",
          `an earlier step of "${scenario.name}" did not pass (${cause[0]}: ${firstLine(cause[1].message ?? cause[1].outcome)})`,
        );
    };
    if (closed()) {
      ctx.settle(ids, "not_reached", closed()!, { afterStop: true });
    } else {
      try {
        await session.within(channel, () => scenario.run(ctx));
        notReachedAfter();
        ctx.settle(ids, "error", `the scenario "${scenario.name}" ended without checking it`);
      } catch (error) {
        entry.stoppedEarly = true;
        if (!isAbort(error)) {
          // Thrown outside any step: while preparing one (a thread, a turn, a model call).
          const judged = ctx.judge(error);
          const first = ids.find((id) => running.has(id) && !ctx.records.has(id));
          if (judged.interrupted || closed())
            ctx.settle(first ? [first] : [], "not_reached", closed() ?? judged.message, { interrupted: true });
          else if (judged.outcome === "error") ctx.settle(ids, "error", `harness fault in "${scenario.name}": ${judged.message}`);
          else if (judged.outcome === "not_reached" || /invalid result/.test(judged.message))
            ctx.settle(
              ids,
              "not_reached",
              judged.outcome === "not_reached" ? judged.message : `${judged.message} (a failure of RPC-RESPONSE-MATCHES-REQUEST)`,
            );
          else if (first) {
            ctx.fail(first, `while preparing this step: ${judged.message}`, judged.invalidFrame);
          }
        }
        notReachedAfter();
      }
      // Stopped early or not: no turn of this scenario is left running, no request left open.
      await session.within(channel, () => ctx.cleanUp()).catch(() => undefined);
    }
    for (const [id, record] of ctx.records) {
      if (!running.has(id)) continue;
      // Checked by more than one scenario: the worst outcome decides.
      const earlier = scenarioRecords.get(id);
      if (earlier && SEVERITY[earlier.record.outcome] >= SEVERITY[record.outcome]) continue;
      scenarioRecords.set(id, { record, transcript: [...channel.transcript], channel });
    }
  };

  /**
   * Where each finding belongs. A finding about a turn a scenario abandoned (it stopped
   * early and cancelled the turn) is the harness's doing and is dropped. A finding in a
   * scenario of another capability than its requirement's fails that requirement only
   * when the requirement's own capability shows the same fault too; otherwise it goes to
   * the scenario's own requirement (the one whose step started the turn). Either way one
   * capability's fault never fails another capability.
   */
  const attribute = (all: readonly Finding[]): Finding[] => {
    const placed: { finding: Finding; cross?: { target: string | undefined; owner: Capability } }[] = [];
    for (const f of all) {
      const channel = f.channel ?? (f.frame === undefined ? undefined : session.ownerOf(f.frame));
      const turnId = f.turnId ?? turnOf(f.frame);
      if (channel && turnId !== undefined && channel.abandoned.has(turnId)) continue;
      const owner = channel && ran.find((e) => e.channel === channel);
      const capability = capabilityOf.get(f.requirement);
      const methodCapability = f.method === undefined ? undefined : capabilityOfMethod(f.method);
      if (!owner || capability === undefined || (methodCapability ?? owner.capability) === capability) {
        placed.push({ finding: f });
        continue;
      }
      const started = turnId === undefined ? undefined : channel.turnRequirement.get(turnId);
      const target = started !== undefined && running.has(started) ? started : owner.scenario.checks.find((id) => running.has(id));
      placed.push({ finding: f, cross: { target, owner: owner.capability } });
    }
    // The requirement's own capability shows the fault: a finding there, or its own scenario failed it.
    const ownEvidence = new Set([
      ...placed.filter((p) => !p.cross).map((p) => p.finding.requirement),
      ...[...scenarioRecords].filter(([, { record }]) => record.outcome === "fail").map(([id]) => id),
    ]);
    return placed.flatMap(({ finding: f, cross }) => {
      if (!cross || ownEvidence.has(f.requirement)) return [f];
      if (!cross.target) return [];
      return [
        {
          ...f,
          requirement: cross.target,
          message: `in a turn of this ${cross.owner} scenario the gateway broke ${f.requirement} (a ${capabilityOf.get(f.requirement)} requirement that its own scenarios do not break): ${f.message}`,
        },
      ];
    });
  };

  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, worker));
  clearInterval(ticker);
  const closedBecause = session.closedBecause;
  // Turns a gateway left open by going away are a consequence of that, not ordering faults of their own.
  if (closedBecause === undefined) session.end();
  await session.close().catch(() => undefined);
  await stopModel();
  if (workdir) rmSync(workdir, { recursive: true, force: true });

  // A gateway that went away is told once: one failure (the step it interrupted) with how it
  // ended, and every requirement it kept from running not reached, naming that failure.
  const stop = closedBecause === undefined ? undefined : await describeStop(session, processExit, scenarioRecords, running);
  const reportStop = (id: string, record: StepRecord): { outcome: RequirementResult["outcome"]; message: string } | undefined => {
    if (!stop || !(record.interrupted || record.afterStop)) return undefined;
    if (id === stop.requirement) return { outcome: "fail", message: stopFailure(stop) };
    return { outcome: "not_reached", message: `${stop.summary}${stop.requirement ? ` (reported under ${stop.requirement})` : ""}` };
  };
  const stopNotice = stop ? `${stop.summary}${stop.requirement ? ` (reported under ${stop.requirement})` : ""}` : undefined;

  const findings = attribute([
    ...session.findings,
    ...handed,
    ...model.unscripted.map((u) => ({ requirement: "TURN-INPUT-TO-MODEL", message: `the model received ${u}` })),
  ]);
  /** The results decided after the run, emitted once the stop (if any) has been told. */
  const decided: Parameters<typeof emit>[] = [];
  const decide = (...args: Parameters<typeof emit>) => decided.push(args);
  for (const r of toRun) {
    if (results.has(r.id)) continue;
    const own = findings.filter((f) => f.requirement === r.id);
    const fromScenario = scenarioRecords.get(r.id);
    if (own.length > 0) {
      // The scenario's own failure first (with its invalid frame), then what the whole run found.
      const record = fromScenario?.record.outcome === "fail" ? fromScenario.record : undefined;
      const counted = new Map<string, number>();
      const stopped = stop?.requirement === r.id ? [stopFailure(stop)] : [];
      for (const m of [...stopped, ...(record?.message === undefined ? [] : [record.message]), ...own.map((f) => f.message)])
        counted.set(m, (counted.get(m) ?? 0) + 1);
      const messages = [...counted].map(([m, n]) => (n > 1 ? `${m} (${n} times)` : m));
      const first = own[0]!;
      const transcript =
        fromScenario?.transcript ?? (first.frame === undefined ? [] : [{ direction: "received" as const, atMs: 0, frame: first.frame }]);
      const more = messages.length > 10 ? `\n… and ${messages.length - 10} more findings of this requirement` : "";
      decide(r, "fail", {
        message: messages.slice(0, 10).join("\n") + more,
        durationMs: Math.round(fromScenario?.record.durationMs ?? 0),
        ...(record?.invalidFrame === undefined ? {} : { invalidFrame: record.invalidFrame }),
        transcript,
      });
      continue;
    }
    if (fromScenario) {
      const { record, transcript } = fromScenario;
      const stopped = reportStop(r.id, record);
      const outcome = stopped?.outcome ?? record.outcome;
      const failed = outcome === "fail" || outcome === "error";
      const message = stopped?.message ?? record.message;
      decide(r, outcome, {
        durationMs: Math.round(record.durationMs),
        ...(message === undefined ? {} : { message }),
        ...(record.invalidFrame === undefined ? {} : { invalidFrame: record.invalidFrame }),
        ...(failed ? { transcript } : {}),
      });
      continue;
    }
    const source = sources.get(r.id)?.[0];
    if (stop?.requirement === r.id) {
      // Blamed for the stop without a step of its own that ran (the connection's own check).
      decide(r, "fail", { message: stopFailure(stop) });
      continue;
    }
    if (source?.kind === "run") {
      if (stopNotice) decide(r, "not_reached", { message: `the run stopped early: ${stopNotice}` });
      else decide(r, "pass");
      continue;
    }
    decide(r, stopNotice ? "not_reached" : "error", { message: stopNotice ?? "no scenario ran that checks it" });
  }

  const stopped =
    stop === undefined
      ? undefined
      : {
          ...stop,
          notReached: decided.filter(([, outcome, extra]) => outcome === "not_reached" && extra?.message?.includes(stop.summary)).length,
        };
  if (stopped) options.onStop?.(stopped);
  for (const args of decided) emit(...args);

  const ordered = catalogue.map((r) => results.get(r.id)!);
  const partial = catalogue.some((r) => claimed.has(r.capability) && !options.selected.has(r.id));
  const verdict = computeVerdict(ordered, {
    capabilities: [...claimed],
    requestedLevel: options.level,
    expectedFailures: options.expectedFailures,
    partial,
  });
  return toRunReport(meta, new Date().toISOString(), verdict, stopped);
}

/** Worse outcomes first when two scenarios decide one requirement. */
const SEVERITY: Record<RequirementResult["outcome"], number> = { pass: 0, skipped: 1, not_reached: 2, error: 3, fail: 4 };

/** How many lines of a gateway's stderr a report keeps: enough for the end of a traceback. */
const STDERR_LINES = 12;

/** How a gateway process ended: its exit code or signal, and the end of its stderr. */
interface ProcessExit {
  readonly code?: number;
  readonly signal?: string;
  readonly stderr?: string;
}

/**
 * The stop of a gateway that went away before the run ended: how it ended, the frame the
 * suite sent last, the requests it never answered, and the one requirement it is reported
 * under: the interrupted step that sent that frame, else another interrupted step of its
 * scenario, else any interrupted step, else the connection's own requirement (a request
 * it never answered), else the first step it kept from running.
 */
async function describeStop(
  session: GatewaySession,
  processExit: (() => Promise<ProcessExit>) | undefined,
  records: ReadonlyMap<string, { record: StepRecord; channel: ScenarioChannel }>,
  running: ReadonlySet<string>,
): Promise<Omit<GatewayStop, "notReached">> {
  const exit = processExit ? await processExit() : undefined;
  const how =
    exit?.signal !== undefined
      ? `exited on ${exit.signal}`
      : exit?.code !== undefined
        ? `exited with code ${exit.code}`
        : "closed the connection";
  const last = session.lastSent;
  const interrupted = [...records].filter(([, { record }]) => record.interrupted);
  const blamed =
    interrupted.find(([id]) => last?.step !== undefined && id === last.step)?.[0] ??
    interrupted.find(([, { channel }]) => last?.channel !== undefined && channel === last.channel)?.[0] ??
    interrupted[0]?.[0] ??
    (running.has("RPC-RESPONSE-MATCHES-REQUEST") ? "RPC-RESPONSE-MATCHES-REQUEST" : undefined) ??
    [...records].find(([, { record }]) => record.afterStop)?.[0];
  return {
    summary: `the gateway ${how}`,
    ...(exit?.code === undefined ? {} : { exitCode: exit.code }),
    ...(exit?.signal === undefined ? {} : { signal: exit.signal }),
    ...(exit?.stderr === undefined ? {} : { stderr: exit.stderr }),
    ...(last === undefined
      ? {}
      : {
          after: {
            frame: last.frame,
            atMs: last.atMs,
            ...(last.channel?.scenario === undefined ? {} : { scenario: last.channel.scenario }),
            ...(last.step === undefined ? {} : { requirement: last.step }),
          },
        }),
    inFlight: session.unanswered.map(({ id, method, channel }) => ({
      id,
      method,
      ...(channel?.scenario === undefined ? {} : { scenario: channel.scenario }),
    })),
    ...(blamed === undefined ? {} : { requirement: blamed }),
  };
}

/** The failure a stop is reported as: how the gateway ended, after which frame, with what unanswered. */
export function stopFailure(stop: Omit<GatewayStop, "notReached">): string {
  const after =
    stop.after === undefined
      ? ""
      : `, after the suite sent ${frameText(stop.after.frame)}${stop.after.scenario === undefined ? "" : ` (in "${stop.after.scenario}"${stop.after.requirement === undefined ? "" : `, ${stop.after.requirement}`})`}`;
  const unanswered = stop.inFlight.length
    ? `; unanswered: ${stop.inFlight.map((r) => `${r.method} (id ${JSON.stringify(r.id)})`).join(", ")}`
    : "";
  return `${stop.summary}${after}${unanswered}`;
}

/**
 * A frame as a message quotes it: its JSON text, or, when it was not JSON, the text as a
 * quoted string (so that a cut-off frame cannot read as the message's own punctuation);
 * cut at 200 characters.
 */
export function frameText(frame: unknown): string {
  const text = typeof frame === "string" ? `the text ${JSON.stringify(frame)}` : (JSON.stringify(frame) ?? "nothing");
  return text.length <= 200 ? text : `${text.slice(0, 199)}…`;
}

/** The first line of a message, to quote it inside another. */
function firstLine(text: string): string {
  const [first = "", ...rest] = text.split("\n");
  return rest.length ? `${first} …` : first;
}

/** The turn a frame is about: its params' turn_id, or its permission request's. */
function turnOf(frame: unknown): string | undefined {
  const params = (frame as { params?: { turn_id?: unknown; turnId?: unknown; request?: { turn_id?: unknown } } } | undefined)?.params;
  const id = params?.turn_id ?? params?.turnId ?? params?.request?.turn_id;
  return typeof id === "string" ? id : undefined;
}

function redact(url: string): string {
  return url.replace(/([?&]token=)[^&]*/g, "$1…");
}
