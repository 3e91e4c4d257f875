/**
 * One small protocol per construct of JSON Schema 2020-12 and of protocol.json that real
 * protocols use (test/fixtures/constructs/<name>/): untagged and const-tagged unions, scalar
 * unions, allOf, local $defs, open enums and unions, tuples, maps, recursive types, open
 * objects, both-way messages, optional and absent params, positional params, error data,
 * union results and batches. For each:
 *
 * - the generated types.ts, registry.ts, openrpc.json and PROTOCOL.md are the golden files
 *   in expected/ (after an intended change: UPDATE_GOLDEN=1 npx vitest run test/generator/constructs.test.ts);
 * - the whole output type-checks under strict settings together with uses.ts, whose
 *   `@ts-expect-error` lines must fail to compile (a type too wide would let them pass);
 * - each value of cases.json gets its verdict in strict and in tolerant mode, from the
 *   generated validators and from the validators compiled at run time alike;
 * - each session of cases.json (frames with their sender) gives exactly the findings listed.
 */
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareWithDisk, generateFiles, writeToDisk, type GeneratedFile } from "../../packages/generator/src/generate.js";
import { loadSchemas } from "../../packages/generator/src/load.js";
import { compileProtocol } from "../../packages/generator/src/runtime-protocol.js";
import { typeCheck } from "../../packages/generator/src/typecheck.js";
import { MessageChecker, type ProtocolView } from "../../packages/rpc/src/index.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const fixtures = join(repoRoot, "test/fixtures/constructs");
const runDir = join(repoRoot, "test/.tmp-constructs", String(process.pid));
const GOLDEN = ["types.ts", "registry.ts", "openrpc.json", "PROTOCOL.md"];
const UPDATE_COMMAND = "UPDATE_GOLDEN=1 npx vitest run test/generator/constructs.test.ts";

interface Cases {
  readonly values: readonly {
    readonly type: string;
    readonly value: unknown;
    readonly strict: boolean;
    readonly tolerant: boolean;
    readonly why: string;
  }[];
  readonly sessions: readonly {
    readonly name: string;
    readonly frames: readonly { readonly from: "client" | "server"; readonly message: unknown }[];
    readonly findings: readonly string[];
  }[];
}

const constructs = readdirSync(fixtures)
  .filter((name) => statSync(join(fixtures, name)).isDirectory())
  .sort();

/** The OpenRPC meta-schema (draft-07, with the JSON Schema meta-schema of json-schema.tools it refers to), as published. */
async function openRpcValidator() {
  const Ajv = (await import("ajv")).default;
  const require = createRequire(import.meta.url);
  const { openrpcDocument } = require("@open-rpc/meta-schema") as { openrpcDocument: object };
  const jsonSchemaMeta = require("@json-schema-tools/meta-schema") as { default?: Record<string, unknown> } & Record<string, unknown>;
  const { $schema: _s, ...meta } = jsonSchemaMeta.default ?? jsonSchemaMeta;
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  for (const $id of ["https://meta.json-schema.tools", "https://meta.json-schema.tools/"]) ajv.addSchema({ ...meta, $id });
  return ajv.compile(openrpcDocument);
}

afterAll(() => {
  rmSync(runDir, { recursive: true, force: true });
  try {
    rmdirSync(dirname(runDir));
  } catch {
    // another run's folder is still there
  }
});

it("has one fixture per construct the protocols use", () => {
  expect(constructs).toEqual([
    "all-of",
    "batches",
    "both-way",
    "const-tagged",
    "error-data",
    "local-defs",
    "map",
    "one-of",
    "open-enum",
    "open-objects",
    "optional-params",
    "positional",
    "recursive",
    "scalar-union",
    "tuple",
    "union-result",
  ]);
});

describe.each(constructs)("the %s construct", (name) => {
  const dir = join(fixtures, name);
  const schemasDir = join(dir, "schemas");
  const expectedDir = join(dir, "expected");
  const cases = JSON.parse(readFileSync(join(dir, "cases.json"), "utf8")) as Cases;
  let files: GeneratedFile[];
  let view: ProtocolView;
  let generated: { validate(type: string, value: unknown, mode: "strict" | "tolerant"): { ok: boolean } };

  beforeAll(async () => {
    files = await generateFiles({ schemasDir });
    const golden = files.filter((f) => GOLDEN.includes(f.path));
    if (process.env.UPDATE_GOLDEN) writeToDisk(golden, expectedDir);
    view = compileProtocol(loadSchemas(schemasDir));
    const out = join(runDir, name);
    writeToDisk(files, out);
    generated = (await import(/* @vite-ignore */ join(out, "validators.ts"))) as typeof generated;
  }, 60_000);

  it("generates the golden types, registry, OpenRPC document and reference", () => {
    const golden = files.filter((f) => GOLDEN.includes(f.path));
    const stale = compareWithDisk(golden, expectedDir);
    for (const { path } of stale)
      expect(golden.find((f) => f.path === path)!.content, `${path} differs; if intended, run ${UPDATE_COMMAND}`).toBe(
        existsSync(join(expectedDir, path)) ? readFileSync(join(expectedDir, path), "utf8") : "",
      );
    expect(stale).toEqual([]);
  });

  it("writes an OpenRPC document that the OpenRPC meta-schema accepts", async () => {
    const validate = await openRpcValidator();
    const doc = JSON.parse(files.find((f) => f.path === "openrpc.json")!.content);
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 3), null, 2)).toBe(true);
  });

  it("type-checks under strict settings, with its uses (the @ts-expect-error lines must fail)", () => {
    const uses = join(dir, "uses.ts");
    expect(typeCheck(files, { outDir: expectedDir, extraFiles: existsSync(uses) ? [uses] : [] })).toEqual([]);
  }, 60_000);

  it("types no declared shape as unknown, any or never[]", () => {
    const code = files
      .find((f) => f.path === "types.ts")!
      .content.split("\n")
      .filter((l) => !/^\s*(\/\*\*|\*|\/\/)/.test(l));
    expect(code.filter((l) => /\bany\b|never\[\]/.test(l))).toEqual([]);
    // unknown only where the schema says nothing of a value: the extra fields of an open object.
    expect(code.filter((l) => /\bunknown\b/.test(l) && !/\[k: string\]: unknown/.test(l))).toEqual([]);
  });

  it.each(cases.values.map((c) => [`${c.type} ${JSON.stringify(c.value)}: ${c.why}`, c] as const))("%s", (_title, c) => {
    for (const mode of ["strict", "tolerant"] as const) {
      const want = c[mode];
      expect(generated.validate(c.type, c.value, mode).ok, `generated validator, ${mode}`).toBe(want);
      expect(view.validate(c.type, c.value, mode).ok, `run-time validator, ${mode}`).toBe(want);
    }
  });

  it.each(cases.sessions.map((s) => [s.name, s] as const))("session: %s", (_title, session) => {
    const checker = new MessageChecker("strict", { protocol: view });
    const found = session.frames.flatMap((frame, i) => checker.check(frame.message, i, frame.from));
    found.push(...checker.end());
    const lines = found.map((f) => `${f.method ?? ""} ${f.part}${f.issue.pointer}: ${f.issue.message}`.trim());
    if (session.findings.length === 0) expect(lines).toEqual([]);
    else {
      expect(lines.length, lines.join("\n")).toBeGreaterThan(0);
      for (const want of session.findings)
        expect(
          lines.some((l) => l.includes(want)),
          `no finding like "${want}" in:\n${lines.join("\n")}`,
        ).toBe(true);
    }
    expect(checker.notes).toEqual([]);
  });
});
