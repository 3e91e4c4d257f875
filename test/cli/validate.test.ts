import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runValidate, type ValidateCommand } from "../../packages/generator/src/validate/command.js";
import { builtInProtocol } from "../../packages/turnspec/src/built-in.js";

const thread = "thr_000000000000000001";
const turnStart = (params: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id: 7,
  method: "turn/start",
  params: { thread_id: thread, turn_id: "trn_1", input: [{ type: "text", text: "hi", textElements: [] }], ...params },
});

const dir = mkdtempSync(join(tmpdir(), "turnspec-validate-"));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
const lines = (...values: unknown[]) => values.map((v) => JSON.stringify(v)).join("\n") + "\n";

async function run(command: Partial<ValidateCommand>, stdin = "") {
  let out = "";
  let err = "";
  const code = await runValidate(
    { files: [], tolerant: false, json: false, builtIn: builtInProtocol, ...command },
    { out: { write: (t: string) => (out += t) }, err: { write: (t: string) => (err += t) }, stdin: () => stdin },
  );
  return { code, out, err };
}

describe("turnspec validate", () => {
  it("names the limit a value breaks", async () => {
    const path = file(
      "limits.jsonl",
      lines({ jsonrpc: "2.0", id: 1, method: "agent/route/list", params: { limit: 500 } }, turnStart({ turn_id: "t".repeat(300) })),
    );
    const { out } = await run({ files: [path] });
    expect(out).toContain(`${path}:1 agent/route/list params/limit: must be at most 200; got 500`);
    expect(out).toContain(`${path}:2 turn/start params/turn_id: must be at most 256 characters long; got "ttt`);
    expect(out).not.toMatch(/fails (maximum|maxLength)/);
  });

  it("suggests the method, notification or error reason a misspelt name is closest to", async () => {
    const path = file(
      "misspelt.jsonl",
      lines(
        { jsonrpc: "2.0", id: 1, method: "turn/strat", params: {} },
        { jsonrpc: "2.0", method: "turn/compelted", params: {} },
        { jsonrpc: "2.0", id: 2, error: { code: -32002, message: "no", data: { reason: "turn_not_fuond" } } },
        { jsonrpc: "2.0", id: 3, method: "turn/started", params: {} },
        { jsonrpc: "2.0", id: 4, method: "nothing/like/it/at/all", params: {} },
      ),
    );
    const { out } = await run({ files: [path] });
    expect(out).toContain(`${path}:1 turn/strat method: is not a method of the protocol (did you mean turn/start?); got "turn/strat"`);
    expect(out).toContain(
      `${path}:2 turn/compelted method: is not a notification of the protocol (did you mean turn/completed?); got "turn/compelted"`,
    );
    expect(out).toContain(
      `${path}:3 error/data/reason: is not an error reason of the protocol (did you mean "turn_not_found"?); got "turn_not_fuond"`,
    );
    expect(out).toContain(`${path}:4 turn/started method: is not a method of the protocol (it is a notification: it has no id)`);
    expect(out).toContain(`${path}:5 nothing/like/it/at/all method: is not a method of the protocol; got`);
  });

  it("reports file, line, method, pointer, expectation and received value", async () => {
    const path = file(
      "session.jsonl",
      lines({ jsonrpc: "2.0", method: "turn/started", params: {} }, turnStart({ permission_profile: { mode: "admin" } })),
    );
    const { code, out } = await run({ files: [path] });
    expect(code).toBe(1);
    expect(out).toContain(
      `${path}:2 turn/start params/permission_profile/mode: must be one of full_access, auto_accept_edits, supervised; got "admin"`,
    );
    expect(out).toMatch(new RegExp(`${path}:1 turn/started params/\\w+: is required`));
  });

  it("checks a response against the result of the request with the same id earlier in the input", async () => {
    const path = file(
      "responses.jsonl",
      lines(turnStart(), { jsonrpc: "2.0", id: 7, result: { turn: { id: "trn_1", status: "Running", prompt_manifest: null } } }),
    );
    const { code, out } = await run({ files: [path] });
    expect(code).toBe(1);
    expect(out).toContain(`${path}:2 turn/start result/turn/`);
  });

  it("flags a response to no known request, an unknown method and an error code that does not match its reason", async () => {
    const path = file(
      "odd.jsonl",
      lines({ jsonrpc: "2.0", id: 99, result: {} }, { jsonrpc: "2.0", id: 1, method: "turn/explode", params: {} }, turnStart(), {
        jsonrpc: "2.0",
        id: 7,
        error: { code: -32002, message: "no", data: { reason: "thread_not_found" } },
      }),
    );
    const { out } = await run({ files: [path] });
    expect(out).toContain(`${path}:1 id: answers no request seen earlier in the input; got 99`);
    expect(out).toContain(`${path}:2 turn/explode method: is not a method of the protocol`);
    expect(out).toContain(`${path}:4 turn/start error/code: does not match the registered code -32001 of reason "thread_not_found"`);
  });

  it("accepts a whole valid transcript and registered errors", async () => {
    const { code, out } = await run({ files: ["examples/session.jsonl"] });
    expect(out).toContain("15 values checked: all valid");
    expect(code).toBe(0);
  });

  it("checks the protocol's ordering rules across a file's messages, naming the rule and the line", async () => {
    const session = readFileSync("examples/session.jsonl", "utf8").trimEnd().split("\n");
    // The first item's delta (line 7) moved before its item/started (line 6).
    const swapped = file("swapped.jsonl", [...session.slice(0, 5), session[6], session[5], ...session.slice(7)].join("\n") + "\n");
    const { code, out } = await run({ files: [swapped] });
    expect(code).toBe(1);
    expect(out).toMatch(
      new RegExp(
        `${swapped}:6 \\(value\\): breaks ordering rule ITEM-ORDER-STARTED-FIRST: item/command_execution/output_delta for item "[^"]+" .* came before its item/started`,
      ),
    );
    // The terminal notification sent twice.
    const twice = file("twice.jsonl", [...session.slice(0, 13), session[12], ...session.slice(13)].join("\n") + "\n");
    expect((await run({ files: [twice] })).out).toMatch(
      new RegExp(`${twice}:14 \\(value\\): breaks ordering rule TURN-ORDER-ONE-TERMINAL: `),
    );
    // Each file is its own stream, and --no-ordering checks the messages one by one only.
    expect(await run({ files: [swapped], ordering: false })).toMatchObject({ code: 0 });
  });

  it("reads one JSON value, an array with element lines, and standard input", async () => {
    const single = file("one.json", JSON.stringify(turnStart(), null, 2));
    expect((await run({ files: [single] })).code).toBe(0);
    const array = file("array.json", `[\n  ${JSON.stringify(turnStart())},\n  ${JSON.stringify(turnStart({ extra: true }))}\n]\n`);
    const arrayRun = await run({ files: [array] });
    expect(arrayRun.code).toBe(1);
    expect(arrayRun.out).toContain(`${array}:3 turn/start params/extra: is not a known field; got true`);
    const stdin = await run({ files: ["-"] }, lines(turnStart({ mode: "Sideways" })));
    expect(stdin.out).toContain('<stdin>:1 turn/start params/mode: must be one of Chat, Agent; got "Sideways"');
  });

  it("validates bare values with --type, strictly unless --tolerant", async () => {
    const item = { type: "agentMessage", id: "itm_1", status: "completed", text: "done", rendered_by: "v2" };
    const path = file("item.json", JSON.stringify(item));
    const strict = await run({ files: [path], type: "TurnItem" });
    expect(strict.code).toBe(1);
    expect(strict.out).toContain("rendered_by: is not a known field");
    expect((await run({ files: [path], type: "TurnItem", tolerant: true })).code).toBe(0);
    const wrongTag = await run({ files: [file("tag.json", JSON.stringify({ ...item, type: "hologram" }))], type: "TurnItem" });
    expect(wrongTag.out).toContain("type: must be one of userMessage, agentMessage, reasoning");
  });

  it("prints findings as JSON with --json", async () => {
    const path = file("json.jsonl", lines(turnStart({ permission_profile: { mode: "admin" } })));
    const { code, out } = await run({ files: [path], json: true });
    expect(code).toBe(1);
    const report = JSON.parse(out);
    expect(report).toMatchObject({ valid: false, checked: 1 });
    expect(report.findings[0]).toEqual({
      file: path,
      line: 1,
      method: "turn/start",
      pointer: "params/permission_profile/mode",
      message: "must be one of full_access, auto_accept_edits, supervised",
      expected: ["full_access", "auto_accept_edits", "supervised"],
      received: "admin",
    });
  });

  it("exits 2 with a message on usage errors and unreadable input", async () => {
    const unknownType = await run({ files: [file("x.json", "{}")], type: "TurnStartParam" });
    expect(unknownType.code).toBe(2);
    expect(unknownType.err).toContain('unknown type "TurnStartParam". Did you mean TurnStartParams');
    const missing = await run({ files: [join(dir, "nope.json")] });
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("no such file");
    const garbage = await run({ files: [file("bad.jsonl", `${JSON.stringify(turnStart())}\n{not json\n`)] });
    expect(garbage.code).toBe(2);
    expect(garbage.err).toMatch(/bad\.jsonl:2: not valid JSON/);
  });

  it("reports a message nested 5,000 arrays deep as a finding naming its line and depth, and goes on with the others", async () => {
    // 10 KB of brackets in the turn's input: enough to exhaust the stack of any recursive walk.
    const deep = JSON.stringify(turnStart()).replace(/"input":\[.*?\]\}\]/, `"input":${"[".repeat(5000)}${"]".repeat(5000)}`);
    expect(deep).toContain("[".repeat(5000));
    const path = file(
      "deep.jsonl",
      `${JSON.stringify({ jsonrpc: "2.0", method: "turn/started", params: {} })}\n${deep}\n${JSON.stringify(turnStart({ turn_id: 5 }))}\n`,
    );
    const { code, out, err } = await run({ files: [path] });
    expect(err).toBe("");
    expect(code).toBe(1);
    expect(out).toMatch(new RegExp(`${path}:2 params/input(/0){254}: nests 5002 levels deep, more than the 256 levels`));
    expect(out).toMatch(new RegExp(`${path}:1 turn/started params/\\w+: is required`));
    expect(out).toContain(`${path}:3 turn/start params/turn_id: must be string; got 5`);
    expect(out).toContain("3 values checked: 3 invalid");
    const json = await run({ files: [path], json: true });
    const report = JSON.parse(json.out) as { findings: { line: number; message: string }[] };
    expect(report.findings.filter((f) => f.line === 2).map((f) => f.message)).toEqual([expect.stringContaining("nests 5002 levels deep")]);
  });

  it("works as a command: exit codes, no stack traces", () => {
    const ok = spawnSync("node", ["bin/turnspec.js", "validate", "examples/session.jsonl"], { encoding: "utf8" });
    expect(ok.status).toBe(0);
    const bad = spawnSync("node", ["bin/turnspec.js", "validate", "-"], { input: lines(turnStart({ turn_id: 5 })), encoding: "utf8" });
    expect(bad.status).toBe(1);
    expect(bad.stdout).toContain("<stdin>:1 turn/start params/turn_id: must be string; got 5");
    const usage = spawnSync("node", ["bin/turnspec.js", "validate", "--no-such-flag"], { encoding: "utf8" });
    expect(usage.status).toBe(2);
    expect(usage.stderr).not.toMatch(/\n\s+at /);
    expect(execFileSync("node", ["bin/turnspec.js", "--help"], { encoding: "utf8" })).toContain("generate");
  });

  it("is what the README's main command runs: npm start generates, validates the sample session and certifies the reference gateway", () => {
    const run = spawnSync("npm", ["start"], { encoding: "utf8" });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("15 values checked: all valid");
    expect(run.stdout).toContain("Certified Full (Full requested)");
  });
});
