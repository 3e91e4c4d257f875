/**
 * `turnspec validate --schemas DIR` for a protocol other than the built-in one: the kv
 * fixture (test/fixtures/mini-protocol/schemas) and the MCP slice, with validators compiled
 * at run time. Messages, responses matched to their requests, error codes, --type, ordering
 * rules, and exit 2 for a folder that is missing or has mistakes.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runValidate, type ValidateCommand } from "../../packages/generator/src/validate/command.js";
import { builtInProtocol } from "../../packages/turnspec/src/built-in.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const kv = join(root, "test/fixtures/mini-protocol/schemas");
const mcp = join(root, "test/fixtures/mcp/schemas");
const bothWay = join(root, "test/fixtures/constructs/both-way/schemas");
const dir = mkdtempSync(join(tmpdir(), "turnspec-validate-schemas-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, ...values: unknown[]): string {
  const path = join(dir, name);
  writeFileSync(path, values.map((v) => JSON.stringify(v)).join("\n") + "\n");
  return path;
}

async function run(command: Partial<ValidateCommand>) {
  let out = "";
  let err = "";
  const code = await runValidate(
    { files: [], tolerant: false, json: false, builtIn: builtInProtocol, ...command },
    { out: { write: (t: string) => (out += t) }, err: { write: (t: string) => (err += t) }, stdin: () => "" },
  );
  return { code, out, err };
}

const text = (t: string) => ({ kind: "text", text: t });
const changed = (version: number) => ({
  jsonrpc: "2.0",
  method: "kv/changed",
  params: { watch_id: "w1", key: "a", version, value: text("x") },
});

describe("turnspec validate --schemas DIR", () => {
  it("accepts a valid transcript of another protocol", async () => {
    const path = file(
      "kv-ok.jsonl",
      { jsonrpc: "2.0", id: 1, method: "kv/get", params: { key: "a" } },
      { jsonrpc: "2.0", id: 1, result: { key: "a", value: text("x"), version: 1, expires_at: null } },
      changed(1),
      changed(2),
    );
    const { code, out } = await run({ files: [path], schemas: kv });
    expect(out).toBe("4 values checked: all valid\n");
    expect(code).toBe(0);
  });

  it("reports params, results, error codes and ordering rules of that protocol", async () => {
    const path = file(
      "kv-bad.jsonl",
      { jsonrpc: "2.0", id: 2, method: "kv/put", params: { key: "a", value: { kind: "nope" } } },
      { jsonrpc: "2.0", id: 2, error: { code: -32001, message: "x", data: { reason: "key_not_found" } } },
      { jsonrpc: "2.0", id: 3, method: "todo/add", params: {} },
      changed(1),
      changed(3),
    );
    const { code, out } = await run({ files: [path], schemas: kv });
    expect(code).toBe(1);
    expect(out).toContain(`${path}:1 kv/put params/value/kind: must be one of text, counter, blob; got "nope"`);
    expect(out).toContain(`${path}:2 kv/put error/code: does not match the registered code -32010 of reason "key_not_found"; got -32001`);
    expect(out).toContain(`${path}:3 todo/add method: is not a method of the protocol`);
    expect(out).toMatch(new RegExp(`${path}:5 .*breaks ordering rule KV-ORDER-VERSION`));
  });

  it("validates bare values with --type against that protocol's types, with suggestions", async () => {
    const good = await run({ files: [file("v.json", text("x"))], schemas: kv, type: "KvValue" });
    expect(good.code).toBe(0);
    const bad = await run({ files: [file("w.json", { kind: "counter", count: "1" })], schemas: kv, type: "KvValue" });
    expect(bad.code).toBe(1);
    const unknown = await run({ files: [file("u.json", {})], schemas: kv, type: "KvValu" });
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('unknown type "KvValu". Did you mean KvValue');
  });

  it("checks MCP messages from the MCP slice, tolerant of fields added since", async () => {
    const path = file(
      "mcp.jsonl",
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { message: "hi" } } },
      { jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "Echo: hi" }], extra: true } },
      { jsonrpc: "2.0", id: 0, method: "roots/list" },
      { jsonrpc: "2.0", id: 0, result: { roots: [{ uri: "file:///a" }] } },
    );
    expect((await run({ files: [path], schemas: mcp, tolerant: true })).code).toBe(0);
    const strict = await run({ files: [path], schemas: mcp });
    expect(strict.code).toBe(1);
    expect(strict.out).toContain(`${path}:2 tools/call result/extra`);
  });

  it("reads a transcript that records senders, and refuses a message sent the wrong way and a response to an id the other side never sent", async () => {
    const from = (side: "client" | "server", message: unknown) => ({ from: side, message });
    const good = file(
      "recorded.jsonl",
      from("client", { jsonrpc: "2.0", id: 0, method: "ping" }),
      from("server", { jsonrpc: "2.0", id: 0, method: "ping" }),
      from("client", { jsonrpc: "2.0", id: 0, result: {} }),
      from("server", { jsonrpc: "2.0", id: 0, result: {} }),
    );
    const ok = await run({ files: [good], schemas: bothWay });
    expect(ok.out).toBe("4 values checked: all valid\n");
    expect(ok.code).toBe(0);
    const bad = file(
      "crossed.jsonl",
      from("server", { jsonrpc: "2.0", id: 3, method: "work/start", params: { job: "j" } }),
      from("client", { jsonrpc: "2.0", id: 0, method: "ping" }),
      from("client", { jsonrpc: "2.0", id: 0, result: {} }),
    );
    const refused = await run({ files: [bad], schemas: bothWay });
    expect(refused.code).toBe(1);
    expect(refused.out).toContain(
      `${bad}:1 work/start method: is a method only the client sends (client_to_server); here the server sent it; got "work/start"`,
    );
    expect(refused.out).toContain(
      `${bad}:3 id: answers no request the server sent (the client's request with this id is waiting, and the client does not answer its own requests); got 0`,
    );
  });

  it("says when it cannot tell who sent a frame of a transcript of bare messages", async () => {
    const plain = file("plain.jsonl", { jsonrpc: "2.0", id: 0, method: "ping" }, { jsonrpc: "2.0", id: 0, result: {} });
    const result = await run({ files: [plain], schemas: bothWay });
    expect(result.out).toContain(
      `${plain}:1 note: cannot tell who sent this frame: ping may be sent by either side; record the sender ({"from": "client" | "server", "message": …})`,
    );
    expect(result.out).toContain(`${plain}:2 note: cannot tell who sent this frame: both sides have a request with id 0 waiting`);
    expect(result.out.trim().split("\n").at(-1)).toBe("2 values checked: all valid");
    expect(result.code).toBe(0);
    const json = JSON.parse((await run({ files: [plain], schemas: bothWay, json: true })).out) as { notes: unknown[] };
    expect(json.notes).toHaveLength(2);
  });

  it("exits 2 for a missing schemas folder and for one with mistakes", async () => {
    const input = file("any.jsonl", { jsonrpc: "2.0", method: "x" });
    const missing = await run({ files: [input], schemas: join(dir, "no-such-folder") });
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("no schemas folder at");
    const broken = join(dir, "broken");
    cpSync(kv, broken, { recursive: true });
    writeFileSync(join(broken, "kv_value_text.json"), '{\n  "title": \n');
    const mistaken = await run({ files: [input], schemas: broken });
    expect(mistaken.code).toBe(2);
    expect(mistaken.err).toContain("kv_value_text.json");
    expect(mistaken.err).toContain("line 3, column 1");
  });
});
