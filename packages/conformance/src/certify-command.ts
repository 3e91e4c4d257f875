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
import { checkSources, HarnessError, packageVersion, runCertification } from "./certify.js";
import { runClientCertification } from "./client/certify-client.js";
import { compareVersions, loadSuite, requirementsAt, selectIds, suiteChanges, type Requirement, type Suite } from "./catalogue.js";
import { createConsoleReporter } from "./report/console.js";
import { CertificateKeyError, signingKey } from "./report/certificate.js";
import { writeReports, type ReportPaths } from "./report/write.js";
import { CAPABILITIES, GATEWAY_CAPABILITIES, type Capability } from "./results.js";
import { checkToolMap, normalizeToolMap, REFERENCE_TOOLS, toolContractText, ToolMapError, type ToolMapInput } from "./tool-contract.js";
import { ExpectedFailuresError, loadExpectedFailures, verdictOf, type ExpectedFailure } from "./verdict.js";

export interface CertifyArgs {
  /** The suite version to certify against, list or explain (default: the current one). */
  readonly suite?: string;
  /** List what changed from this suite version to --suite (or the current one), and run nothing. */
  readonly changes?: string;
  /** What the vendor calls the gateway or client, named in the reports and the certificate. */
  readonly subject?: string;
  /** A PEM Ed25519 private key that signs the certificate (needs reports.certificate). */
  readonly signKey?: string;
  readonly gatewayCmd?: string;
  /** The client under test: the command that starts it (a client run). */
  readonly clientCmd?: string;
  /** The folder --gateway-cmd or --client-cmd runs in (default: the current one). */
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
    if (
      error instanceof UsageError ||
      error instanceof ExpectedFailuresError ||
      error instanceof HarnessError ||
      error instanceof CertificateKeyError
    ) {
      process.stderr.write(`turnspec certify: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

async function certify(args: CertifyArgs): Promise<number> {
  const suite = loadSuite();
  const version = args.suite === undefined ? suite.current : knownVersion(suite, args.suite, "--suite");
  if (args.changes !== undefined) {
    changes(suite, knownVersion(suite, args.changes, "--changes"), version);
    return 0;
  }
  const all = requirementsAt(suite, version);
  const catalogue = all.filter((r) => r.capability !== "client");
  const known = catalogue.map((r) => r.id);
  if (args.list) {
    list(all, suite, version);
    return 0;
  }
  if (args.explain !== undefined && args.explain.toLowerCase() === "tools") {
    out(toolContractText(normalizeToolMap(args.toolMap === undefined ? {} : parseToolMap(args.toolMap))));
    return 0;
  }
  if (args.explain !== undefined) {
    const requirement = all.find((r) => r.id === args.explain?.toUpperCase());
    const later = suite.requirements.find((r) => r.id === args.explain?.toUpperCase());
    if (!requirement && later) throw new UsageError(`--explain: ${later.id} is not in suite ${version}: it was added in ${later.since}`);
    if (!requirement)
      throw new UsageError(
        `--explain: unknown requirement id ${args.explain}${didYouMean(
          args.explain.toUpperCase(),
          all.map((r) => r.id),
        )}; \`turnspec certify --list\` lists them, and \`--explain tools\` explains the tool contract`,
      );
    explain(requirement, all);
    return 0;
  }
  if (args.clientCmd !== undefined)
    return certifyClient(
      args,
      all.filter((r) => r.capability === "client"),
      version,
    );
  if ((args.gatewayCmd === undefined) === (args.gatewayUrl === undefined))
    throw new UsageError('name the gateway: --gateway-cmd "COMMAND" or --gateway-url ws://HOST:PORT (or a client: --client-cmd "COMMAND")');
  const cwd = args.cwd === undefined ? undefined : commandFolder(args.cwd, args.gatewayCmd !== undefined);

  const capabilities = parseCapabilities(args.capabilities, catalogue, version);
  const only = args.only.length ? selectIds(args.only, known) : { ids: new Set(known), unmatched: [] };
  const skip = selectIds(args.skip, known);
  const unmatched = [
    ...only.unmatched.map((p) => `--only ${p}${didYouMean(p.toUpperCase(), known)}`),
    ...skip.unmatched.map((p) => `--skip ${p}${didYouMean(p.toUpperCase(), known)}`),
  ];
  if (unmatched.length) throw new UsageError(`no requirement matches ${unmatched.join(", ")}; \`turnspec certify --list\` lists them`);
  const selected = new Set([...only.ids].filter((id) => !skip.ids.has(id)));
  const expectedFailures: ExpectedFailure[] = args.expectedFailures === undefined ? [] : loadExpectedFailures(args.expectedFailures);
  const unknown = expectedFailures.filter((e) => !known.includes(e.id)).map((e) => e.id);
  if (unknown.length)
    throw new UsageError(
      `the expected-failures file ${args.expectedFailures} lists unknown requirement ids: ${unknown.map((id) => `${id}${didYouMean(id, known)}`).join(", ")}`,
    );

  const signKey = args.signKey === undefined ? undefined : readSigningKey(args.signKey, args.reports.certificate !== undefined);

  const reporter = createConsoleReporter(process.stdout);
  const report = await runCertification({
    suite: version,
    ...(args.subject === undefined ? {} : { subject: args.subject }),
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
  const written = writeReports(report, args.reports, signKey === undefined ? {} : { signKey });
  reporter.onEnd(report, written);
  return verdictOf(report).exitCode;
}

/**
 * `--client-cmd`: certifies a client against the client requirements of the suite version;
 * the gateway's own flags mean nothing here and are refused.
 */
async function certifyClient(args: CertifyArgs, catalogue: readonly Requirement[], version: string): Promise<number> {
  const gatewayOnly = (
    [
      ["--gateway-cmd", args.gatewayCmd],
      ["--gateway-url", args.gatewayUrl],
      ["--token", args.token],
      ["--capabilities", args.capabilities],
      ["--tool-map", args.toolMap],
      ["--gateway-id", args.gatewayId],
      ["--provider-port", args.providerPort],
    ] as const
  ).filter(([, value]) => value !== undefined);
  if (gatewayOnly.length)
    throw new UsageError(
      `${gatewayOnly.map(([flag]) => flag).join(", ")} ${gatewayOnly.length === 1 ? "is" : "are"} for certifying a gateway, not a client (--client-cmd)`,
    );
  if (catalogue.length === 0) throw new UsageError(`suite ${version} has no client requirements: clients are certified from suite 7.0 on`);
  const known = catalogue.map((r) => r.id);
  const cwd = args.cwd === undefined ? undefined : commandFolder(args.cwd, true);
  const only = args.only.length ? selectIds(args.only, known) : { ids: new Set(known), unmatched: [] };
  const skip = selectIds(args.skip, known);
  const unmatched = [
    ...only.unmatched.map((p) => `--only ${p}${didYouMean(p.toUpperCase(), known)}`),
    ...skip.unmatched.map((p) => `--skip ${p}${didYouMean(p.toUpperCase(), known)}`),
  ];
  if (unmatched.length)
    throw new UsageError(`no client requirement matches ${unmatched.join(", ")}; \`turnspec certify --list\` lists them`);
  const expectedFailures: ExpectedFailure[] = args.expectedFailures === undefined ? [] : loadExpectedFailures(args.expectedFailures);
  const unknown = expectedFailures.filter((e) => !known.includes(e.id)).map((e) => e.id);
  if (unknown.length)
    throw new UsageError(
      `the expected-failures file ${args.expectedFailures} lists ids that are not client requirements: ${unknown.map((id) => `${id}${didYouMean(id, known)}`).join(", ")}`,
    );
  const signKey = args.signKey === undefined ? undefined : readSigningKey(args.signKey, args.reports.certificate !== undefined);

  const reporter = createConsoleReporter(process.stdout);
  const report = await runClientCertification({
    clientCmd: args.clientCmd!,
    ...(cwd === undefined ? {} : { cwd }),
    catalogue,
    suite: { name: "turnspec", version, package: packageVersion() },
    ...(args.subject === undefined ? {} : { subject: args.subject }),
    level: args.level,
    selected: new Set([...only.ids].filter((id) => !skip.ids.has(id))),
    expectedFailures,
    ...(args.stepTimeoutMs === undefined ? {} : { stepTimeoutMs: args.stepTimeoutMs }),
    onStart: (meta, ids) => reporter.onStart({ ...meta, requirementIds: ids, expectedFailures }),
    onResult: (result) => reporter.onResult(result),
    onNotice: (text) => reporter.onNotice(text),
  });
  const written = writeReports(report, args.reports, signKey === undefined ? {} : { signKey });
  reporter.onEnd(report, written);
  return verdictOf(report).exitCode;
}

/** `--cwd DIR`: an existing folder, resolved against the current one; only with --gateway-cmd, which it is for. */
function commandFolder(dir: string, withCommand: boolean): string {
  if (!withCommand) throw new UsageError("--cwd is the folder --gateway-cmd or --client-cmd runs in: it does nothing with --gateway-url");
  const folder = resolve(dir);
  if (!existsSync(folder) || !statSync(folder).isDirectory())
    throw new UsageError(`--cwd: ${dir} is not a folder${folder === dir ? "" : ` (${folder})`}`);
  return folder;
}

/** `--sign-key FILE`: an Ed25519 private key in PEM, read before the run so that a bad one costs nothing. */
function readSigningKey(path: string, withCertificate: boolean) {
  if (!withCertificate) throw new UsageError("--sign-key signs the certificate: give --certificate FILE too");
  let pem: string;
  try {
    pem = readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(
      `--sign-key: cannot read ${path}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`,
    );
  }
  return signingKey(pem, `--sign-key ${path}`);
}

/** A suite version the catalogue lists, or a usage error naming the ones it does. */
function knownVersion(suite: Suite, version: string, flag: string): string {
  if (suite.versions.some((v) => v.version === version)) return version;
  const listed = suite.versions.map((v) => v.version);
  throw new UsageError(
    `${flag}: unknown suite version ${version}${didYouMean(version, listed)}; the versions are ${listed.join(", ")} (\`turnspec certify --changes ${listed[0]}\` lists what each changed)`,
  );
}

/**
 * `--capabilities core,permissions,…`: the gateway capabilities of the suite version
 * (`catalogue`, the current one's by default); all of them when absent.
 */
export function parseCapabilities(text: string | undefined, catalogue?: readonly Requirement[], version?: string): Capability[] {
  const present =
    catalogue === undefined
      ? GATEWAY_CAPABILITIES
      : GATEWAY_CAPABILITIES.filter((c) => c === "core" || catalogue.some((r) => r.capability === c));
  if (text === undefined) return [...present];
  const names = text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.includes("client"))
    throw new UsageError("--capabilities: client is not a capability of a gateway; a client is certified with --client-cmd");
  const wrong = names.filter((n) => !(GATEWAY_CAPABILITIES as readonly string[]).includes(n));
  if (wrong.length)
    throw new UsageError(
      `--capabilities: unknown capability ${wrong.map((w) => `${w}${didYouMean(w, GATEWAY_CAPABILITIES)}`).join(", ")}; the capabilities are ${GATEWAY_CAPABILITIES.join(", ")}`,
    );
  const absent = names.filter((n) => !(present as readonly string[]).includes(n));
  if (absent.length)
    throw new UsageError(
      `--capabilities: suite ${version} has no ${absent.join(", ")} capability; its capabilities are ${present.join(", ")}`,
    );
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

function list(catalogue: readonly Requirement[], suite: Suite, version: string): void {
  const width = Math.max(...catalogue.map((r) => r.id.length));
  out(`turnspec suite ${version}${version === suite.current ? " (current)" : ` (current: ${suite.current})`}`);
  out("");
  for (const capability of CAPABILITIES) {
    const rows = catalogue.filter((r) => r.capability === capability);
    if (rows.length === 0) continue;
    out(`${capability} (${rows.length})`);
    for (const r of rows) out(`  ${r.id.padEnd(width)}  ${r.level.padEnd(6)}  ${r.statement}`);
    out("");
  }
}

function explain(r: Requirement, catalogue: readonly Requirement[]): void {
  const sources = checkSources(catalogue).get(r.id) ?? [];
  out(`${r.id} (${r.level}, capability ${r.capability})`);
  out(`  ${r.statement}`);
  out(`  reference: ${r.reference.file}, section "${r.reference.section}"`);
  out(`  covers: ${r.covers.length ? r.covers.join(", ") : "no method or notification"}`);
  out(`  since: suite ${r.since}${historyText(r)}`);
  if (sources.length === 0) out("  check: none yet");
  for (const s of sources) out(`  check (${s.kind === "scenario" ? `scenario "${s.name}"` : s.name}): ${s.does}`);
  const tools = REFERENCE_TOOLS.filter((t) =>
    [r.statement, ...sources.map((s) => s.does)].some((text) => new RegExp(`\\b${t}\\b`).test(text)),
  );
  if (tools.length)
    out(
      `  tools the model calls: ${tools.join(", ")} (\`turnspec certify --explain tools\` gives their arguments and what is expected of each)`,
    );
}

/** A requirement's changes after it was added, as `--explain` lists them. */
function historyText(r: Requirement): string {
  const parts = r.changes.map((c) =>
    [
      c.level && `${c.level.from} → ${c.level.to}`,
      c.capability && `${c.capability.from} → ${c.capability.to}`,
      c.check && `stricter check: ${c.check}`,
    ]
      .filter(Boolean)
      .map((text) => `${text} in ${c.version}`)
      .join("; "),
  );
  return parts.length ? `; ${parts.join("; ")}` : "";
}

/** `--changes FROM`: what changed after FROM up to `to`, version by version, from the catalogue. */
function changes(suite: Suite, from: string, to: string): void {
  if (compareVersions(from, to) > 0)
    throw new UsageError(`--changes ${from} comes after --suite ${to}: name the earlier version with --changes`);
  const { versions, changes: all } = suiteChanges(suite, from, to);
  const breaking = all.filter((c) => c.breaking).length;
  out(
    `turnspec suite ${from} → ${to}${to === suite.current ? " (current)" : ""}: ${all.length} ${all.length === 1 ? "change" : "changes"} in ${versions.length} ${versions.length === 1 ? "version" : "versions"}`,
  );
  if (breaking) out(`${breaking} marked ! may fail a gateway or client certified under ${from}`);
  const width = Math.max(0, ...all.map((c) => c.id.length));
  const kinds: Record<(typeof all)[number]["kind"], string> = { added: "added", level: "level", capability: "moved", check: "check" };
  for (const v of versions) {
    out("");
    out(`${v.version}  ${v.date}  ${v.summary}`);
    for (const c of all.filter((c) => c.version === v.version))
      out(`  ${c.breaking ? "!" : " "} ${kinds[c.kind].padEnd(6)} ${c.id.padEnd(width)}  ${c.text}`);
  }
  const musts = all.filter((c) => c.kind === "added" && c.text.startsWith("MUST"));
  if (musts.length) {
    out("");
    out(`MUSTs added since ${from}: ${musts.map((c) => `${c.id} (${c.version})`).join(", ")}`);
  }
}
