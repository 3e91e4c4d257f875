/**
 * The structural judgement at the heart of the diff: may every value the sender's schema
 * allows reach the receiver's schema and be accepted? One function per construct of
 * turnspec's schema subset (reference, nullable pair, tagged union, enum, type, object,
 * array, number, string). Each finding names the place in both schemas and carries
 * candidate values (sender-valid, receiver-invalid) built bottom-up; the caller confirms
 * them with the compiled validators. A keyword the comparison does not understand is
 * reported as undetermined, never passed as compatible.
 */
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { escapeToken, isExtensionKeyword, isObject } from "../walk.js";
import type { Location } from "./report.js";
import { JSON_TYPES, type JsonType, deref, nullablePair, patternStrings, sample, sampleOfType, typesOf, violators } from "./sample.js";

export interface Finding {
  readonly verdict: "breaking" | "undetermined";
  readonly sender: Location;
  readonly receiver: Location;
  readonly change: string;
  readonly why: string;
  /** Candidate values at the root of the message: allowed by the sender, meant to be rejected by the receiver. */
  readonly candidates: readonly Json[];
}

export interface CompareContext {
  readonly sender: ProtocolModel;
  readonly receiver: ProtocolModel;
  /** Which version the sender is: each change is said in old → new terms whichever side sends. */
  readonly senderVersion: "old" | "new";
  /** The receiver validates tolerantly: its closed objects accept unknown fields. */
  readonly tolerant: boolean;
}

const MAX_CANDIDATES = 16;
const ANNOTATIONS = new Set(["title", "description", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly", "format", "$schema", "$id"]);
const COMPARED = new Set([
  "type", "enum", "const", "$ref", "anyOf", "oneOf", "discriminator",
  "properties", "required", "additionalProperties",
  "items", "minItems", "maxItems",
  "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
  "minLength", "maxLength", "pattern",
]);

const INTERACTING = new Set(["patternProperties", "unevaluatedProperties", "unevaluatedItems", "dependentSchemas", "dependentRequired", "if", "then", "else", "prefixItems", "contains", "minContains", "maxContains", "$dynamicRef", "$defs"]);

/** A node without its annotations, for comparing two nodes as they validate. */
const withoutNotes = (node: JsonObject): JsonObject => Object.fromEntries(Object.entries(node).filter(([k]) => !ANNOTATIONS.has(k) && !isExtensionKeyword(k)));

const show = (value: Json | undefined) => (value === undefined ? "(none)" : JSON.stringify(value));
const at = (loc: Location, ...tokens: (string | number)[]): Location => ({ file: loc.file, pointer: loc.pointer + tokens.map((t) => `/${escapeToken(String(t))}`).join("") });
const equal = (a: Json | undefined, b: Json | undefined) => JSON.stringify(a) === JSON.stringify(b);

/** Wraps the candidates of child findings into the parent value. */
function wrap(findings: Finding[], into: (value: Json) => Json): Finding[] {
  return findings.map((f) => ({ ...f, candidates: f.candidates.map(into) }));
}

/** Distinct candidates, at most MAX_CANDIDATES of them. */
function distinct(values: readonly Json[]): Json[] {
  const seen = new Map<string, Json>();
  for (const value of values) if (seen.size < MAX_CANDIDATES) seen.set(JSON.stringify(value), value);
  return [...seen.values()];
}

class Comparison {
  private readonly seen = new Set<string>();
  constructor(private readonly ctx: CompareContext) {}

  /** "a → b" in old → new order, given what the sender's and the receiver's schemas say. */
  private span(senderSays: string, receiverSays: string): string {
    return this.ctx.senderVersion === "old" ? `${senderSays} → ${receiverSays}` : `${receiverSays} → ${senderSays}`;
  }

  /** What became of something only the sender's schema has: added when the sender is the new version, removed when the old. */
  private get senderOnly(): "added" | "removed" {
    return this.ctx.senderVersion === "new" ? "added" : "removed";
  }

  check(s: Json | undefined, sLoc: Location, r: Json | undefined, rLoc: Location): Finding[] {
    // Boolean schemas: true allows every value, false none.
    if (s === false || r === true) return [];
    if (r === false) return [this.breaking(sLoc, rLoc, this.span("any value", "no value (false)"), "the receiver's schema is false and accepts nothing", [sample(s, this.ctx.sender)])];
    // References: follow each side to its file; a pair already under comparison is assumed
    // to hold (recursive types are compared coinductively).
    let sNode = s === true ? {} : isObject(s) ? s : undefined;
    let rNode = isObject(r) ? r : undefined;
    if (sNode && typeof sNode.$ref === "string") {
      sLoc = { file: sNode.$ref, pointer: "" };
      sNode = deref(sNode, this.ctx.sender);
    }
    if (rNode && typeof rNode.$ref === "string") {
      // Keywords beside a $ref constrain too (draft 2020-12); the sender's only narrow what it sends.
      const siblings = Object.keys(rNode).filter((k) => k !== "$ref" && !ANNOTATIONS.has(k) && !isExtensionKeyword(k));
      if (siblings.length) return [this.undetermined(sLoc, rLoc, `$ref with ${siblings.join(", ")} beside it`, "keywords beside a $ref are not compared", [sample(s, this.ctx.sender)])];
      rLoc = { file: rNode.$ref, pointer: "" };
      rNode = deref(rNode, this.ctx.receiver);
    }
    if (!sNode || !rNode) return [this.undetermined(sLoc, rLoc, "a schema could not be resolved", "the comparison needs both schemas", [])];
    const key = `${sLoc.file}#${sLoc.pointer}|${rLoc.file}#${rLoc.pointer}`;
    if (this.seen.has(key)) return [];
    this.seen.add(key);
    try {
      return this.node(sNode, sLoc, rNode, rLoc);
    } finally {
      this.seen.delete(key);
    }
  }

  private node(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const sPair = nullablePair(s);
    if (sPair) {
      const findings = wrap(this.check(sPair.value, at(sLoc, "anyOf", sPair.index), r, rLoc), (v) => v);
      if (!this.acceptsNull(r)) findings.push(this.breaking(sLoc, rLoc, `null ${this.senderOnly === "added" ? "allowed" : "no longer allowed"}`, "the sender may send null; the receiver does not accept it", [null]));
      return findings;
    }
    const rPair = nullablePair(r);
    if (rPair) {
      const sTypes = typesOf(s);
      if (sTypes && sTypes.length === 1 && sTypes[0] === "null") return [];
      return this.check(s, sLoc, rPair.value, at(rLoc, "anyOf", rPair.index));
    }
    if (Array.isArray(s.anyOf) || Array.isArray(r.anyOf)) {
      if (equal(s.anyOf, r.anyOf)) return [];
      return [this.undetermined(sLoc, rLoc, `anyOf ${this.span(show(s.anyOf), show(r.anyOf))}`, "only the nullable pair anyOf is compared", [sample(s, this.ctx.sender)])];
    }
    if (Array.isArray(s.oneOf)) return this.senderUnion(s, sLoc, r, rLoc);
    if (Array.isArray(r.oneOf)) return this.receiverUnion(s, sLoc, r, rLoc);
    return this.plain(s, sLoc, r, rLoc);
  }

  /** Every variant of the sender's union must be accepted; a receiver union is matched by tag. */
  private senderUnion(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const sTag = isObject(s.discriminator) ? (s.discriminator.propertyName as string) : undefined;
    const rTag = Array.isArray(r.oneOf) && isObject(r.discriminator) ? (r.discriminator.propertyName as string) : undefined;
    const findings: Finding[] = [];
    (s.oneOf as Json[]).forEach((variant, i) => {
      const vLoc = at(sLoc, "oneOf", i);
      if (rTag === undefined) {
        if (Array.isArray(r.oneOf)) findings.push(this.undetermined(vLoc, rLoc, "a union without a tag", "untagged unions are not compared", [sample(variant, this.ctx.sender)]));
        else findings.push(...this.check(variant, vLoc, r, rLoc));
        return;
      }
      if (sTag !== rTag) {
        findings.push(this.undetermined(vLoc, rLoc, `union tag ${this.span(`"${sTag}"`, `"${rTag}"`)}`, "the unions are tagged by different fields", [sample(variant, this.ctx.sender)]));
        return;
      }
      const tag = this.tagOf(variant, sTag, this.ctx.sender);
      const match = (r.oneOf as Json[]).findIndex((rv) => this.tagOf(rv, rTag, this.ctx.receiver) === tag);
      if (match === -1) {
        findings.push(
          this.breaking(vLoc, at(rLoc, "oneOf"), `variant "${tag}" ${this.senderOnly}`, `the sender may send the variant "${tag}"; the receiver's union has no such variant (tags are checked exactly in both modes)`, [sample(variant, this.ctx.sender)]),
        );
      } else findings.push(...this.check(variant, vLoc, (r.oneOf as Json[])[match], at(rLoc, "oneOf", match)));
    });
    return findings;
  }

  /** A plain object sent where the receiver expects a union: it must be a variant of it. */
  private receiverUnion(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const rTag = isObject(r.discriminator) ? (r.discriminator.propertyName as string) : undefined;
    const tag = rTag === undefined ? undefined : this.tagOf(s, rTag, this.ctx.sender);
    const match = tag === undefined ? -1 : (r.oneOf as Json[]).findIndex((rv) => this.tagOf(rv, rTag!, this.ctx.receiver) === tag);
    if (match === -1) return [this.breaking(sLoc, rLoc, this.span("a single type", "a tagged union"), "the sender's values do not carry a tag of the receiver's union", [sample(s, this.ctx.sender)])];
    return this.check(s, sLoc, (r.oneOf as Json[])[match], at(rLoc, "oneOf", match));
  }

  private tagOf(variant: Json | undefined, tag: string, model: ProtocolModel): string | undefined {
    const node = deref(variant, model);
    const property = node && isObject(node.properties) ? deref(node.properties[tag], model) : undefined;
    return property && typeof property.const === "string" ? property.const : undefined;
  }

  private acceptsNull(r: JsonObject): boolean {
    if (nullablePair(r)) return true;
    if ("const" in r) return r.const === null;
    if (Array.isArray(r.enum)) return r.enum.includes(null);
    const types = typesOf(r);
    return types === undefined ? !Array.isArray(r.oneOf) : types.includes("null");
  }

  private plain(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const findings: Finding[] = [];
    // Keywords that change what the compared ones mean (patternProperties makes fields
    // not "additional", unevaluated* and if/then/else depend on the rest of the node): the
    // node is judged only when it is the same on both sides.
    const interacting = [...new Set([...Object.keys(s), ...Object.keys(r)])].filter((k) => INTERACTING.has(k));
    if (interacting.length) {
      // Equal text is equal meaning only when no reference inside leads to files that may differ.
      if (equal(withoutNotes(s), withoutNotes(r)) && !JSON.stringify(s).includes('"$ref"')) return [];
      return [this.undetermined(sLoc, rLoc, `a schema with ${interacting.join(", ")} changed`, `${interacting.join(", ")} ${interacting.length === 1 ? "is" : "are"} not compared`, [sample(s, this.ctx.sender)])];
    }
    for (const key of new Set([...Object.keys(s), ...Object.keys(r)])) {
      if (COMPARED.has(key) || ANNOTATIONS.has(key) || isExtensionKeyword(key)) continue;
      // Every keyword constrains: one the sender alone states only narrows what it sends.
      if (key in r && !equal(s[key], r[key])) {
        findings.push(this.undetermined(at(sLoc, key), at(rLoc, key), `${key} ${this.span(show(s[key]), show(r[key]))}`, `the keyword ${key} is not compared by turnspec diff`, [sample(s, this.ctx.sender)]));
      }
    }
    const sValues = "const" in s ? [s.const!] : Array.isArray(s.enum) ? s.enum : undefined;
    if (sValues) {
      for (const value of sValues) {
        const problem = this.scalarProblem(r, value);
        if (problem === "unknown") findings.push(this.undetermined(sLoc, rLoc, `the value ${show(value)}`, "only scalar enum values are compared", [value]));
        else if (problem) findings.push(this.breaking(sLoc, rLoc, this.valueChange(value, r, problem), `the sender may send ${show(value)}; the receiver rejects it (${problem})`, [value]));
      }
      return findings;
    }
    const rValues = "const" in r ? [r.const!] : Array.isArray(r.enum) ? r.enum : undefined;
    if (rValues) {
      const candidates = [...violators(r), sample(s, this.ctx.sender)].filter((v) => !rValues.some((e) => equal(e, v)));
      findings.push(this.breaking(sLoc, at(rLoc, "const" in r ? "const" : "enum"), this.span("any value", `only ${rValues.map(show).join(", ")}`), "the receiver accepts only listed values; the sender's schema allows others", candidates));
      return findings;
    }
    const sTypes = typesOf(s) ?? [...JSON_TYPES];
    const rTypes = typesOf(r);
    const accepted = (t: JsonType) => rTypes === undefined || rTypes.includes(t) || (t === "integer" && rTypes.includes("number"));
    for (const type of sTypes) {
      if (!accepted(type)) {
        const value = type === "number" ? nonInteger(s) : sampleOfType(s, type, this.ctx.sender);
        const widerThanInteger = type === "number" && rTypes?.includes("integer");
        findings.push(
          this.breaking(at(sLoc, "type"), at(rLoc, "type"), `type ${this.span(show(s.type ?? "(any)"), show(r.type))}`, widerThanInteger ? "the sender may send a number with a fraction; the receiver takes integers only" : `the sender may send ${type}; the receiver does not accept it`, [value]),
        );
      }
    }
    const common = sTypes.filter(accepted);
    if (common.includes("object")) findings.push(...this.object(s, sLoc, r, rLoc));
    if (common.includes("array")) findings.push(...this.array(s, sLoc, r, rLoc));
    if (common.includes("string")) findings.push(...this.string(s, sLoc, r, rLoc));
    const numeric = common.filter((t): t is "integer" | "number" => t === "integer" || t === "number");
    if (numeric.length) findings.push(...this.number(s, sLoc, r, rLoc, numeric.includes("number") && accepted("number") ? "number" : "integer"));
    return findings;
  }

  /** Whether a scalar value passes the receiver node's own keywords: undefined when it does. */
  private scalarProblem(r: JsonObject, value: Json): string | undefined | "unknown" {
    if (value !== null && typeof value === "object") return "unknown";
    if ("const" in r && !equal(r.const, value)) return `const ${show(r.const)}`;
    if (Array.isArray(r.enum) && !r.enum.some((e) => equal(e, value))) return `not in enum ${show(r.enum)}`;
    const types = typesOf(r);
    const type: JsonType = value === null ? "null" : typeof value === "boolean" ? "boolean" : typeof value === "string" ? "string" : Number.isInteger(value) ? "integer" : "number";
    if (types && !types.includes(type) && !(type === "integer" && types.includes("number"))) return `type ${show(r.type)}`;
    if (typeof value === "string") {
      if (typeof r.minLength === "number" && value.length < r.minLength) return `minLength ${r.minLength}`;
      if (typeof r.maxLength === "number" && value.length > r.maxLength) return `maxLength ${r.maxLength}`;
      if (typeof r.pattern === "string" && !new RegExp(r.pattern, "u").test(value)) return `pattern ${show(r.pattern)}`;
    }
    if (typeof value === "number") {
      if (typeof r.minimum === "number" && value < r.minimum) return `minimum ${r.minimum}`;
      if (typeof r.maximum === "number" && value > r.maximum) return `maximum ${r.maximum}`;
      if (typeof r.exclusiveMinimum === "number" && value <= r.exclusiveMinimum) return `exclusiveMinimum ${r.exclusiveMinimum}`;
      if (typeof r.exclusiveMaximum === "number" && value >= r.exclusiveMaximum) return `exclusiveMaximum ${r.exclusiveMaximum}`;
    }
    return undefined;
  }

  private object(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const findings: Finding[] = [];
    const sProps = isObject(s.properties) ? s.properties : {};
    const rProps = isObject(r.properties) ? r.properties : {};
    const sRequired = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
    const rRequired = Array.isArray(r.required) ? (r.required as string[]) : [];
    const base = () => sampleOfType(s, "object", this.ctx.sender) as JsonObject;
    const withField = (name: string) => (value: Json): Json => ({ ...base(), [name]: value });
    const sOpen = s.additionalProperties !== false;
    const rClosed = r.additionalProperties === false && !this.ctx.tolerant;
    const rExtra = isObject(r.additionalProperties) ? r.additionalProperties : undefined;

    for (const [name, schema] of Object.entries(sProps)) {
      if (name in rProps) {
        findings.push(...wrap(this.check(schema, at(sLoc, "properties", name), rProps[name], at(rLoc, "properties", name)), withField(name)));
      } else if (rClosed) {
        findings.push(
          this.breaking(
            at(sLoc, "properties", name),
            at(rLoc, "additionalProperties"),
            this.senderOnly === "added" ? `field "${name}" added, ${sRequired.has(name) ? "required" : "optional"}` : `field "${name}" removed (it was ${sRequired.has(name) ? "required" : "optional"})`,
            `the sender may send "${name}"; the receiver's object is closed (strict mode) and rejects it`,
            [withField(name)(sample(schema, this.ctx.sender))],
          ),
        );
      } else if (rExtra) {
        findings.push(...wrap(this.check(schema, at(sLoc, "properties", name), rExtra, at(rLoc, "additionalProperties")), withField(name)));
      }
    }
    for (const name of rRequired) {
      if (sRequired.has(name)) continue;
      // The sender's schema has the field optional or not at all; the receiver's requires it.
      const change = name in sProps ? `field "${name}" ${this.span("optional", "required")}` : this.senderOnly === "removed" ? `field "${name}" added, required` : `field "${name}" removed (it was required)`;
      findings.push(this.breaking(at(sLoc, "required"), at(rLoc, "required"), change, `the sender may leave "${name}" out; the receiver requires it`, [base()]));
    }
    if (sOpen) {
      const sExtra = isObject(s.additionalProperties) ? s.additionalProperties : undefined;
      for (const [name, schema] of Object.entries(rProps)) {
        if (name in sProps) continue;
        const rNode = deref(schema, this.ctx.receiver);
        const candidates = sExtra ? [] : violators(rNode);
        if (sExtra) findings.push(...wrap(this.check(sExtra, at(sLoc, "additionalProperties"), schema, at(rLoc, "properties", name)), withField(name)));
        else if (candidates.length) findings.push(this.breaking(at(sLoc, "additionalProperties"), at(rLoc, "properties", name), `field "${name}": ${this.span("any value (open object)", "constrained")}`, `the sender's object is open, so "${name}" may hold any value; the receiver constrains it`, candidates.map(withField(name))));
      }
      if (rClosed) {
        const extra = freeName(rProps);
        findings.push(this.breaking(at(sLoc, "additionalProperties"), at(rLoc, "additionalProperties"), `additionalProperties ${this.span(show(s.additionalProperties ?? true), "false")}`, "the sender's object is open; the receiver's is closed (strict mode) and rejects unknown fields", [withField(extra)(sExtra ? sample(sExtra, this.ctx.sender) : "x")]));
      } else if (sExtra && rExtra) {
        findings.push(...wrap(this.check(sExtra, at(sLoc, "additionalProperties"), rExtra, at(rLoc, "additionalProperties")), withField(freeName(rProps))));
      } else if (!sExtra && rExtra) {
        findings.push(this.breaking(at(sLoc, "additionalProperties"), at(rLoc, "additionalProperties"), `additionalProperties ${this.span("any value", "constrained")}`, "the sender's extra fields may hold any value; the receiver constrains them", violators(rExtra).map(withField(freeName(rProps)))));
      }
    }
    return findings;
  }

  private array(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const findings: Finding[] = [];
    const sMin = typeof s.minItems === "number" ? s.minItems : 0;
    const filler = () => (s.items === undefined ? "x" : sample(s.items, this.ctx.sender));
    const arrayWith = (value: Json): Json => [value, ...Array.from({ length: Math.max(0, sMin - 1) }, filler)];
    if (r.items !== undefined) {
      if (s.items === undefined) findings.push(this.breaking(at(sLoc, "items"), at(rLoc, "items"), `items ${this.span("any value", "constrained")}`, "the sender's array items may be anything; the receiver constrains them", violators(deref(r.items, this.ctx.receiver)).map(arrayWith)));
      else findings.push(...wrap(this.check(s.items, at(sLoc, "items"), r.items, at(rLoc, "items")), arrayWith));
    }
    const rMin = typeof r.minItems === "number" ? r.minItems : 0;
    if (rMin > sMin) findings.push(this.breaking(at(sLoc, "minItems"), at(rLoc, "minItems"), `minItems ${this.span(show(s.minItems), show(r.minItems))}`, `the sender may send ${sMin} items; the receiver needs at least ${rMin}`, [Array.from({ length: sMin }, filler)]));
    const sMax = typeof s.maxItems === "number" ? s.maxItems : Infinity;
    if (typeof r.maxItems === "number" && r.maxItems < sMax) {
      findings.push(this.breaking(at(sLoc, "maxItems"), at(rLoc, "maxItems"), `maxItems ${this.span(show(s.maxItems), show(r.maxItems))}`, `the sender may send more than ${r.maxItems} items; the receiver takes at most ${r.maxItems}`, [Array.from({ length: Math.max(r.maxItems + 1, sMin) }, filler)]));
    }
    return findings;
  }

  private string(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const findings: Finding[] = [];
    const sMin = typeof s.minLength === "number" ? s.minLength : 0;
    const rMin = typeof r.minLength === "number" ? r.minLength : 0;
    if (rMin > sMin) findings.push(this.breaking(at(sLoc, "minLength"), at(rLoc, "minLength"), `minLength ${this.span(show(s.minLength), show(r.minLength))}`, `the sender may send a string of ${sMin} characters; the receiver needs ${rMin}`, ["x".repeat(sMin)]));
    const sMax = typeof s.maxLength === "number" ? s.maxLength : Infinity;
    if (typeof r.maxLength === "number" && r.maxLength < sMax) {
      findings.push(this.breaking(at(sLoc, "maxLength"), at(rLoc, "maxLength"), `maxLength ${this.span(show(s.maxLength), show(r.maxLength))}`, `the sender may send more than ${r.maxLength} characters; the receiver takes at most ${r.maxLength}`, ["x".repeat(Math.max(r.maxLength + 1, sMin))]));
    }
    if (typeof r.pattern === "string" && r.pattern !== s.pattern) {
      // Inclusion of regular expressions is not decided; generated strings may still show a break.
      const lengths = [...new Set([Math.max(sMin, 1), sMin, Math.max(sMin, 8)])];
      const candidates = [...patternStrings(s), ...lengths.flatMap((n) => ["x", "A", "0", "-", " "].map((c) => c.repeat(n)))];
      findings.push(this.undetermined(at(sLoc, "pattern"), at(rLoc, "pattern"), `pattern ${this.span(show(s.pattern), show(r.pattern))}`, "whether every string of the sender's pattern matches the receiver's is not decided", candidates));
    }
    return findings;
  }

  private number(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location, type: "integer" | "number"): Finding[] {
    const findings: Finding[] = [];
    const step = type === "integer" ? 1 : 0.5;
    const lo = (n: JsonObject) => bound(n, "minimum", "exclusiveMinimum", Math.max);
    const hi = (n: JsonObject) => bound(n, "maximum", "exclusiveMaximum", Math.min);
    const [sLo, rLo, sHi, rHi] = [lo(s), lo(r), hi(s), hi(r)];
    if (rLo && (!sLo || sLo.value < rLo.value || (sLo.value === rLo.value && !sLo.exclusive && rLo.exclusive))) {
      const value = !sLo ? rLo.value - step : sLo.exclusive ? sLo.value + step : sLo.value;
      findings.push(this.breaking(at(sLoc, rLo.keyword), at(rLoc, rLo.keyword), this.boundChange(sLo, rLo), `the sender may send ${value}; the receiver's lower bound rejects it`, [value, Math.floor(rLo.value) - 1]));
    }
    if (rHi && (!sHi || sHi.value > rHi.value || (sHi.value === rHi.value && !sHi.exclusive && rHi.exclusive))) {
      const value = !sHi ? rHi.value + step : sHi.exclusive ? sHi.value - step : sHi.value;
      findings.push(this.breaking(at(sLoc, rHi.keyword), at(rLoc, rHi.keyword), this.boundChange(sHi, rHi), `the sender may send ${value}; the receiver's upper bound rejects it`, [value, Math.ceil(rHi.value) + 1]));
    }
    if (typeof r.multipleOf === "number" && !(typeof s.multipleOf === "number" && Number.isInteger(s.multipleOf / r.multipleOf))) {
      const base = sampleOfType(s, type, this.ctx.sender) as number;
      const unit = typeof s.multipleOf === "number" ? s.multipleOf : step;
      findings.push(this.undetermined(at(sLoc, "multipleOf"), at(rLoc, "multipleOf"), `multipleOf ${this.span(show(s.multipleOf), show(r.multipleOf))}`, "multipleOf changes are not decided", [1, 2, 3, 5, 7].map((k) => base + k * unit)));
    }
    return findings;
  }

  /**
   * A bound, old → new: "maximum 9 → 19" when both sides use the same keyword (or one has
   * none), "minimum 0 → exclusiveMinimum 0" when they differ.
   */
  private boundChange(sender: Bound | undefined, receiver: Bound): string {
    if (!sender || sender.keyword === receiver.keyword) return `${receiver.keyword} ${this.span(sender ? String(sender.value) : "(none)", String(receiver.value))}`;
    return this.span(`${sender.keyword} ${sender.value}`, `${receiver.keyword} ${receiver.value}`);
  }

  /** A scalar value the sender's enum (or const) has and the receiver rejects, old → new. */
  private valueChange(value: Json, r: JsonObject, problem: string): string {
    if (Array.isArray(r.enum) && !r.enum.some((e) => equal(e, value))) return `enum value ${show(value)} ${this.senderOnly}`;
    if ("const" in r && !equal(r.const, value)) return `const ${this.span(show(value), show(r.const))}`;
    // Listed by both, but the receiver's other keywords reject it.
    return `enum value ${show(value)} ${this.senderOnly === "added" ? "allowed" : "no longer allowed"} (the ${this.senderOnly === "added" ? "old" : "new"} schema's ${problem} rejects it)`;
  }

  private breaking(sender: Location, receiver: Location, change: string, why: string, candidates: Json[]): Finding {
    return { verdict: "breaking", sender, receiver, change, why, candidates: distinct(candidates) };
  }

  private undetermined(sender: Location, receiver: Location, change: string, why: string, candidates: Json[]): Finding {
    return { verdict: "undetermined", sender, receiver, change, why, candidates: distinct(candidates) };
  }
}

interface Bound {
  readonly value: number;
  readonly exclusive: boolean;
  readonly keyword: string;
}

function bound(node: JsonObject, inclusive: string, exclusive: string, pick: (a: number, b: number) => number): Bound | undefined {
  const a = typeof node[inclusive] === "number" ? (node[inclusive] as number) : undefined;
  const b = typeof node[exclusive] === "number" ? (node[exclusive] as number) : undefined;
  if (a === undefined && b === undefined) return undefined;
  if (b === undefined || (a !== undefined && pick(a, b) === a && a !== b)) return { value: a!, exclusive: false, keyword: inclusive };
  return { value: b, exclusive: true, keyword: exclusive };
}

function nonInteger(s: JsonObject): number {
  const low = typeof s.minimum === "number" ? s.minimum : typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum : 0;
  return Math.floor(low) + 0.5;
}

function freeName(properties: JsonObject): string {
  let name = "x_unknown_field";
  while (name in properties) name += "_";
  return name;
}

/** The findings for one message: values of the sender's root type judged against the receiver's. */
export function compareRoots(ctx: CompareContext, senderFile: string, receiverFile: string): Finding[] {
  const comparison = new Comparison(ctx);
  return comparison.check({ $ref: senderFile }, { file: senderFile, pointer: "" }, { $ref: receiverFile }, { file: receiverFile, pointer: "" });
}
