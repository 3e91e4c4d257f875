/**
 * `turnspec vectors`: the test data every generated language is held to (docs/languages.md).
 * From any schemas folder: per type its smallest and fullest values, each enum value and
 * union tag, every bound's boundaries, one refused value per keyword; per method and
 * notification its messages; per ordering rule transcripts that keep and break it; and the
 * hazard set. Each case carries its JSON text and the verdicts of the TypeScript validators
 * (the same schemas, options and strict/tolerant readings as the generated ones) in both
 * modes, and the canonical JSON text of what it denotes. Deterministic.
 */
import { canonicalJson, createOrderingEngine, MessageChecker, type OrderingRule } from "@turnspec/rpc";
import type { ProtocolModel } from "../model.js";
import { compileProtocol } from "../runtime-protocol.js";
import { INTEGER_RANGE } from "../emit/validators.js";
import { TypeCases, type Candidate } from "./cases.js";
import type { MessageCase, MessageFinding, Transcript, TypeCase, Vectors, Verdict } from "./format.js";
import { hazardCandidates } from "./hazards.js";
import { messageCandidates, transcriptCandidates } from "./messages.js";

export type { MessageCase, MessageFinding, Transcript, TypeCase, Vectors, Verdict } from "./format.js";

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const sortedUnique = (values: readonly string[]): string[] => [...new Set(values)].sort(byCodeUnits);

/** The canonical text of what a JSON text denotes, or null when it denotes a number no double holds (1e400). */
function canonicalOf(text: string): string | null {
  const value: unknown = JSON.parse(text);
  try {
    return canonicalJson(value);
  } catch {
    return null;
  }
}

export function buildVectors(model: ProtocolModel): Vectors {
  const protocol = compileProtocol(model);
  const verdict = (type: string, text: string, mode: "strict" | "tolerant"): Verdict => {
    const result = protocol.validate(type, JSON.parse(text), mode);
    return result.ok ? { valid: true, pointers: [] } : { valid: false, pointers: sortedUnique(result.errors.map((e) => e.pointer)) };
  };
  const typeCase = (c: Candidate): TypeCase => ({
    ...c,
    strict: verdict(c.type, c.json, "strict"),
    tolerant: verdict(c.type, c.json, "tolerant"),
    canonical: canonicalOf(c.json),
  });

  const generator = new TypeCases(model);
  const types: TypeCase[] = [];
  const refused = new Map<string, string>();
  for (const type of model.types) {
    for (const c of generator.of(type)) {
      const done = typeCase(c);
      types.push(done);
      // The first value each type refuses in strict mode, preferring a missing field, for the message cases.
      const known = refused.get(type.title);
      if (
        !done.strict.valid &&
        (known === undefined || (c.id.includes("/required") && !types.find((t) => t.json === known)?.id.includes("/required")))
      )
        refused.set(type.title, c.json);
    }
  }
  const hazards = hazardCandidates(model);
  types.push(...hazards.candidates.map(typeCase));

  const messages: MessageCase[] = messageCandidates(model, (type) => refused.get(type)).map((c) => ({
    ...c,
    strict: messageFindings(protocol, c.frames, "strict"),
    tolerant: messageFindings(protocol, c.frames, "tolerant"),
  }));

  const rules = model.ordering.map((r) => r.rule) as unknown as OrderingRule[];
  const transcripts: Transcript[] = transcriptCandidates(model).map((c) => {
    const engine = createOrderingEngine(rules);
    const violations: { frame: number | null; rule: string }[] = [];
    c.frames.forEach((f) =>
      violations.push(...engine.accept(JSON.parse(f.json), f.from).map((v) => ({ frame: v.frameIndex, rule: v.rule }))),
    );
    violations.push(...engine.end().map((v) => ({ frame: null, rule: v.rule })));
    return { ...c, violations };
  });

  return {
    format: "turnspec-vectors/1",
    protocol: { title: model.title, version: model.version, digest: model.digest },
    contract: {
      integers: { ...INTEGER_RANGE },
      lengths: "code points",
      patterns: "ECMA-262 with the u flag",
      canonical: "RFC 8785, lone surrogates escaped",
    },
    types,
    messages,
    transcripts,
    hazardsWithoutPlace: hazards.withoutPlace,
  };
}

/** The findings of a message sequence, ordering rules off: frame index and pointer, in order. */
function messageFindings(
  protocol: ReturnType<typeof compileProtocol>,
  frames: readonly string[],
  mode: "strict" | "tolerant",
): MessageFinding[] {
  const checker = new MessageChecker(mode, { protocol, ordering: false });
  const out: MessageFinding[] = [];
  frames.forEach((frame, index) => {
    for (const finding of checker.check(JSON.parse(frame), index)) {
      out.push({ frame: index, pointer: finding.part === "" ? finding.issue.pointer : `/${finding.part}${finding.issue.pointer}` });
    }
  });
  const seen = new Set<string>();
  return out
    .filter((f) => !seen.has(`${f.frame} ${f.pointer}`) && seen.add(`${f.frame} ${f.pointer}`))
    .sort((a, b) => a.frame - b.frame || byCodeUnits(a.pointer, b.pointer));
}

/** The vectors as the file `turnspec vectors` writes: JSON, one case per line. */
export function vectorsText(vectors: Vectors): string {
  const lines = (items: readonly unknown[]) =>
    items.length ? `[\n${items.map((item) => `    ${JSON.stringify(item)}`).join(",\n")}\n  ]` : "[]";
  const { types, messages, transcripts, ...head } = vectors;
  const top = Object.entries(head).map(([key, value]) => `  ${JSON.stringify(key)}: ${JSON.stringify(value)}`);
  return `{\n${[...top, `  "types": ${lines(types)}`, `  "messages": ${lines(messages)}`, `  "transcripts": ${lines(transcripts)}`].join(",\n")}\n}\n`;
}

/** Counts for a summary line. */
export function vectorCounts(vectors: Vectors): { types: number; hazards: number; messages: number; transcripts: number } {
  return {
    types: vectors.types.filter((c) => c.group === "type").length,
    hazards: vectors.types.filter((c) => c.group === "hazard").length,
    messages: vectors.messages.length,
    transcripts: vectors.transcripts.length,
  };
}
