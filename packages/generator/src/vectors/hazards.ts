/**
 * The hazard set: values where languages are known to read JSON differently, each put at
 * the first place of the protocol's schemas where it means something. A hazard with no such
 * place is listed as such in the vectors, not made up.
 */
import type { Json, JsonObject, ProtocolModel, TypeModel } from "../model.js";
import { typesOf } from "../diff/sample.js";
import { isObject } from "../walk.js";
import { ASTRAL, getAt, innerNode, LONGEST_BOUNDARY, setAt, type Candidate } from "./cases.js";
import { jsonText, type TextEdits } from "./text.js";
import { ValueBuilder, type Slot } from "./values.js";
import { INTEGER_RANGE } from "../emit/validators.js";

interface Place {
  readonly type: TypeModel;
  readonly slot: Slot;
  /** The keywords read at the place (the value half of a nullable pair). */
  readonly node: JsonObject;
  readonly base: Json;
}

interface Hazard {
  readonly name: string;
  readonly where: (place: Place) => boolean;
  readonly cases: (
    place: Place,
  ) => readonly { readonly id: string; readonly value?: Json; readonly edits?: TextEdits; readonly note: string }[];
}

const stated = (node: JsonObject, type: string) => (typesOf(node) ?? []).some((t) => t === type);
const plainString = (node: JsonObject) =>
  stated(node, "string") &&
  node.pattern === undefined &&
  node.enum === undefined &&
  node.const === undefined &&
  node.format === undefined &&
  (typeof node.maxLength !== "number" || node.maxLength >= 3);
const unboundedInteger = (node: JsonObject) =>
  stated(node, "integer") &&
  node.maximum === undefined &&
  node.exclusiveMaximum === undefined &&
  node.enum === undefined &&
  node.const === undefined &&
  (typeof node.minimum !== "number" || node.minimum <= 0);
const raw = (place: Place, text: string) => ({ raw: new Map([[place.slot.pointer, text]]) });

const HAZARDS: readonly Hazard[] = [
  {
    name: "line separator U+2028",
    where: (p) => plainString(p.node),
    cases: (p) => [
      {
        id: "u2028",
        value: setAt(p.base, p.slot.pointer, "a\u2028b\u2029c"),
        note: "U+2028 and U+2029 in a string: valid JSON, written as themselves",
      },
    ],
  },
  {
    name: "lone surrogate",
    where: (p) => plainString(p.node),
    cases: (p) => [
      { id: "lone-surrogate/high", edits: raw(p, '"a\\ud800b"'), note: "an unpaired high surrogate escape: a string of three code points" },
      { id: "lone-surrogate/low", edits: raw(p, '"\\udc00"'), note: "an unpaired low surrogate escape" },
      {
        id: "surrogate-pair-escaped",
        edits: raw(p, '"\\ud83d\\ude00"'),
        note: "a surrogate pair written as escapes: one astral character",
      },
    ],
  },
  {
    name: "astral characters against maxLength",
    where: (p) =>
      stated(p.node, "string") &&
      typeof p.node.maxLength === "number" &&
      p.node.maxLength <= LONGEST_BOUNDARY &&
      p.node.pattern === undefined &&
      p.node.enum === undefined,
    cases: (p) => {
      const n = p.node.maxLength as number;
      return [
        {
          id: "astral-max-length/at",
          value: setAt(p.base, p.slot.pointer, ASTRAL.repeat(n)),
          note: `${n} astral characters under maxLength ${n}: valid, lengths count code points`,
        },
        {
          id: "astral-max-length/over",
          value: setAt(p.base, p.slot.pointer, ASTRAL.repeat(n + 1)),
          note: `${n + 1} astral characters under maxLength ${n}`,
        },
        {
          id: "combining-max-length/at",
          value: setAt(p.base, p.slot.pointer, "e\u0301".repeat(Math.floor(n / 2))),
          note: "combining marks count as code points of their own",
        },
      ];
    },
  },
  {
    name: "1.0 for an integer",
    where: (p) => stated(p.node, "integer") && p.node.enum === undefined && p.node.const === undefined,
    cases: (p) => {
      const value = getAt(p.base, p.slot.pointer);
      const whole = typeof value === "number" ? value : 0;
      return [
        {
          id: "integer-with-fraction-zero",
          edits: raw(p, `${whole}.0`),
          note: `${whole}.0 for an integer: JSON Schema counts it an integer`,
        },
        { id: "integer-with-exponent", edits: raw(p, `${whole}E0`), note: `${whole}E0 for an integer` },
      ];
    },
  },
  {
    name: "-0",
    where: (p) =>
      stated(p.node, "integer") &&
      (typeof p.node.minimum !== "number" || p.node.minimum <= 0) &&
      p.node.enum === undefined &&
      p.node.const === undefined,
    cases: (p) => [
      { id: "negative-zero", edits: raw(p, "-0"), note: "-0 for an integer: zero, written 0" },
      { id: "negative-zero-fraction", edits: raw(p, "-0.0"), note: "-0.0 for an integer" },
    ],
  },
  {
    name: "2^53 ± 1",
    where: (p) => unboundedInteger(p.node),
    cases: (p) => [
      { id: "integer-max-safe", edits: raw(p, String(INTEGER_RANGE.maximum)), note: "2^53 - 1: the largest integer carried exactly" },
      { id: "integer-2^53", edits: raw(p, "9007199254740992"), note: "2^53: outside the range integers are carried exactly in" },
      { id: "integer-2^53+1", edits: raw(p, "9007199254740993"), note: "2^53 + 1: a double cannot hold it" },
      { id: "integer-huge", edits: raw(p, "100000000000000000000000"), note: "10^23 for an integer" },
      { id: "number-overflow", edits: raw(p, "1e400"), note: "1e400: no double holds it" },
    ],
  },
  {
    name: "2^53 + 1 for a number",
    where: (p) => stated(p.node, "number") && p.node.maximum === undefined && p.node.minimum === undefined,
    cases: (p) => [
      {
        id: "number-2^53+1",
        edits: raw(p, "9007199254740993"),
        note: "2^53 + 1 for a number: the double nearest it, written 9007199254740992",
      },
    ],
  },
  {
    name: "a key differing only in case",
    where: (p) =>
      isObject(getAt(p.base, p.slot.pointer)) &&
      p.node.additionalProperties === false &&
      Object.keys(getAt(p.base, p.slot.pointer) as JsonObject).some((k) => k.toUpperCase() !== k),
    cases: (p) => {
      const object = getAt(p.base, p.slot.pointer) as JsonObject;
      const key = Object.keys(object).find((k) => k.toUpperCase() !== k)!;
      const other = key[0]!.toUpperCase() === key[0] ? key.toLowerCase() : key[0]!.toUpperCase() + key.slice(1);
      return [
        {
          id: "key-case",
          edits: { leading: new Map([[p.slot.pointer, [[other, jsonText(object[key]!)]]]]) },
          note: `"${other}" beside "${key}": another field, unknown (keys are case-sensitive)`,
        },
      ];
    },
  },
  {
    name: "duplicate keys",
    where: (p) => p.slot.member !== undefined && plainString(p.node),
    cases: (p) => {
      const name = p.slot.member!.name;
      const parent = p.slot.member!.parent;
      return [
        {
          id: "duplicate-key/last-valid",
          edits: { leading: new Map([[parent, [[name, "12345"]]]]) },
          note: `"${name}" twice, a number first and a string last: the last one counts`,
        },
        {
          id: "duplicate-key/last-invalid",
          value: setAt(p.base, p.slot.pointer, 12345),
          edits: { leading: new Map([[parent, [[name, '"first"']]]]) },
          note: `"${name}" twice, a string first and a number last: the last one counts`,
        },
      ];
    },
  },
  {
    name: '"5" for an integer',
    where: (p) => stated(p.node, "integer") && !stated(p.node, "string"),
    cases: (p) => [{ id: "integer-as-string", edits: raw(p, '"5"'), note: '"5" for an integer: a string, never converted' }],
  },
  {
    name: "a timestamp with no offset",
    where: (p) => stated(p.node, "string") && p.node.format === "date-time",
    cases: (p) => [
      {
        id: "date-time-no-offset",
        value: setAt(p.base, p.slot.pointer, "2026-01-02T03:04:05"),
        note: "a date-time with no offset: format is an annotation, the string is kept as it is",
      },
      {
        id: "date-time-lower-case",
        value: setAt(p.base, p.slot.pointer, "2026-01-02t03:04:05.5z"),
        note: "lower-case t and z, kept as written",
      },
    ],
  },
  {
    name: "null for an optional field",
    where: (p) => p.slot.member !== undefined && !p.slot.member.required && !innerNode(p.slot.node).nullable,
    cases: (p) => [
      {
        id: "optional-null",
        value: setAt(p.base, p.slot.pointer, null),
        note: `null for the optional ${p.slot.member!.name}, which is not nullable: absent and null are not the same`,
      },
    ],
  },
  {
    name: "null for a nullable field",
    where: (p) => innerNode(p.slot.node).nullable,
    cases: (p) => [
      {
        id: "nullable-null",
        value: setAt(p.base, p.slot.pointer, null),
        note: "null where the schema allows it: kept as null, not dropped",
      },
    ],
  },
];

/** The hazard candidates of a model, and the names of the hazards that found no place. */
export function hazardCandidates(model: ProtocolModel): { readonly candidates: Candidate[]; readonly withoutPlace: string[] } {
  const builder = new ValueBuilder(model);
  const places: Place[] = [];
  for (const type of model.types) {
    const { value, slots } = builder.build(type, "maximal");
    for (const slot of slots) places.push({ type, slot, node: innerNode(slot.node).node, base: value });
  }
  const candidates: Candidate[] = [];
  const withoutPlace: string[] = [];
  for (const hazard of HAZARDS) {
    const place = places.find((p) => hazard.where(p));
    if (!place) {
      withoutPlace.push(hazard.name);
      continue;
    }
    for (const c of hazard.cases(place)) {
      candidates.push({
        id: `hazard/${c.id}`,
        group: "hazard",
        type: place.type.title,
        json: jsonText(c.value ?? place.base, c.edits),
        note: `${c.note} (${place.type.title} at ${place.slot.pointer || "/"})`,
      });
    }
  }
  return { candidates, withoutPlace };
}
