/**
 * The contract harness: runs one language's testee over a protocol's vectors and compares
 * every answer with the TypeScript verdicts the vectors carry (docs/languages.md). The same
 * checks for every language:
 *
 * - `validate/strict`, `validate/tolerant`: the same verdict and the same error pointers;
 * - `roundtrip/strict`, `roundtrip/tolerant`: a value valid in that mode decoded into the
 *   language's types and encoded again gives the canonical bytes (unknown fields and x-open
 *   values included);
 * - `encode`: any JSON text encoded gives the canonical bytes;
 * - `messages/strict`, `messages/tolerant`: the same findings on JSON-RPC messages;
 * - `ordering`: the same violations of the ordering rules on each transcript.
 *
 * Each language keeps an expected-failures list (`<check> <case id>` per line, `#` starts a
 * comment giving the reason) that may only shrink: a failure not listed fails the run, and so
 * does a listed case that now passes.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Vectors } from "../../packages/generator/src/vectors/index.js";

export type Check = "validate/strict" | "validate/tolerant" | "roundtrip/strict" | "roundtrip/tolerant" | "encode" | "messages/strict" | "messages/tolerant" | "ordering";

export interface TesteeCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
}

/** One case of one check that the testee answered otherwise than the vectors say. */
export interface Mismatch {
  readonly check: Check;
  readonly id: string;
  readonly expected: unknown;
  readonly got: unknown;
}

export interface HarnessReport {
  /** Per check: cases compared and cases that agree. */
  readonly counts: Readonly<Record<Check, { compared: number; agreed: number }>>;
  readonly mismatches: readonly Mismatch[];
}

/** A running testee: one command out, one answer back, matched by id. */
class Testee {
  private readonly child;
  private readonly waiting = new Map<number, (answer: Record<string, unknown>) => void>();
  private next = 1;
  private stderr = "";
  private exited: Error | undefined;

  constructor(command: TesteeCommand) {
    this.child = spawn(command.command, [...command.args], { cwd: command.cwd, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => (this.stderr = (this.stderr + chunk).slice(-4000)));
    createInterface({ input: this.child.stdout, crlfDelay: Infinity }).on("line", (line) => {
      const answer = JSON.parse(line) as Record<string, unknown>;
      const resolve = this.waiting.get(answer.id as number);
      this.waiting.delete(answer.id as number);
      resolve?.(answer);
    });
    this.child.on("exit", (code) => {
      this.exited = new Error(`the testee ${command.command} ${command.args.join(" ")} exited (${code}) with commands unanswered:\n${this.stderr}`);
      for (const [, resolve] of this.waiting) resolve({ crashed: this.exited.message });
      this.waiting.clear();
    });
  }

  ask(command: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (this.exited) return Promise.resolve({ crashed: this.exited.message });
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ id, ...command })}\n`);
    });
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    if (this.child.exitCode === null) await new Promise((resolve) => this.child.once("exit", resolve));
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Runs the testee over every case of the vectors and compares. */
export async function runHarness(testee: TesteeCommand, vectors: Vectors): Promise<HarnessReport> {
  const running = new Testee(testee);
  const checks: Check[] = ["validate/strict", "validate/tolerant", "roundtrip/strict", "roundtrip/tolerant", "encode", "messages/strict", "messages/tolerant", "ordering"];
  const counts = Object.fromEntries(checks.map((c) => [c, { compared: 0, agreed: 0 }])) as Record<Check, { compared: number; agreed: number }>;
  const mismatches: Mismatch[] = [];
  const compare = (check: Check, id: string, expected: unknown, got: unknown) => {
    counts[check].compared++;
    if (same(expected, got)) counts[check].agreed++;
    else mismatches.push({ check, id, expected, got });
  };
  const pending: Promise<void>[] = [];
  try {
    for (const c of vectors.types) {
      for (const mode of ["strict", "tolerant"] as const) {
        pending.push(
          running.ask({ op: "validate", type: c.type, mode, json: c.json }).then((a) => compare(`validate/${mode}`, c.id, c[mode], "valid" in a ? { valid: a.valid, pointers: a.pointers } : a)),
        );
        if (c[mode].valid && c.canonical !== null) {
          pending.push(running.ask({ op: "roundtrip", type: c.type, mode, json: c.json }).then((a) => compare(`roundtrip/${mode}`, c.id, c.canonical, a.ok === true ? a.json : a)));
        }
      }
      if (c.canonical !== null) pending.push(running.ask({ op: "encode", json: c.json }).then((a) => compare("encode", c.id, c.canonical, "json" in a ? a.json : a)));
    }
    for (const m of vectors.messages) {
      for (const mode of ["strict", "tolerant"] as const) {
        pending.push(running.ask({ op: "messages", mode, frames: m.frames }).then((a) => compare(`messages/${mode}`, m.id, m[mode], "findings" in a ? a.findings : a)));
      }
    }
    for (const t of vectors.transcripts) {
      pending.push(running.ask({ op: "ordering", frames: t.frames }).then((a) => compare("ordering", t.id, t.violations, "violations" in a ? a.violations : a)));
    }
    await Promise.all(pending);
  } finally {
    await running.close();
  }
  return { counts, mismatches };
}

/** The expected failures of a language: `<check> <case id>` per line, `#` comments, for one protocol's section. */
export function readExpectedFailures(file: string, protocol: string): Set<string> {
  if (!existsSync(file)) return new Set();
  const listed = new Set<string>();
  let section: string | undefined;
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") continue;
    const heading = /^\[(.+)\]$/.exec(line);
    if (heading) {
      section = heading[1];
      continue;
    }
    if (section === protocol) listed.add(line);
  }
  return listed;
}

/**
 * What the run makes of the report against the expected failures: the failures not listed
 * and the listed cases that pass now (both fail the run), and the agreement, one line per check.
 */
export function judge(report: HarnessReport, expected: ReadonlySet<string>): { readonly unexpected: readonly Mismatch[]; readonly fixed: readonly string[]; readonly summary: string } {
  const failing = new Set(report.mismatches.map((m) => `${m.check} ${m.id}`));
  const unexpected = report.mismatches.filter((m) => !expected.has(`${m.check} ${m.id}`));
  const fixed = [...expected].filter((e) => !failing.has(e));
  const summary = Object.entries(report.counts)
    .filter(([, n]) => n.compared > 0)
    .map(([check, n]) => `${check.padEnd(20)} ${String(n.agreed).padStart(6)}/${String(n.compared).padEnd(6)} ${((100 * n.agreed) / n.compared).toFixed(2)}%`)
    .join("\n");
  return { unexpected, fixed, summary };
}

/** A mismatch in a line a person can read. */
export function describeMismatch(m: Mismatch): string {
  const cut = (value: unknown) => {
    const text = JSON.stringify(value);
    return text.length > 600 ? `${text.slice(0, 600)}…` : text;
  };
  return `${m.check} ${m.id}: expected ${cut(m.expected)}, got ${cut(m.got)}`;
}
