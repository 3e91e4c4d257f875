/**
 * Turns the errors of a precompiled validator into findings a person can act on: the
 * JSON pointer of the failing value, a readable message, what was expected and what was
 * received.
 */

/** One validation finding. `pointer` is a JSON pointer into the validated value ("" is the value itself). */
export interface ValidationIssue {
  pointer: string;
  message: string;
  expected?: unknown;
  received?: unknown;
}

/** The result of validating a value as type `T`. */
export type ValidationResult<T> = { ok: true; value: T } | { ok: false; errors: ValidationIssue[] };

/** The subset of an ajv error object that the formatter reads. */
export interface RawValidationError {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** A precompiled validation function, as ajv's standalone code exports it. */
export type RawValidator = ((data: unknown) => boolean) & {
  errors?: RawValidationError[] | null;
};

export const MISSING = Symbol("missing");

function unescapePointerToken(token: string): string {
  return token.replace(/~1/g, "/").replace(/~0/g, "~");
}

function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** Reads the value at a JSON pointer, or `MISSING` when nothing is there. */
export function valueAt(root: unknown, pointer: string): unknown {
  if (pointer === "") return root;
  let current: unknown = root;
  for (const raw of pointer.slice(1).split("/")) {
    const token = unescapePointerToken(raw);
    if (current !== null && typeof current === "object" && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token];
    } else {
      return MISSING;
    }
  }
  return current;
}

function list(values: readonly unknown[]): string {
  return values.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join(", ");
}

/** Converts raw validator errors into issues, reading received values from `root`. */
export function toIssues(errors: readonly RawValidationError[], root: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  // A failing anyOf/oneOf also reports its branches' errors at the same place; the
  // union's own issue says it better, so branch errors at exactly that place are dropped.
  const unionPointers = new Set(errors.filter((e) => e.keyword === "anyOf" || e.keyword === "oneOf").map((e) => e.instancePath));
  for (const error of errors) {
    // The injected tag check reports a bad tag better than the discriminator does.
    if (error.keyword === "discriminator" && errors.length > 1) continue;
    const issue = toIssue(error, root);
    if (!issue) continue;
    if (error.keyword !== "anyOf" && error.keyword !== "oneOf" && unionPointers.has(issue.pointer) && error.instancePath === issue.pointer)
      continue;
    const key = `${issue.pointer}\u0000${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

/** Characters of a received string kept on an issue: an error must not send a huge value back to whoever sent it. */
export const RECEIVED_STRING_LIMIT = 256;

function withReceived(issue: ValidationIssue, root: unknown): ValidationIssue {
  const received = valueAt(root, issue.pointer);
  if (received === MISSING) return issue;
  if (typeof received === "string" && received.length > RECEIVED_STRING_LIMIT) {
    return { ...issue, received: `${received.slice(0, RECEIVED_STRING_LIMIT)}… (${received.length} characters, cut)` };
  }
  return { ...issue, received };
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** How each bound keyword reads, given its limit. */
const LIMITS: Record<string, (limit: number) => string> = {
  maximum: (n) => `be at most ${n}`,
  minimum: (n) => `be at least ${n}`,
  exclusiveMaximum: (n) => `be less than ${n}`,
  exclusiveMinimum: (n) => `be greater than ${n}`,
  maxLength: (n) => `be at most ${plural(n, "character")} long`,
  minLength: (n) => `be at least ${plural(n, "character")} long`,
  maxItems: (n) => `have at most ${plural(n, "item")}`,
  minItems: (n) => `have at least ${plural(n, "item")}`,
  maxProperties: (n) => `have at most ${plural(n, "field")}`,
  minProperties: (n) => `have at least ${plural(n, "field")}`,
  multipleOf: (n) => `be a multiple of ${n}`,
};

function toIssue(error: RawValidationError, root: unknown): ValidationIssue | undefined {
  const at = error.instancePath;
  const p = error.params;
  switch (error.keyword) {
    case "required":
      return { pointer: `${at}/${escapePointerToken(String(p.missingProperty))}`, message: "is required", expected: "a value" };
    case "additionalProperties":
      return withReceived(
        {
          pointer: `${at}/${escapePointerToken(String(p.additionalProperty))}`,
          message: "is not a known field",
          expected: "no such field",
        },
        root,
      );
    case "enum": {
      const allowed = (p.allowedValues as unknown[]) ?? [];
      return withReceived({ pointer: at, message: `must be one of ${list(allowed)}`, expected: allowed }, root);
    }
    case "const":
      return withReceived({ pointer: at, message: `must be ${JSON.stringify(p.allowedValue)}`, expected: p.allowedValue }, root);
    case "type":
      return withReceived({ pointer: at, message: `must be ${String(p.type).replace(",", " or ")}`, expected: p.type }, root);
    case "discriminator":
      // The generator compiles every tagged union with an enum of its tags, which reports
      // a wrong or missing tag first; this is the fallback for other validators.
      return withReceived({ pointer: `${at}/${escapePointerToken(String(p.tag))}`, message: `must name a known variant` }, root);
    case "anyOf":
    case "oneOf":
      return withReceived({ pointer: at, message: "does not match any allowed shape" }, root);
    case "if":
    case "then":
    case "else":
      return undefined;
    case "maximum":
    case "minimum":
    case "exclusiveMaximum":
    case "exclusiveMinimum":
    case "maxLength":
    case "minLength":
    case "maxItems":
    case "minItems":
    case "maxProperties":
    case "minProperties":
    case "multipleOf":
      // The limit itself is named: "must be at most 200", not "fails maximum".
      return withReceived({ pointer: at, message: `must ${LIMITS[error.keyword]!(p.limit as number)}`, expected: p.limit }, root);
    case "pattern":
      return withReceived({ pointer: at, message: `must match the pattern ${String(p.pattern)}`, expected: p.pattern }, root);
    case "uniqueItems":
      return withReceived({ pointer: at, message: `must not repeat an item (items ${String(p.j)} and ${String(p.i)} are equal)` }, root);
    default: {
      const expected = p.limit ?? p.pattern ?? p.format;
      return withReceived(
        { pointer: at, message: error.message ?? `fails ${error.keyword}`, ...(expected === undefined ? {} : { expected }) },
        root,
      );
    }
  }
}

/**
 * Drops what tolerant mode accepts from a strict report: unknown fields, and a union
 * failure whose only causes below it were unknown fields.
 */
function tolerated(errors: readonly RawValidationError[]): RawValidationError[] {
  const kept = errors.filter((e) => e.keyword !== "additionalProperties");
  return kept.filter((e) => {
    if (e.keyword !== "anyOf" && e.keyword !== "oneOf") return true;
    const below = errors.filter((o) => o !== e && (o.instancePath === e.instancePath || o.instancePath.startsWith(`${e.instancePath}/`)));
    return (
      below.length === 0 ||
      below.some((o) => o.keyword !== "additionalProperties" && !(o.keyword === "type" && o.instancePath === e.instancePath))
    );
  });
}

/**
 * Validates with the fast validator; when the value fails and a `report` validator (every
 * error, strict) is given, lists every issue from it, minus what `mode` tolerates. A fast
 * validator that answered a refusal from the report validator (the strict set's) has its
 * errors reused, not computed twice.
 */
export function runValidator<T>(
  validator: RawValidator,
  value: unknown,
  report?: RawValidator,
  mode: "strict" | "tolerant" = "strict",
): ValidationResult<T> {
  if (validator(value)) return { ok: true, value: value as T };
  // A strict validator answers a refused value from the report validator itself: its errors
  // are then the report's, just written, and the report need not run again.
  if (report && ((validator.errors != null && validator.errors === report.errors) || !report(value))) {
    const errors = toIssues(mode === "tolerant" ? tolerated(report.errors ?? []) : (report.errors ?? []), value);
    if (errors.length) return { ok: false, errors };
  }
  return { ok: false, errors: toIssues(validator.errors ?? [], value) };
}

/** One line per issue: `path/to/field: message; got "value"`, the path prefixed by `prefix`. */
export function formatIssue(issue: ValidationIssue, prefix = ""): string {
  const path = `${prefix}${issue.pointer}`.replace(/^\//, "") || "(value)";
  const got = issue.received === undefined ? "" : `; got ${preview(issue.received)}`;
  return `${path}: ${issue.message}${got}`;
}

/** A short JSON rendering of a received value, so one huge value cannot flood a report. */
export function preview(value: unknown, max = 120): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
