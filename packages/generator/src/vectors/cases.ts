/**
 * The cases of one named type: its smallest value and one with every field, each enum value
 * and union tag, the boundaries of every bound, and one value per keyword that the keyword
 * refuses (a missing required field, an unknown field, a wrong tag, a value out of range, a
 * string its pattern refuses, `null` where it is not allowed, a value of another type).
 * Each candidate is a JSON text; its verdicts are the TypeScript validators' (see index.ts).
 */
import type { Json, JsonObject, ProtocolModel, TypeModel, UnionModel } from "../model.js";
import { nullablePair, typesOf, type JsonType } from "../diff/sample.js";
import { isObject } from "../walk.js";
import { jsonText, type TextEdits } from "./text.js";
import { acceptedTypes, stringIn, ValueBuilder, type Slot } from "./values.js";

/** A value to check, before its verdicts are known. */
export interface Candidate {
  readonly id: string;
  readonly group: "type" | "hazard";
  readonly type: string;
  readonly json: string;
  readonly note: string;
}

/** Longest string a length boundary is tried with: longer bounds are tried with a shorter value only. */
export const LONGEST_BOUNDARY = 1024;

/** A character outside the Basic Multilingual Plane: one code point, two UTF-16 code units. */
export const ASTRAL = "\u{1F600}";

/** A value of each JSON type, for "a value of another type". */
const OF_TYPE: Record<JsonType, Json> = { string: "x", integer: 7, number: 7.5, boolean: true, array: [], object: {}, null: null };

/** Replaces the value at `pointer` (JSON pointer) in a copy of `root`. */
export function setAt(root: Json, pointer: string, value: Json): Json {
  if (pointer === "") return value;
  const copy = structuredClone(root);
  const tokens = pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  let node: Json = copy;
  for (const token of tokens.slice(0, -1)) node = (node as Record<string, Json>)[token]!;
  (node as Record<string, Json>)[tokens.at(-1)!] = value;
  return copy;
}

/** Reads the value at `pointer`, undefined when there is none. */
export function getAt(root: Json, pointer: string): Json | undefined {
  if (pointer === "") return root;
  let node: Json | undefined = root;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, token)) return undefined;
    node = (node as Record<string, Json>)[token];
  }
  return node;
}

/** The node a slot's keywords are read from: the value half of a nullable pair, else the node itself. */
export function innerNode(node: JsonObject): { readonly node: JsonObject; readonly nullable: boolean } {
  const pair = nullablePair(node);
  return pair && isObject(pair.value) ? { node: pair.value, nullable: true } : { node, nullable: false };
}

export class TypeCases {
  private readonly builder: ValueBuilder;
  private readonly unions: Map<string, UnionModel>;

  constructor(private readonly model: ProtocolModel) {
    this.builder = new ValueBuilder(model);
    this.unions = new Map(model.unions.map((u) => [u.title, u]));
  }

  /** Every candidate of one type. */
  of(type: TypeModel): Candidate[] {
    const out: Candidate[] = [];
    const seen = new Set<string>();
    const add = (id: string, value: Json, note: string, edits?: TextEdits) => {
      const key = `${type.title}/${id}`;
      if (seen.has(key)) return;
      seen.add(key);
      out.push({ id: key, group: "type", type: type.title, json: jsonText(value, edits), note });
    };
    const minimal = this.builder.build(type, "minimal");
    const maximal = this.builder.build(type, "maximal");
    add("minimal", minimal.value, "the smallest value: required fields only, lower bounds");
    add("maximal", maximal.value, "every field present");

    const union = this.unions.get(type.title);
    if (union) this.unionCases(union, maximal.value, add);
    for (const slot of maximal.slots) this.slotCases(slot, maximal.value, add);
    return out;
  }

  /** Each variant by its tag, an unknown tag, a missing tag. */
  private unionCases(union: UnionModel, base: Json, add: (id: string, value: Json, note: string, edits?: TextEdits) => void): void {
    for (const variant of union.variants) {
      const type = this.model.types.find((t) => t.title === variant.title);
      if (type)
        add(`tag/${variant.tag}`, this.builder.build(type, "minimal").value, `the variant tagged "${variant.tag}" (${variant.title})`);
    }
    if (!isObject(base)) return;
    const tag = `/${union.propertyName.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    add("discriminator/unknown-tag", setAt(base, tag, "x_unknown_tag"), "a tag no variant has");
    add("discriminator/missing-tag", base, "no tag", { removed: new Set([tag]) });
    add("discriminator/tag-not-a-string", setAt(base, tag, 7), "a tag that is not a string");
  }

  /** The cases of one place: null, another type, each enum value, bounds, pattern, required, unknown fields. */
  private slotCases(slot: Slot, base: Json, add: (id: string, value: Json, note: string, edits?: TextEdits) => void): void {
    const at = slot.pointer || "/";
    const here = (keyword: string) => `${keyword}${slot.pointer === "" ? "" : slot.pointer}`;
    const { node, nullable } = innerNode(slot.node);
    const types = acceptedTypes(slot.node, this.model);
    if (slot.member?.required) add(here("required"), base, `${at} left out`, { removed: new Set([slot.pointer]) });
    if (slot.member && !slot.member.required) add(here("absent"), base, `${at} left out (optional)`, { removed: new Set([slot.pointer]) });
    if (types && !types.has("null") && slot.pointer !== "")
      add(here("null"), setAt(base, slot.pointer, null), `null at ${at}, where null is not allowed`);
    if (nullable) add(here("nullable"), setAt(base, slot.pointer, null), `null at ${at}, where it is allowed`);
    if (types) {
      const other = (["string", "integer", "object", "array", "boolean"] as const).find((t) => !types.has(t));
      if (other !== undefined) add(here("type"), setAt(base, slot.pointer, OF_TYPE[other]), `a ${other} at ${at}`);
    }
    // A `$ref` place is tried only as a whole: the referenced type has cases of its own.
    if (typeof node.$ref === "string") return;

    if ("const" in node && typeof node.const === "string")
      add(here("const"), setAt(base, slot.pointer, `${node.const}_other`), `not the constant ${JSON.stringify(node.const)}`);
    if (Array.isArray(node.enum)) {
      for (const value of node.enum)
        add(
          `${here("enum-value")}/${typeof value === "string" ? value : JSON.stringify(value)}`,
          setAt(base, slot.pointer, value!),
          `the enum value ${JSON.stringify(value)}`,
        );
      const outside = node.enum.every((v) => typeof v === "string") ? "x_not_in_enum" : 987654;
      add(here("enum"), setAt(base, slot.pointer, outside), `a value outside the enum at ${at}`);
    }
    const stated = typesOf(node) ?? [];
    if (stated.includes("string") && !Array.isArray(node.enum) && !("const" in node)) this.stringCases(slot, node, base, add, here);
    if (stated.includes("integer") || stated.includes("number")) this.numberCases(slot, node, stated.includes("integer"), base, add, here);
    if (stated.includes("array")) this.arrayCases(slot, node, base, add, here);
    if (stated.includes("object") || isObject(node.properties)) this.objectCases(slot, node, base, add, here);
  }

  private stringCases(
    slot: Slot,
    node: JsonObject,
    base: Json,
    add: (id: string, value: Json, note: string, edits?: TextEdits) => void,
    here: (k: string) => string,
  ): void {
    const at = slot.pointer || "/";
    const set = (value: Json) => setAt(base, slot.pointer, value);
    const sample = stringIn(node);
    const fill = (count: number, unit: string) => {
      // Keep the pattern's own start where there is one, so that the length is what is tried.
      const start = typeof node.pattern === "string" ? [...sample].slice(0, Math.min(count, [...sample].length)).join("") : "";
      return start + unit.repeat(Math.max(0, count - [...start].length));
    };
    if (typeof node.minLength === "number" && node.minLength <= LONGEST_BOUNDARY) {
      add(here("minLength/boundary"), set(fill(node.minLength, "x")), `${node.minLength} characters at ${at}: the lower bound`);
      if (node.minLength > 0)
        add(here("minLength"), set(fill(node.minLength - 1, "x")), `${node.minLength - 1} characters at ${at}, one under the bound`);
    }
    if (typeof node.maxLength === "number" && node.maxLength <= LONGEST_BOUNDARY) {
      add(here("maxLength/boundary"), set(fill(node.maxLength, "x")), `${node.maxLength} characters at ${at}: the upper bound`);
      add(
        here("maxLength/boundary-astral"),
        set(fill(node.maxLength, ASTRAL)),
        `${node.maxLength} characters at ${at}, astral ones (two UTF-16 units each): within the bound in code points`,
      );
      add(here("maxLength"), set(fill(node.maxLength + 1, "x")), `${node.maxLength + 1} characters at ${at}, one over the bound`);
      add(
        here("maxLength/astral"),
        set(fill(node.maxLength + 1, ASTRAL)),
        `${node.maxLength + 1} astral characters at ${at}, one over the bound`,
      );
    }
    if (typeof node.pattern === "string") {
      const regex = new RegExp(node.pattern, "u");
      const refused = [`!${sample}`, "", " ", "/", `${sample}/`, `${sample} `, "\u0000"].find((candidate) => !regex.test(candidate));
      if (refused !== undefined) add(here("pattern"), set(refused), `a string the pattern ${node.pattern} refuses`);
      add(
        here("pattern-final-newline"),
        set(`${sample}\n`),
        "a match followed by a newline: ECMA-262's $ does not match before it, Python's does",
      );
      add(here("pattern/empty"), set(""), "the empty string against the pattern");
    }
  }

  private numberCases(
    slot: Slot,
    node: JsonObject,
    integer: boolean,
    base: Json,
    add: (id: string, value: Json, note: string, edits?: TextEdits) => void,
    here: (k: string) => string,
  ): void {
    const at = slot.pointer || "/";
    const set = (value: Json) => setAt(base, slot.pointer, value);
    const step = integer ? 1 : 0.5;
    for (const [keyword, shift, what] of [
      ["minimum", -step, "under"],
      ["maximum", step, "over"],
      ["exclusiveMinimum", 0, "at"],
      ["exclusiveMaximum", 0, "at"],
    ] as const) {
      const limit = node[keyword];
      if (typeof limit !== "number") continue;
      if (keyword === "minimum" || keyword === "maximum")
        add(here(`${keyword}/boundary`), set(limit), `${limit} at ${at}: the bound itself`);
      add(here(keyword), set(limit + shift), `${limit + shift} at ${at}, ${what} the ${keyword} ${limit}`);
    }
    if (integer) {
      const inRange = getAt(base, slot.pointer);
      const whole = typeof inRange === "number" ? inRange : 0;
      add(here("integer/fraction"), set(whole + 0.5), `${whole + 0.5} at ${at}, where an integer is required`);
    }
  }

  private arrayCases(
    slot: Slot,
    node: JsonObject,
    base: Json,
    add: (id: string, value: Json, note: string, edits?: TextEdits) => void,
    here: (k: string) => string,
  ): void {
    const at = slot.pointer || "/";
    const current = getAt(base, slot.pointer);
    const item = Array.isArray(current) && current.length ? current[0]! : null;
    const items = (n: number) =>
      setAt(
        base,
        slot.pointer,
        Array.from({ length: n }, () => item),
      );
    add(here("items/empty"), items(0), `an empty array at ${at}`);
    if (typeof node.minItems === "number" && node.minItems > 0)
      add(here("minItems"), items(node.minItems - 1), `${node.minItems - 1} items at ${at}, one under the bound`);
    if (typeof node.maxItems === "number" && node.maxItems < LONGEST_BOUNDARY) {
      add(here("maxItems/boundary"), items(node.maxItems), `${node.maxItems} items at ${at}: the upper bound`);
      add(here("maxItems"), items(node.maxItems + 1), `${node.maxItems + 1} items at ${at}, one over the bound`);
    }
  }

  private objectCases(
    slot: Slot,
    node: JsonObject,
    base: Json,
    add: (id: string, value: Json, note: string, edits?: TextEdits) => void,
    here: (k: string) => string,
  ): void {
    const at = slot.pointer || "/";
    const current = getAt(base, slot.pointer);
    if (!isObject(current)) return;
    const unknown = new Map([[slot.pointer, [["x_unknown_field", '"kept"']] as const]]);
    if (node.additionalProperties === false)
      add(here("additionalProperties"), base, `an unknown field at ${at}: refused strict, kept tolerant`, { leading: unknown });
    else
      add(here("open-object"), base, `a field the schema does not name at ${at}, where any field is allowed: kept`, { leading: unknown });
    if (isObject(node.propertyNames))
      add(here("propertyNames"), base, `a key at ${at} that propertyNames refuses`, {
        leading: new Map([[slot.pointer, [["!bad key", jsonText(Object.values(current)[0] ?? "x")]]]]),
      });
  }
}
