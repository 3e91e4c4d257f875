/**
 * The diff on real protocols' constructs: receivers whose objects are open, refactors that
 * change no value on the wire, unions without a tag, allOf, tuples, x-open enums and unions,
 * and the protocol-level settings (who sends a message, how params are carried, batches,
 * objects). Every change carries its rule id; a team accepts a change for one release by it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { diffSchemas, RULES, type Change, type DiffReport } from "../../packages/generator/src/diff/index.js";
import { runDiff } from "../../packages/generator/src/diff/command.js";
import type { Json, JsonObject } from "../../packages/generator/src/model.js";
import {
  DEFAULT_METHODS,
  DEFAULT_NOTIFICATIONS,
  emittedValidator,
  loadProtocol,
  removeAll,
  writeProtocol,
  type ProtocolSpec,
} from "./protocol.js";

const dirs: string[] = [];
afterAll(() => removeAll(dirs));

const run = (old: ProtocolSpec, next: ProtocolSpec, options: Parameters<typeof diffSchemas>[2] = {}): DiffReport =>
  diffSchemas(loadProtocol(old, dirs), loadProtocol(next, dirs), options);
const str = { type: "string" };
const int = { type: "integer" };
/** An object that leaves additionalProperties to the protocol's default. */
const plain = (properties: JsonObject, required: string[] = Object.keys(properties)): JsonObject => ({
  type: "object",
  required,
  properties,
});
const open: JsonObject = { objects: "open" };
const judged = (report: DiffReport) =>
  report.changes.filter((c) => c.verdict !== "compatible").map((c) => `${c.verdict} ${c.rule} ${c.flow ?? "registry"}: ${c.change}`);
const params = (v: Json, extra: JsonObject = {}): JsonObject => plain({ id: str, v, ...extra }, ["id", "v"]);

/** Every breaking counterexample re-checked with the validators the generator emits. */
function confirmed(report: DiffReport, oldSpec: ProtocolSpec, newSpec: ProtocolSpec, mode: "strict" | "tolerant" = "strict") {
  const oldModel = loadProtocol(oldSpec, dirs);
  const newModel = loadProtocol(newSpec, dirs);
  for (const c of report.changes.filter(
    (x): x is Change & { counterexample: NonNullable<Change["counterexample"]> } =>
      x.verdict === "breaking" && x.counterexample !== undefined && x.messages?.[0] === "thing/put params",
  )) {
    const [sender, receiver] = c.flow === "old_to_new" ? [oldModel, newModel] : [newModel, oldModel];
    expect(
      emittedValidator(sender, "strict", "thing_put_params.json")(c.counterexample.value),
      `sender accepts ${JSON.stringify(c.counterexample.value)}`,
    ).toBe(true);
    expect(
      emittedValidator(receiver, mode, "thing_put_params.json")(c.counterexample.value),
      `receiver rejects ${JSON.stringify(c.counterexample.value)}`,
    ).toBe(false);
  }
}

describe("receivers whose objects are open (objects: open)", () => {
  it("a field added to an open object breaks nobody: a sender sends what its schema declares", () => {
    const report = run(
      { settings: open, params: params(plain({ a: str })) },
      { settings: open, params: params(plain({ a: str, b: int }, ["a"])) },
    );
    expect(judged(report)).toEqual([]);
    expect(report.changes.map((c) => c.rule)).toEqual(["SCHEMA_CHANGED"]);
  });

  it("the same field added to a closed object breaks old receivers in strict mode, and nobody in tolerant mode", () => {
    const oldSpec = { params: params(plain({ a: str })) };
    const newSpec = { params: params(plain({ a: str, b: int }, ["a"])) };
    const strict = run(oldSpec, newSpec);
    expect(judged(strict)).toEqual(['breaking FIELD_ADDED new_to_old: v: field "b" added, optional']);
    confirmed(strict, oldSpec, newSpec);
    expect(judged(run(oldSpec, newSpec, { mode: "tolerant" }))).toEqual([]);
  });

  it("a required field added to an open object still breaks new receivers", () => {
    const report = run(
      { settings: open, params: params(plain({ a: str })) },
      { settings: open, params: params(plain({ a: str, b: int })) },
    );
    expect(judged(report)).toEqual(['breaking FIELD_REQUIRED_ADDED old_to_new: v: field "b" added, required']);
  });

  it("an object that declares additionalProperties true may carry anything: a receiver constraining a field is shown, undetermined, with the value that would break", () => {
    const report = run(
      { settings: open, params: params({ ...plain({ a: str }), additionalProperties: true }) },
      { settings: open, params: params({ ...plain({ a: str, b: int }, ["a"]), additionalProperties: true }) },
    );
    expect(judged(report)).toEqual(['undetermined FIELD_CONSTRAINED old_to_new: v: field "b": any value (open object) → constrained']);
    expect(report.changes[0]!.why).toMatch(
      /for example \{"id":"x","v":\{"a":"x","b":.*\}\}, which deployed clients have no reason to send$/,
    );
  });
});

describe("refactors with no wire change are no change", () => {
  const inline = params(plain({ a: str, n: int }, ["a"]));
  it("an inline schema moved into a file of its own", () => {
    expect(
      run(
        { params: inline },
        { params: params({ $ref: "thing_value.json" }), files: { "thing_value.json": plain({ a: str, n: int }, ["a"]) } },
      ).changes,
    ).toEqual([]);
  });

  it("a type moved into a local definition, and back", () => {
    const local: ProtocolSpec = {
      params: { ...params({ $ref: "#/$defs/Value" }), $defs: { Value: { title: "ThingValue", ...plain({ a: str, n: int }, ["a"]) } } },
    };
    expect(run({ params: inline }, local).changes).toEqual([]);
    expect(
      run(local, { params: params({ $ref: "thing_value.json" }), files: { "thing_value.json": plain({ a: str, n: int }, ["a"]) } }).changes,
    ).toEqual([]);
  });

  it("an object written out as allOf of the objects it is built from", () => {
    const composed: ProtocolSpec = {
      params: params({ allOf: [{ $ref: "thing_base.json" }, plain({ n: int }, [])] }),
      files: { "thing_base.json": plain({ a: str }) },
    };
    expect(run({ params: inline }, composed).changes).toEqual([]);
    expect(run(composed, { params: inline }).changes).toEqual([]);
  });

  it("but a field the allOf adds is a change", () => {
    const composed: ProtocolSpec = {
      params: params({ allOf: [{ $ref: "thing_base.json" }, plain({ n: int, m: int }, [])] }),
      files: { "thing_base.json": plain({ a: str }) },
    };
    expect(judged(run({ params: inline }, composed))).toEqual(['breaking FIELD_ADDED new_to_old: v: field "m" added, optional']);
  });
});

describe("unions, tuples and open enums", () => {
  const block = (tag: string, extra: JsonObject = {}) => ({
    [`thing_${tag}.json`]: plain({ type: { type: "string", const: tag }, ...extra }),
  });
  const content = (tags: string[], xOpen = false, extra: Record<string, JsonObject> = {}): ProtocolSpec => ({
    params: params({ $ref: "thing_block.json" }),
    files: {
      "thing_block.json": { anyOf: tags.map((t) => ({ $ref: `thing_${t}.json` })), ...(xOpen ? { "x-open": true } : {}) },
      ...Object.assign({}, ...tags.map((t) => block(t, extra[t]))),
    },
  });

  it("a variant added to a union told apart by a const tag, without a discriminator", () => {
    const report = run(content(["text", "image"]), content(["text", "image", "audio"]));
    // Said in the union's own type (the subject), where the change is.
    expect(judged(report)).toEqual(['breaking VARIANT_ADDED new_to_old: variant "audio" added']);
    expect(report.changes.find((c) => c.rule === "VARIANT_ADDED")?.subject).toBe("ThingBlock");
    confirmed(report, content(["text", "image"]), content(["text", "image", "audio"]));
    expect(judged(run(content(["text", "image", "audio"]), content(["text", "image"])))).toEqual([
      'breaking VARIANT_REMOVED old_to_new: variant "audio" removed',
    ]);
  });

  it("a variant added to an x-open union breaks nobody: the old receiver keeps it", () => {
    expect(judged(run(content(["text", "image"], true), content(["text", "image", "audio"], true)))).toEqual([]);
  });

  it("a field of one variant changed, found through the tag", () => {
    const report = run(
      content(["text", "image"], false, { image: { data: str } }),
      content(["text", "image"], false, { image: { data: int } }),
    );
    expect(judged(report)).toEqual([
      'breaking TYPE_CHANGED old_to_new: data: type "string" → "integer"',
      'breaking TYPE_CHANGED new_to_old: data: type "string" → "integer"',
    ]);
    expect(report.changes.map((c) => c.subject)).toEqual(["ThingImage", "ThingImage"]);
  });

  it("a value added to an x-open enum breaks nobody; to a closed one, old receivers", () => {
    const level = (values: string[], xOpen: boolean): ProtocolSpec => ({
      params: params({ type: "string", enum: values, ...(xOpen ? { "x-open": true } : {}) }),
    });
    expect(judged(run(level(["a", "b"], true), level(["a", "b", "c"], true)))).toEqual([]);
    expect(judged(run(level(["a", "b"], false), level(["a", "b", "c"], false)))).toEqual([
      'breaking ENUM_VALUE_ADDED new_to_old: v: enum value "c" added',
    ]);
  });

  it("a scalar union widened: a float where an id was a string or an integer", () => {
    const oldSpec = { params: params({ type: ["string", "integer"] }) };
    const newSpec = { params: params({ type: ["string", "number"] }) };
    const report = run(oldSpec, newSpec);
    expect(judged(report)).toEqual(['breaking TYPE_CHANGED new_to_old: v: type ["string","integer"] → ["string","number"]']);
    confirmed(report, oldSpec, newSpec);
  });

  it("a tuple given one more position, and a position's type changed", () => {
    const tuple = (positions: Json[], min = positions.length): ProtocolSpec => ({
      params: params({ type: "array", prefixItems: positions, items: false, minItems: min }),
    });
    const longer = run(tuple([str, int]), tuple([str, int, str], 2));
    expect(judged(longer)).toEqual(["breaking POSITION_ADDED new_to_old: v: positions 2 → 3"]);
    confirmed(longer, tuple([str, int]), tuple([str, int, str], 2));
    expect(judged(run(tuple([str, int]), tuple([str, str])))).toEqual([
      'breaking TYPE_CHANGED old_to_new: v: type "integer" → "string"',
      'breaking TYPE_CHANGED new_to_old: v: type "integer" → "string"',
    ]);
  });

  it("keys of a map narrowed by propertyNames", () => {
    const map = (names?: JsonObject): ProtocolSpec => ({
      params: params({ type: "object", additionalProperties: str, ...(names ? { propertyNames: names } : {}) }),
    });
    const report = run(map(), map({ pattern: "^[a-z]+$" }));
    expect(report.changes.filter((c) => c.verdict !== "compatible").map((c) => c.rule)).toEqual(["PROPERTY_NAMES_CHANGED"]);
    confirmed(report, map(), map({ pattern: "^[a-z]+$" }));
  });
});

describe("protocol-level changes", () => {
  const method = (fields: JsonObject): ProtocolSpec => ({ methods: [{ ...DEFAULT_METHODS[0]!, ...fields }] });

  it("a method either side now sends breaks the side that did not serve it", () => {
    const report = run({}, method({ direction: "both" }));
    expect(report.changes.map((c) => [c.rule, c.verdict, c.change, c.why])).toEqual([
      [
        "DIRECTION_CHANGED",
        "breaking",
        "direction client_to_server → both",
        'new servers may send "thing/put"; old clients do not take it',
      ],
    ]);
    expect(run(method({ direction: "both" }), {}).changes[0]!.why).toBe('old servers still send "thing/put"; new clients refuse it');
  });

  it("a notification's direction reversed", () => {
    const report = run({}, { notifications: [{ ...DEFAULT_NOTIFICATIONS[0]!, direction: "client_to_server" }, DEFAULT_NOTIFICATIONS[1]!] });
    expect(report.changes[0]!.why).toBe(
      'new clients may send "thing/changed"; old servers do not take it; old servers still send "thing/changed"; new clients refuse it',
    );
  });

  it("params made optional, and required again", () => {
    expect(run({}, method({ params_optional: true })).changes.map((c) => `${c.rule}: ${c.why}`)).toEqual([
      "PARAMS_MADE_OPTIONAL: new clients may leave the params out; old servers require them",
    ]);
    expect(run(method({ params_optional: true }), {}).changes.map((c) => `${c.rule}: ${c.why}`)).toEqual([
      "PARAMS_MADE_REQUIRED: old clients may leave the params out; new servers require them",
    ]);
  });

  it("how params are carried changed: by name to either, and by name to by position", () => {
    const positional: ProtocolSpec = {
      ...method({ param_structure: "by-position" }),
      params: { type: "array", prefixItems: [str, str], items: false, minItems: 2 },
    };
    expect(run({}, method({ param_structure: "either" })).changes.map((c) => `${c.rule} ${c.verdict}: ${c.why}`)).toEqual([
      "PARAM_STRUCTURE_CHANGED breaking: new clients send params by position, which old servers do not take",
    ]);
    expect(run(method({ param_structure: "either" }), {}).changes.map((c) => `${c.rule} ${c.verdict}: ${c.why}`)).toEqual([
      "PARAM_STRUCTURE_CHANGED breaking: old clients send params by position, which new servers do not take",
    ]);
    const report = run({}, positional);
    expect(report.changes.find((c) => c.rule === "PARAM_STRUCTURE_CHANGED")?.why).toBe(
      "old clients send params by name (an object), which new servers do not take; new clients send params by position (an array), which old servers do not take",
    );
  });

  it("batches allowed, then removed", () => {
    expect(run({}, { settings: { batches: true } }).changes.map((c) => `${c.rule}: ${c.change}`)).toEqual([
      "BATCHES_ADDED: batches not allowed → allowed",
    ]);
    const removed = run({ settings: { batches: true } }, {});
    expect(removed.changes.map((c) => `${c.rule} ${c.verdict}: ${c.why}`)).toEqual([
      "BATCHES_REMOVED breaking: old peers may send a batch; new peers refuse it (-32600)",
    ]);
  });

  it("objects closed by the protocol's default", () => {
    expect(run({ settings: open }, {}).changes.map((c) => `${c.rule} ${c.verdict}`)).toEqual(["OBJECTS_CLOSED breaking"]);
    expect(run({}, { settings: open }).changes.map((c) => `${c.rule} ${c.verdict}`)).toEqual(["OBJECTS_OPENED compatible"]);
  });
});

describe("rule ids", () => {
  it("docs/diff.md lists every rule the diff has, and no other", () => {
    const doc = readFileSync(join(fileURLToPath(new URL("../..", import.meta.url)), "docs/diff.md"), "utf8");
    const section = doc.slice(doc.indexOf("## Rules"), doc.indexOf("### Accepting a change"));
    const listed = [...section.matchAll(/^\| `([A-Z_]+)` \| (wire|code) \|/gm)].map((m) => m[1]);
    expect(listed).toEqual(Object.keys(RULES));
  });

  it("every change carries a rule the rule table has", () => {
    const report = run(
      { params: params(str) },
      { params: params(int), settings: { batches: true }, methods: [{ ...DEFAULT_METHODS[0]!, direction: "both" }] },
      { categories: ["wire", "code"] },
    );
    expect(report.changes.length).toBeGreaterThan(0);
    for (const c of report.changes) expect(Object.keys(RULES)).toContain(c.rule);
  });

  it("a change accepted for the release in turnspec.config.json does not fail the run; for another version it lapses, and diff says so", async () => {
    const oldDir = writeProtocol({}, dirs);
    const newDir = writeProtocol({ methods: [{ ...DEFAULT_METHODS[0]!, direction: "both" }] }, dirs);
    const configDir = mkdtempSync(join(tmpdir(), "turnspec-diff-accept-"));
    dirs.push(configDir);
    const config = (version: string, rule = "DIRECTION_CHANGED") => {
      const file = join(configDir, `config-${version}-${rule}.json`);
      writeFileSync(
        file,
        JSON.stringify({ diff: { accept: [{ rule, subject: "thing/put", version, reason: "servers ping their clients from 1.0.0 on" }] } }),
      );
      return file;
    };
    let out = "";
    let err = "";
    const io = [{ write: (t: string) => (out += t) }, { write: (t: string) => (err += t) }] as const;
    const command = {
      oldDir,
      newDir,
      mode: "strict" as const,
      category: "wire" as const,
      format: "text" as const,
      strictUndetermined: false,
    };
    expect(await runDiff({ ...command, configFile: config("1.0.0") }, ...io)).toBe(0);
    expect(out).toContain("0 breaking, 0 undetermined, 0 compatible, 1 accepted");
    expect(out).toContain("  ACCEPTED  direction client_to_server → both  [DIRECTION_CHANGED]");
    expect(out).toContain("      accepted for 1.0.0: servers ping their clients from 1.0.0 on");
    out = "";
    expect(await runDiff({ ...command, configFile: config("0.9.0") }, ...io)).toBe(1);
    expect(out).toContain("note: the acceptance of DIRECTION_CHANGED for thing/put is for version 0.9.0, not 1.0.0: it no longer applies");
    expect(await runDiff({ ...command, configFile: config("1.0.0", "DIRECTION_CHANGD") }, ...io)).toBe(2);
    expect(err).toContain(
      "diff.accept names the rule DIRECTION_CHANGD, which turnspec diff does not have (did you mean DIRECTION_CHANGED?)",
    );
    rmSync(configDir, { recursive: true, force: true });
  });
});
