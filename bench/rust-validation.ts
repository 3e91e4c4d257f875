/**
 * Decode and validate per message in Rust beside TypeScript, on the same corpus
 * (bench/corpus.ts: whole simulated turns of this protocol, every message valid in strict mode):
 *
 * - TypeScript: JSON.parse of the frame and the generated strict validator of its payload,
 *   the module compiled by tsc and loaded by Node as a user runs it (a TypeScript peer's typed
 *   value is the parsed one: there is nothing else to decode);
 * - Rust: the crate generated with `turnspec generate --lang rust`
 *   (test/languages/rust/agent_gateway), driven by bench/rust built with `cargo build --release`:
 *   the crate's parse of the frame, the generated strict validator of its payload, then the
 *   decode into the payload's generated Rust type.
 *
 * Medians of rounds per message, each side timed on its process's CPU clock. Informational: the
 * two languages' costs side by side on this machine, no target.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/rust-validation.ts [--quick]
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildCorpus, payloadOf } from "./corpus.js";
import { cpuNow, fmtNs, isMain, median, resultTable, runRounds, type ResultRow } from "./lib.js";
import { compiledModule } from "./validation.js";

const root = fileURLToPath(new URL("..", import.meta.url));

export interface RustValidationBenchOptions {
  readonly quick?: boolean;
  readonly log?: (line: string) => void;
}

export async function runRustValidationBench(options: RustValidationBenchOptions = {}): Promise<ResultRow[]> {
  const log = options.log ?? ((line: string) => console.log(line));
  const quick = options.quick ?? false;
  log("== rust-validation: decode + validate per message, Rust beside TypeScript, on the same corpus (strict mode, success path)");
  if (spawnSync("cargo", ["--version"], { stdio: "ignore" }).status !== 0) {
    log("cargo is not on PATH: the Rust side is not measured");
    return [{ name: "decode + validate: Rust", value: "not measured (no cargo command)", target: "(info)", status: "info" }];
  }
  const corpus = buildCorpus();
  const dir = mkdtempSync(join(tmpdir(), "turnspec-bench-rust-"));
  try {
    const corpusFile = join(dir, "corpus.jsonl");
    writeFileSync(corpusFile, corpus.map((m) => JSON.stringify({ kind: m.kind, type: m.type, text: m.text })).join("\n") + "\n");
    // The workspace's target/ and lock file; two jobs at most, the machine's other work goes on.
    execFileSync("cargo", ["build", "--release", "--locked", "-j2", "-p", "bench-rust"], {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
    });
    const binary = join(root, "target", "release", process.platform === "win32" ? "bench-rust.exe" : "bench-rust");
    const rounds = quick ? 7 : 21;
    const rust = JSON.parse(execFileSync(binary, [corpusFile, String(rounds)], { encoding: "utf8", maxBuffer: 1 << 20 })) as Record<
      string,
      number
    >;

    const strict = await compiledModule("validators.strict.ts");
    const fns = corpus.map((m) => strict[m.type]!);
    const texts = corpus.map((m) => m.text);
    const kinds = corpus.map((m) => m.kind);
    const ts = runRounds(
      [
        {
          name: "ts",
          pass: () => {
            let ok = 0;
            for (let i = 0; i < texts.length; i++)
              if (fns[i]!(payloadOf(JSON.parse(texts[i]!) as { params?: unknown; result?: unknown }, kinds[i]!))) ok++;
            if (ok !== texts.length) throw new Error(`${texts.length - ok} valid messages were rejected`);
            return ok;
          },
        },
      ],
      {
        ...(quick
          ? { warmupMs: 1000, minWarmupRounds: 10, maxWarmupMs: 4000, rounds }
          : { warmupMs: 3000, minWarmupRounds: 30, maxWarmupMs: 15000, rounds }),
        minSampleMs: 40,
        clock: cpuNow,
      },
    );
    const tsNs = (median(ts.samples.get("ts")!) * 1e6) / corpus.length;
    const rustNs = rust["parse+validate+decode"]!;
    log(`corpus: ${corpus.length} messages; ${rounds} rounds each`);
    log(`TypeScript: JSON.parse + validate ${fmtNs(tsNs)}/msg`);
    log(
      `Rust: parse ${fmtNs(rust.parse!)}, + validate ${fmtNs(rust["parse+validate"]!)}, + decode into the Rust type ${fmtNs(rustNs)}/msg`,
    );
    return [
      {
        name: "decode + validate: TypeScript (JSON.parse, generated validator)",
        value: `${fmtNs(tsNs)}/msg`,
        target: "(info)",
        status: "info",
      },
      {
        name: "decode + validate: Rust (parse, generated validator, typed decode)",
        value: `${fmtNs(rustNs)}/msg`,
        target: "(info)",
        status: "info",
      },
      {
        name: "  Rust: parse + validate, no typed decode",
        value: `${fmtNs(rust["parse+validate"]!)}/msg`,
        target: "(info)",
        status: "info",
      },
      { name: "  Rust / TypeScript, per message", value: `${(rustNs / tsNs).toFixed(2)}×`, target: "(info)", status: "info" },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  const rows = await runRustValidationBench({ quick: process.argv.includes("--quick") });
  console.log(`\n${resultTable(rows)}`);
}
