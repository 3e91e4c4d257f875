/**
 * Validation throughput on the success path, measured side by side in one process:
 *
 * - parse:     JSON.parse of each message's bytes;
 * - generated: the precompiled validators of generated/validators.strict.ts as a user runs
 *              them, compiled by tsc (TypeScript's transpileModule with this repository's
 *              target and module) and loaded by Node; the raw function of the message's
 *              params or result type (its accept-only check, with ajv's code behind it for
 *              values the check refuses: generator/emit/accept.ts);
 * - run-time:  ajv compiling the same strict schemas at run time the usual way (Ajv2020 with
 *              the generator's ajvOptions, compiled once before timing);
 * - read:      a walk that only looks at every value once, with no checks (informational:
 *              what reading the parsed messages costs on this machine, a floor the
 *              validators cannot go far below).
 *
 * Alternating rounds after warm-up, each sample timed on this process's CPU clock (the passes
 * are single-threaded and CPU-bound; on a shared machine the wall clock would also count the
 * time other processes hold the cores); the median per variant. Targets: generated at least as
 * fast as run-time ajv (≥ 1.0×) and validation at most 0.10 of the JSON.parse cost.
 *
 * Not timed through tsx: tsx compiles .ts files with esbuild's keepNames, which redefines
 * the `name` of every function declaration, and ajv's functions, which write their own
 * `errors` property on every call, then run measurably slower. No shipped path does that
 * (tsc and bundlers' defaults keep the code as it is); the what-ifs show it.
 *
 * Informational, after the targets: what-if variants (the module as tsx loads it, ajv's
 * ESM standalone alone at module scope (no accept-only checks), compiled by Ajv2020 with
 * every vocabulary as before, and run-time ajv with the generator's compiler; the tolerant
 * module), and a per-kind breakdown of the costs.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/validation.ts [--quick] [--no-breakdown] [--no-what-if]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import standaloneCode from "ajv/dist/standalone/index.js";
import ts from "typescript";
import type { RawValidator } from "@turnspec/rpc";
import * as tsxStrictValidators from "../generated/validators.strict.js";
import { ajvOptions, createAjv, emitStandalone, schemasFor } from "../packages/generator/src/emit/validators.js";
import { loadSchemas } from "../packages/generator/src/load.js";
import { GENERATED_HEADER } from "../packages/generator/src/generate.js";
import { buildCorpus, describeCorpus, payloadOf, type CorpusMessage } from "./corpus.js";
import {
  cpuNow,
  fmtNs,
  fmtOps,
  isMain,
  median,
  now,
  quantile,
  resultTable,
  runRounds,
  table,
  type ResultRow,
  type Variant,
} from "./lib.js";

export interface ValidationBenchOptions {
  readonly quick?: boolean;
  /** Per-method breakdown (informational). */
  readonly breakdown?: boolean;
  /** What-if variants compiled with other ajv options (informational). */
  readonly whatIf?: boolean;
  readonly log?: (line: string) => void;
}

type Validator = (data: unknown) => boolean;

/** schemas/ of this repository, whatever the working directory. */
const SCHEMAS = fileURLToPath(new URL("../schemas", import.meta.url));

/**
 * The run-time ajv: the generator's options without any `code` option, every strict schema
 * added, compiled before timing; by Ajv2020 as a user would, or by the generator's own
 * compiler (createAjv).
 */
function runtimeValidators(compiler: "Ajv2020" | "generator" = "Ajv2020"): Map<string, Validator> {
  const model = loadSchemas(SCHEMAS);
  const schemas = schemasFor(model, "strict");
  const options = { ...ajvOptions } as Record<string, unknown>;
  delete options.code;
  const ajv = compiler === "Ajv2020" ? new Ajv2020(options) : createAjv(schemas, options as never);
  for (const schema of schemas) ajv.addSchema(schema as object);
  const byTitle = new Map<string, Validator>();
  for (const type of model.types) {
    const fn = ajv.getSchema(type.id);
    if (!fn) throw new Error(`run-time ajv: no schema ${type.id}`);
    byTitle.set(type.title, fn as Validator);
  }
  return byTitle;
}

/**
 * What-if: the standalone module as the generator would write it with other ajv options,
 * optionally rewritten (see withFunctionScope), loaded from a temp file.
 */
async function standaloneWith(compiler: "Ajv2020" | "generator", rewrite?: (code: string) => string): Promise<Map<string, Validator>> {
  const model = loadSchemas(SCHEMAS);
  const schemas = schemasFor(model, "strict");
  const options = { ...ajvOptions, code: { source: true, esm: true, lines: true } };
  // createAjv's compiler is an ajv instance, which standaloneCode takes; its type names only what callers use.
  const ajv = compiler === "Ajv2020" ? new Ajv2020(options) : (createAjv(schemas, options as never) as Ajv2020);
  for (const schema of schemas) ajv.addSchema(schema as object);
  let code = standaloneCode(ajv, Object.fromEntries(model.types.map((t) => [t.title, t.id])));
  const helped = /require\("ajv\/dist\/runtime\/ucs2length"\)\.default/g;
  const needsHelper = helped.test(code);
  code = code.replace(helped, "supportUcs2length");
  if (/require\(/.test(code)) throw new Error("what-if standalone code needs runtime helpers other than ucs2length");
  if (rewrite) code = rewrite(code);
  // The support module's ucs2length (lengths count code points), as the generated modules take it.
  if (needsHelper) code = `import { ucs2length as supportUcs2length } from ${JSON.stringify(HELPERS_URL)};\n${code}`;
  const dir = mkdtempSync(join(tmpdir(), "turnspec-bench-"));
  try {
    const file = join(dir, "validators.mjs");
    writeFileSync(file, code);
    const mod = (await import(pathToFileURL(file).href)) as Record<string, Validator>;
    const missing = model.types.filter((t) => typeof mod[t.title] !== "function");
    if (missing.length) throw new Error(`what-if module lacks ${missing.map((t) => t.title).join(", ")}`);
    return new Map(model.types.map((t) => [t.title, mod[t.title]!]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The built support module's validator helpers, which generated validator modules import (run.ts builds the packages first). */
const HELPERS_URL = pathToFileURL(fileURLToPath(new URL("../packages/rpc/dist/validator-helpers.js", import.meta.url))).href;

/**
 * A generated validator module as a user runs it: compiled by TypeScript (this
 * repository's target and module kind, as tsc and the package build emit it), written to a
 * temp folder with the validator modules it imports (the strict set reads the report set's
 * validators) and loaded by Node, not through tsx.
 */
export async function compiledModule(file: string): Promise<Record<string, Validator>> {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-bench-"));
  try {
    writeCompiled(file, dir);
    return (await import(pathToFileURL(join(dir, file.replace(/\.ts$/, ".mjs"))).href)) as Record<string, Validator>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Compiles generated/<file> into `dir` as .mjs, and the sibling validator modules it imports. */
function writeCompiled(file: string, dir: string): void {
  const source = readFileSync(fileURLToPath(new URL(`../generated/${file}`, import.meta.url)), "utf8");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, verbatimModuleSyntax: false },
    fileName: file,
  });
  // The support module's helpers (ucs2length: lengths count code points) from the built @turnspec/rpc.
  const linked = outputText
    .replace(/^import \{ validatorHelper \} from "@turnspec\/rpc";$/m, `import { validatorHelper } from ${JSON.stringify(HELPERS_URL)};`)
    .replace(/^import \* as (\w+) from "\.\/(validators\.\w+)\.js";$/gm, (_line, name: string, sibling: string) => {
      writeCompiled(`${sibling}.ts`, dir);
      return `import * as ${name} from "./${sibling}.mjs";`;
    });
  if (/^import (?!type)(?!\{ validatorHelper \} from "file:)(?!\* as \w+ from "\.\/validators\.\w+\.mjs")/m.test(linked))
    throw new Error(
      `${file} compiled to a module with run-time imports other than the support module's helpers and the other validator modules; the bench loads it alone`,
    );
  writeFileSync(join(dir, file.replace(/\.ts$/, ".mjs")), linked);
}

/**
 * Rewrites ajv's standalone ESM so the validators live in a function scope, as in run-time
 * ajv (which compiles them with `new Function`), instead of at module scope: the module
 * evaluates one function that declares them all and returns the exported ones. (Module-scope
 * function declarations are mutable module bindings, which V8 reaches through the module's
 * cells; in a function scope they are ordinary context slots, as in run-time ajv.)
 */
export function withFunctionScope(code: string): string {
  const exports: [string, string][] = [];
  const body = code.replace(/^"use strict";\n/m, "").replace(/^export const (\w+) = (validate\d+);\n/gm, (_m, name: string, fn: string) => {
    exports.push([name, fn]);
    return "";
  });
  if (exports.length === 0) throw new Error("withFunctionScope: no exports found in the standalone code");
  return [
    '"use strict";',
    "const validators = (() => {",
    body,
    `return { ${exports.map(([name, fn]) => `${name}: ${fn}`).join(", ")} };`,
    "})();",
    ...exports.map(([name]) => `export const ${name} = validators.${name};`),
    "",
  ].join("\n");
}

interface Workload {
  readonly texts: readonly string[];
  readonly payloads: readonly unknown[];
  readonly types: readonly string[];
}

function workload(messages: readonly CorpusMessage[]): Workload {
  return {
    texts: messages.map((m) => m.text),
    payloads: messages.map((m) => payloadOf(JSON.parse(m.text) as { params?: unknown; result?: unknown }, m.kind)),
    types: messages.map((m) => m.type),
  };
}

function parseVariant(w: Workload): Variant {
  const texts = w.texts;
  return {
    name: "JSON.parse",
    pass: () => {
      let sink = 0;
      for (let i = 0; i < texts.length; i++) {
        const value = JSON.parse(texts[i]!) as { jsonrpc: string };
        sink += value.jsonrpc.length;
      }
      if (sink !== texts.length * 3) throw new Error("JSON.parse pass lost a message");
      return sink;
    },
  };
}

/**
 * The least a validator must do, as a yardstick: look at every value of every payload once
 * (its type) and at every key of every object, with no check and no schema. A generic walk,
 * so it reads a little more than the validators need (the contents of free-form values,
 * about 3% of this corpus's values) and costs more per value than code written for one
 * type; what it shows is the price of reading the parsed messages on the machine at hand.
 */
function readEveryValue(value: unknown): number {
  if (typeof value !== "object" || value === null) return typeof value === "string" ? 1 : 0;
  let n = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) n += readEveryValue(value[i]);
    return n;
  }
  for (const key in value) n += readEveryValue((value as Record<string, unknown>)[key]);
  return n;
}

function readVariant(w: Workload): Variant {
  const payloads = w.payloads;
  let expected = -1;
  return {
    name: READ,
    pass: () => {
      let strings = 0;
      for (let i = 0; i < payloads.length; i++) strings += readEveryValue(payloads[i]);
      if (expected < 0) expected = strings;
      else if (strings !== expected) throw new Error(`${READ}: counted ${strings} strings, then ${expected}`);
      return strings;
    },
  };
}

function validateVariant(name: string, w: Workload, byTitle: ReadonlyMap<string, Validator> | Record<string, Validator>): Variant {
  const lookup = (t: string): Validator => {
    const fn = byTitle instanceof Map ? byTitle.get(t) : (byTitle as Record<string, Validator>)[t];
    if (typeof fn !== "function") throw new Error(`${name}: no validator for ${t}`);
    return fn;
  };
  // Resolved before timing, as a dispatcher resolves method → validator once.
  const fns = w.types.map(lookup);
  const payloads = w.payloads;
  return {
    name,
    pass: () => {
      let ok = 0;
      for (let i = 0; i < payloads.length; i++) if (fns[i]!(payloads[i])) ok++;
      if (ok !== payloads.length) throw new Error(`${name}: ${payloads.length - ok} valid messages were rejected`);
      return ok;
    },
  };
}

const GEN = "generated (precompiled, compiled by tsc)";
const RT = "run-time ajv";
const PARSE = "JSON.parse";
const READ = "read every value once, no checks";

export async function runValidationBench(options: ValidationBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const quick = options.quick ?? false;
  log("== validation: JSON.parse vs generated (precompiled) vs run-time ajv; strict mode, success path");

  let t0 = now();
  const corpus = buildCorpus();
  const info = describeCorpus(corpus);
  log(
    `corpus: ${info.messages} messages, ${(info.bytes / 1024).toFixed(0)} KiB, ${info.byMethod.length} kinds (seeded; every message checked valid in strict mode; ${(now() - t0).toFixed(0)} ms)`,
  );
  log(
    `  mix: ${info.byMethod
      .slice(0, 6)
      .map(([m, n]) => `${m} ${((100 * n) / info.messages).toFixed(1)}%`)
      .join(", ")}, …`,
  );

  t0 = now();
  const runtime = runtimeValidators();
  log(
    `run-time ajv: ${runtime.size} strict schemas compiled in ${(now() - t0).toFixed(0)} ms, before timing (Ajv2020, the generator's ajvOptions, no code option)`,
  );
  const generated = (await compiledModule("validators.strict.ts")) as unknown as Record<string, RawValidator>;
  // The comparison only means something if generated/ holds what the generator makes of schemas/ today.
  const fresh = emitStandalone(loadSchemas(SCHEMAS), "strict", "@turnspec/rpc", GENERATED_HEADER);
  const onDisk = readFileSync(fileURLToPath(new URL("../generated/validators.strict.ts", import.meta.url)), "utf8");
  if (onDisk !== fresh)
    log(
      "WARNING: generated/validators.strict.ts is not what `turnspec generate` makes of schemas/ now: run it first, or the two variants compare different code",
    );

  const w = workload(corpus);
  const variants: Variant[] = [parseVariant(w), validateVariant(GEN, w, generated), validateVariant(RT, w, runtime), readVariant(w)];
  const plan = {
    ...(quick
      ? { warmupMs: 1500, minWarmupRounds: 30, maxWarmupMs: 8000, rounds: 7, minSampleMs: 40 }
      : { warmupMs: 4000, minWarmupRounds: 80, maxWarmupMs: 30000, rounds: 21, minSampleMs: 60 }),
    clock: cpuNow,
  };
  t0 = now();
  const { samples, passesPerSample, warmupRounds, settled } = runRounds(variants, plan);
  log(
    `${plan.rounds} alternating rounds after ${warmupRounds} warm-up rounds (${settled ? "settled" : "NOT settled: stopped at the time limit"}); ≥ ${plan.minSampleMs} ms of CPU time per sample, full GC before each; median per variant (${((now() - t0) / 1000).toFixed(1)} s)`,
  );

  const n = corpus.length;
  const med = (name: string) => median(samples.get(name)!);
  const parseMs = med(PARSE);
  const genMs = med(GEN);
  const rtMs = med(RT);
  const perRound = (a: string, b: string) => samples.get(a)!.map((x, i) => x / samples.get(b)![i]!);
  const iqr = (xs: number[]) => `${quantile(xs, 0.25).toFixed(3)}…${quantile(xs, 0.75).toFixed(3)}`;
  log(
    table(
      ["variant", "per message", "throughput", "MB/s of JSON", "passes/sample"],
      variants.map((v) => {
        const ms = med(v.name);
        return [
          v.name,
          fmtNs((ms * 1e6) / n),
          fmtOps((n * 1000) / ms),
          (info.bytes / 1e6 / (ms / 1000)).toFixed(0),
          String(passesPerSample.get(v.name)),
        ];
      }),
      [1, 2, 3, 4],
    ),
  );
  const speedup = rtMs / genMs;
  const costRatio = genMs / parseMs;
  log(
    `generated vs run-time ajv: ${speedup.toFixed(3)}× (ratio of medians; paired per-round ratios, interquartile ${iqr(perRound(RT, GEN))})`,
  );
  log(
    `validate / JSON.parse cost: generated ${costRatio.toFixed(3)}, run-time ajv ${(rtMs / parseMs).toFixed(3)} (paired per-round generated/parse, interquartile ${iqr(perRound(GEN, PARSE))})`,
  );
  const readMs = med(READ);
  log(
    `reading every value once, no checks: ${(readMs / parseMs).toFixed(3)} of JSON.parse; the generated validators cost ${(genMs / readMs).toFixed(3)}× that (paired per-round, interquartile ${iqr(perRound(GEN, READ))})`,
  );

  const rows: ResultRow[] = [
    {
      name: "JSON.parse (whole message)",
      value: `${fmtOps((n * 1000) / parseMs)}, ${fmtNs((parseMs * 1e6) / n)}/msg`,
      target: "(baseline)",
      status: "info",
    },
    {
      name: "validate: generated (precompiled)",
      value: `${fmtOps((n * 1000) / genMs)}, ${fmtNs((genMs * 1e6) / n)}/msg`,
      target: "",
      status: "info",
    },
    { name: "validate: run-time ajv", value: `${fmtOps((n * 1000) / rtMs)}, ${fmtNs((rtMs * 1e6) / n)}/msg`, target: "", status: "info" },
    {
      name: "generated vs run-time ajv (speed)",
      value: `${speedup.toFixed(3)}×`,
      target: "≥ 1.0×",
      status: speedup >= 1.0 ? "PASS" : "MISS",
    },
    { name: "validate cost / JSON.parse cost", value: costRatio.toFixed(3), target: "≤ 0.10", status: costRatio <= 0.1 ? "PASS" : "MISS" },
    { name: "  reading every value once, no checks / JSON.parse", value: (readMs / parseMs).toFixed(3), target: "(info)", status: "info" },
  ];

  if (options.whatIf ?? true) {
    log("\nwhat-if (informational, not targets): the strict module compiled or bound differently, and the tolerant module. Each");
    log("rewritten module is loaded fresh from a temp file, like the control (the same options, unchanged), so speeds are relative to it:");
    const CONTROL = "control: ajv's standalone ESM, module scope";
    const whatIfs: [string, Map<string, Validator> | Record<string, Validator>][] = [
      [CONTROL, await standaloneWith("generator")],
      ["generated, loaded through tsx (esbuild keepNames)", tsxStrictValidators as unknown as Record<string, Validator>],
      ["compiled by Ajv2020 with every vocabulary, in a function scope", await standaloneWith("Ajv2020", withFunctionScope)],
      ["run-time ajv with the generator's compiler", runtimeValidators("generator")],
      ["generated tolerant (validators.tolerant.ts, by tsc)", await compiledModule("validators.tolerant.ts")],
    ];
    const wv: Variant[] = [
      parseVariant(w),
      validateVariant(GEN, w, generated),
      ...whatIfs.map(([name, fns]) => validateVariant(name, w, fns)),
    ];
    const r = runRounds(wv, {
      ...(quick
        ? { warmupMs: 1500, minWarmupRounds: 30, maxWarmupMs: 8000, rounds: 7, minSampleMs: 40 }
        : { warmupMs: 3000, minWarmupRounds: 60, maxWarmupMs: 30000, rounds: 21, minSampleMs: 50 }),
      clock: cpuNow,
    });
    log(
      `${r.samples.get(PARSE)!.length} alternating rounds after ${r.warmupRounds} warm-up rounds (${r.settled ? "settled" : "NOT settled: stopped at the time limit"})`,
    );
    const p = median(r.samples.get(PARSE)!);
    const c = median(r.samples.get(CONTROL)!);
    const paired = (name: string) => median(r.samples.get(CONTROL)!.map((x, i) => x / r.samples.get(name)![i]!));
    log(
      table(
        ["variant", "per message", "cost / JSON.parse", "speed vs control", "paired median"],
        wv.map((v) => {
          const ms = median(r.samples.get(v.name)!);
          return [v.name, fmtNs((ms * 1e6) / n), (ms / p).toFixed(3), `${(c / ms).toFixed(3)}×`, `${paired(v.name).toFixed(3)}×`];
        }),
        [1, 2, 3, 4],
      ),
    );
    for (const [name] of whatIfs.slice(1)) {
      const ms = median(r.samples.get(name)!);
      rows.push({
        name: `what-if: ${name}`,
        value: `${paired(name).toFixed(2)}× the control's speed (paired); cost/parse ${(ms / p).toFixed(3)}, control ${(c / p).toFixed(3)}`,
        target: "(info)",
        status: "info",
      });
    }
  }

  if (options.breakdown ?? true) {
    const groups = new Map<string, CorpusMessage[]>();
    for (const m of corpus) {
      const key = `${m.kind === "response" ? "result of " : m.kind === "request" ? "params of " : ""}${m.method}`;
      (groups.get(key) ?? groups.set(key, []).get(key)!).push(m);
    }
    const bytesOf = (ms: CorpusMessage[]) => ms.reduce((s, m) => s + m.text.length, 0);
    const chosen = [...groups].sort((a, b) => bytesOf(b[1]) - bytesOf(a[1])).slice(0, quick ? 6 : 12);
    const covered = chosen.reduce((s, [, ms]) => s + ms.length, 0);
    log(
      `\nper message kind: the ${chosen.length} kinds with the most bytes (${((100 * covered) / n).toFixed(0)}% of messages), each timed alone (informational):`,
    );
    const out: string[][] = [];
    for (const [key, msgs] of chosen) {
      const gw = workload(msgs);
      const r = runRounds([parseVariant(gw), validateVariant(GEN, gw, generated), validateVariant(RT, gw, runtime)], {
        warmupMs: quick ? 100 : 250,
        minWarmupRounds: 3,
        maxWarmupMs: quick ? 300 : 1000,
        rounds: quick ? 3 : 7,
        minSampleMs: 15,
        clock: cpuNow,
      });
      const [p, g, rt] = [PARSE, GEN, RT].map((v) => median(r.samples.get(v)!)) as [number, number, number];
      const per = (ms: number) => fmtNs((ms * 1e6) / msgs.length);
      out.push([
        key,
        String(msgs.length),
        String(Math.round(bytesOf(msgs) / msgs.length)),
        per(p),
        per(g),
        per(rt),
        (g / p).toFixed(3),
        (rt / g).toFixed(3),
      ]);
    }
    log(table(["kind", "msgs", "avg bytes", "parse", "generated", "run-time", "gen/parse", "rt/gen"], out, [1, 2, 3, 4, 5, 6, 7]));
    log(
      "(one kind at a time, the validators see few object shapes; the mixed corpus above is the realistic, polymorphic case and costs more)",
    );
  }

  return rows;
}

if (isMain(import.meta.url)) {
  const args = new Set(process.argv.slice(2));
  const rows = await runValidationBench({
    quick: args.has("--quick"),
    breakdown: !args.has("--no-breakdown"),
    whatIf: !args.has("--no-what-if"),
  });
  console.log(`\n${resultTable(rows)}`);
}
