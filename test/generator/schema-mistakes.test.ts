/**
 * Mistakes in a schemas folder are reported, not generated: each row breaks a temporary
 * copy of the mini protocol (test/fixtures/mini-protocol/schemas) in one way and wants
 * loading to fail with SchemaErrors whose message names the file and the JSON pointer.
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { generateFiles } from "../../packages/generator/src/generate.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { SchemaErrors } from "../../packages/generator/src/schema-error.js";
import { useTempDirs } from "./temp-dirs.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const fixture = join(repoRoot, "test/fixtures/mini-protocol/schemas");

// The edits reach into arbitrary schema JSON; the loader, not the type system, is under test.
type Json = any;

const tempDir = useTempDirs();

/** A copy of the mini protocol with `mutate` applied to it. */
function brokenCopy(mutate: (dir: string) => void): string {
  const dir = tempDir("turnspec-broken-");
  cpSync(fixture, dir, { recursive: true });
  mutate(dir);
  return dir;
}

/** Rewrites one JSON file of the copy through `change`. */
const edit = (file: string, change: (json: Json) => void) => (dir: string) => {
  const json = JSON.parse(readFileSync(join(dir, file), "utf8"));
  change(json);
  writeFileSync(join(dir, file), JSON.stringify(json, null, 2));
};

interface Mistake {
  readonly mutate: (dir: string) => void;
  readonly file: string;
  readonly pointer: string;
  readonly message: string;
}

const mistakes: [string, Mistake][] = [
  [
    "a dangling $ref",
    {
      mutate: edit("kv_put_params.json", (s) => (s.properties.value.$ref = "kv_valu.json")),
      file: "kv_put_params.json",
      pointer: "/properties/value/$ref",
      message: 'dangling $ref "kv_valu.json"',
    },
  ],
  [
    "a method without a result",
    {
      mutate: edit("protocol.json", (p) => delete p.methods[1].result),
      file: "protocol.json",
      pointer: "/methods/1",
      message: "must have required property 'result'",
    },
  ],
  [
    "a duplicate title",
    {
      mutate: edit("kv_watch_result.json", (s) => (s.title = "KvPutResult")),
      file: "kv_watch_result.json",
      pointer: "/title",
      message: 'duplicate title "KvPutResult": kv_put_result.json has it too',
    },
  ],
  [
    "a variant missing the tag const",
    {
      mutate: edit("kv_value_counter.json", (s) => delete s.properties.kind.const),
      file: "kv_value_counter.json",
      pointer: "/properties/kind",
      message: 'variant of the union KvValue must have a required "kind" with a string const',
    },
  ],
  [
    "a variant whose tag is not required",
    {
      mutate: edit("kv_value_blob.json", (s) => (s.required = ["base64"])),
      file: "kv_value_blob.json",
      pointer: "/properties/kind",
      message: 'must have a required "kind"',
    },
  ],
  [
    "invalid JSON in a file",
    {
      mutate: (dir) => writeFileSync(join(dir, "kv_expired_notification.json"), '{\n  "title": "KvExpiredNotification",\n}\n'),
      file: "kv_expired_notification.json",
      pointer: "",
      message: "not valid JSON: line 3, column 1:",
    },
  ],
  [
    "a method listing an unknown error reason",
    {
      mutate: edit("protocol.json", (p) => p.methods[0].errors.push("key_missing")),
      file: "protocol.json",
      pointer: "/methods/0/errors/1",
      message: 'unknown error reason "key_missing": not in errors.json',
    },
  ],
  [
    "a method listing a misspelt error reason",
    {
      mutate: edit("protocol.json", (p) => p.methods[1].errors.push("key_not_fuond")),
      file: "protocol.json",
      pointer: "/methods/1/errors/1",
      message: 'unknown error reason "key_not_fuond": not in errors.json (did you mean "key_not_found"?)',
    },
  ],
  [
    "an ordering rule naming a misspelt notification",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[0].notifications = ["kv/chnaged"])),
      file: "protocol.json",
      pointer: "/ordering/rules/0/notifications/0",
      message: 'unknown notification "kv/chnaged" (did you mean "kv/changed"?)',
    },
  ],
  [
    "a duplicate method name",
    {
      mutate: edit("protocol.json", (p) => (p.methods[2].name = "kv/get")),
      file: "protocol.json",
      pointer: "/methods/2/name",
      message: '"kv/get" is declared twice',
    },
  ],
  [
    "a notification with a method's name",
    {
      mutate: edit("protocol.json", (p) => (p.notifications[1].name = "kv/watch")),
      file: "protocol.json",
      pointer: "/notifications/1/name",
      message: '"kv/watch" is declared twice',
    },
  ],
  [
    "allOf whose closed member leaves out a field the allOf adds",
    {
      mutate: edit(
        "kv_put_result.json",
        (s) =>
          (s.properties.version = {
            allOf: [
              { type: "object", additionalProperties: false, properties: { a: { type: "string" } } },
              { type: "object", properties: { b: { type: "string" } } },
            ],
          }),
      ),
      file: "kv_put_result.json",
      pointer: "/properties/version",
      message: 'is closed (additionalProperties: false) but the allOf adds "b": no value can satisfy both',
    },
  ],
  [
    "allOf of objects that says more than their properties, where objects are closed",
    {
      mutate: edit(
        "kv_put_result.json",
        (s) =>
          (s.properties.version = {
            allOf: [{ $ref: "kv_get_params.json" }, { type: "object", properties: { b: { type: "string" } }, minProperties: 1 }],
          }),
      ),
      file: "kv_put_result.json",
      pointer: "/properties/version/allOf",
      message:
        "in a protocol whose objects are closed, an allOf combines object schemas into one closed object, and /allOf/1 has minProperties",
    },
  ],
  [
    "a local $ref to a definition the file does not have",
    {
      mutate: edit("kv_put_result.json", (s) => {
        s.$defs = { Version: { type: "integer" } };
        s.properties.version = { $ref: "#/$defs/Verison" };
      }),
      file: "kv_put_result.json",
      pointer: "/properties/version/$ref",
      message: 'dangling local $ref "#/$defs/Verison": the file has no such definition (did you mean "Version"?)',
    },
  ],
  [
    "a local $ref into a property",
    {
      mutate: edit("kv_put_result.json", (s) => (s.properties.other = { $ref: "#/properties/version" })),
      file: "kv_put_result.json",
      pointer: "/properties/other/$ref",
      message: 'local $ref "#/properties/version": a local reference is "#" (the file\'s own type) or "#/$defs/<name>"',
    },
  ],
  [
    "a local definition named like another type",
    {
      mutate: edit("kv_put_result.json", (s) => (s.$defs = { Value: { title: "KvValue", type: "string" } })),
      file: "kv_put_result.json",
      pointer: "/$defs/Value",
      message: 'the local definition is named "KvValue", which kv_value.json already names',
    },
  ],
  [
    "x-open on a union whose variants no constant tells apart",
    {
      mutate: edit(
        "kv_put_result.json",
        (s) => (s.properties.version = { "x-open": true, anyOf: [{ type: "integer" }, { type: "string" }] }),
      ),
      file: "kv_put_result.json",
      pointer: "/properties/version/x-open",
      message: "x-open needs an enum, or a union whose variants are told apart by constants",
    },
  ],
  [
    "params by position that are not an array schema",
    {
      mutate: edit("protocol.json", (p) => (p.methods[0].param_structure = "by-position")),
      file: "protocol.json",
      pointer: "/methods/0/params/$ref",
      message: 'params "kv_get_params.json" must be an array schema with prefixItems',
    },
  ],
  [
    "params by name that are an array schema",
    {
      mutate: edit("kv_get_params.json", (s) => {
        for (const key of Object.keys(s)) if (!["$schema", "$id", "title", "description"].includes(key)) delete s[key];
        Object.assign(s, { type: "array", prefixItems: [{ type: "string" }], items: false });
      }),
      file: "protocol.json",
      pointer: "/methods/0/params/$ref",
      message:
        'params "kv_get_params.json" must be an object schema (params are sent by name); it is "array" (for a JSON array of params, set "param_structure": "by-position")',
    },
  ],
  [
    "params_optional on a method without params",
    {
      mutate: edit("protocol.json", (p) => {
        delete p.methods[0].params;
        p.methods[0].params_optional = true;
      }),
      file: "protocol.json",
      pointer: "/methods/0/params_optional",
      message: "params_optional without params",
    },
  ],
  [
    "an error whose data names no file",
    {
      mutate: edit("errors.json", (e) => (e.errors[e.errors.length - 1].data = { $ref: "conflict_data.json" })),
      file: "errors.json",
      pointer: "/errors/6/data/$ref",
      message: 'dangling $ref "conflict_data.json"',
    },
  ],
  [
    "an unknown direction",
    {
      mutate: edit("protocol.json", (p) => (p.notifications[0].direction = "either")),
      file: "protocol.json",
      pointer: "/notifications/0/direction",
      message: 'must be equal to one of the allowed values: "client_to_server", "server_to_client", "both"; got "either"',
    },
  ],
  [
    "uniqueItems",
    {
      mutate: edit("kv_watch_params.json", (s) => (s.properties.keys = { type: "array", items: { type: "string" }, uniqueItems: true })),
      file: "kv_watch_params.json",
      pointer: "/properties/keys/uniqueItems",
      message: "uniqueItems is not supported",
    },
  ],
  [
    "an $id that does not follow the base URI",
    {
      mutate: edit("kv_get_result.json", (s) => (s.$id = "https://turnspec.dev/schemas/kv_get_result.json")),
      file: "kv_get_result.json",
      pointer: "/$id",
      message: 'must be "https://example.test/kv/kv_get_result.json"',
    },
  ],
  [
    "a standard error code registered under another reason",
    {
      mutate: edit("errors.json", (e) => (e.errors[2].reason = "no_such_method")),
      file: "errors.json",
      pointer: "/errors",
      message: 'the standard error -32601 keeps its reason "method_not_found"',
    },
  ],
  [
    "a missing title",
    {
      mutate: edit("kv_get_result.json", (s) => delete s.title),
      file: "kv_get_result.json",
      pointer: "",
      message: 'missing title: every type file names its type, e.g. "title": "KvGetResult"',
    },
  ],
  [
    "a title that does not match the file name",
    {
      mutate: edit("kv_get_result.json", (s) => (s.title = "KvFetchResult")),
      file: "kv_get_result.json",
      pointer: "/title",
      message: 'title "KvFetchResult" does not match the file name: a type titled KvFetchResult lives in kv_fetch_result.json',
    },
  ],
  [
    "an enum without type",
    {
      mutate: edit("kv_consistency.json", (s) => delete s.type),
      file: "kv_consistency.json",
      pointer: "/enum",
      message: "enum without type",
    },
  ],
  [
    "an ordering rule naming an unknown notification",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[1].quiet = ["kv/changed", "kv/deleted"])),
      file: "protocol.json",
      pointer: "/ordering/rules/1/quiet/1",
      message: 'unknown notification "kv/deleted"',
    },
  ],
  [
    "an ordering rule naming a method where a notification belongs",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[1].notification = "kv/put")),
      file: "protocol.json",
      pointer: "/ordering/rules/1/notification",
      message: 'unknown notification "kv/put" (a method of that name exists',
    },
  ],
  [
    "an ordering rule over a notification without the field",
    {
      mutate: edit("protocol.json", (p) => p.ordering.rules[0].notifications.push("kv/expired")),
      file: "protocol.json",
      pointer: "/ordering/rules/0/notifications/1",
      message: "kv/expired params (KvExpiredNotification) has no field /version",
    },
  ],
  [
    "a sequence rule counting a field that is not an integer",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[0].field = "/key")),
      file: "protocol.json",
      pointer: "/ordering/rules/0/notifications/0",
      message: 'kv/changed params (KvChangedNotification) has /key of type "string"; the rule needs integer',
    },
  ],
  [
    "an ordering key that is an optional field",
    {
      mutate: edit("protocol.json", (p) => {
        p.ordering.keys.consistency = "/consistency";
        p.ordering.rules[1].scope = ["key", "consistency"];
        p.ordering.rules[1].until = ["kv/get"];
      }),
      file: "protocol.json",
      pointer: "/ordering/rules/1/until/0",
      message: "kv/get params (KvGetParams) has /consistency only as an optional field",
    },
  ],
  [
    "an ordering scope naming an undeclared key",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[0].scope = ["watch", "prefix"])),
      file: "protocol.json",
      pointer: "/ordering/rules/0/scope/1",
      message: 'unknown key "prefix": not in /ordering/keys (watch, key)',
    },
  ],
  [
    "an ordering rule releasing on an unknown method",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[1].until = ["kv/set"])),
      file: "protocol.json",
      pointer: "/ordering/rules/1/until/0",
      message: 'unknown method "kv/set"',
    },
  ],
  [
    "a sequence rule over a result field that is not an array",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[0].results = [{ method: "kv/get", items: "/value" }])),
      file: "protocol.json",
      pointer: "/ordering/rules/0/results/0/items",
      message: 'kv/get result (KvGetResult) has /value of type "object"; it must be an array',
    },
  ],
  [
    "two ordering rules with one id",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[1].id = p.ordering.rules[0].id)),
      file: "protocol.json",
      pointer: "/ordering/rules/1/id",
      message: 'rule id "KV-ORDER-VERSION" is used twice',
    },
  ],
  [
    "an ordering rule of an unknown kind",
    {
      mutate: edit("protocol.json", (p) => (p.ordering.rules[0].kind = "before")),
      file: "protocol.json",
      pointer: "/ordering/rules/0/kind",
      message:
        'must be equal to one of the allowed values: "precedes", "leads", "trails", "single_terminal", "quiet_after", "paired", "sequence"; got "before"',
    },
  ],
  [
    "an ordering rule missing a parameter of its kind",
    {
      mutate: edit("protocol.json", (p) => delete p.ordering.rules[1].until),
      file: "protocol.json",
      pointer: "/ordering/rules/1",
      message: "must have required property 'until'",
    },
  ],
];

const row = (name: string): Mistake => {
  const found = mistakes.find(([n]) => n === name);
  if (!found) throw new Error(`no row named ${name}`);
  return found[1];
};

function loadError(dir: string): SchemaErrors {
  try {
    loadSchemas(dir);
  } catch (error) {
    if (error instanceof SchemaErrors) return error;
    throw error;
  }
  throw new Error(`loading ${dir} did not fail`);
}

describe("schema mistakes", () => {
  it("the unbroken fixture loads (so each failure below is the mutation's)", () => {
    expect(() => loadSchemas(brokenCopy(() => undefined))).not.toThrow();
  });

  it.each(mistakes)("%s is reported with its file and JSON pointer", (_name, { mutate, file, pointer, message }) => {
    const error = loadError(brokenCopy(mutate));
    const found = error.errors.find((e) => e.file === file && e.pointer === pointer);
    expect(found, `no error at ${file}#${pointer}; got:\n${error.message}`).toBeDefined();
    // What a person reads: the problem, then the place, in the combined message.
    expect(found!.message).toContain(message);
    expect(found!.message.endsWith(`\n  at ${file}#${pointer}`)).toBe(true);
    expect(error.message).toContain(`- ${found!.message}`);
  });

  it("reports every mistake of a folder in one run, not only the first", () => {
    const dir = brokenCopy((d) => {
      for (const name of ["a dangling $ref", "a local $ref into a property", "an enum without type"]) row(name).mutate(d);
    });
    const { errors } = loadError(dir);
    expect(errors.map((e) => `${e.file}#${e.pointer}`)).toEqual(
      expect.arrayContaining([
        "kv_put_params.json#/properties/value/$ref",
        "kv_put_result.json#/properties/other/$ref",
        "kv_consistency.json#/enum",
      ]),
    );
  });

  it("a file that is not valid JSON is reported once: the files and notifications referring to it are not reported again", () => {
    const { errors } = loadError(brokenCopy(row("invalid JSON in a file").mutate));
    expect(errors.map((e) => `${e.file}#${e.pointer}`)).toEqual(["kv_expired_notification.json#"]);
  });

  it("a missing title is reported once, without cascading dangling refs", () => {
    const { errors } = loadError(brokenCopy(edit("kv_value_text.json", (s) => delete s.title)));
    expect(errors.map((e) => e.message.split("\n")[0])).toEqual([
      'missing title: every type file names its type, e.g. "title": "KvValueText"',
    ]);
  });

  it("the five standard JSON-RPC errors are implied when errors.json leaves them out, and keep a protocol's own wording", () => {
    const standard = ["parse_error", "invalid_request", "method_not_found", "invalid_params", "internal_error"];
    const withoutThem = loadSchemas(brokenCopy(edit("errors.json", (e) => (e.errors = e.errors.filter((x: Json) => !x.standard)))));
    expect(withoutThem.errors.slice(0, 5).map((e) => [e.reason, e.standard, e.anyMethod])).toEqual(standard.map((r) => [r, true, true]));
    expect(withoutThem.errors.filter((e) => e.code === -32601)).toHaveLength(1);
    const reworded = loadSchemas(brokenCopy(edit("errors.json", (e) => (e.errors[2].message = "No such method"))));
    expect(reworded.errors.find((e) => e.reason === "method_not_found")?.message).toBe("No such method");
    expect(reworded.errors.filter((e) => e.reason === "method_not_found")).toHaveLength(1);
  });

  it("method names may have camelCase segments (textDocument/didOpen, logging/setLevel) and $/ as first segment", () => {
    const rename = (dir: string) => {
      const file = join(dir, "protocol.json");
      writeFileSync(
        file,
        readFileSync(file, "utf8").replaceAll('"kv/get"', '"kvStore/getValue"').replaceAll('"kv/expired"', '"$/kvExpired"'),
      );
    };
    const model = loadSchemas(brokenCopy(rename));
    expect(model.methods.map((m) => m.name)).toContain("kvStore/getValue");
    expect(model.notifications.map((n) => n.name)).toContain("$/kvExpired");
    const { errors } = loadError(brokenCopy(edit("protocol.json", (p) => (p.methods[0].name = "KvStore/get"))));
    expect(errors[0]!.pointer).toBe("/methods/0/name");
  });

  it("generateFiles stops at the loader: nothing is emitted from broken schemas", async () => {
    await expect(generateFiles({ schemasDir: brokenCopy(row("a dangling $ref").mutate) })).rejects.toBeInstanceOf(SchemaErrors);
  });
});

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, "bin/turnspec.js"), ...args], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("turnspec generate on broken schemas", () => {
  it("exits 1, names file and pointer on stderr without a stack trace, and writes nothing", async () => {
    const schemas = brokenCopy((d) => {
      row("a dangling $ref").mutate(d);
      row("a variant missing the tag const").mutate(d);
    });
    const out = join(tempDir("turnspec-out-"), "generated");
    const { code, stdout, stderr } = await run(["generate", "--schemas", schemas, "--out", out]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain("nothing was written");
    expect(stderr).toContain("at kv_put_params.json#/properties/value/$ref");
    expect(stderr).toContain("at kv_value_counter.json#/properties/kind");
    expect(stderr).toContain('dangling $ref "kv_valu.json"');
    // No stack trace: no "at fn (file:line:col)" frames, no internal file names.
    expect(stderr).not.toMatch(/^\s+at .*:\d+:\d+\)?$/m);
    expect(stderr).not.toMatch(/node:internal|generator\/load\.ts|SchemaErrors:/);
    expect(existsSync(out), "the out folder was created").toBe(false);
  });

  it("exits 2 when the schemas folder does not exist", async () => {
    const { code, stderr } = await run([
      "generate",
      "--schemas",
      join(tempDir("turnspec-none-"), "nope"),
      "--out",
      join(tempDir("turnspec-out-"), "g"),
    ]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/no schemas folder at .*nope/);
  });

  it("leaves an existing out folder untouched", async () => {
    const out = tempDir("turnspec-out-");
    writeFileSync(join(out, "keep.txt"), "mine\n");
    const { code } = await run(["generate", "--schemas", brokenCopy(row("invalid JSON in a file").mutate), "--out", out]);
    expect(code).toBe(1);
    expect(readdirSync(out)).toEqual(["keep.txt"]);
    expect(readFileSync(join(out, "keep.txt"), "utf8")).toBe("mine\n");
  });
});
