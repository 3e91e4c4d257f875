/**
 * `turnspec certify`: checks what the command line asked for (unknown ids, capabilities,
 * a tool map), lists or explains the catalogue, or runs a certification with the live
 * console report and writes the report files. Exit codes: 0 certified at the requested
 * level, 1 not certified, 2 usage error, harness error, or a verdict that could not be
 * determined.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { didYouMean } from "@turnspec/rpc";
import { checkSources, HarnessError, runCertification } from "./certify.js";
import { CAPABILITIES, loadCatalogue, selectIds, type Requirement } from "./catalogue.js";
import { createConsoleReporter } from "./report/console.js";
import { writeReports, type ReportPaths } from "./report/write.js";
import type { Capability } from "./results.js";
import { checkToolMap, normalizeToolMap, REFERENCE_TOOLS, toolContractText, ToolMapError, type ToolMapInput } from "./tool-contract.js";
import { ExpectedFailuresError, loadExpectedFailures, verdictOf, type ExpectedFailure } from "./verdict.js";


export interface CertifyArgs {
  readonly gatewayCmd?: string;
  /** The folder --gateway-cmd runs in (default: the current one). */
  readonly cwd?: string;
  readonly gatewayUrl?: string;
  readonly token?: string;
  readonly capabilities?: string;
  readonly level: "core" | "full";
  readonly only: readonly string[];
  readonly skip: readonly string[];
  readonly expectedFailures?: string;
  readonly toolMap?: string;
  readonly gatewayId?: string;
  readonly providerPort?: number;
  readonly stepTimeoutMs?: number;
  readonly list: boolean;
  readonly explain?: string;
  readonly reports: ReportPaths;
}

export class UsageError extends Error {
  override readonly name = "UsageError";
}

const out = (text: string) => process.stdout.write(`${text}\n`);

export async function runCertify(args: CertifyArgs): Promise<number> {
  try {
    return await certify(args);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ExpectedFailuresError || error instanceof HarnessError) {
      process.stderr.write(`turnspec certify: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

async function certify(args: CertifyArgs): Promise<number> {
  const catalogue = loadCatalogue();
  const known = catalogue.map((r) => r.id);
  if (args.list) {
    list(catalogue);
    return 0;
  }
  if (args.explain !== undefined && args.explain.toLowerCase() === "tools") {
    out(toolContractText(normalizeToolMap(args.toolMap === undefined ? {} : parseToolMap(args.toolMap))));
    return 0;
  }
  if (args.explain !== undefined) {
    const requirement = catalogue.find((r) => r.id === args.explain?.toUpperCase());
    if (!requirement) throw new UsageError(`--explain: unknown requirement id ${args.explain}${didYouMean(args.explain.toUpperCase(), known)}; \`turnspec certify --list\` lists them, and \`--explain tools\` explains the tool contract`);
    explain(requirement);
    return 0;
  }
  if ((args.gatewayCmd === undefined) === (args.gatewayUrl === undefined)) throw new UsageError("name the gateway: --gateway-cmd \"COMMAND\" or --gateway-url ws://HOST:PORT");
  const cwd = args.cwd === undefined ? undefined : commandFolder(args.cwd, args.gatewayCmd !== undefined);

  const capabilities = parseCapabilities(args.capabilities);
  const only = args.only.length ? selectIds(args.only, known) : { ids: new Set(known), unmatched: [] };
  const skip = selectIds(args.skip, known);
  const unmatched = [...only.unmatched.map((p) => `--only ${p}${didYouMean(p.toUpperCase(), known)}`), ...skip.unmatched.map((p) => `--skip ${p}${didYouMean(p.toUpperCase(), known)}`)];
  if (unmatched.length) throw new UsageError(`no requirement matches ${unmatched.join(", ")}; \`turnspec certify --list\` lists them`);
  const selected = new Set([...only.ids].filter((id) => !skip.ids.has(id)));
  const expectedFailures: ExpectedFailure[] = args.expectedFailures === undefined ? [] : loadExpectedFailures(args.expectedFailures);
  const unknown = expectedFailures.filter((e) => !known.includes(e.id)).map((e) => e.id);
  if (unknown.length) throw new UsageError(`the expected-failures file ${args.expectedFailures} lists unknown requirement ids: ${unknown.map((id) => `${id}${didYouMean(id, known)}`).join(", ")}`);

  const reporter = createConsoleReporter(process.stdout);
  const report = await runCertification({
    ...(args.gatewayCmd === undefined ? {} : { gatewayCmd: args.gatewayCmd }),
    ...(cwd === undefined ? {} : { cwd }),
    ...(args.gatewayUrl === undefined ? {} : { gatewayUrl: args.gatewayUrl }),
    ...(args.token === undefined ? {} : { token: args.token }),
    ...(args.gatewayId === undefined ? {} : { gatewayId: args.gatewayId }),
    ...(args.providerPort === undefined ? {} : { providerPort: args.providerPort }),
    ...(args.stepTimeoutMs === undefined ? {} : { stepTimeoutMs: args.stepTimeoutMs }),
    ...(args.toolMap === undefined ? {} : { toolMap: parseToolMap(args.toolMap) }),
    capabilities,
    level: args.level,
    selected,
    expectedFailures,
    onStart: (meta, ids) => reporter.onStart({ ...meta, requirementIds: ids, expectedFailures }),
    onResult: (result) => reporter.onResult(result),
    onNotice: (text) => reporter.onNotice(text),
    onStop: (stop) => reporter.onStop(stop),
  });
  const written = writeReports(report, args.reports);
  reporter.onEnd(report, written);
  return verdictOf(report).exitCode;
}

/** `--cwd DIR`: an existing folder, resolved against the current one; only with --gateway-cmd, which it is for. */
function commandFolder(dir: string, withCommand: boolean): string {
  if (!withCommand) throw new UsageError("--cwd is the folder --gateway-cmd runs in: it does nothing with --gateway-url");
  const folder = resolve(dir);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new UsageError(`--cwd: ${dir} is not a folder${folder === dir ? "" : ` (${folder})`}`);
  return folder;
}

/** `--capabilities core,permissions,…`; all of them when absent. */
export function parseCapabilities(text: string | undefined): Capability[] {
  if (text === undefined) return [...CAPABILITIES];
  const names = text.split(",").map((s) => s.trim()).filter(Boolean);
  const wrong = names.filter((n) => !(CAPABILITIES as readonly string[]).includes(n));
  if (wrong.length) throw new UsageError(`--capabilities: unknown capability ${wrong.map((w) => `${w}${didYouMean(w, CAPABILITIES)}`).join(", ")}; the capabilities are ${CAPABILITIES.join(", ")}`);
  return names as Capability[];
}

/**
 * `--tool-map` as a JSON object or a file holding one: reference tool name → the gateway's
 * name, or `{"name": ..., "args": {reference argument: the gateway's}}` (tool-contract.ts).
 */
export function parseToolMap(value: string): ToolMapInput {
  const fromFile = !value.trimStart().startsWith("{");
  if (fromFile && !existsSync(value)) throw new UsageError(`--tool-map: ${value} is neither a JSON object nor a file`);
  const text = fromFile ? readFileSync(value, "utf8") : value;
  const where = fromFile ? value : "--tool-map";
  let map: unknown;
  try {
    map = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${where} is not valid JSON: ${(error as Error).message}`);
  }
  try {
    return checkToolMap(map, where);
  } catch (error) {
    if (error instanceof ToolMapError) throw new UsageError(error.message);
    throw error;
  }
}

function list(catalogue: readonly Requirement[]): void {
  const width = Math.max(...catalogue.map((r) => r.id.length));
  for (const capability of CAPABILITIES) {
    const rows = catalogue.filter((r) => r.capability === capability);
    out(`${capability} (${rows.length})`);
    for (const r of rows) out(`  ${r.id.padEnd(width)}  ${r.level.padEnd(6)}  ${r.statement}`);
    out("");
  }
}

function explain(r: Requirement): void {
  const sources = checkSources().get(r.id) ?? [];
  out(`${r.id} (${r.level}, capability ${r.capability})`);
  out(`  ${r.statement}`);
  out(`  reference: ${r.reference.file}, section "${r.reference.section}"`);
  out(`  covers: ${r.covers.length ? r.covers.join(", ") : "no method or notification"}`);
  if (sources.length === 0) out("  check: none yet");
  for (const s of sources) out(`  check (${s.kind === "scenario" ? `scenario "${s.name}"` : s.name}): ${s.does}`);
  const tools = REFERENCE_TOOLS.filter((t) => [r.statement, ...sources.map((s) => s.does)].some((text) => new RegExp(`\\b${t}\\b`).test(text)));
  if (tools.length) out(`  tools the model calls: ${tools.join(", ")} (\`turnspec certify --explain tools\` gives their arguments and what is expected of each)`);
}
