/**
 * `turnspec diff` as a command: the folders or git ref it reads, its three outputs (the
 * JSON one checked against generator/diff/report.schema.json) and its exit codes. Run
 * in-process; one spawn of the real binary checks argument parsing and the exit code.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import { afterAll, describe, expect, it } from "vitest";
import { runDiff, type DiffCommand } from "../../packages/generator/src/diff/command.js";
import type { JsonObject } from "../../packages/generator/src/model.js";
import { removeAll, writeProtocol, type ProtocolSpec } from "./protocol.js";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const dirs: string[] = [];
afterAll(() => removeAll(dirs));

const closed = (properties: JsonObject, required: string[]): JsonObject => ({
  type: "object",
  additionalProperties: false,
  required,
  properties,
});
const BASE: ProtocolSpec = {};
/** thing/put params gain an optional field: new clients break old strict servers; old clients are fine. */
const OPTIONAL_ADDED: ProtocolSpec = {
  params: closed({ id: { type: "string" }, v: { type: "string" }, note: { type: "string" } }, ["id", "v"]),
};
/** v's pattern is rewritten to an equivalent one: no generated string tells them apart, so it stays undetermined. */
const PATTERN_OLD: ProtocolSpec = { v: { type: "string", pattern: "^[a-z]+$" } };
const PATTERN_NEW: ProtocolSpec = { v: { type: "string", pattern: "^[a-z][a-z]*$" } };

async function run(command: Partial<DiffCommand> & { oldDir?: string; newDir: string }) {
  let out = "";
  let err = "";
  const code = await runDiff(
    { mode: "strict", category: "wire", format: "text", strictUndetermined: false, ...command },
    { write: (t: string) => (out += t) },
    { write: (t: string) => (err += t) },
  );
  return { code, out, err };
}

describe("turnspec diff (command)", () => {
  it("exits 0 when nothing breaks and 1 when something does, with the change in the console report", async () => {
    const same = await run({ oldDir: writeProtocol(BASE, dirs), newDir: writeProtocol(BASE, dirs) });
    expect(same).toMatchObject({ code: 0, err: "" });
    expect(same.out).toContain("0 breaking, 0 undetermined, 0 compatible");

    const broken = await run({ oldDir: writeProtocol(BASE, dirs), newDir: writeProtocol(OPTIONAL_ADDED, dirs) });
    expect(broken.code).toBe(1);
    expect(broken.out).toContain(
      'ThingPutParams\n  BREAKING  field "note" added, optional  [FIELD_ADDED]\n    who breaks: old servers reject what new clients send: ',
    );
    expect(broken.out).toContain(
      "      old thing_put_params.json#/additionalProperties\n      new thing_put_params.json#/properties/note\n      message: thing/put params\n",
    );
    expect(broken.out).toContain('      counterexample: {"id":"x","v":"x","note":"x"}');
    // The direction is named on the who-breaks line only.
    expect(
      broken.out
        .split("\n")
        .filter((l) => /\b(old|new) (clients|servers)\b/.test(l))
        .every((l) => l.startsWith("    who breaks: ")),
    ).toBe(true);

    // The same change is fine for tolerant receivers.
    expect((await run({ oldDir: writeProtocol(BASE, dirs), newDir: writeProtocol(OPTIONAL_ADDED, dirs), mode: "tolerant" })).code).toBe(0);
  });

  it("fails on undetermined changes only with --strict-undetermined", async () => {
    const oldDir = writeProtocol(PATTERN_OLD, dirs);
    const newDir = writeProtocol(PATTERN_NEW, dirs);
    const lenient = await run({ oldDir, newDir });
    expect(lenient.out).toContain('UNDETERMINED  v: pattern "^[a-z]+$" → "^[a-z][a-z]*$"');
    expect(lenient.code).toBe(0);
    expect((await run({ oldDir, newDir, strictUndetermined: true })).code).toBe(1);
  });

  it("judges only the selected category", async () => {
    const oldDir = writeProtocol({ v: { $ref: "box.json" }, files: { "box.json": closed({ a: { type: "string" } }, ["a"]) } }, dirs);
    const newDir = writeProtocol({ v: { $ref: "crate.json" }, files: { "crate.json": closed({ a: { type: "string" } }, ["a"]) } }, dirs);
    expect((await run({ oldDir, newDir, category: "wire" })).code).toBe(0);
    const code = await run({ oldDir, newDir, category: "code" });
    expect(code.code).toBe(1);
    expect(code.out).toContain("code: Box\n  BREAKING  type Box renamed to Crate  [CODE_TYPE_RENAMED]");
    expect((await run({ oldDir, newDir, category: "all" })).code).toBe(1);
  });

  it("prints JSON that the report schema describes, and Markdown for a pull request", async () => {
    const oldDir = writeProtocol(BASE, dirs);
    const newDir = writeProtocol({ ...OPTIONAL_ADDED, methods: [] }, dirs);
    const json = await run({ oldDir, newDir, format: "json", category: "all" });
    const report = JSON.parse(json.out);
    const schema = JSON.parse(readFileSync(join(repoRoot, "packages/generator/src/diff/report.schema.json"), "utf8"));
    const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
    expect(validate(report), JSON.stringify(validate.errors)).toBe(true);
    expect(report.summary.breaking).toBeGreaterThan(0);
    expect(report.changes.find((c: { change: string }) => c.change === 'method "thing/put" removed').frame.method).toBe("thing/put");
    // And the schema is not vacuous: a report with an unknown verdict fails it.
    expect(validate({ ...report, changes: [{ ...report.changes[0], verdict: "fine" }] })).toBe(false);

    const markdown = await run({ oldDir: writeProtocol(BASE, dirs), newDir: writeProtocol(OPTIONAL_ADDED, dirs), format: "markdown" });
    expect(markdown.out).toContain("#### `ThingPutParams`");
    expect(markdown.out).toContain(
      '| BREAKING | `FIELD_ADDED` | field "note" added, optional | `thing_put_params.json#/additionalProperties` | `thing_put_params.json#/properties/note` | old servers reject what new clients send: ',
    );
    expect(markdown.out).toContain("| thing/put params |");
    expect(markdown.out).toContain('  {"id":"x","v":"x","note":"x"}');
  });

  it("exits 2 on an unreadable or invalid schemas folder, naming it", async () => {
    const missing = await run({ oldDir: join(tmpdir(), "turnspec-no-such-folder"), newDir: writeProtocol(BASE, dirs) });
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("cannot read the schemas folder");
    const broken = writeProtocol(BASE, dirs);
    writeFileSync(join(broken, "thing_gone_params.json"), "{ not json");
    const invalid = await run({ oldDir: writeProtocol(BASE, dirs), newDir: broken });
    expect(invalid.code).toBe(2);
    expect(invalid.err).toContain("thing_gone_params.json");
    expect(invalid.err).toContain("not valid JSON");
  });

  it("reads a folder that still uses the old direction names as the current ones", async () => {
    const old = writeProtocol(BASE, dirs);
    const protocolPath = join(old, "protocol.json");
    writeFileSync(
      protocolPath,
      readFileSync(protocolPath, "utf8")
        .replaceAll("client_to_server", "client_to_gateway")
        .replaceAll("server_to_client", "gateway_to_client"),
    );
    const same = await run({ oldDir: old, newDir: writeProtocol(BASE, dirs), format: "json" });
    expect(same.code).toBe(0);
    expect(JSON.parse(same.out).changes).toEqual([]);
  });

  it("reads the old schemas at a git ref (--against), with the old direction names", async () => {
    const repo = mkdtempSync(join(tmpdir(), "turnspec-diff-git-"));
    dirs.push(repo);
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "commit.gpgsign=false", ...args], {
        cwd: repo,
        stdio: "pipe",
      });
    git("init", "-q");
    cpSync(writeProtocol(BASE, dirs), join(repo, "schemas"), { recursive: true });
    // The committed version still says client_to_gateway / gateway_to_client.
    const protocolPath = join(repo, "schemas", "protocol.json");
    const current = readFileSync(protocolPath, "utf8");
    writeFileSync(
      protocolPath,
      current.replaceAll("client_to_server", "client_to_gateway").replaceAll("server_to_client", "gateway_to_client"),
    );
    git("add", ".");
    git("commit", "-q", "-m", "old");
    writeFileSync(protocolPath, current);
    const schemas = join(repo, "schemas");
    expect(await run({ against: "HEAD", newDir: schemas })).toMatchObject({ code: 0 });
    cpSync(join(writeProtocol(OPTIONAL_ADDED, dirs), "thing_put_params.json"), join(schemas, "thing_put_params.json"));
    const changed = await run({ against: "HEAD", newDir: schemas });
    expect(changed.code).toBe(1);
    expect(changed.out).toContain('field "note" added, optional');
    const unknown = await run({ against: "no-such-ref", newDir: schemas });
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.err).toContain('"no-such-ref" is not a commit');

    // The real binary: argument parsing, --against and the exit code.
    const bin = join(repoRoot, "bin/turnspec.js");
    const real = spawnSync(process.execPath, [bin, "diff", "--against", "HEAD", "--json"], { cwd: repo, encoding: "utf8" });
    expect(real.status, real.stderr).toBe(1);
    expect(JSON.parse(real.stdout).summary.breaking).toBe(1);
    const usage = spawnSync(process.execPath, [bin, "diff", schemas], { cwd: repo, encoding: "utf8" });
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain("name OLD_DIR and NEW_DIR, or --against REF");
    rmSync(join(repo, ".git"), { recursive: true, force: true });
  });

  it("never passes a ref that looks like an option to git (--against=--output=FILE)", () => {
    const repo = mkdtempSync(join(tmpdir(), "turnspec-diff-option-"));
    dirs.push(repo);
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "commit.gpgsign=false", ...args], {
        cwd: repo,
        stdio: "pipe",
      });
    git("init", "-q");
    cpSync(writeProtocol(BASE, dirs), join(repo, "schemas"), { recursive: true });
    git("add", ".");
    git("commit", "-q", "-m", "base");
    // A git in front of the real one that records every argument it is given.
    const bin = mkdtempSync(join(tmpdir(), "turnspec-diff-fake-git-"));
    dirs.push(bin);
    const log = join(bin, "calls.log");
    const real = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
    writeFileSync(
      join(bin, "git"),
      `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a" >> ${JSON.stringify(log)}; done\nexec ${JSON.stringify(real)} "$@"\n`,
      { mode: 0o755 },
    );
    const planted = join(bin, "planted");
    for (const ref of [`--output=${planted}`, "--exec=touch planted", "-p"]) {
      const run = spawnSync(process.execPath, [join(repoRoot, "bin/turnspec.js"), "diff", `--against=${ref}`], {
        cwd: repo,
        encoding: "utf8",
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      });
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toContain(
        `--against ${JSON.stringify(ref)} is not a git ref: a ref cannot start with "-", and this one would be read by git as an option`,
      );
      const given = existsSync(log) ? readFileSync(log, "utf8").split("\n") : [];
      expect(given.filter((arg) => arg.includes(ref))).toEqual([]);
    }
    expect(existsSync(planted)).toBe(false);
    expect(existsSync(join(repo, "planted"))).toBe(false);
  });
});
