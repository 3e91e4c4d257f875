/**
 * The structural judgement at the heart of the diff: may every value the sender sends
 * reach the receiver's schema and be accepted? One function per construct (reference,
 * allOf, nullable pair, union, enum, type, object, tuple and array, number, string). Each
 * finding carries a stable rule id, names the place in both schemas and carries candidate
 * values (sender-valid, receiver-invalid) built bottom-up; the caller confirms them with the
 * compiled validators. A keyword the comparison does not understand is reported as
 * undetermined, never passed as compatible.
 *
 * Peers are judged as deployed peers behave: a sender sends the fields its schema declares
 * (an object that leaves additionalProperties to the protocol's default is not a licence to
 * send anything), and a receiver's object is closed where its schema or its protocol's
 * `objects` says so and it validates strictly. An `x-open` enum or union keeps values it
 * does not list, so a value added to one breaks nobody.
 */
import { combinesObjects, flattenedSchema, isObjectSchema, NotFlattenable } from "../compose.js";
import type { Json, JsonObject, ProtocolModel } from "../model.js";
import { jsonTypesOf, unionKeys, variantsOf } from "../open.js";
import { resolveRef, splitRef } from "../refs.js";
import { escapeToken, isExtensionKeyword, isObject } from "../walk.js";
import type { Location } from "./report.js";
import { JSON_TYPES, type JsonType, deref, nullablePair, patternStrings, sample, sampleOfType, typesOf, violators } from "./sample.js";

export interface Finding {
  readonly verdict: "breaking" | "undetermined";
  /** The stable id of the rule the change breaks (docs/diff.md lists them). */
  readonly rule: string;
  readonly sender: Location;
  readonly receiver: Location;
  readonly change: string;
  readonly why: string;
  /** Candidate values at the root of the message: allowed by the sender, meant to be rejected by the receiver. */
  readonly candidates: readonly Json[];
  /**
   * The break needs a value a deployed sender has no reason to send (a field its schema
   * leaves free-form, filled with another shape than the receiver now gives it): a
   * confirmed candidate shows the schemas differ, and the change stays undetermined.
   */
  readonly hypothetical?: boolean;
}

export interface CompareContext {
  readonly sender: ProtocolModel;
  readonly receiver: ProtocolModel;
  /** Which version the sender is: each change is said in old → new terms whichever side sends. */
  readonly senderVersion: "old" | "new";
  /** The receiver validates tolerantly: its closed objects accept unknown fields. */
  readonly tolerant: boolean;
  /**
   * Judge whether the two schemas accept the same values rather than whether deployed
   * peers break: every object without additionalProperties is closed on both sides and
   * x-open is read as closed, so that any change at all is found (a refactor is one that
   * finds none either way).
   */
  readonly exact?: boolean;
}

const MAX_CANDIDATES = 16;
const ANNOTATIONS = new Set([
  "title",
  "description",
  "$comment",
  "examples",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "format",
  "$schema",
  "$id",
]);
const COMPARED = new Set([
  "type",
  "enum",
  "const",
  "$ref",
  "anyOf",
  "oneOf",
  "allOf",
  "discriminator",
  "propertyNames",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
]);

const INTERACTING = new Set([
  "patternProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "dependentSchemas",
  "dependentRequired",
  "if",
  "then",
  "else",
  "contains",
  "minContains",
  "maxContains",
  "$dynamicRef",
]);
/** Keywords that belong to a schema file rather than to the value it describes. */
const DOCUMENT = new Set(["$defs", "$schema", "$id"]);
/** The keywords the tuple comparison reads. */
const TUPLE = new Set(["prefixItems"]);

/** A node without its annotations, for comparing two nodes as they validate. */
const withoutNotes = (node: JsonObject): JsonObject =>
  Object.fromEntries(Object.entries(node).filter(([k]) => !ANNOTATIONS.has(k) && !isExtensionKeyword(k)));

const show = (value: Json | undefined) => (value === undefined ? "(none)" : JSON.stringify(value));
const at = (loc: Location, ...tokens: (string | number)[]): Location => ({
  file: loc.file,
  pointer: loc.pointer + tokens.map((t) => `/${escapeToken(String(t))}`).join(""),
});
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
    if (r === false)
      return [
        this.breaking(
          "SCHEMA_FALSE",
          sLoc,
          rLoc,
          this.span("any value", "no value (false)"),
          "the receiver's schema is false and accepts nothing",
          [sample(s, this.ctx.sender)],
        ),
      ];
    // References: follow each side to where they lead; a pair already under comparison is
    // assumed to hold (recursive types are compared coinductively).
    let sNode = s === true ? {} : isObject(s) ? s : undefined;
    let rNode = isObject(r) ? r : undefined;
    for (let hops = 0; sNode && typeof sNode.$ref === "string" && hops < 32; hops++) {
      const target = this.follow(sNode, this.ctx.sender);
      // The sender's keywords beside a $ref only narrow what it sends: the target is what it may send at most.
      sLoc = target ? { file: target.file, pointer: target.pointer } : sLoc;
      sNode = target?.node;
    }
    for (let hops = 0; rNode && typeof rNode.$ref === "string" && hops < 32; hops++) {
      // Keywords beside a $ref constrain too (draft 2020-12): the node is read as allOf of the target and them.
      const siblings = Object.keys(rNode).filter((k) => k !== "$ref" && !ANNOTATIONS.has(k) && !isExtensionKeyword(k));
      if (siblings.length) {
        const { $ref, ...rest } = rNode;
        rNode = { allOf: [{ $ref: $ref! }, rest] };
        break;
      }
      const target = this.follow(rNode, this.ctx.receiver);
      rLoc = target ? { file: target.file, pointer: target.pointer } : rLoc;
      rNode = target?.node;
    }
    if (!sNode || !rNode)
      return [
        this.undetermined("SCHEMA_UNRESOLVED", sLoc, rLoc, "a schema could not be resolved", "the comparison needs both schemas", []),
      ];
    const key = `${sLoc.file}#${sLoc.pointer}|${rLoc.file}#${rLoc.pointer}|${JSON.stringify(rNode).length}`;
    if (this.seen.has(key)) return [];
    this.seen.add(key);
    try {
      return this.node(sNode, sLoc, rNode, rLoc);
    } finally {
      this.seen.delete(key);
    }
  }

  /** Where a `$ref` leads in a model whose references name their files. */
  private follow(node: JsonObject, model: ProtocolModel): { file: string; pointer: string; node: JsonObject } | undefined {
    const target = resolveRef(node.$ref as string, "", model.byFile);
    return target ? { file: target.file, pointer: target.pointer, node: target.node } : undefined;
  }

  /** An allOf of object schemas as the one object it builds, or the node as it is. */
  private flat(node: JsonObject, model: ProtocolModel): JsonObject {
    if (!Array.isArray(node.allOf) || !combinesObjects(node, "", model.byFile)) return node;
    try {
      return flattenedSchema(node, "", model.byFile);
    } catch (error) {
      if (error instanceof NotFlattenable) return node;
      throw error;
    }
  }

  private node(sIn: JsonObject, sLoc: Location, rIn: JsonObject, rLoc: Location): Finding[] {
    const s = this.flat(sIn, this.ctx.sender);
    const r = this.flat(rIn, this.ctx.receiver);
    if (Array.isArray(s.allOf) || Array.isArray(r.allOf)) {
      // An allOf that is not an object built from others: each of the receiver's members must accept what the sender sends.
      if (Array.isArray(r.allOf)) {
        const { allOf, ...rest } = r;
        return [
          ...allOf.flatMap((member, i) => this.check(s, sLoc, member, at(rLoc, "allOf", i))),
          ...(Object.keys(rest).some((k) => !ANNOTATIONS.has(k) && !DOCUMENT.has(k)) ? this.node(s, sLoc, rest as JsonObject, rLoc) : []),
        ];
      }
      // The sender's members each narrow what it sends; the first is compared.
      return this.check((s.allOf as Json[])[0], at(sLoc, "allOf", 0), r, rLoc);
    }
    const sPair = nullablePair(s);
    if (sPair) {
      const findings = wrap(this.check(sPair.value, at(sLoc, "anyOf", sPair.index), r, rLoc), (v) => v);
      if (!this.acceptsNull(r))
        findings.push(
          this.breaking(
            this.senderOnly === "added" ? "NULL_ADDED" : "NULL_REMOVED",
            sLoc,
            rLoc,
            `null ${this.senderOnly === "added" ? "allowed" : "no longer allowed"}`,
            "the sender may send null; the receiver does not accept it",
            [null],
          ),
        );
      return findings;
    }
    const rPair = nullablePair(r);
    if (rPair) {
      const sTypes = typesOf(s);
      if (sTypes && sTypes.length === 1 && sTypes[0] === "null") return [];
      return this.check(s, sLoc, rPair.value, at(rLoc, "anyOf", rPair.index));
    }
    const sVariants = variantsOf(s);
    if (sVariants) return this.senderUnion(s, sVariants, sLoc, r, rLoc);
    if (variantsOf(r)) return this.intoReceiver(s, sLoc, r, rLoc);
    return this.plain(s, sLoc, r, rLoc);
  }

  /** Every variant of the sender's union must be accepted by the receiver. */
  private senderUnion(s: JsonObject, variants: readonly Json[], sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const key = Array.isArray(s.oneOf) ? "oneOf" : "anyOf";
    const found = variants.map((variant, i) => {
      const vLoc = at(sLoc, key, i);
      return variantsOf(r) ? this.intoReceiver(variant, vLoc, r, rLoc) : this.check(variant, vLoc, r, rLoc);
    });
    // A single receiver type that one variant of the sender's union still is (the one of its
    // name, else the one closest to it): that variant's changes are said as they are, and
    // every other variant the receiver refuses is a variant added (or removed).
    if (!variantsOf(r)) {
      const receiverName = this.ctx.receiver.byFile.get(rLoc.file)?.title;
      const named = variants.findIndex(
        (v) => receiverName !== undefined && rLoc.pointer === "" && this.variantName(v, this.ctx.sender) === receiverName,
      );
      const kept = named !== -1 ? named : found.reduce((best, f, i) => (f.length < found[best]!.length ? i : best), 0);
      return variants.flatMap((variant, i) =>
        i === kept ? found[i]! : found[i]!.length === 0 ? [] : [this.variantChange(variant, at(sLoc, key, i), rLoc, found[i]!)],
      );
    }
    return found.flat();
  }

  /** A variant of the sender's union the receiver has no place for, as one change: added when the sender is new, removed when old. */
  private variantChange(variant: Json, vLoc: Location, rLoc: Location, found: readonly Finding[]): Finding {
    const node = deref(variant, this.ctx.sender);
    const kind = node ? (typesOf(node)?.join(" or ") ?? (variantsOf(node) ? "union" : "value")) : "value";
    const name =
      this.variantName(variant, this.ctx.sender) ??
      `${vLoc.pointer.split("/").at(-1)} (${kind === "array" ? "an array" : kind === "object" ? "an object" : kind})`;
    if (found.every((f) => f.verdict === "undetermined"))
      return { ...found[0]!, change: `variant ${name} ${this.senderOnly}: ${found[0]!.change}` };
    return this.breaking(
      this.senderOnly === "added" ? "VARIANT_ADDED" : "VARIANT_REMOVED",
      vLoc,
      rLoc,
      `variant ${name} ${this.senderOnly}`,
      `the sender may send a ${name}; the receiver takes one type, which it is not (${found[0]!.change})`,
      [sample(variant, this.ctx.sender), ...found.flatMap((f) => f.candidates)],
    );
  }

  /** A variant's name: the title of the type it refers to, or its const tag. */
  private variantName(variant: Json, model: ProtocolModel): string | undefined {
    if (isObject(variant) && typeof variant.$ref === "string") {
      const { file, fragment } = splitRef(variant.$ref);
      const type = file ? model.byFile.get(file) : undefined;
      return fragment ? type?.defs.find((d) => d.pointer === fragment)?.title : type?.title;
    }
    const node = deref(variant, model);
    return node && "const" in node ? JSON.stringify(node.const) : undefined;
  }

  /** Whether the receiver keeps what it does not list (x-open), as judged for deployed peers. */
  private open(r: JsonObject): boolean {
    return r["x-open"] === true && !this.ctx.exact;
  }

  /**
   * A value of the sender's schema sent where the receiver expects a union: matched to the
   * receiver's variant with its tag (a const every variant sets), else to the variant that
   * accepts it with the fewest findings.
   */
  private intoReceiver(s: Json, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const key = Array.isArray(r.oneOf) ? "oneOf" : "anyOf";
    const rVariants = variantsOf(r)!;
    const keys = unionKeys(r, rLoc.file, this.ctx.receiver.byFile);
    if (keys?.kind === "tag") {
      const tag = this.tagOf(s, keys.property, this.ctx.sender);
      if (tag !== undefined) {
        const match = keys.values.indexOf(tag);
        if (match === -1) {
          if (this.open(r)) return [];
          return [
            this.breaking(
              this.senderOnly === "added" ? "VARIANT_ADDED" : "VARIANT_REMOVED",
              sLoc,
              at(rLoc, key),
              `variant "${tag}" ${this.senderOnly}`,
              `the sender may send the variant "${tag}"; the receiver's union has no such variant (tags are checked exactly in both modes)`,
              [sample(s, this.ctx.sender)],
            ),
          ];
        }
        return this.check(s, sLoc, rVariants[match], at(rLoc, key, match));
      }
    }
    if (keys?.kind === "values" && this.open(r)) {
      // An open union of constants keeps any value of their types.
      const node = deref(s, this.ctx.sender);
      const types = node ? typesOf(node) : undefined;
      if (
        types &&
        types.every((t) => jsonTypesOf(keys.values).includes(t) || (t === "integer" && jsonTypesOf(keys.values).includes("number")))
      )
        return [];
    }
    let best: Finding[] | undefined;
    for (let i = 0; i < rVariants.length; i++) {
      const found = this.check(s, sLoc, rVariants[i], at(rLoc, key, i));
      if (found.length === 0) return [];
      if (!best || found.length < best.length) best = found;
    }
    // A named type the receiver's union does not list at all: a variant added (or removed).
    const name = this.variantName(s, this.ctx.sender);
    if (best && name && !rVariants.some((v) => this.variantName(v, this.ctx.receiver) === name))
      return [this.variantChange(s, sLoc, rLoc, best)];
    if (
      keys?.kind === "tag" &&
      this.tagOf(s, keys.property, this.ctx.sender) === undefined &&
      isObjectSchema(deref(s, this.ctx.sender) ?? {})
    ) {
      return [
        this.breaking(
          "UNION_INTRODUCED",
          sLoc,
          rLoc,
          this.span("a single type", "a union"),
          "the sender's values do not carry a tag of the receiver's union",
          [sample(s, this.ctx.sender)],
        ),
      ];
    }
    return best ?? [];
  }

  private tagOf(variant: Json | undefined, tag: string, model: ProtocolModel): string | undefined {
    const node = deref(variant, model);
    const flat = node ? this.flat(node, model) : undefined;
    const property = flat && isObject(flat.properties) ? deref(flat.properties[tag], model) : undefined;
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
      return [
        this.undetermined(
          "KEYWORD_NOT_COMPARED",
          sLoc,
          rLoc,
          `a schema with ${interacting.join(", ")} changed`,
          `${interacting.join(", ")} ${interacting.length === 1 ? "is" : "are"} not compared`,
          [sample(s, this.ctx.sender)],
        ),
      ];
    }
    for (const key of new Set([...Object.keys(s), ...Object.keys(r)])) {
      if (COMPARED.has(key) || ANNOTATIONS.has(key) || DOCUMENT.has(key) || TUPLE.has(key) || isExtensionKeyword(key)) continue;
      // Every keyword constrains: one the sender alone states only narrows what it sends.
      if (key in r && !equal(s[key], r[key])) {
        findings.push(
          this.undetermined(
            "KEYWORD_NOT_COMPARED",
            at(sLoc, key),
            at(rLoc, key),
            `${key} ${this.span(show(s[key]), show(r[key]))}`,
            `the keyword ${key} is not compared by turnspec diff`,
            [sample(s, this.ctx.sender)],
          ),
        );
      }
    }
    const sValues = "const" in s ? [s.const!] : Array.isArray(s.enum) ? s.enum : undefined;
    if (sValues) {
      for (const value of sValues) {
        const problem = this.scalarProblem(r, value);
        if (problem === "unknown")
          findings.push(
            this.undetermined("KEYWORD_NOT_COMPARED", sLoc, rLoc, `the value ${show(value)}`, "only scalar enum values are compared", [
              value,
            ]),
          );
        else if (problem)
          findings.push(
            this.breaking(
              this.valueRule(value, r),
              sLoc,
              rLoc,
              this.valueChange(value, r, problem),
              `the sender may send ${show(value)}; the receiver rejects it (${problem})`,
              [value],
            ),
          );
      }
      return findings;
    }
    const rValues = "const" in r ? [r.const!] : Array.isArray(r.enum) && !this.open(r) ? r.enum : undefined;
    if (rValues) {
      const candidates = [...violators(r), sample(s, this.ctx.sender)].filter((v) => !rValues.some((e) => equal(e, v)));
      findings.push(
        this.breaking(
          "VALUES_RESTRICTED",
          sLoc,
          at(rLoc, "const" in r ? "const" : "enum"),
          this.span("any value", `only ${rValues.map(show).join(", ")}`),
          "the receiver accepts only listed values; the sender's schema allows others",
          candidates,
        ),
      );
      return findings;
    }
    // A sender whose schema describes only objects (properties, required) or arrays (items) sends those, whatever its type keyword leaves open.
    const sTypes =
      typesOf(s) ??
      (isObject(s.properties) || Array.isArray(s.required) || isObject(s.additionalProperties)
        ? ["object" as JsonType]
        : s.items !== undefined || Array.isArray(s.prefixItems)
          ? ["array" as JsonType]
          : [...JSON_TYPES]);
    const rTypes = typesOf(r);
    const accepted = (t: JsonType) => rTypes === undefined || rTypes.includes(t) || (t === "integer" && rTypes.includes("number"));
    for (const type of sTypes) {
      if (!accepted(type)) {
        const value = type === "number" ? nonInteger(s) : sampleOfType(s, type, this.ctx.sender);
        const widerThanInteger = type === "number" && rTypes?.includes("integer");
        findings.push(
          this.breaking(
            "TYPE_CHANGED",
            at(sLoc, "type"),
            at(rLoc, "type"),
            `type ${this.span(show(s.type ?? "(any)"), show(r.type))}`,
            widerThanInteger
              ? "the sender may send a number with a fraction; the receiver takes integers only"
              : `the sender may send ${type}; the receiver does not accept it`,
            [value],
          ),
        );
      }
    }
    const common = sTypes.filter(accepted);
    if (common.includes("object")) findings.push(...this.object(s, sLoc, r, rLoc));
    if (common.includes("array")) findings.push(...this.array(s, sLoc, r, rLoc));
    if (common.includes("string")) findings.push(...this.string(s, sLoc, r, rLoc));
    const numeric = common.filter((t): t is "integer" | "number" => t === "integer" || t === "number");
    if (numeric.length)
      findings.push(...this.number(s, sLoc, r, rLoc, numeric.includes("number") && accepted("number") ? "number" : "integer"));
    return findings;
  }

  /** Whether a scalar value passes the receiver node's own keywords: undefined when it does. */
  private scalarProblem(r: JsonObject, value: Json): string | undefined | "unknown" {
    if (value !== null && typeof value === "object") return "unknown";
    if ("const" in r && !equal(r.const, value)) return `const ${show(r.const)}`;
    // An open enum keeps values it does not list (of its type, checked below).
    if (Array.isArray(r.enum) && !this.open(r) && !r.enum.some((e) => equal(e, value))) return `not in enum ${show(r.enum)}`;
    const types = typesOf(r);
    const type: JsonType =
      value === null
        ? "null"
        : typeof value === "boolean"
          ? "boolean"
          : typeof value === "string"
            ? "string"
            : Number.isInteger(value)
              ? "integer"
              : "number";
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
    const withField =
      (name: string) =>
      (value: Json): Json => ({ ...base(), [name]: value });
    // A sender sends the fields it declares, and others only where its schema says it may
    // (additionalProperties true or a schema): an object left to the protocol's default is
    // not a licence to send anything.
    const sOpen = s.additionalProperties === true || isObject(s.additionalProperties);
    const rClosed =
      !this.ctx.tolerant &&
      (r.additionalProperties === false || (r.additionalProperties === undefined && this.closedByDefault(r, this.ctx.receiver)));
    const rExtra = isObject(r.additionalProperties) ? r.additionalProperties : undefined;

    for (const [name, schema] of Object.entries(sProps)) {
      if (name in rProps) {
        findings.push(
          ...wrap(this.check(schema, at(sLoc, "properties", name), rProps[name], at(rLoc, "properties", name)), withField(name)),
        );
      } else if (rClosed) {
        findings.push(
          this.breaking(
            this.senderOnly === "added" ? "FIELD_ADDED" : "FIELD_REMOVED",
            at(sLoc, "properties", name),
            at(rLoc, "additionalProperties"),
            this.senderOnly === "added"
              ? `field "${name}" added, ${sRequired.has(name) ? "required" : "optional"}`
              : `field "${name}" removed (it was ${sRequired.has(name) ? "required" : "optional"})`,
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
      const change =
        name in sProps
          ? `field "${name}" ${this.span("optional", "required")}`
          : this.senderOnly === "removed"
            ? `field "${name}" added, required`
            : `field "${name}" removed (it was required)`;
      const rule =
        name in sProps
          ? this.ctx.senderVersion === "old"
            ? "FIELD_MADE_REQUIRED"
            : "FIELD_MADE_OPTIONAL"
          : this.senderOnly === "removed"
            ? "FIELD_REQUIRED_ADDED"
            : "FIELD_REQUIRED_REMOVED";
      findings.push(
        this.breaking(
          rule,
          at(sLoc, "required"),
          at(rLoc, "required"),
          change,
          `the sender may leave "${name}" out; the receiver requires it`,
          [base()],
        ),
      );
    }
    if (sOpen) {
      const sExtra = isObject(s.additionalProperties) ? s.additionalProperties : undefined;
      for (const [name, schema] of Object.entries(rProps)) {
        if (name in sProps) continue;
        const rNode = deref(schema, this.ctx.receiver);
        const candidates = sExtra ? [] : violators(rNode);
        // The sender's other fields may hold this one with any shape its additionalProperties allows; a deployed sender has no reason to put it there.
        if (sExtra)
          findings.push(
            ...wrap(this.check(sExtra, at(sLoc, "additionalProperties"), schema, at(rLoc, "properties", name)), withField(name)).map(
              (f) => ({ ...f, verdict: "undetermined" as const, hypothetical: true }),
            ),
          );
        else if (candidates.length) {
          findings.push({
            ...this.undetermined(
              "FIELD_CONSTRAINED",
              at(sLoc, "additionalProperties"),
              at(rLoc, "properties", name),
              `field "${name}": ${this.span("any value (open object)", "constrained")}`,
              `the sender's object takes any field, so "${name}" may hold any value; the receiver constrains it, which breaks only a sender that put "${name}" there with another shape`,
              candidates.map(withField(name)),
            ),
            hypothetical: true,
          });
        }
      }
      if (rClosed) {
        const extra = freeName(rProps);
        findings.push(
          this.breaking(
            "OBJECT_CLOSED",
            at(sLoc, "additionalProperties"),
            at(rLoc, "additionalProperties"),
            `additionalProperties ${this.span(show(s.additionalProperties ?? true), show(r.additionalProperties ?? false))}`,
            "the sender's object is open; the receiver's is closed (strict mode) and rejects unknown fields",
            [withField(extra)(sExtra ? sample(sExtra, this.ctx.sender) : "x")],
          ),
        );
      } else if (sExtra && rExtra) {
        findings.push(
          ...wrap(
            this.check(sExtra, at(sLoc, "additionalProperties"), rExtra, at(rLoc, "additionalProperties")),
            withField(freeName(rProps)),
          ),
        );
      } else if (!sExtra && rExtra) {
        findings.push(
          this.breaking(
            "ADDITIONAL_PROPERTIES_CONSTRAINED",
            at(sLoc, "additionalProperties"),
            at(rLoc, "additionalProperties"),
            `additionalProperties ${this.span("any value", "constrained")}`,
            "the sender's extra fields may hold any value; the receiver constrains them",
            violators(rExtra).map(withField(freeName(rProps))),
          ),
        );
      }
    }
    findings.push(...this.keys(s, sLoc, r, rLoc));
    return findings;
  }

  /** Whether an object schema that does not state additionalProperties is closed: by its protocol's default (or in an exact comparison). */
  private closedByDefault(node: JsonObject, model: ProtocolModel): boolean {
    if (node.patternProperties !== undefined) return false;
    return this.ctx.exact === true || model.objects === "closed";
  }

  /** Keys of an object: what the receiver's propertyNames allows of the keys the sender may send. */
  private keys(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    if (r.propertyNames === undefined || equal(s.propertyNames, r.propertyNames)) return [];
    const value = isObject(s.additionalProperties) ? sample(s.additionalProperties, this.ctx.sender) : "x";
    const sNames: Json = isObject(s.propertyNames) ? { type: "string", ...s.propertyNames } : { type: "string" };
    const rNames: Json = isObject(r.propertyNames) ? { type: "string", ...r.propertyNames } : r.propertyNames;
    const found = this.check(sNames, at(sLoc, "propertyNames"), rNames, at(rLoc, "propertyNames"));
    return found.map((f) => ({
      ...f,
      rule: "PROPERTY_NAMES_CHANGED",
      change: `keys: ${f.change}`,
      candidates: f.candidates
        .filter((c) => typeof c === "string")
        .map((key) => ({ ...(sampleOfType(s, "object", this.ctx.sender) as JsonObject), [key as string]: value })),
    }));
  }

  private array(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    if (Array.isArray(s.prefixItems) || Array.isArray(r.prefixItems)) return this.tuple(s, sLoc, r, rLoc);
    const findings: Finding[] = [];
    const sMin = typeof s.minItems === "number" ? s.minItems : 0;
    const filler = () => (s.items === undefined ? "x" : sample(s.items, this.ctx.sender));
    const arrayWith = (value: Json): Json => [value, ...Array.from({ length: Math.max(0, sMin - 1) }, filler)];
    if (r.items !== undefined) {
      if (s.items === undefined)
        findings.push(
          this.breaking(
            "ITEMS_CONSTRAINED",
            at(sLoc, "items"),
            at(rLoc, "items"),
            `items ${this.span("any value", "constrained")}`,
            "the sender's array items may be anything; the receiver constrains them",
            violators(deref(r.items, this.ctx.receiver)).map(arrayWith),
          ),
        );
      else findings.push(...wrap(this.check(s.items, at(sLoc, "items"), r.items, at(rLoc, "items")), arrayWith));
    }
    const rMin = typeof r.minItems === "number" ? r.minItems : 0;
    if (rMin > sMin)
      findings.push(
        this.breaking(
          "MIN_ITEMS_CHANGED",
          at(sLoc, "minItems"),
          at(rLoc, "minItems"),
          `minItems ${this.span(show(s.minItems), show(r.minItems))}`,
          `the sender may send ${sMin} items; the receiver needs at least ${rMin}`,
          [Array.from({ length: sMin }, filler)],
        ),
      );
    const sMax = typeof s.maxItems === "number" ? s.maxItems : Infinity;
    if (typeof r.maxItems === "number" && r.maxItems < sMax) {
      findings.push(
        this.breaking(
          "MAX_ITEMS_CHANGED",
          at(sLoc, "maxItems"),
          at(rLoc, "maxItems"),
          `maxItems ${this.span(show(s.maxItems), show(r.maxItems))}`,
          `the sender may send more than ${r.maxItems} items; the receiver takes at most ${r.maxItems}`,
          [Array.from({ length: Math.max(r.maxItems + 1, sMin) }, filler)],
        ),
      );
    }
    return findings;
  }

  /**
   * Tuples (prefixItems): each position the sender may fill must be accepted at that
   * position by the receiver (the receiver's rest, its items, past its own positions), the
   * receiver may not need more positions than the sender always sends, nor refuse a length
   * the sender may send.
   */
  private tuple(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const findings: Finding[] = [];
    const sPositions = Array.isArray(s.prefixItems) ? s.prefixItems : [];
    const rPositions = Array.isArray(r.prefixItems) ? r.prefixItems : [];
    const sMin = typeof s.minItems === "number" ? s.minItems : 0;
    const sMax = s.items === false ? sPositions.length : typeof s.maxItems === "number" ? s.maxItems : Infinity;
    const rMax = r.items === false ? rPositions.length : typeof r.maxItems === "number" ? r.maxItems : Infinity;
    const filler = (i: number): Json =>
      sample(i < sPositions.length ? sPositions[i] : s.items === undefined ? {} : s.items, this.ctx.sender);
    const base = (length: number): Json[] => Array.from({ length }, (_, i) => filler(i));
    const positionOf = (list: readonly Json[], node: JsonObject, i: number, loc: Location): [Json, Location] =>
      i < list.length ? [list[i]!, at(loc, "prefixItems", i)] : [node.items ?? true, at(loc, "items")];
    const compared = Math.min(Math.max(sPositions.length, rPositions.length) + 1, sMax);
    for (let i = 0; i < compared; i++) {
      const [sSchema, sAt] = positionOf(sPositions, s, i, sLoc);
      const [rSchema, rAt] = positionOf(rPositions, r, i, rLoc);
      if (rSchema === false) break;
      const length = Math.max(sMin, i + 1);
      findings.push(...wrap(this.check(sSchema, sAt, rSchema, rAt), (v) => base(length).map((x, j) => (j === i ? v : x))));
    }
    if (sMax > rMax) {
      findings.push(
        this.breaking(
          this.senderOnly === "added" ? "POSITION_ADDED" : "POSITION_REMOVED",
          at(sLoc, sMax === Infinity ? "items" : "prefixItems"),
          at(rLoc, r.items === false ? "items" : "maxItems"),
          `positions ${this.span(sMax === Infinity ? "any number" : String(sMax), String(rMax))}`,
          `the sender may send ${rMax + 1} positions; the receiver takes at most ${rMax}`,
          [base(rMax + 1)],
        ),
      );
    }
    const rMin = typeof r.minItems === "number" ? r.minItems : 0;
    if (rMin > sMin)
      findings.push(
        this.breaking(
          "MIN_ITEMS_CHANGED",
          at(sLoc, "minItems"),
          at(rLoc, "minItems"),
          `minItems ${this.span(show(s.minItems), show(r.minItems))}`,
          `the sender may send ${sMin} positions; the receiver needs at least ${rMin}`,
          [base(sMin)],
        ),
      );
    return findings;
  }

  private string(s: JsonObject, sLoc: Location, r: JsonObject, rLoc: Location): Finding[] {
    const findings: Finding[] = [];
    const sMin = typeof s.minLength === "number" ? s.minLength : 0;
    const rMin = typeof r.minLength === "number" ? r.minLength : 0;
    if (rMin > sMin)
      findings.push(
        this.breaking(
          "MIN_LENGTH_CHANGED",
          at(sLoc, "minLength"),
          at(rLoc, "minLength"),
          `minLength ${this.span(show(s.minLength), show(r.minLength))}`,
          `the sender may send a string of ${sMin} characters; the receiver needs ${rMin}`,
          ["x".repeat(sMin)],
        ),
      );
    const sMax = typeof s.maxLength === "number" ? s.maxLength : Infinity;
    if (typeof r.maxLength === "number" && r.maxLength < sMax) {
      findings.push(
        this.breaking(
          "MAX_LENGTH_CHANGED",
          at(sLoc, "maxLength"),
          at(rLoc, "maxLength"),
          `maxLength ${this.span(show(s.maxLength), show(r.maxLength))}`,
          `the sender may send more than ${r.maxLength} characters; the receiver takes at most ${r.maxLength}`,
          ["x".repeat(Math.max(r.maxLength + 1, sMin))],
        ),
      );
    }
    if (typeof r.pattern === "string" && r.pattern !== s.pattern) {
      // Inclusion of regular expressions is not decided; generated strings may still show a break.
      const lengths = [...new Set([Math.max(sMin, 1), sMin, Math.max(sMin, 8)])];
      const candidates = [...patternStrings(s), ...lengths.flatMap((n) => ["x", "A", "0", "-", " "].map((c) => c.repeat(n)))];
      findings.push(
        this.undetermined(
          "PATTERN_CHANGED",
          at(sLoc, "pattern"),
          at(rLoc, "pattern"),
          `pattern ${this.span(show(s.pattern), show(r.pattern))}`,
          "whether every string of the sender's pattern matches the receiver's is not decided",
          candidates,
        ),
      );
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
      findings.push(
        this.breaking(
          "MINIMUM_CHANGED",
          at(sLoc, rLo.keyword),
          at(rLoc, rLo.keyword),
          this.boundChange(sLo, rLo),
          `the sender may send ${value}; the receiver's lower bound rejects it`,
          [value, Math.floor(rLo.value) - 1],
        ),
      );
    }
    if (rHi && (!sHi || sHi.value > rHi.value || (sHi.value === rHi.value && !sHi.exclusive && rHi.exclusive))) {
      const value = !sHi ? rHi.value + step : sHi.exclusive ? sHi.value - step : sHi.value;
      findings.push(
        this.breaking(
          "MAXIMUM_CHANGED",
          at(sLoc, rHi.keyword),
          at(rLoc, rHi.keyword),
          this.boundChange(sHi, rHi),
          `the sender may send ${value}; the receiver's upper bound rejects it`,
          [value, Math.ceil(rHi.value) + 1],
        ),
      );
    }
    if (typeof r.multipleOf === "number" && !(typeof s.multipleOf === "number" && Number.isInteger(s.multipleOf / r.multipleOf))) {
      const base = sampleOfType(s, type, this.ctx.sender) as number;
      const unit = typeof s.multipleOf === "number" ? s.multipleOf : step;
      findings.push(
        this.undetermined(
          "MULTIPLE_OF_CHANGED",
          at(sLoc, "multipleOf"),
          at(rLoc, "multipleOf"),
          `multipleOf ${this.span(show(s.multipleOf), show(r.multipleOf))}`,
          "multipleOf changes are not decided",
          [1, 2, 3, 5, 7].map((k) => base + k * unit),
        ),
      );
    }
    return findings;
  }

  /**
   * A bound, old → new: "maximum 9 → 19" when both sides use the same keyword (or one has
   * none), "minimum 0 → exclusiveMinimum 0" when they differ.
   */
  private boundChange(sender: Bound | undefined, receiver: Bound): string {
    if (!sender || sender.keyword === receiver.keyword)
      return `${receiver.keyword} ${this.span(sender ? String(sender.value) : "(none)", String(receiver.value))}`;
    return this.span(`${sender.keyword} ${sender.value}`, `${receiver.keyword} ${receiver.value}`);
  }

  /** A scalar value the sender's enum (or const) has and the receiver rejects, old → new. */
  private valueChange(value: Json, r: JsonObject, problem: string): string {
    if (Array.isArray(r.enum) && !r.enum.some((e) => equal(e, value))) return `enum value ${show(value)} ${this.senderOnly}`;
    if ("const" in r && !equal(r.const, value)) return `const ${this.span(show(value), show(r.const))}`;
    // Listed by both, but the receiver's other keywords reject it.
    return `enum value ${show(value)} ${this.senderOnly === "added" ? "allowed" : "no longer allowed"} (the ${this.senderOnly === "added" ? "old" : "new"} schema's ${problem} rejects it)`;
  }

  private breaking(rule: string, sender: Location, receiver: Location, change: string, why: string, candidates: Json[]): Finding {
    return { verdict: "breaking", rule, sender, receiver, change, why, candidates: distinct(candidates) };
  }

  private undetermined(rule: string, sender: Location, receiver: Location, change: string, why: string, candidates: Json[]): Finding {
    return { verdict: "undetermined", rule, sender, receiver, change, why, candidates: distinct(candidates) };
  }

  /** The rule a sender's listed value the receiver rejects breaks, old → new. */
  private valueRule(value: Json, r: JsonObject): string {
    if (Array.isArray(r.enum) && !r.enum.some((e) => equal(e, value)))
      return this.senderOnly === "added" ? "ENUM_VALUE_ADDED" : "ENUM_VALUE_REMOVED";
    if ("const" in r && !equal(r.const, value)) return "CONST_CHANGED";
    return "ENUM_VALUE_REJECTED";
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
  return comparison.check(
    { $ref: senderFile },
    { file: senderFile, pointer: "" },
    { $ref: receiverFile },
    { file: receiverFile, pointer: "" },
  );
}

/**
 * Whether two types accept the same values as far as the comparison can tell (no finding
 * either way, every object closed unless it says otherwise): a type moved to another file,
 * an inline schema named, local definitions moved, an allOf written out, descriptions
 * changed. The models' references name their files (qualify.ts).
 */
export function equivalent(oldModel: ProtocolModel, oldFile: string, newModel: ProtocolModel, newFile: string): boolean {
  const exact = { tolerant: false, exact: true } as const;
  return (
    compareRoots({ sender: oldModel, receiver: newModel, senderVersion: "old", ...exact }, oldFile, newFile).length === 0 &&
    compareRoots({ sender: newModel, receiver: oldModel, senderVersion: "new", ...exact }, newFile, oldFile).length === 0
  );
}
