/**
 * Decode + validate per message in each generated language, on the corpus of the validation
 * benchmark (bench/corpus.ts): each message's payload as JSON text, decoded as its type.
 *
 * - TypeScript: JSON.parse and the generated validators (strict), as a receiver runs them;
 * - Python, the generated package (test/languages/python/agent_gateway): parse as the contract
 *   says, the generated checks, the pydantic models built; and its checks alone;
 * - Python, pydantic's own validation alone (validate_json of the same models): the baseline a
 *   hand-written pydantic client would have, without the contract's verdicts.
 *
 * Informational (no targets): the Python numbers come from bench/python_decode.py run by
 * .venv/bin/python, which `.ci/run` makes; without it the Python rows say so.
 *
 * Run alone: node --import ./scripts/from-source.mjs bench/languages.ts [--quick]
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { validate, type TypeName } from "../generated/validators.js";
import { buildCorpus, payloadOf } from "./corpus.js";
import { fmtNs, isMain, median, type ResultRow } from "./lib.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const PYTHON = join(root, ".venv/bin/python");

export async function runLanguagesBench(options: { readonly quick?: boolean } = {}): Promise<ResultRow[]> {
  const log = (line: string) => console.log(line);
  log("== languages: decode + validate per message, TypeScript and the generated Python package, vs pydantic alone");
  const corpus = buildCorpus({ minMessages: options.quick ? 2000 : 6000 }).map((m) => ({
    type: m.type,
    json: JSON.stringify(payloadOf(JSON.parse(m.text) as object, m.kind)),
  }));
  log(`corpus: ${corpus.length} payloads of bench/corpus.ts, strict mode, every one valid`);
  const rounds = options.quick ? 3 : 9;

  // TypeScript: alternating rounds after a warm-up, median ns per message.
  const tsRound = () => {
    const started = performance.now();
    for (const m of corpus) if (!validate(m.type as TypeName, JSON.parse(m.json), "strict").ok) throw new Error(`bench: ${m.type} refused`);
    return ((performance.now() - started) * 1e6) / corpus.length;
  };
  for (let i = 0; i < 3; i++) tsRound();
  const ts = median(Array.from({ length: rounds }, tsRound));
  const rows: ResultRow[] = [
    { name: "decode + validate: TypeScript (JSON.parse + generated)", value: `${fmtNs(ts)}/msg`, target: "", status: "info" },
  ];
  log(`TypeScript, JSON.parse + generated validators: ${fmtNs(ts)}/msg`);

  if (!existsSync(PYTHON)) {
    log("Python: no .venv/bin/python (.ci/run makes it); the Python rows are left out");
    rows.push({ name: "decode + validate: Python", value: "no .venv", target: "", status: "info" });
    return rows;
  }
  const dir = mkdtempSync(join(tmpdir(), "turnspec-bench-languages-"));
  try {
    const file = join(dir, "corpus.jsonl");
    writeFileSync(file, corpus.map((m) => JSON.stringify(m)).join("\n") + "\n");
    const { stdout } = await promisify(execFile)(PYTHON, [join(root, "bench/python_decode.py"), file, String(rounds)], {
      cwd: root,
      env: { ...process.env, PYTHONPATH: join(root, "test/languages/python") },
      maxBuffer: 1024 * 1024,
      timeout: 20 * 60_000,
    });
    const py = JSON.parse(stdout) as { package: number; checks: number; pydantic: number; python: string };
    log(`Python ${py.python}, generated package (parse, checks, models): ${fmtNs(py.package)}/msg`);
    log(`Python, generated checks alone (parse, checks):        ${fmtNs(py.checks)}/msg`);
    log(`Python, pydantic validate_json alone:                  ${fmtNs(py.pydantic)}/msg`);
    rows.push(
      { name: "decode + validate: Python package (checks + models)", value: `${fmtNs(py.package)}/msg`, target: "", status: "info" },
      { name: "  Python: generated checks alone", value: `${fmtNs(py.checks)}/msg`, target: "", status: "info" },
      { name: "  Python: pydantic validate_json alone", value: `${fmtNs(py.pydantic)}/msg`, target: "", status: "info" },
      { name: "Python package / pydantic alone", value: `${(py.package / py.pydantic).toFixed(2)}×`, target: "", status: "info" },
      { name: "Python package / TypeScript", value: `${(py.package / ts).toFixed(1)}×`, target: "", status: "info" },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

if (isMain(import.meta.url)) {
  const rows = await runLanguagesBench({ quick: process.argv.includes("--quick") });
  for (const row of rows) console.log(`${row.name}: ${row.value}`);
}
