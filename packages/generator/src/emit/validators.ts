/**
 * Precompiled validators: ajv's standalone code for every named type, in two modes.
 * Strict keeps the schemas as written (unknown fields and enum values are errors);
 * tolerant opens every closed object, so a client keeps working against a newer gateway.
 */
import Ajv2020 from "ajv/dist/2020.js";
import AjvCore from "ajv/dist/core.js";
import type { Options, ValidateFunction } from "ajv";
import standaloneCode from "ajv/dist/standalone/index.js";
import discriminatorKeyword from "ajv/dist/vocabularies/discriminator/index.js";
import draft2020Vocabularies from "ajv/dist/vocabularies/draft2020.js";
import dynamicVocabulary from "ajv/dist/vocabularies/dynamic/index.js";
import unevaluatedVocabulary from "ajv/dist/vocabularies/unevaluated/index.js";
import { combinesObjects, flattenedSchema } from "../compose.js";
import type { Json, JsonObject, ProtocolModel, TypeModel, UnionModel } from "../model.js";
import { openedSchema, unionKeys } from "../open.js";
import { SchemaError, SchemaErrors } from "../schema-error.js";
import { isExtensionKeyword, isObject, mapSchema } from "../walk.js";
import { JSON_SCHEMA_META_ID, JSON_SCHEMA_META_OPTIONS, ajvVersion, precompiledMeta } from "../meta.js";
import { VALIDATOR_HELPERS } from "@turnspec/rpc";
import { acceptChecks } from "./accept.js";

export type ValidationMode = "strict" | "tolerant";

/**
 * The sets of validators a protocol gets, one module each:
 * - report: ajv's validators of the strict schemas, collecting every error; they run once
 *   a value has failed, to list everything wrong with it;
 * - strict: accept-only checks of the same schemas (accept.ts) in front of the report
 *   set's validators, which answer (with every error) for a value a check refuses. Same
 *   schemas, same verdicts: ajv compiles them once, not once per set;
 * - tolerant: accept-only checks of the tolerant schemas in front of ajv's validators of
 *   them, which stop at the first error.
 */
export type ValidatorSet = ValidationMode | "report";

/** The module name (`validators.<set>.ts`) the strict set imports the report set's validators from. */
export const REPORT_MODULE = "./validators.report.js";

/** The ajv options every validator is compiled with, shared with the run-time comparison in bench/. */
export const ajvOptions = {
  strict: true,
  // "type": ["string", "integer"] (a JSON-RPC id) is a union type, not a mistake.
  allowUnionTypes: true,
  // A tuple (prefixItems) may end in optional positions and may be followed by more items.
  strictTuples: false,
  // Published schemas state an object's keywords without "type": "object" beside them
  // (ACP's variants add required fields to a type they build on): valid JSON Schema, read as written.
  strictTypes: false,
  // `required` may name a property its own node does not declare (Ethereum's "not": {"required": [...]}): valid JSON Schema.
  strictRequired: false,
  discriminator: true,
  // Formats are annotations in turnspec's schemas: the gateway checks what it relies on.
  validateFormats: false,
  allErrors: false,
  // Small referenced types are inlined where they are used (ajv's default): fewer calls
  // per message where ajv's validators check every value (the run-time compiled protocol
  // of `turnspec validate --schemas`). The generated modules, where they check only what an
  // accept-only check refuses, do not inline (standaloneValidatorCode).
  inlineRefs: true,
  // Messages are written by the support module from keyword and params, not by ajv.
  messages: false,
  // Lengths count code points, as JSON Schema says (ajv's default `unicode`: its ucs2length
  // helper comes from the support module), and patterns are read with the `u` flag
  // (ajv's default `unicodeRegExp`): the verdicts every generated language keeps.
  logger: {
    log: () => undefined,
    warn: (...args: unknown[]) => console.warn(...args),
    error: (...args: unknown[]) => console.error(...args),
  },
} as const;

/**
 * The integers every generated language carries exactly: those a double holds without
 * rounding, -(2^53 - 1) to 2^53 - 1. Every validator refuses an integer outside them (the
 * bounds are added to each `"type": "integer"` node that does not state tighter ones), so a
 * value valid in one language is never rounded in another.
 */
export const INTEGER_RANGE = { minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER } as const;

/** Adds INTEGER_RANGE's bounds to every node that allows integers and not all numbers, unless it states tighter ones. */
export function withIntegerRange(schema: JsonObject): JsonObject {
  const bound = (node: JsonObject): Json | undefined => {
    const types = Array.isArray(node.type) ? node.type : [node.type];
    if (!types.includes("integer") || types.includes("number")) return undefined;
    const lower =
      (typeof node.minimum === "number" && node.minimum >= INTEGER_RANGE.minimum) ||
      (typeof node.exclusiveMinimum === "number" && node.exclusiveMinimum >= INTEGER_RANGE.minimum);
    const upper =
      (typeof node.maximum === "number" && node.maximum <= INTEGER_RANGE.maximum) ||
      (typeof node.exclusiveMaximum === "number" && node.exclusiveMaximum <= INTEGER_RANGE.maximum);
    if (lower && upper) return undefined;
    const bounded: JsonObject = { ...node };
    if (!lower) bounded.minimum = INTEGER_RANGE.minimum;
    if (!upper) bounded.maximum = INTEGER_RANGE.maximum;
    // Now within the range itself: mapSchema descends into it with `bound` again.
    return mapSchema(bounded, bound);
  };
  return mapSchema(schema, bound) as JsonObject;
}

/** A CommonJS module's `exports.default`, whether the loader hands over `exports` (Node) or the default itself (bundlers). */
export function defaultOf<T>(module: T): T {
  const wrapped = module as { __esModule?: boolean; default?: T };
  return wrapped.__esModule && wrapped.default !== undefined ? wrapped.default : module;
}

/** The keywords that need ajv's dynamic-scope and evaluated-property bookkeeping in every compiled function. */
const DYNAMIC_KEYWORDS = [
  "$dynamicRef",
  "$dynamicAnchor",
  "$recursiveRef",
  "$recursiveAnchor",
  "unevaluatedProperties",
  "unevaluatedItems",
];

/**
 * JSON Schema 2020-12 without `$dynamicRef`/`$dynamicAnchor` and `unevaluated*`: Ajv2020
 * with those two vocabularies left out and their bookkeeping off. Ajv2020 threads a
 * `dynamicAnchors` object through every call and reads and writes an `evaluated` record on
 * every validation function, whether a schema uses the keywords or not; without them each
 * call does only what the schema asks (bench/validation.ts, what-ifs: about 18% less time per
 * message than the same module compiled by Ajv2020). A schema that uses one of them is compiled by Ajv2020 itself (see createAjv).
 * Schemas are checked against JSON Schema's meta-schema once, by checkMetaSchema, not by
 * each compiler.
 */
class StaticAjv2020 extends defaultOf(AjvCore) {
  constructor(options: Options) {
    super({ ...options, next: true, dynamicRef: false, unevaluated: false, meta: false, validateSchema: false });
  }
  override _addVocabularies(): void {
    super._addVocabularies();
    const left = new Set([defaultOf(dynamicVocabulary), defaultOf(unevaluatedVocabulary)]);
    for (const vocabulary of defaultOf(draft2020Vocabularies)) if (!left.has(vocabulary)) this.addVocabulary(vocabulary);
    if (this.opts.discriminator) this.addKeyword(defaultOf(discriminatorKeyword));
  }
}

/** Whether any schema uses a keyword of DYNAMIC_KEYWORDS, anywhere. */
function usesDynamicKeywords(schemas: readonly JsonObject[]): boolean {
  let found = false;
  for (const schema of schemas) {
    mapSchema(schema, (node) => {
      if (DYNAMIC_KEYWORDS.some((key) => key in node)) found = true;
      return undefined;
    });
  }
  return found;
}

/** What callers use of the compiler createAjv returns (an ajv instance). */
export interface SchemaCompiler {
  addSchema(schema: object): unknown;
  getSchema(keyRef: string): ValidateFunction | undefined;
}

/** The compiler for these schemas (see createAjv), as the ajv type standaloneCode takes. */
function compilerFor(schemas: readonly JsonObject[], overrides: Options): AjvCore {
  const options = { ...ajvOptions, ...overrides } as Options;
  return usesDynamicKeywords(schemas) ? new Ajv2020({ ...options, validateSchema: false }) : new StaticAjv2020(options);
}

/**
 * The ajv that compiles these schemas, with the validators' options plus `overrides`:
 * StaticAjv2020 unless a schema needs the dynamic keywords. Used by the generator, the
 * run-time compiled protocol (`turnspec validate --schemas`) and bench/, so all three
 * compile the same code. The schemas are not checked against the meta-schema here (see
 * checkMetaSchema).
 */
export function createAjv(schemas: readonly JsonObject[], overrides: Options = {}): SchemaCompiler {
  return compilerFor(schemas, overrides);
}

let jsonSchemaMeta: ValidateFunction | undefined;
const metaChecked = new WeakSet<ProtocolModel>();

/** JSON Schema 2020-12's meta validator: the build's, when this ajv compiled it, or else compiled here once. */
function jsonSchemaMetaValidator(): ValidateFunction {
  if (jsonSchemaMeta === undefined) {
    const built = precompiledMeta();
    if (built?.jsonSchema !== undefined && built.ajvVersion === ajvVersion()) jsonSchemaMeta = built.jsonSchema;
    else {
      const ajv = new Ajv2020({ ...JSON_SCHEMA_META_OPTIONS, logger: ajvOptions.logger });
      jsonSchemaMeta = ajv.getSchema(JSON_SCHEMA_META_ID)!;
    }
  }
  return jsonSchemaMeta;
}

/**
 * Checks every type schema against JSON Schema 2020-12's meta-schema, once per model (the
 * compilers skip it: compiling the meta-schema costs more than the check).
 */
export function checkMetaSchema(model: ProtocolModel): void {
  if (metaChecked.has(model)) return;
  const validate = jsonSchemaMetaValidator();
  const problems: SchemaError[] = [];
  for (const type of model.types) {
    if (validate(type.schema)) continue;
    for (const error of validate.errors ?? [])
      problems.push(new SchemaError(type.file, error.instancePath, `not valid JSON Schema 2020-12: ${error.message ?? error.keyword}`));
  }
  if (problems.length) throw new SchemaErrors(problems);
  metaChecked.add(model);
}

/** Removes `additionalProperties: false` everywhere: the tolerant reading of a schema. */
export function tolerantSchema(schema: JsonObject): JsonObject {
  return mapSchema(schema, (node) => {
    if (node.additionalProperties !== false) return undefined;
    const { additionalProperties: _closed, ...open } = node;
    return tolerantSchema(open as JsonObject);
  }) as JsonObject;
}

const ANNOTATIONS = new Set(["title", "description", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly", "format"]);

/** Drops annotation keywords: they do not change what is valid, and ajv would embed them in the code. */
export function withoutAnnotations(schema: JsonObject): JsonObject {
  return mapSchema(schema, (node) => {
    const keys = Object.keys(node).filter((k) => ANNOTATIONS.has(k) || isExtensionKeyword(k));
    if (keys.length === 0) return undefined;
    const copy: JsonObject = { ...node };
    for (const key of keys) delete copy[key];
    return withoutAnnotations(copy);
  }) as JsonObject;
}

/**
 * Adds to each tagged union an explicit check of its tag: `required` and an `enum` of the
 * variants' tags. ajv evaluates it before the discriminator, so a missing or unknown tag
 * is reported at the tag with the allowed values, wherever the union is nested. The tags
 * are taken from the variant files, never written twice in the schemas.
 */
function withTagCheck(schema: JsonObject, union: UnionModel | undefined): JsonObject {
  if (!union) return schema;
  return {
    ...schema,
    required: [union.propertyName],
    properties: { [union.propertyName]: { enum: union.variants.map((v) => v.tag) } },
  };
}

/** Local references (`#`, `#/$defs/…`) made absolute, so that a node still means the same once moved into another file's schema. */
function absoluteRefs(schema: JsonObject, id: string): JsonObject {
  return mapSchema(schema, (node) => {
    if (typeof node.$ref !== "string" || !node.$ref.startsWith("#")) return undefined;
    const { $ref, ...rest } = node;
    return absoluteRefs({ ...rest, $ref: $ref === "#" ? id : `${id}${$ref}` } as JsonObject, id);
  }) as JsonObject;
}

/** Keywords beside which an object schema is not closed by the protocol's default: the schemas they combine close themselves. */
const COMBINING = ["oneOf", "anyOf", "allOf", "$ref", "not", "if"];

/** Whether a node describes objects on its own (properties, or type object) and says nothing of fields it does not declare. */
function closesByDefault(node: JsonObject): boolean {
  const types = typeof node.type === "string" ? [node.type] : Array.isArray(node.type) ? node.type : [];
  const describesObjects = isObject(node.properties) || types.includes("object");
  return describesObjects && !("additionalProperties" in node) && !("patternProperties" in node) && !COMBINING.some((k) => k in node);
}

/**
 * One type's schema as the validators of `mode` check it:
 * - in a protocol whose objects are closed, an allOf of object schemas is the one object
 *   it builds (compose.ts), and in strict mode an object schema that does not state
 *   additionalProperties is closed;
 * - tolerant mode opens every closed object;
 * - `x-open` enums and unions keep values they do not list (open.ts);
 * - annotations are dropped, and a tagged union checks its tag first.
 */
function validationSchema(
  type: TypeModel,
  model: ProtocolModel,
  mode: ValidationMode,
  files: ReadonlyMap<string, { readonly schema: JsonObject }>,
  union: UnionModel | undefined,
): JsonObject {
  let schema = files.get(type.file)!.schema;
  if (model.objects === "closed") {
    // A flattened object may hold further allOf nodes among the properties it gathered.
    const flatten = (s: JsonObject): JsonObject =>
      mapSchema(s, (node) =>
        Array.isArray(node.allOf) && combinesObjects(node, type.file, files) ? flatten(flattenedSchema(node, type.file, files)) : undefined,
      ) as JsonObject;
    schema = flatten(schema);
    if (mode === "strict") schema = closeByDefault(schema);
  }
  if (mode === "tolerant") schema = tolerantSchema(schema);
  schema = mapSchema(schema, (node) => {
    if (node["x-open"] !== true) return undefined;
    const keys = unionKeys(node, type.file, files);
    return keys ? openedSchema(node, keys) : undefined;
  }) as JsonObject;
  const open = type.schema["x-open"] === true;
  return withTagCheck(withIntegerRange(withoutAnnotations(schema)), open ? undefined : union);
}

/** Closes every object schema that does not say what it does with fields it does not declare. */
function closeByDefault(schema: JsonObject): JsonObject {
  return mapSchema(schema, (node) => {
    if (!closesByDefault(node)) return undefined;
    // Closed first, so that the node is not closed again; then its subschemas.
    return closeByDefault({ ...node, additionalProperties: false });
  }) as JsonObject;
}

/** The schemas a validator set is compiled from, in the given mode. */
export function schemasFor(model: ProtocolModel, mode: ValidationMode): JsonObject[] {
  const unions = new Map(model.unions.map((u) => [u.id, u]));
  const files = new Map(model.types.map((t) => [t.file, { schema: absoluteRefs(t.schema, t.id) }]));
  return model.types.map((t) => validationSchema(t, model, mode, files, unions.get(t.id)));
}

/**
 * ajv's precompiled code for one validator set, as a CommonJS body that assigns each type's
 * validator to `exports.<Title>` and takes its runtime helpers from `require`, with the names of
 * the helpers it requires.
 */
export function standaloneValidatorCode(
  model: ProtocolModel,
  set: ValidatorSet,
): { readonly code: string; readonly helpers: readonly string[]; readonly schemas: readonly JsonObject[] } {
  checkMetaSchema(model);
  const schemas = schemasFor(model, set === "tolerant" ? "tolerant" : "strict");
  // ajv's code runs where an accept-only check refuses a value (or a type has none), so it
  // is written for the cost of writing it: optimize 0, since ajv's pass that tidies the code
  // walks every enclosing block again for each name (a fifth of compiling these schemas) to
  // save about 5% of the minified module; and inlineRefs false, each referenced type one
  // function, not a copy at every use (a module about a sixth smaller, written faster).
  const ajv = compilerFor(schemas, {
    allErrors: set === "report",
    inlineRefs: false,
    code: { source: true, esm: false, lines: true, optimize: 0 },
  });
  try {
    for (const schema of schemas) ajv.addSchema(schema as object);
  } catch (error) {
    throw new SchemaErrors([new SchemaError("(schemas)", "", `ajv rejected a schema: ${(error as Error).message}`)]);
  }
  const exports: Record<string, string> = {};
  for (const type of model.types) {
    try {
      ajv.getSchema(type.id);
    } catch (error) {
      throw new SchemaErrors([new SchemaError(type.file, "", `ajv cannot compile it: ${(error as Error).message}`)]);
    }
    exports[type.title] = type.id;
  }
  const code = standaloneCode(ajv, exports);
  const helpers = [...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]!);
  const missing = helpers.find((name) => !Object.hasOwn(VALIDATOR_HELPERS, name));
  if (missing !== undefined) {
    throw new SchemaErrors([
      new SchemaError(
        "(schemas)",
        "",
        `a schema uses a keyword whose validator needs the runtime helper ${missing} (a format, for example), which the support module does not provide; drop that keyword or express it otherwise`,
      ),
    ]);
  }
  return { code, helpers, schemas };
}

/**
 * The fast sets' exports with their accept-only checks (see accept.ts), as code for the end of
 * ajv's standalone code: each exported validator answers from its check when the value is
 * valid, and otherwise calls ajv's validator, which decides again and writes the errors.
 * A type without a check keeps ajv's validator as its export.
 */
function withAcceptChecks(
  model: ProtocolModel,
  schemas: readonly JsonObject[],
  ajvExports: string,
): { readonly code: string; readonly uncovered: ReadonlyMap<string, string> } {
  const full = (title: string) => `full${model.types.findIndex((t) => t.title === title)}`;
  const { code, uncovered } = acceptChecks(model, schemas, ajvOptions, full);
  const lines = [
    "",
    ajvExports === "exports"
      ? "// ajv's validators, for the values an accept-only check refuses (and for the types that have none)."
      : "// The report set's validators (ajv's, every error collected), for the values an accept-only check refuses (and for the types that have none).",
    ...model.types.map((t, i) => `const full${i} = ${ajvExports}.${t.title};`),
    "",
    "// Accept-only checks: true exactly when ajv's validator of the same schema would answer true.",
    code,
    "",
    "// The exports: a valid value is answered by its check; any other goes to ajv's validator, for the answer and its errors.",
  ];
  model.types.forEach((t, i) => {
    if (uncovered.has(t.title)) {
      // ajv's validator alone; already the export when it is compiled into this set.
      if (ajvExports !== "exports") lines.push(`exports.${t.title} = full${i};`);
      return;
    }
    // Named by index, not by title: a title could be the name of a parameter.
    lines.push(
      `exports.${t.title} = function fast${i}(data, options) {`,
      `  if (accept${i}(data)) {`,
      `    fast${i}.errors = null;`,
      "    return true;",
      "  }",
      `  const valid = full${i}(data, options);`,
      `  fast${i}.errors = full${i}.errors;`,
      "  return valid;",
      "};",
    );
  });
  return { code: lines.join("\n"), uncovered };
}

/**
 * The code of one validator set (see ValidatorSet), as a CommonJS body like
 * standaloneValidatorCode's: the report set is ajv's validators; the tolerant set, ajv's
 * validators with the accept-only checks in front of them; the strict set, the accept-only
 * checks alone, in front of the report set's validators, which its body reads from `report`
 * (`usesReport`). `uncovered` names the types without a check (ajv's validator alone), with
 * the reason.
 */
export function validatorSetCode(
  model: ProtocolModel,
  set: ValidatorSet,
): {
  readonly code: string;
  readonly helpers: readonly string[];
  readonly uncovered: ReadonlyMap<string, string>;
  readonly usesReport: boolean;
} {
  if (set === "strict") {
    checkMetaSchema(model);
    const checks = withAcceptChecks(model, schemasFor(model, "strict"), "report");
    return { code: checks.code, helpers: [], uncovered: checks.uncovered, usesReport: true };
  }
  const { code, helpers, schemas } = standaloneValidatorCode(model, set);
  if (set === "report")
    return {
      code,
      helpers,
      uncovered: new Map(model.types.map((t) => [t.title, "the report set has no accept-only checks"])),
      usesReport: false,
    };
  const checks = withAcceptChecks(model, schemas, "exports");
  return { code: `${code.trim()}\n${checks.code}`, helpers, uncovered: checks.uncovered, usesReport: false };
}

/**
 * Compiles every type into one TypeScript module exporting a validation function per
 * title. A `.ts` module, not a `.cjs` side file: the user's tsc compiles it into its
 * output folder and bundlers follow it like any other import.
 *
 * The set's code (see validatorSetCode) is CommonJS, run inside a function: the validators
 * then live in that function's scope rather than at module level, which bench/ measured
 * about 5% faster for the same code. The few run-time helpers ajv reaches with `require()`
 * come from the support module (`validatorHelper`), so the module needs neither ajv nor a
 * CommonJS loader; the strict set's function is handed the report module's validators
 * instead. The code is not typed, hence `@ts-nocheck`; the exports are typed.
 */
export function emitStandalone(model: ProtocolModel, set: ValidatorSet, support: string, header: string): string {
  const { code, helpers, usesReport } = validatorSetCode(model, set);
  const imports = [`import type { RawValidator } from "${support}";`];
  if (helpers.length) imports.push(`import { validatorHelper } from "${support}";`);
  if (usesReport) imports.push(`import * as reportValidators from "${REPORT_MODULE}";`);
  const lines = [
    header,
    set === "strict"
      ? "// @ts-nocheck: generated plain JavaScript; the exports below are typed."
      : "// @ts-nocheck: ajv's precompiled code is plain JavaScript; the exports below are typed.",
    ...imports,
    "",
    "const compiled: Record<string, RawValidator> = {};",
    usesReport ? "(function (exports, report) {" : "(function (exports, require) {",
    code.trim(),
    usesReport ? "})(compiled, reportValidators);" : `})(compiled, ${helpers.length ? "validatorHelper" : "undefined"});`,
    "",
  ];
  for (const type of model.types) lines.push(`export const ${type.title}: RawValidator = compiled.${type.title};`);
  return lines.join("\n") + "\n";
}
