/**
 * `turnspec init [DIR]`: the scaffolded folder generates cleanly (type-checked) through the
 * turnspec.config.json written beside it, its messages validate with --schemas, and a
 * folder that is not empty is refused with exit 2.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runGenerate } from "../../packages/generator/src/command.js";
import { runInit } from "../../packages/generator/src/init.js";
import { runValidate } from "../../packages/generator/src/validate/command.js";

const cwd = mkdtempSync(join(tmpdir(), "turnspec-init-"));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

const sink = () => {
  let text = "";
  return {
    write: (t: string) => (text += t),
    get text() {
      return text;
    },
  };
};

describe("turnspec init", () => {
  it("scaffolds a folder and a config that generate cleanly, and whose messages validate", async () => {
    const out = sink();
    expect(runInit({ dir: "proto", title: "notes protocol" }, out, sink(), cwd)).toBe(0);
    expect(readdirSync(join(cwd, "proto")).sort()).toEqual([
      "README.md",
      "errors.json",
      "note_add_params.json",
      "note_add_result.json",
      "note_added_notification.json",
      "protocol.json",
    ]);
    expect(out.text).toContain("created turnspec.config.json");
    const config = JSON.parse(readFileSync(join(cwd, "turnspec.config.json"), "utf8"));
    expect(config).toMatchObject({ schemas: "proto", out: "generated" });
    expect(readFileSync(join(cwd, "proto/README.md"), "utf8")).toContain("The five standard JSON-RPC errors");

    const err = sink();
    const code = await runGenerate({ configFile: join(cwd, "turnspec.config.json"), check: false, typecheck: true }, sink(), err);
    expect(err.text).toBe("");
    expect(code).toBe(0);
    expect(readFileSync(join(cwd, "generated/client.ts"), "utf8")).toContain("noteAdd(params: T.NoteAddParams");

    const transcript = join(cwd, "session.jsonl");
    writeFileSync(
      transcript,
      [
        '{"jsonrpc":"2.0","id":1,"method":"note/add","params":{"text":"buy milk"}}',
        '{"jsonrpc":"2.0","id":1,"result":{"id":"n1"}}',
        '{"jsonrpc":"2.0","method":"note/added","params":{"id":"n1","text":"buy milk"}}',
        '{"jsonrpc":"2.0","id":2,"method":"note/add","params":{"text":"x"}}',
        '{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"Note too long","data":{"reason":"note_too_long"}}}',
      ].join("\n"),
    );
    const report = sink();
    expect(
      await runValidate(
        { files: [transcript], schemas: join(cwd, "proto"), tolerant: false, json: false },
        { out: report, err: sink(), stdin: () => "" },
      ),
    ).toBe(0);
    expect(report.text).toBe("5 values checked: all valid\n");
  }, 60_000);

  it("refuses a folder that is not empty, and leaves an existing config alone", () => {
    const err = sink();
    expect(runInit({ dir: "proto", title: "again" }, sink(), err, cwd)).toBe(2);
    expect(err.text).toContain("is not empty");
    const before = readFileSync(join(cwd, "turnspec.config.json"), "utf8");
    const out = sink();
    expect(runInit({ dir: "second", title: "second" }, out, sink(), cwd)).toBe(0);
    expect(out.text).not.toContain("turnspec.config.json");
    expect(readFileSync(join(cwd, "turnspec.config.json"), "utf8")).toBe(before);
    expect(existsSync(join(cwd, "second/protocol.json"))).toBe(true);
  });
});
