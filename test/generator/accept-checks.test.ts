/**
 * The accept-only checks of the fast validator sets (generator/emit/accept.ts) must not change
 * what a validator accepts, refuses or reports: each set's exported validators are compared
 * with ajv's validators of the same schemas alone, on realistic messages (the bench corpus),
 * on values sampled from every schema of the protocols under test/fixtures, and on many
 * mutations of both (missing and unknown fields, wrong types, out-of-range values, values no
 * JSON text makes: NaN, inherited and non-enumerable properties, sparse arrays).
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildCorpus, payloadOf } from "../../bench/corpus.js";
import { standaloneValidatorCode, validatorSetCode, type ValidationMode } from "../../packages/generator/src/emit/validators.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import type { Json, JsonObject, ProtocolModel } from "../../packages/generator/src/model.js";
import { validatorHelper } from "../../packages/rpc/src/validator-helpers.js";
import { useTempDirs } from "./temp-dirs.js";

type Validate = ((value: unknown) => boolean) & { errors?: unknown };

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const tempDir = useTempDirs();

function evaluate(code: string): Record<string, Validate> {
  const exports = {} as Record<string, Validate>;
  new Function("exports", "require", code)(exports, validatorHelper);
  return exports;
}

/** A fast set's validators, and the ajv validators they answer from for a value their checks refuse (the strict set: the report set's). */
function fastSet(
  model: ProtocolModel,
  mode: ValidationMode,
  extra = "",
): { fast: Record<string, Validate>; reference: Record<string, Validate> } {
  const set = validatorSetCode(model, mode);
  const reference = evaluate(standaloneValidatorCode(model, set.usesReport ? "report" : mode).code);
  const fast = {} as Record<string, Validate>;
  new Function("exports", set.usesReport ? "report" : "require", `${set.code}\n${extra}`)(
    fast,
    set.usesReport ? reference : validatorHelper,
  );
  return { fast, reference };
}

/** mulberry32, so every run checks the same values. */
function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    let t = (state = (state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** A value for `schema`, valid where this simple reading can make it so (patterns and the like are not honoured). */
function sample(model: ProtocolModel, schema: Json, base: string, random: () => number, depth = 0): unknown {
  if (!isObject(schema) || depth > 12) return {};
  const s = schema as JsonObject;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  if (typeof s.$ref === "string") {
    const url = new URL(s.$ref, base);
    const fragment = url.hash.slice(1);
    url.hash = "";
    const type = model.types.find((t) => t.id === url.href);
    let node: Json | undefined = type?.schema;
    for (const token of fragment ? fragment.slice(1).split("/") : []) node = isObject(node) ? (node as JsonObject)[token] : undefined;
    return node === undefined ? {} : sample(model, node, url.href, random, depth + 1);
  }
  if (s.const !== undefined) return structuredClone(s.const);
  if (Array.isArray(s.enum)) return structuredClone(pick(s.enum));
  const branches = (s.oneOf ?? s.anyOf) as Json[] | undefined;
  if (Array.isArray(branches)) return sample(model, pick(branches), base, random, depth + 1);
  const type = Array.isArray(s.type) ? pick(s.type) : (s.type ?? (s.properties ? "object" : s.items ? "array" : "string"));
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      const required = new Set((s.required as string[] | undefined) ?? []);
      for (const [key, sub] of Object.entries((s.properties as JsonObject | undefined) ?? {})) {
        if (required.has(key) || random() < 0.6) out[key] = sample(model, sub, base, random, depth + 1);
      }
      return out;
    }
    case "array": {
      const n = pick([
        Number(s.minItems ?? 0),
        Math.floor(random() * 3),
        ...(s.maxItems === undefined ? [] : [Number(s.maxItems), Number(s.maxItems) + 1]),
      ]);
      return Array.from({ length: n }, () => sample(model, (s.items as Json) ?? {}, base, random, depth + 1));
    }
    // Lengths and numbers at and just past their limits, where an off-by-one would show.
    case "string": {
      const lengths = [1 + Math.floor(random() * 4)];
      if (s.minLength !== undefined) lengths.push(Number(s.minLength), Math.max(0, Number(s.minLength) - 1));
      if (s.maxLength !== undefined) lengths.push(Number(s.maxLength), Number(s.maxLength) + 1);
      return "x".repeat(pick(lengths));
    }
    case "integer":
    case "number": {
      const values = [1 + Math.floor(random() * 5) + (type === "number" ? 0.5 : 0)];
      for (const [keyword, step] of [
        ["minimum", -1],
        ["maximum", 1],
        ["exclusiveMinimum", 0],
        ["exclusiveMaximum", 0],
      ] as const) {
        if (typeof s[keyword] === "number")
          values.push(s[keyword] as number, (s[keyword] as number) + step, (s[keyword] as number) - step || 1);
      }
      return pick(values);
    }
    case "boolean":
      return random() < 0.5;
    case "null":
      return null;
    default:
      return {};
  }
}

/** Values no JSON text makes, but that a caller in the same process can pass. */
function oddValues(): unknown[] {
  const sparse: unknown[] = [];
  sparse[2] = "x";
  const hidden = Object.defineProperty({ extra: 1 }, "type", { value: "agentMessage", enumerable: false });
  return [
    NaN,
    Infinity,
    -Infinity,
    -0,
    1.5,
    2 ** 53,
    "",
    "x".repeat(300),
    true,
    null,
    [],
    {},
    sparse,
    Object.create({ inherited: 1 }),
    Object.create({ type: "userMessage" }),
    hidden,
    new Date(0),
    [1, "a", null],
  ];
}

const PALETTE = oddValues();

/** Copies of `value`, each with one change somewhere inside it. */
function mutants(value: unknown, random: () => number, count: number): unknown[] {
  const places: { parent: Record<string, unknown> | unknown[]; key: string | number }[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach((child, i) => (places.push({ parent: node, key: i }), visit(child)));
    else if (isObject(node)) for (const key of Object.keys(node)) (places.push({ parent: node, key }), visit(node[key]));
  };
  const out: unknown[] = [];
  for (let n = 0; n < count; n++) {
    const copy = structuredClone(value);
    places.length = 0;
    visit(copy);
    const containers = [copy, ...places.map((p) => (p.parent as Record<string | number, unknown>)[p.key])].filter(
      (c) => Array.isArray(c) || isObject(c),
    );
    const op = random();
    if (op < 0.45 && places.length) {
      const { parent, key } = places[Math.floor(random() * places.length)]!;
      (parent as Record<string | number, unknown>)[key] = PALETTE[Math.floor(random() * PALETTE.length)];
    } else if (op < 0.7 && places.length) {
      const { parent, key } = places[Math.floor(random() * places.length)]!;
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
    } else if (containers.length) {
      const target = containers[Math.floor(random() * containers.length)] as Record<string, unknown> | unknown[];
      if (Array.isArray(target)) target.push(PALETTE[Math.floor(random() * PALETTE.length)]);
      else target[random() < 0.5 ? "unknown_field" : "__proto__x"] = PALETTE[Math.floor(random() * PALETTE.length)];
    } else {
      out.push(PALETTE[Math.floor(random() * PALETTE.length)]);
      continue;
    }
    out.push(copy);
  }
  return out;
}

/** Checks that the set's checks and exports answer (and report) exactly as the ajv validators behind them do (the strict set: the report set's), for every value; counts the valid and invalid ones. */
function compare(model: ProtocolModel, mode: ValidationMode, valuesOf: (title: string) => unknown[]): { valid: number; invalid: number } {
  // The checks themselves too (accept<i> for the type at index i), so that one refusing a valid
  // value shows here, though the validator in front of it would still answer right (from ajv).
  const types = model.types.map((_, i) => `accept${i}`);
  const { fast, reference } = fastSet(model, mode, `exports[" accept"] = [${types.join(", ")}];`);
  const accepts = fast[" accept"] as unknown as Validate[];
  let valid = 0;
  let invalid = 0;
  for (const [i, type] of model.types.entries()) {
    for (const value of valuesOf(type.title)) {
      const expected = reference[type.title]!(value);
      if (accepts[i]!(value) !== expected)
        expect.fail(`${mode} ${type.title}: the accept-only check answered ${!expected}, ajv ${expected}, for ${JSON.stringify(value)}`);
      const got = fast[type.title]!(value);
      if (got !== expected || JSON.stringify(fast[type.title]!.errors) !== JSON.stringify(reference[type.title]!.errors)) {
        expect.fail(
          `${mode} ${type.title}: the fast validator answered ${got} with ${JSON.stringify(fast[type.title]!.errors)}, ajv ${expected} with ${JSON.stringify(reference[type.title]!.errors)}, for ${JSON.stringify(value)}`,
        );
      }
      if (expected) valid++;
      else invalid++;
    }
  }
  return { valid, invalid };
}

function sampledValues(model: ProtocolModel, seed: number): (title: string) => unknown[] {
  return (title) => {
    const type = model.types.find((t) => t.title === title)!;
    const random = rng(seed ^ (type.title.length * 7919));
    const values: unknown[] = [...PALETTE];
    for (let i = 0; i < 8; i++) {
      const value = sample(model, type.schema, type.id, random);
      values.push(value, ...mutants(value, random, 12));
    }
    return values;
  };
}

describe("accept-only checks", () => {
  const model = loadSchemas(join(repoRoot, "schemas"));

  it("cover every type of the agent-gateway protocol, in both fast sets", () => {
    for (const mode of ["strict", "tolerant"] as const) expect([...validatorSetCode(model, mode).uncovered]).toEqual([]);
  });

  it("answer and report as ajv on the bench corpus and mutations of it", () => {
    const corpus = buildCorpus({ minMessages: 3000 });
    const byType = new Map<string, unknown[]>();
    const random = rng(14);
    for (const message of corpus) {
      const payload = payloadOf(JSON.parse(message.text) as { params?: unknown; result?: unknown }, message.kind);
      const list = byType.get(message.type) ?? byType.set(message.type, []).get(message.type)!;
      if (list.length < 60) list.push(payload, ...mutants(payload, random, 6));
    }
    for (const mode of ["strict", "tolerant"] as const) {
      const { valid, invalid } = compare(model, mode, (title) => byType.get(title) ?? []);
      expect(valid).toBeGreaterThan(300);
      expect(invalid).toBeGreaterThan(1000);
    }
  });

  for (const protocol of ["schemas", "test/fixtures/mcp/schemas", "test/fixtures/lsp/schemas", "test/fixtures/mini-protocol/schemas"]) {
    it(`answer and report as ajv on values sampled from ${protocol}`, () => {
      const m = loadSchemas(join(repoRoot, protocol));
      for (const mode of ["strict", "tolerant"] as const) {
        const { valid, invalid } = compare(m, mode, sampledValues(m, 7));
        expect(valid).toBeGreaterThan(m.types.length);
        expect(invalid).toBeGreaterThan(m.types.length);
      }
    });
  }

  it("leave a type whose schema uses a keyword they do not translate to ajv's validator, and answer for the types using it", () => {
    const dir = tempDir("turnspec-accept-");
    cpSync(join(repoRoot, "test/fixtures/mini-protocol/schemas"), dir, { recursive: true });
    const file = join(dir, "kv_watch_params.json");
    const schema = JSON.parse(readFileSync(file, "utf8"));
    schema.properties.window = { type: "integer", multipleOf: 5 };
    writeFileSync(file, JSON.stringify(schema, null, 2));
    const m = loadSchemas(dir);
    const { uncovered } = validatorSetCode(m, "strict");
    expect([...uncovered.keys()]).toEqual(["KvWatchParams"]);
    expect(uncovered.get("KvWatchParams")).toBe("multipleOf");
    const { fast } = fastSet(m, "strict");
    expect(fast.KvWatchParams!({ prefix: "a", window: 10 })).toBe(true);
    expect(fast.KvWatchParams!({ prefix: "a", window: 7 })).toBe(false);
    compare(m, "strict", (title) =>
      title === "KvWatchParams"
        ? [
            { prefix: "a", window: 10 },
            { prefix: "a", window: 7 },
            { prefix: "a", window: "10" },
          ]
        : [],
    );
  });
});
