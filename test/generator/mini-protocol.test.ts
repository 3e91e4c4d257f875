/**
 * The generator on a protocol that is not the turn protocol: a small key-value store in
 * test/fixtures/mini-protocol/schemas (3 methods, 2 notifications, two ordering rules, its own errors, a union
 * tagged by `kind`, an enum, a nullable field, a free-form object). Whole outputs are
 * compared with the golden files in test/fixtures/mini-protocol/expected/.
 *
 * After an intended change to the generator or the fixture, rewrite the golden files with
 *
 *   UPDATE_GOLDEN=1 npx vitest run test/generator/mini-protocol.test.ts
 *
 * and review their diff before committing it.
 *
 * The run-time tests write the output to test/.tmp-mini/<pid>/ (git-ignored) rather than to
 * the system temp folder, so that its `@turnspec/rpc` import resolves to this package.
 */
import { createRequire } from "node:module";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Project, SyntaxKind, type TypeNode } from "ts-morph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareWithDisk, generateFiles, writeToDisk, type GeneratedFile } from "../../packages/generator/src/generate.js";
import { typeCheck } from "../../packages/generator/src/typecheck.js";
// Type-only: the golden files type the modules imported from test/.tmp-mini/ at run time.
import type * as MiniClient from "../fixtures/mini-protocol/expected/client.js";
import type * as MiniOrdering from "../fixtures/mini-protocol/expected/ordering.js";
import type * as MiniRegistry from "../fixtures/mini-protocol/expected/registry.js";
import type * as MiniServer from "../fixtures/mini-protocol/expected/server.js";
import type * as MiniValidators from "../fixtures/mini-protocol/expected/validators.js";
import { createInMemoryPair } from "../../packages/rpc/src/index.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const schemasDir = join(repoRoot, "test/fixtures/mini-protocol/schemas");
const expectedDir = join(repoRoot, "test/fixtures/mini-protocol/expected");
// One folder per process, so that two runs of the suite at once do not share it.
const runDir = join(repoRoot, "test/.tmp-mini", String(process.pid));
const UPDATE_COMMAND = "UPDATE_GOLDEN=1 npx vitest run test/generator/mini-protocol.test.ts";

const METHODS = ["kv/get", "kv/put", "kv/watch"];
const NOTIFICATIONS = ["kv/changed", "kv/expired"];
const VARIANTS = ["KvValueText", "KvValueCounter", "KvValueBlob"];

/** Every title of the fixture, read from the schema files themselves. */
function fixtureTitles(): string[] {
  return readdirSync(schemasDir)
    .filter((f) => f.endsWith(".json") && f !== "protocol.json" && f !== "errors.json")
    .map((f) => (JSON.parse(readFileSync(join(schemasDir, f), "utf8")) as { title: string }).title)
    .sort();
}

const content = (files: readonly GeneratedFile[], path: string): string => {
  const file = files.find((f) => f.path === path);
  if (!file) throw new Error(`the generator did not produce ${path}`);
  return file.content;
};

let files: GeneratedFile[];
let fromCopy: GeneratedFile[];
let copyDir: string;

beforeAll(async () => {
  files = await generateFiles({ schemasDir, support: "@turnspec/rpc" });
  // The second run reads a copy in another folder: the output depends on the schemas only.
  copyDir = mkdtempSync(join(tmpdir(), "turnspec-mini-schemas-"));
  cpSync(schemasDir, copyDir, { recursive: true });
  fromCopy = await generateFiles({ schemasDir: copyDir, support: "@turnspec/rpc" });
  if (process.env.UPDATE_GOLDEN) writeToDisk(files, expectedDir);
}, 60_000);

afterAll(() => {
  rmSync(copyDir, { recursive: true, force: true });
});

describe("generated output of the mini protocol", () => {
  it("matches the golden files, file for file", () => {
    const produced = files.map((f) => f.path).sort();
    const golden = existsSync(expectedDir) ? readdirSync(expectedDir).sort() : [];
    expect(golden, `the golden files are not the files generated; run ${UPDATE_COMMAND}`).toEqual(produced);
    const stale = compareWithDisk(files, expectedDir);
    const hint = `golden files differ from the generated output: ${stale.map((s) => `${s.path} (${s.problem})`).join(", ")}; if the change is intended, run ${UPDATE_COMMAND}`;
    // The first differing file is compared in full so that the failure shows its diff.
    for (const { path } of stale) expect(content(files, path), hint).toBe(readFileSync(join(expectedDir, path), "utf8"));
    expect(stale, hint).toEqual([]);
  });

  it("is byte-identical when generated twice, from another folder", () => {
    expect(fromCopy.map((f) => f.path)).toEqual(files.map((f) => f.path));
    for (const file of files) expect(content(fromCopy, file.path), `${file.path} differs between two runs`).toBe(file.content);
  });

  it("heads every file as generated", () => {
    for (const file of files) expect(file.content.slice(0, 300), file.path).toContain("Generated by `turnspec generate`");
  });

  it("type-checks under strict settings", () => {
    const outDir = mkdtempSync(join(tmpdir(), "turnspec-mini-out-"));
    try {
      expect(typeCheck(files, { outDir })).toEqual([]);
      expect(readdirSync(outDir), "the type check writes nothing").toEqual([]);
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
  });
});

describe("types.ts of the mini protocol", () => {
  let source: ReturnType<Project["createSourceFile"]>;
  beforeAll(() => {
    source = new Project({ useInMemoryFileSystem: true }).createSourceFile("/types.ts", content(files, "types.ts"));
  });
  const declared = () => [...source.getInterfaces(), ...source.getTypeAliases()].map((d) => d.getName());
  const unwrap = (node: TypeNode): TypeNode => (node.isKind(SyntaxKind.ParenthesizedType) ? unwrap(node.getTypeNode()) : node);
  const propertyType = (iface: string, name: string) => {
    const property = source.getInterfaceOrThrow(iface).getPropertyOrThrow(name);
    return { optional: property.hasQuestionToken(), type: unwrap(property.getTypeNodeOrThrow()).getText() };
  };

  it("declares each title exactly once, exported, and nothing else", () => {
    expect([...declared()].sort()).toEqual(fixtureTitles());
    for (const d of [...source.getInterfaces(), ...source.getTypeAliases()]) expect(d.isExported(), d.getName()).toBe(true);
  });

  it("has no numbered duplicate like KvValue1", () => {
    expect(declared().filter((name) => /\d$/.test(name))).toEqual([]);
    expect(content(files, "types.ts")).not.toMatch(/\bKv[A-Za-z]*\d\b/);
  });

  it("emits the tagged union as a TypeScript union of its variants, in schema order", () => {
    const node = unwrap(source.getTypeAliasOrThrow("KvValue").getTypeNodeOrThrow());
    expect(node.getKindName()).toBe("UnionType");
    expect(
      node
        .asKindOrThrow(SyntaxKind.UnionType)
        .getTypeNodes()
        .map((t) => t.getText()),
    ).toEqual(VARIANTS);
    expect(propertyType("KvValueCounter", "kind")).toEqual({ optional: false, type: '"counter"' });
  });

  it("emits the enum as a union of its string literals", () => {
    expect(unwrap(source.getTypeAliasOrThrow("KvConsistency").getTypeNodeOrThrow()).getText()).toBe('"strong" | "eventual"');
  });

  it("keeps nullable and optional apart: null only where the schema allows it", () => {
    expect(propertyType("KvGetResult", "expires_at")).toEqual({ optional: false, type: "string | null" });
    expect(propertyType("KvChangedNotification", "value")).toEqual({ optional: false, type: "KvValue | null" });
    expect(propertyType("KvPutParams", "if_version")).toEqual({ optional: true, type: "number" });
    expect(propertyType("KvGetParams", "consistency")).toEqual({ optional: true, type: "KvConsistency" });
  });

  it("types the free-form object as an open record and closed objects without an index signature", () => {
    expect(propertyType("KvPutParams", "labels").type).toMatch(/^\{\s*\[k: string\]: unknown/);
    expect(source.getInterfaceOrThrow("KvPutParams").getIndexSignatures()).toEqual([]);
  });

  it("carries schema descriptions as doc comments", () => {
    const docs = source
      .getInterfaceOrThrow("KvPutParams")
      .getJsDocs()
      .map((d) => d.getDescription().trim());
    expect(docs).toEqual(["Params of kv/put: the key, its new value and the conditions of the write."]);
  });
});

// The OpenRPC meta-schema (draft-07) refers to the JSON Schema meta-schema of
// json-schema.tools for every schema it holds; both packages are loaded as published.
async function openRpcValidator() {
  const Ajv = (await import("ajv")).default;
  // CommonJS packages: required as such, so that their exports are read the same way everywhere.
  const require = createRequire(import.meta.url);
  const { openrpcDocument } = require("@open-rpc/meta-schema") as { openrpcDocument: object };
  const jsonSchemaMeta = require("@json-schema-tools/meta-schema") as { default?: Record<string, unknown> } & Record<string, unknown>;
  const meta = jsonSchemaMeta.default ?? jsonSchemaMeta;
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  // Referred to both with and without the trailing slash, which ajv keeps apart.
  for (const $id of ["https://meta.json-schema.tools", "https://meta.json-schema.tools/"]) {
    const { $schema: _s, ...rest } = meta;
    ajv.addSchema({ ...rest, $id });
  }
  return ajv.compile(openrpcDocument);
}

/** Every `$ref` inside `value` that does not resolve to a node of `doc`. */
function danglingRefs(doc: unknown, value: unknown = doc, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => danglingRefs(doc, v, found));
  else if (value !== null && typeof value === "object") {
    for (const [key, v] of Object.entries(value)) {
      if (key === "$ref" && typeof v === "string") {
        let node: unknown = doc;
        for (const token of v.replace(/^#\//, "").split("/")) node = (node as Record<string, unknown> | undefined)?.[token];
        if (!v.startsWith("#/") || node === undefined) found.push(v);
      } else danglingRefs(doc, v, found);
    }
  }
  return found;
}

describe("openrpc.json", () => {
  let validate: Awaited<ReturnType<typeof openRpcValidator>>;
  beforeAll(async () => {
    validate = await openRpcValidator();
  });

  it("the meta-schema check is not vacuous: broken documents fail it", () => {
    const doc = JSON.parse(content(files, "openrpc.json"));
    expect(validate({ ...doc, openrpc: "9.9.9" })).toBe(false);
    expect(validate({ ...doc, methods: [{ name: "kv/get" }] })).toBe(false);
    expect(validate({ ...doc, components: { ...doc.components, schemas: { KvBroken: { type: 5 } } } })).toBe(false);
  });

  it("of the mini protocol validates against the OpenRPC meta-schema, with the mini methods only", () => {
    const doc = JSON.parse(content(files, "openrpc.json"));
    expect(validate(doc), JSON.stringify(validate.errors, null, 2)).toBe(true);
    expect(doc.info).toMatchObject({ title: "kv store protocol", version: "1.2.0" });
    expect(doc.methods.map((m: { name: string }) => m.name)).toEqual(METHODS);
    expect(doc["x-notifications"].map((n: { name: string }) => n.name)).toEqual(NOTIFICATIONS);
    expect(Object.keys(doc.components.schemas).sort()).toEqual(fixtureTitles());
    expect(doc.components.errors.version_conflict).toMatchObject({ code: -32011, data: { reason: "version_conflict" } });
    expect(danglingRefs(doc)).toEqual([]);
  });

  it("of the real protocol (generated/openrpc.json) validates against the OpenRPC meta-schema", () => {
    const doc = JSON.parse(readFileSync(join(repoRoot, "generated/openrpc.json"), "utf8"));
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 5), null, 2)).toBe(true);
    expect(danglingRefs(doc)).toEqual([]);
  });
});

describe("the generated mini modules at run time", () => {
  let registry: typeof MiniRegistry;
  let validators: typeof MiniValidators;
  let client: typeof MiniClient;
  let server: typeof MiniServer;
  let ordering: typeof MiniOrdering;

  beforeAll(async () => {
    rmSync(runDir, { recursive: true, force: true });
    writeToDisk(files, runDir);
    const load = (name: string) => import(/* @vite-ignore */ join(runDir, name));
    registry = await load("registry.ts");
    validators = await load("validators.ts");
    client = await load("client.ts");
    server = await load("server.ts");
    ordering = await load("ordering.ts");
  }, 60_000);

  afterAll(() => {
    rmSync(runDir, { recursive: true, force: true });
    try {
      rmdirSync(dirname(runDir)); // only when no other run is using it
    } catch {
      // another run's folder is still there
    }
  });

  it("the registry holds exactly the mini methods, notifications and errors", () => {
    expect(Object.keys(registry.methods)).toEqual(METHODS);
    expect(Object.keys(registry.notifications)).toEqual(NOTIFICATIONS);
    expect(registry.methods["kv/put"]).toEqual({
      name: "kv/put",
      direction: "client_to_server",
      summary: "Write one key, optionally only if it is still at a given version.",
      params: "KvPutParams",
      paramsOptional: false,
      paramStructure: "by-name",
      result: "KvPutResult",
      errors: ["version_conflict"],
      requirements: [],
    });
    expect(Object.keys(registry.errors)).toEqual([
      "parse_error",
      "invalid_request",
      "method_not_found",
      "invalid_params",
      "internal_error",
      "key_not_found",
      "version_conflict",
    ]);
    expect(registry.errors.version_conflict.details).toEqual(["stale_version", "key_deleted"]);
    expect(registry.isMethodName("turn/start")).toBe(false);
    expect(Object.keys(validators.schemaFiles).sort()).toEqual(fixtureTitles());
  });

  it("strict rejects an unknown field, naming its pointer; tolerant accepts it", () => {
    const params = { key: "a", value: { kind: "text", text: "hi", color: "red" }, priority: 1 };
    const strict = validators.validate("KvPutParams", params);
    expect(strict.ok).toBe(false);
    expect(strict.ok ? [] : strict.errors).toContainEqual(
      expect.objectContaining({ pointer: "/priority", message: "is not a known field", received: 1 }),
    );
    expect(validators.validate("KvPutParams", params, "tolerant")).toEqual({ ok: true, value: params });
    // The free-form object stays open in strict mode too.
    expect(validators.validate("KvPutParams", { key: "a", value: { kind: "counter", count: 2 }, labels: { any: ["thing"] } }).ok).toBe(
      true,
    );
  });

  it("a wrong union tag is reported with the allowed tags, at the union or nested in a type", () => {
    expect(validators.validate("KvValue", { kind: "float", number: 1.5 })).toEqual({
      ok: false,
      errors: [
        { pointer: "/kind", message: "must be one of text, counter, blob", expected: ["text", "counter", "blob"], received: "float" },
      ],
    });
    const nested = validators.validate("KvPutParams", { key: "a", value: { kind: "float" } });
    expect(nested.ok ? [] : nested.errors[0]).toMatchObject({ pointer: "/value/kind", message: "must be one of text, counter, blob" });
    const missing = validators.validate("KvValue", { text: "no tag" });
    expect(missing.ok ? [] : missing.errors[0]).toMatchObject({ pointer: "/kind", message: "is required" });
    expect(validators.paramsIssues("kv/put", { key: "a", value: { kind: "float" } })?.[0]?.message).toBe(
      "must be one of text, counter, blob",
    );
  });

  it("a nested union of the real protocol is never reported with another union's tags", async () => {
    // TurnItem and UserInput are both tagged by "type": a UserInput inside a TurnItem must
    // not be told the TurnItem tags.
    const real = await import("../../generated/validators.js");
    const result = real.validate("TurnItem", { type: "userMessage", id: "itm_1", status: "completed", content: [{ type: "hologram" }] });
    expect(result.ok).toBe(false);
    const issue = result.ok ? undefined : result.errors.find((e) => e.pointer === "/content/0/type");
    expect(issue?.message).toBeDefined();
    expect(issue?.message).not.toContain("userMessage");
  });

  it("null is accepted only where the schema allows it, and never stands for a missing field", () => {
    const changed = { watch_id: "w1", key: "a", version: 3, value: null };
    expect(validators.validate("KvChangedNotification", changed).ok).toBe(true);
    const { value: _v, ...withoutValue } = changed;
    const missing = validators.validate("KvChangedNotification", withoutValue);
    expect(missing.ok ? [] : missing.errors).toEqual([{ pointer: "/value", message: "is required", expected: "a value" }]);
    expect(validators.validate("KvGetResult", { key: "a", value: { kind: "text", text: "x" }, version: 1, expires_at: null }).ok).toBe(
      true,
    );
    expect(validators.validate("KvPutParams", { key: "a", value: null }).ok).toBe(false);
  });

  it("exports each notification's strict check by name, refusing an unknown field", () => {
    expect(Object.keys(validators.strictNotificationValidators).sort()).toEqual(["kv/changed", "kv/expired"]);
    const changed = { watch_id: "w1", key: "a", version: 3, value: null };
    expect(validators.strictNotificationValidators["kv/changed"](changed)).toBe(true);
    expect(validators.strictNotificationValidators["kv/changed"]({ ...changed, extra: 1 })).toBe(false);
    expect(validators.strictNotificationValidators["kv/changed"]({ ...changed, version: "3" })).toBe(false);
    // What it refused, notificationIssues names.
    expect(validators.notificationIssues("kv/changed", { ...changed, version: "3" })?.[0]?.pointer).toBe("/version");
  });

  it("enums and bounds are checked", () => {
    const weak = validators.validate("KvGetParams", { key: "a", consistency: "weak" });
    expect(weak.ok ? [] : weak.errors[0]).toMatchObject({
      pointer: "/consistency",
      message: "must be one of strong, eventual",
      received: "weak",
    });
    expect(validators.validate("KvGetParams", { key: "" }).ok).toBe(false);
    expect(validators.validate("KvValueCounter", { kind: "counter", count: -1 }).ok).toBe(false);
    expect(validators.paramsIssues("kv/delete", {})).toEqual([
      { pointer: "", message: 'method "kv/delete" is not part of the protocol', received: "kv/delete" },
    ]);
  });

  it("the ordering checker enforces the mini protocol's own rules", () => {
    expect(ordering.orderingRules.map((r) => r.id)).toEqual(["KV-ORDER-VERSION", "KV-ORDER-EXPIRED-QUIET"]);
    const changed = (key: string, version: number) => ({
      jsonrpc: "2.0",
      method: "kv/changed",
      params: { watch_id: "w1", key, version, value: null },
    });
    const expired = (key: string) => ({
      jsonrpc: "2.0",
      method: "kv/expired",
      params: { watch_id: "w1", key, expired_at: "2026-01-01T00:00:00Z" },
    });
    const put = (id: number, key: string) => ({
      jsonrpc: "2.0",
      id,
      method: "kv/put",
      params: { key, value: { kind: "counter", count: 1 } },
    });
    const stream = (frames: [unknown, "server_to_client" | "client_to_server"][]) => {
      const checker = ordering.createOrderingChecker();
      for (const [frame, direction] of frames) checker.accept(frame, direction);
      return [...checker.violations, ...checker.end()].map((v) => [v.rule, v.message]);
    };
    const down = "server_to_client" as const;
    const up = "client_to_server" as const;

    expect(
      stream([
        [changed("a", 1), down],
        [changed("b", 7), down],
        [changed("a", 2), down],
        [expired("a"), down],
        [put(1, "a"), up],
        [{ jsonrpc: "2.0", id: 1, result: { version: 3 } }, down],
        [changed("a", 3), down],
      ]),
    ).toEqual([]);
    expect(
      stream([
        [changed("a", 1), down],
        [changed("a", 3), down],
      ]),
    ).toEqual([["KV-ORDER-VERSION", 'kv/changed for key "a" of watch "w1" at frame 1 has /version 3; expected 2 after 1 at frame 0']]);
    expect(
      stream([
        [expired("a"), down],
        [changed("a", 4), down],
      ]),
    ).toEqual([
      ["KV-ORDER-EXPIRED-QUIET", 'kv/changed for key "a" at frame 1 came after kv/expired at frame 0 and before a successful kv/put'],
    ]);
  });

  it("the generated client and dispatcher talk to each other over an in-memory pair", async () => {
    const store = new Map<string, { value: MiniValidators.TypeMap["KvValue"]; version: number }>();
    const calls: string[] = [];
    const dispatcher = server.createDispatcher({
      "kv/get": ({ key }) => {
        calls.push("kv/get");
        const entry = store.get(key);
        if (!entry) throw server.protocolError("key_not_found", undefined, { key });
        return { key, ...entry, expires_at: null };
      },
      "kv/put": ({ key, value, if_version }) => {
        calls.push("kv/put");
        const current = store.get(key)?.version ?? 0;
        if (if_version !== undefined && if_version !== current)
          throw server.protocolError("version_conflict", undefined, { current_version: current, detail: "stale_version" });
        store.set(key, { value, version: current + 1 });
        return { version: current + 1 };
      },
      "kv/watch": () => ({ watch_id: "w1" }),
    });
    const [clientSide, serverSide] = createInMemoryPair();
    serverSide.onmessage = (frame) => {
      void dispatcher.handleFrame(frame, undefined).then((reply) => (reply === undefined ? undefined : serverSide.send(reply)));
    };
    await serverSide.start();
    const kv = new client.ProtocolClient(clientSide);
    await kv.start();
    try {
      expect(await kv.kvPut({ key: "a", value: { kind: "counter", count: 1 } })).toEqual({ version: 1 });
      expect(await kv.kvGet({ key: "a" })).toEqual({ key: "a", value: { kind: "counter", count: 1 }, version: 1, expires_at: null });
      await expect(kv.kvGet({ key: "b" })).rejects.toMatchObject({
        name: "RpcError",
        code: -32010,
        reason: "key_not_found",
        data: { reason: "key_not_found", key: "b" },
      });
      await expect(kv.kvPut({ key: "a", value: { kind: "text", text: "x" }, if_version: 7 })).rejects.toMatchObject({
        code: -32011,
        data: { reason: "version_conflict", current_version: 1 },
      });
      // Invalid params never leave the client (strict outgoing validation by default).
      const before = calls.length;
      await expect(kv.kvPut({ key: "a", value: { kind: "float" } } as never)).rejects.toMatchObject({
        name: "LocalError",
        kind: "invalid_outgoing",
      });
      expect(calls.length).toBe(before);

      const seen: unknown[] = [];
      kv.on("kv/changed", (params) => seen.push(params));
      const notifier = server.createNotifier((frame) => serverSide.send(frame));
      await notifier.notify("kv/changed", { watch_id: "w1", key: "a", version: 2, value: null });
      await expect(notifier.notify("kv/changed", { watch_id: "w1", key: "a", version: 0, value: null })).rejects.toMatchObject({
        kind: "invalid_outgoing",
      });
      await expect.poll(() => seen).toEqual([{ watch_id: "w1", key: "a", version: 2, value: null }]);
    } finally {
      await kv.close();
    }
  });
});
