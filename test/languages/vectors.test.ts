/**
 * The vectors' verdicts are the TypeScript validators', and a second JSON Schema engine
 * written by other people (@cfworker/json-schema, draft 2020-12) gives the same verdict on
 * every type case and hazard, in both modes, over the same contract schemas (schemasFor: the
 * schemas as written, tolerant opened, each union's tag check and the integer range added).
 * A disagreement is a bug in one of them, decided here, never a case dropped. Also: the
 * built values are what they claim (the smallest and fullest values and each tag valid),
 * the hazard set finds its places, and `turnspec vectors` writes and checks its file.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { schemasFor } from "../../packages/generator/src/emit/validators.js";
import { buildVectors, vectorsText, type Vectors } from "../../packages/generator/src/vectors/index.js";
import { runVectors } from "../../packages/generator/src/vectors/command.js";
import { useTempDirs } from "../generator/temp-dirs.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tempDir = useTempDirs();

export const PROTOCOLS = {
  "agent-gateway": "schemas",
  mini: "test/fixtures/mini-protocol/schemas",
  mcp: "test/fixtures/mcp/schemas",
  lsp: "test/fixtures/lsp/schemas",
} as const;

const built = new Map<string, Vectors>();
function vectorsOf(name: keyof typeof PROTOCOLS): Vectors {
  let vectors = built.get(name);
  if (!vectors) built.set(name, (vectors = buildVectors(loadSchemas(join(root, PROTOCOLS[name])))));
  return vectors;
}

/** A @cfworker/json-schema validator per type, over the contract schemas of one mode. */
function secondEngine(dir: string, mode: "strict" | "tolerant"): (type: string, value: unknown) => boolean {
  const model = loadSchemas(dir);
  const schemas = schemasFor(model, mode);
  const validators = new Map<string, Validator>();
  model.types.forEach((type, i) => {
    const validator = new Validator(schemas[i] as object, "2020-12", true);
    for (const other of schemas) validator.addSchema(other as object);
    validators.set(type.title, validator);
  });
  return (type, value) => validators.get(type)!.validate(value).valid;
}

describe.each(Object.keys(PROTOCOLS) as (keyof typeof PROTOCOLS)[])("the vectors of %s", (name) => {
  it("get the same verdict from a second JSON Schema engine on every type case and hazard, both modes", () => {
    const vectors = vectorsOf(name);
    const disagreements: string[] = [];
    let compared = 0;
    for (const mode of ["strict", "tolerant"] as const) {
      const other = secondEngine(join(root, PROTOCOLS[name]), mode);
      for (const c of vectors.types) {
        compared++;
        const valid = other(c.type, JSON.parse(c.json));
        if (valid !== c[mode].valid) disagreements.push(`${c.id} (${mode}): TypeScript ${c[mode].valid ? "valid" : "invalid"}, @cfworker/json-schema ${valid ? "valid" : "invalid"}: ${c.json.slice(0, 160)}`);
      }
    }
    console.log(`${name}: ${compared - disagreements.length}/${compared} verdicts agree with @cfworker/json-schema`);
    expect(disagreements).toEqual([]);
    expect(compared).toBeGreaterThan(100);
  }, 120_000);

  it("hold the smallest and fullest value and each union tag of every type as valid, and refuse what each keyword refuses", () => {
    const vectors = vectorsOf(name);
    const base = vectors.types.filter((c) => /\/(minimal|maximal)$|\/tag\//.test(c.id));
    expect(base.filter((c) => !c.strict.valid).map((c) => `${c.id}: ${c.strict.pointers.join(", ")}`)).toEqual([]);
    // Each refusing keyword case is refused in strict mode, at a pointer.
    const refusing = vectors.types.filter((c) => c.group === "type" && /^[^/]+\/(required|null|type|enum|const|maxLength|minLength|minimum|maximum|pattern|additionalProperties|discriminator)(\/|$)/.test(c.id) && !/boundary/.test(c.id));
    expect(refusing.length).toBeGreaterThan(10);
    expect(refusing.filter((c) => c.strict.valid).map((c) => c.id)).toEqual([]);
    expect(refusing.every((c) => c.strict.pointers.length > 0)).toBe(true);
    // An unknown field: refused strict, kept tolerant, and there in the canonical text.
    const unknown = vectors.types.filter((c) => c.id.endsWith("/additionalProperties"));
    expect(unknown.length).toBeGreaterThan(0);
    for (const c of unknown) {
      expect(c.strict.valid, c.id).toBe(false);
      expect(c.canonical).toContain('"x_unknown_field":"kept"');
    }
  });
});

describe("the hazard set", () => {
  it("finds its places in this protocol and has the verdicts JSON Schema gives", () => {
    const vectors = vectorsOf("agent-gateway");
    const hazard = (id: string) => {
      const found = vectors.types.find((c) => c.id === `hazard/${id}`);
      if (!found) throw new Error(`no hazard ${id}`);
      return found;
    };
    expect(hazard("u2028").strict.valid).toBe(true);
    expect(hazard("u2028").canonical).toContain("a\u2028b\u2029c");
    expect(hazard("lone-surrogate/high").strict.valid).toBe(true);
    expect(hazard("lone-surrogate/high").canonical).toContain("a\\ud800b");
    expect(hazard("astral-max-length/at").strict.valid).toBe(true);
    expect(hazard("astral-max-length/over").strict.valid).toBe(false);
    expect(hazard("integer-with-fraction-zero").strict.valid).toBe(true);
    expect(hazard("integer-with-fraction-zero").json).toMatch(/\d\.0[,}]/);
    expect(hazard("negative-zero").canonical).not.toContain("-0");
    expect(hazard("integer-max-safe").strict.valid).toBe(true);
    expect(hazard("integer-2^53").strict.valid).toBe(false);
    expect(hazard("integer-2^53+1").strict.valid).toBe(false);
    expect(hazard("key-case").strict.valid).toBe(false);
    expect(hazard("key-case").tolerant.valid).toBe(true);
    expect(hazard("duplicate-key/last-valid").strict.valid).toBe(true);
    expect(hazard("duplicate-key/last-invalid").strict.valid).toBe(false);
    expect(hazard("integer-as-string").strict.valid).toBe(false);
    expect(hazard("date-time-no-offset").strict.valid).toBe(true);
    expect(hazard("optional-null").strict.valid).toBe(false);
    expect(hazard("nullable-null").strict.valid).toBe(true);
    expect(vectors.hazardsWithoutPlace).toEqual(["2^53 + 1 for a number"]);
  });

  it("is written as raw JSON text where parsing matters", () => {
    const vectors = vectorsOf("mini");
    const text = (id: string) => vectors.types.find((c) => c.id === `hazard/${id}`)!.json;
    expect(text("negative-zero")).toContain(":-0,");
    expect(text("integer-2^53+1")).toContain("9007199254740993");
    expect(text("duplicate-key/last-valid").match(/"watch_id":/g)).toHaveLength(2);
    expect(text("lone-surrogate/high")).toContain("\\ud800");
  });
});

describe("turnspec vectors", () => {
  it("writes the file, checks it, and names the command that brings a stale one up to date", () => {
    const out = join(tempDir("turnspec-vectors-"), "vectors.json");
    const schemasDir = join(root, PROTOCOLS.mini);
    const sink = () => {
      const chunks: string[] = [];
      return { write: (text: string) => chunks.push(text), text: () => chunks.join("") };
    };
    const missing = sink();
    expect(runVectors({ schemasDir, out, check: true }, sink(), missing)).toBe(1);
    expect(missing.text()).toContain("is missing");
    const written = sink();
    expect(runVectors({ schemasDir, out, check: false }, written, sink())).toBe(0);
    expect(written.text()).toMatch(/type cases, \d+ hazards, \d+ message cases, \d+ transcripts/);
    expect(readFileSync(out, "utf8")).toBe(vectorsText(vectorsOf("mini")));
    expect(runVectors({ schemasDir, out, check: true }, sink(), sink())).toBe(0);
    const vectors = JSON.parse(readFileSync(out, "utf8")) as Vectors;
    expect(vectors.format).toBe("turnspec-vectors/1");
    expect(vectors.transcripts.some((t) => t.violations.length > 0)).toBe(true);
    expect(vectors.transcripts.some((t) => t.violations.length === 0)).toBe(true);
    const noFolder = sink();
    expect(runVectors({ schemasDir: join(root, "nowhere"), check: false }, sink(), noFolder)).toBe(2);
    expect(noFolder.text()).toContain("no schemas folder");
  });
});
