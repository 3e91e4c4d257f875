/**
 * Fuzz cases for a running gateway, and the oracle that says what each one is owed.
 *
 * A case is plain data (so fast-check can print and replay it) that renders to the bytes
 * of one frame: random JSON and random text, valid requests of every method (the
 * reference fixtures and the benchmark corpus), the same with their params mutated where
 * the schema says what fits (wrong types, required fields removed, unknown fields added,
 * enum values out of range), broken envelopes, notifications, stray responses, requests
 * for notification names, huge strings, deep nesting, invalid UTF-8, and batches of all
 * of these.
 *
 * The oracle reads JSON-RPC 2.0 itself, not the gateway's code: a frame that is not JSON
 * owes one error with id null; an empty or too long batch owes one error; in a message
 * or batch, every request owes one response with its id, a message that is neither a
 * request, a notification nor a response owes one error (with its id when one can be
 * read), and a notification or a response owes nothing.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { buildCorpus } from "../../bench/corpus.js";
import { errors, isMethodName, methods, notifications, type ErrorReason } from "../../generated/registry.js";
import { resultIssues, schemaFiles } from "../../generated/validators.js";

export const SCHEMAS = join(import.meta.dirname, "../../schemas");
const FIXTURES = join(import.meta.dirname, "../fixtures/reference");

/** The limits the fuzzed gateway runs with (small, so that the over-limit cases stay cheap). */
export const LIMITS = { maxFrameBytes: 256 * 1024, maxBatchSize: 40 } as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Id = string | number;

// ---------------------------------------------------------------------------------------
// Valid requests to start from

interface Base {
  readonly method: string;
  readonly params: Json;
}

/** Valid requests of every method: the reference fixtures that are requests, and the corpus's. */
export const BASES: readonly Base[] = (() => {
  const out: Base[] = [];
  for (const file of readdirSync(FIXTURES)
    .filter((f) => f.endsWith(".json"))
    .sort()) {
    const doc = JSON.parse(readFileSync(join(FIXTURES, file), "utf8")) as { method?: unknown; params?: Json };
    if (typeof doc.method === "string" && isMethodName(doc.method) && doc.params !== undefined)
      out.push({ method: doc.method, params: doc.params });
  }
  // A few of each method from the corpus, so every method is covered with realistic params.
  const perMethod = new Map<string, number>();
  for (const message of buildCorpus({ minMessages: 1500 })) {
    if (message.kind !== "request") continue;
    const n = perMethod.get(message.method) ?? 0;
    if (n >= 4) continue;
    perMethod.set(message.method, n + 1);
    out.push({ method: message.method, params: (JSON.parse(message.text) as { params: Json }).params });
  }
  return out;
})();

// ---------------------------------------------------------------------------------------
// What the schema says fits at a path of a method's params

interface SchemaNode {
  $ref?: string;
  type?: string | string[];
  enum?: Json[];
  const?: Json;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode;
}

const schemaCache = new Map<string, SchemaNode>();
function schemaFile(name: string): SchemaNode {
  let schema = schemaCache.get(name);
  if (!schema) schemaCache.set(name, (schema = JSON.parse(readFileSync(join(SCHEMAS, name), "utf8")) as SchemaNode));
  return schema;
}

function deref(node: SchemaNode | undefined): SchemaNode | undefined {
  let current = node;
  for (let hops = 0; current?.$ref && !current.$ref.startsWith("#") && hops < 20; hops++) current = schemaFile(current.$ref);
  return current;
}

/** The schema node of the value at `path` in a method's params, when it can be told without choosing a variant. */
export function schemaAt(method: string, path: readonly (string | number)[]): SchemaNode | undefined {
  if (!isMethodName(method)) return undefined;
  let node = deref(schemaFile(schemaFiles[methods[method].params]));
  for (const step of path) {
    if (!node) return undefined;
    node = deref(typeof step === "number" ? node.items : node.properties?.[step]);
  }
  return node;
}

// ---------------------------------------------------------------------------------------
// Cases

export type Mutation =
  | { readonly op: "wrong-type"; readonly at: number; readonly value: Json }
  | { readonly op: "remove"; readonly at: number }
  | { readonly op: "add-field"; readonly at: number; readonly key: string; readonly value: Json }
  | { readonly op: "out-of-range"; readonly at: number; readonly value: string };

export type Envelope =
  | "no-jsonrpc"
  | "jsonrpc-1.0"
  | "jsonrpc-number"
  | "id-object"
  | "id-boolean"
  | "id-null"
  | "method-number"
  | "method-empty"
  | "params-string"
  | "params-null"
  | "extra-member";

export type Case =
  | { readonly kind: "json"; readonly value: Json }
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "request"; readonly base: number; readonly mutation?: Mutation; readonly live?: boolean }
  | { readonly kind: "envelope"; readonly base: number; readonly how: Envelope }
  | { readonly kind: "unknown-method"; readonly method: string }
  | { readonly kind: "notification"; readonly method: string; readonly params: Json }
  | { readonly kind: "response"; readonly result: Json }
  | { readonly kind: "error-response"; readonly code: number; readonly message: string }
  | { readonly kind: "huge"; readonly base: number; readonly bytes: number; readonly char: string }
  | { readonly kind: "deep"; readonly base: number; readonly depth: number; readonly inArray: boolean }
  | { readonly kind: "bad-utf8"; readonly base: number; readonly bytes: readonly number[]; readonly inString: boolean }
  | { readonly kind: "batch"; readonly items: readonly Case[] }
  | { readonly kind: "empty-batch" }
  | { readonly kind: "long-batch"; readonly extra: number };

/** Paths into a JSON value, parents before children. */
function paths(value: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...prefix, i], out));
  else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

const clone = (value: Json): Json => structuredClone(value);

function getAt(value: Json, path: readonly (string | number)[]): Json {
  let current: Json = value;
  for (const step of path) current = (current as Record<string | number, Json>)[step]!;
  return current;
}

function setAt(root: Json, path: readonly (string | number)[], value: Json | undefined): Json {
  if (path.length === 0) return value === undefined ? {} : value;
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, Json> | Json[];
  const last = path[path.length - 1]!;
  if (value !== undefined) (parent as Record<string | number, Json>)[last] = value;
  else if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else delete (parent as Record<string, Json>)[String(last)];
  return root;
}

const typeOf = (value: Json): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value;

/** Applies a mutation to (a copy of) valid params; the schema decides where a field is required or an enum. */
export function mutate(base: Base, mutation: Mutation): Json {
  const params = clone(base.params);
  const all = paths(params);
  const pick = (candidates: (string | number)[][]) => candidates[mutation.at % candidates.length];
  switch (mutation.op) {
    case "wrong-type": {
      // A value of another JSON type than the schema (or, where it cannot tell, the value) has there.
      const path = pick(all)!;
      const expected = schemaAt(base.method, path)?.type ?? typeOf(getAt(params, path));
      const types = Array.isArray(expected) ? expected : [expected];
      const replacement =
        types.includes(typeOf(mutation.value)) || (types.includes("number") && typeof mutation.value === "number")
          ? `not a ${types.join(" or ")}`
          : mutation.value;
      return setAt(params, path, replacement);
    }
    case "remove": {
      // A required field where the schema lists one, else any field or element.
      const required = all.filter(
        (p) =>
          p.length > 0 &&
          typeof p[p.length - 1] === "string" &&
          (schemaAt(base.method, p.slice(0, -1))?.required ?? []).includes(String(p[p.length - 1])),
      );
      const path = pick(required.length > 0 ? required : all.filter((p) => p.length > 0));
      return path ? setAt(params, path, undefined) : params;
    }
    case "add-field": {
      const objects = all.filter((p) => typeOf(getAt(params, p)) === "object");
      const path = pick(objects);
      if (!path) return params;
      (getAt(params, path) as Record<string, Json>)[`x_${mutation.key}`] = mutation.value;
      return params;
    }
    case "out-of-range": {
      // A value outside an enum or const where the schema has one, else a string where the value was.
      const enums = all.filter(
        (p) => p.length > 0 && (schemaAt(base.method, p)?.enum !== undefined || schemaAt(base.method, p)?.const !== undefined),
      );
      const path = pick(enums.length > 0 ? enums : all.filter((p) => p.length > 0));
      if (!path) return params;
      const node = schemaAt(base.method, path);
      const allowed = node?.enum ?? (node?.const === undefined ? [] : [node.const]);
      return setAt(params, path, allowed.includes(mutation.value) ? `${mutation.value}_not_a_variant` : mutation.value);
    }
  }
}

/** Deeply nested JSON as text: JSON.stringify (and structuredClone) recurse and overflow long before JSON.parse does. */
function nestedText(depth: number, inArray: boolean): string {
  return inArray ? `${"[".repeat(depth)}"bottom"${"]".repeat(depth)}` : `${'{"d":'.repeat(depth)}"bottom"${"}".repeat(depth)}`;
}
const DEEP = "\u0000deep\u0000";

const ENVELOPES: Record<Envelope, (message: Record<string, Json>) => void> = {
  "no-jsonrpc": (m) => delete m.jsonrpc,
  "jsonrpc-1.0": (m) => (m.jsonrpc = "1.0"),
  "jsonrpc-number": (m) => (m.jsonrpc = 2),
  "id-object": (m) => (m.id = { id: m.id! }),
  "id-boolean": (m) => (m.id = true),
  "id-null": (m) => (m.id = null),
  "method-number": (m) => (m.method = 7),
  "method-empty": (m) => (m.method = ""),
  "params-string": (m) => (m.params = "params"),
  "params-null": (m) => (m.params = null),
  "extra-member": (m) => (m.extra = true),
};

/** What a rendered case may point at in the gateway under test. */
export interface Target {
  /** A thread that exists there: a `live` request is sent to it instead of the thread its base names. */
  readonly threadId?: string;
}

/** The base's params, pointed at the live thread (both spellings of the field) when asked. */
function paramsOf(base: Base, live: boolean | undefined, target: Target): Json {
  const params = clone(base.params) as Record<string, Json>;
  if (live && target.threadId) {
    if ("thread_id" in params) params.thread_id = target.threadId;
    if ("threadId" in params) params.threadId = target.threadId;
  }
  return params;
}

/** The JSON value of a case that is one (every kind but text and invalid UTF-8), with `id` as the id of its request. */
function valueOf(c: Case, id: () => string, target: Target): Json {
  const request = (method: string, params: Json): Json => ({ jsonrpc: "2.0", id: id(), method, params });
  switch (c.kind) {
    case "json":
      return c.value;
    case "request": {
      const base = BASES[c.base % BASES.length]!;
      const pointed = { ...base, params: paramsOf(base, c.live, target) };
      return request(base.method, c.mutation ? mutate(pointed, c.mutation) : pointed.params);
    }
    case "envelope": {
      const base = BASES[c.base % BASES.length]!;
      const message = request(base.method, clone(base.params)) as Record<string, Json>;
      ENVELOPES[c.how](message);
      return message;
    }
    case "unknown-method":
      return request(c.method, {});
    case "notification":
      return { jsonrpc: "2.0", method: c.method, params: c.params };
    case "response":
      return { jsonrpc: "2.0", id: id(), result: c.result };
    case "error-response":
      return { jsonrpc: "2.0", id: id(), error: { code: c.code, message: c.message } };
    case "huge": {
      const base = BASES[c.base % BASES.length]!;
      return request(base.method, {
        ...(clone(base.params) as object),
        x_huge: c.char.repeat(Math.ceil(c.bytes / Buffer.byteLength(c.char))),
      });
    }
    case "deep": {
      // A placeholder, replaced by the nested text once the message is serialized (see render).
      const base = BASES[c.base % BASES.length]!;
      return request(base.method, { ...(clone(base.params) as object), x_deep: `${DEEP}${c.depth}:${c.inArray ? "[" : "{"}` });
    }
    case "batch":
      return c.items.map((item) => valueOf(item, id, target));
    case "empty-batch":
      return [];
    case "long-batch":
      return Array.from({ length: LIMITS.maxBatchSize + c.extra }, () => request("thread/get", { thread_id: "thr_none" }));
    case "text":
    case "bad-utf8":
      throw new Error(`a ${c.kind} case is not a JSON value`);
  }
}

/** The bytes of a case's frame, one line (no LF or CR in it), with request ids drawn from `id`. */
export function render(c: Case, id: () => string, target: Target = {}): Buffer {
  if (c.kind === "text") {
    const text = c.text.replace(/[\r\n]/g, " ");
    return Buffer.from(text.trim() === "" ? `${text}?` : text, "utf8");
  }
  if (c.kind === "bad-utf8") {
    const base = BASES[c.base % BASES.length]!;
    const text = JSON.stringify({
      jsonrpc: "2.0",
      id: id(),
      method: base.method,
      params: { ...(clone(base.params) as object), x_text: "<>" },
    });
    const bad = Buffer.from(c.bytes.map((b) => (b === 0x0a || b === 0x0d ? 0xff : b)));
    if (c.inString) {
      const at = text.indexOf("<>") + 1;
      return Buffer.concat([Buffer.from(text.slice(0, at)), bad, Buffer.from(text.slice(at))]);
    }
    return Buffer.concat([bad, Buffer.from(text)]);
  }
  const text = JSON.stringify(valueOf(c, id, target)).replace(/"\\u0000deep\\u0000(\d+):([[{])"/g, (_m, depth: string, open: string) =>
    nestedText(Number(depth), open === "["),
  );
  return Buffer.from(text, "utf8");
}

// ---------------------------------------------------------------------------------------
// The oracle

/** One reply a frame is owed. */
export interface Owed {
  readonly id: Id | null;
  /** The error it must be, when the oracle can tell. */
  readonly reason?: ErrorReason;
  /** The method of the request, when it is one: its result or error is checked against it. */
  readonly method?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const readableId = (v: unknown): v is Id => typeof v === "string" || (typeof v === "number" && Number.isFinite(v));

function owedByMessage(v: unknown): Owed[] {
  if (!isObject(v)) return [{ id: null, reason: "invalid_request" }];
  const id = readableId(v.id) ? v.id : null;
  if (v.jsonrpc !== "2.0") return [{ id, reason: "invalid_request" }];
  if ("id" in v && v.id !== null && !readableId(v.id)) return [{ id: null, reason: "invalid_request" }];
  if ("method" in v) {
    if (typeof v.method !== "string" || v.method === "") return [{ id, reason: "invalid_request" }];
    const paramsOk = !("params" in v) || (v.params !== null && typeof v.params === "object");
    const membersOk = Object.keys(v).every((k) => ["jsonrpc", "id", "method", "params"].includes(k));
    // A notification owes nothing; a malformed one is an invalid request, whose id cannot be read.
    if (!("id" in v)) return paramsOk && membersOk ? [] : [{ id: null, reason: "invalid_request" }];
    // JSON-RPC allows a null id but discourages it; whatever the gateway makes of it, it answers with id null.
    if (v.id === null) return [{ id: null }];
    if (!paramsOk) return [{ id, reason: "invalid_request" }];
    // Members JSON-RPC does not define: the request is answered, as an error or not.
    return [{ id, method: v.method }];
  }
  if ("result" in v || "error" in v) {
    const wellFormed =
      "id" in v &&
      !("result" in v && "error" in v) &&
      (!("error" in v) || (isObject(v.error) && Number.isInteger(v.error.code) && typeof v.error.message === "string"));
    return wellFormed ? [] : [{ id: "id" in v ? id : null, reason: "invalid_request" }];
  }
  return [{ id, reason: "invalid_request" }];
}

/** What a frame is owed, read from its bytes as the gateway receives them. */
export function owedBy(frame: Buffer): Owed[] {
  if (frame.length > LIMITS.maxFrameBytes) return [{ id: null, reason: "payload_too_large" }];
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8").decode(frame));
  } catch {
    return [{ id: null, reason: "parse_error" }];
  }
  if (!Array.isArray(parsed)) return owedByMessage(parsed);
  if (parsed.length === 0 || parsed.length > LIMITS.maxBatchSize) return [{ id: null, reason: "invalid_request" }];
  return parsed.flatMap(owedByMessage);
}

/** The problems with one reply, given what it was owed for (empty when it is right). */
export function replyProblems(reply: unknown, owed: Owed): string[] {
  if (!isObject(reply) || reply.jsonrpc !== "2.0") return [`not a JSON-RPC 2.0 response: ${JSON.stringify(reply).slice(0, 300)}`];
  const where = `the reply to ${owed.method ?? "a frame"} (id ${JSON.stringify(owed.id)})`;
  if ("error" in reply === "result" in reply) return [`${where} must carry exactly one of result and error`];
  if ("error" in reply) {
    const error = reply.error;
    if (!isObject(error) || typeof error.message !== "string") return [`${where}: error must be an object with a message`];
    const reason = isObject(error.data) ? error.data.reason : undefined;
    if (typeof reason !== "string" || !Object.hasOwn(errors, reason))
      return [`${where}: error.data.reason ${JSON.stringify(reason)} is not a registered reason`];
    const registered = errors[reason as ErrorReason];
    const problems: string[] = [];
    if (error.code !== registered.code)
      problems.push(`${where}: code ${String(error.code)} is not the code ${registered.code} registered for "${reason}"`);
    if (owed.reason && reason !== owed.reason) problems.push(`${where}: reason "${reason}", expected "${owed.reason}"`);
    if (
      owed.method &&
      isMethodName(owed.method) &&
      !registered.anyMethod &&
      !(methods[owed.method].errors as readonly string[]).includes(reason)
    ) {
      problems.push(`${where}: "${reason}" is not an error ${owed.method} is registered to return`);
    }
    return problems;
  }
  if (owed.reason) return [`${where}: a result, expected the error "${owed.reason}"`];
  if (!owed.method || !isMethodName(owed.method)) return [`${where}: a result for a request of no method of the protocol`];
  const issues = resultIssues(owed.method, reply.result, "strict");
  return issues ? [`${where}: the result does not match its schema: ${JSON.stringify(issues).slice(0, 500)}`] : [];
}

// ---------------------------------------------------------------------------------------
// Arbitraries

const NOTIFICATION_NAMES = Object.keys(notifications);
const json = fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json>;
const base = fc.nat({ max: 10_000 });

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    op: fc.constant("wrong-type" as const),
    at: fc.nat(),
    value: fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      fc.double(),
      fc.string(),
      fc.constant([]),
      fc.constant({}),
    ) as fc.Arbitrary<Json>,
  }),
  fc.record({ op: fc.constant("remove" as const), at: fc.nat() }),
  fc.record({ op: fc.constant("add-field" as const), at: fc.nat(), key: fc.string({ minLength: 1, maxLength: 8 }), value: json }),
  fc.record({
    op: fc.constant("out-of-range" as const),
    at: fc.nat(),
    value: fc.oneof(fc.constant("NotAVariant"), fc.string({ maxLength: 12 })),
  }),
);

/** A single message, as a JSON value (what a batch may hold). */
const message: fc.Arbitrary<Case> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("json" as const), value: json }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("request" as const), base, live: fc.boolean() }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("request" as const), base, mutation, live: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("envelope" as const),
      base,
      how: fc.constantFrom<Envelope>(
        "no-jsonrpc",
        "jsonrpc-1.0",
        "jsonrpc-number",
        "id-object",
        "id-boolean",
        "id-null",
        "method-number",
        "method-empty",
        "params-string",
        "params-null",
        "extra-member",
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("unknown-method" as const),
      method: fc.oneof(fc.constantFrom(...NOTIFICATION_NAMES), fc.string({ minLength: 1, maxLength: 20 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("notification" as const),
      method: fc.oneof(fc.constantFrom(...NOTIFICATION_NAMES, ...Object.keys(methods)), fc.string({ minLength: 1 })),
      params: fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("response" as const), result: json }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("error-response" as const), code: fc.integer(), message: fc.string() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("deep" as const), base, depth: fc.integer({ min: 50, max: 12_000 }), inArray: fc.boolean() }),
  },
);

/** One frame. */
export const frameCase: fc.Arbitrary<Case> = fc.oneof(
  { weight: 20, arbitrary: message },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("text" as const),
      text: fc.oneof(
        fc.string({ minLength: 1 }),
        fc.string({ unit: "binary", minLength: 1 }),
        fc.json().map((s) => s.slice(0, Math.max(1, s.length - 1))),
      ),
    }),
  },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant("batch" as const), items: fc.array(message, { minLength: 1, maxLength: 12 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "empty-batch" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("long-batch" as const), extra: fc.integer({ min: 1, max: 5 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("huge" as const),
      base,
      bytes: fc.integer({ min: 10_000, max: 2 * LIMITS.maxFrameBytes }),
      char: fc.constantFrom("x", "é", "😀", "\\", '"'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("bad-utf8" as const),
      base,
      // Bytes no UTF-8 text holds, truncated sequences, overlong forms and encoded surrogates.
      bytes: fc.array(
        fc.oneof(fc.constantFrom(0xff, 0xfe, 0xc0, 0xc1, 0xf5, 0x80, 0xbf, 0xe2, 0xf0, 0xed), fc.integer({ min: 0x80, max: 0xff })),
        { minLength: 1, maxLength: 6 },
      ),
      inString: fc.boolean(),
    }),
  },
);

/** Counts the cases in a frame: a batch counts each message in it, a batch over the limit counts once. */
export function caseCount(c: Case): number {
  return c.kind === "batch" ? c.items.length : 1;
}
