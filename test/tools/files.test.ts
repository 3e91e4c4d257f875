/** read_file and write_file in a temporary directory: content, diffs, add vs modify, and failures as results. */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { READ_FILE_LIMIT_BYTES, readFileTool } from "../../packages/gateway/src/tools/read-file.js";
import { writeFileTool } from "../../packages/gateway/src/tools/write-file.js";
import { testContext } from "./context.js";

const root = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-files-")));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dir: string;
let n = 0;
beforeEach(() => {
  dir = join(root, `case-${n++}`);
  mkdirSync(dir);
});

describe("read_file", () => {
  it("shows as a dynamic tool call named read_file", () => {
    expect(readFileTool.spec.name).toBe("read_file");
    expect(readFileTool.itemType).toBe("dynamicToolCall");
    expect(readFileTool.describe({ path: "a.txt" }, { cwd: dir })).toEqual({ tool_name: "read_file" });
  });

  it("reads a file by a path relative to the thread's directory", async () => {
    mkdirSync(join(dir, "src"));
    writeFileSync(join(dir, "src", "a.txt"), "línea 1\nline 2\n");
    const result = await readFileTool.run({ path: "src/a.txt" }, testContext(dir));
    expect(result).toEqual({ ok: true, content: "línea 1\nline 2\n", item: { tool_name: "read_file", output: "línea 1\nline 2\n" } });
  });

  it("reports a missing file as a result that is not ok", async () => {
    const result = await readFileTool.run({ path: "missing.txt" }, testContext(dir));
    const message = `no such file: ${join(dir, "missing.txt")}`;
    expect(result).toEqual({ ok: false, content: message, item: { tool_name: "read_file", output: message, error: { message } } });
  });

  it("refuses a directory and a binary file", async () => {
    expect((await readFileTool.run({ path: "." }, testContext(dir))).content).toBe(`${dir} is a directory, not a file`);
    writeFileSync(join(dir, "blob.bin"), Buffer.from([0x89, 0x50, 0x00, 0x01]));
    const binary = await readFileTool.run({ path: "blob.bin" }, testContext(dir));
    expect(binary).toMatchObject({
      ok: false,
      content: `${join(dir, "blob.bin")} is a binary file (4 bytes); read_file shows text files only`,
    });
  });

  it("cuts a large file and says so", async () => {
    const size = READ_FILE_LIMIT_BYTES + 5000;
    writeFileSync(join(dir, "big.txt"), "x".repeat(size));
    const result = await readFileTool.run({ path: "big.txt" }, testContext(dir));
    expect(result.ok).toBe(true);
    expect(result.content).toBe(
      `${"x".repeat(READ_FILE_LIMIT_BYTES)}\n[… truncated: showing the first ${READ_FILE_LIMIT_BYTES} of ${size} bytes]`,
    );
  });
});

describe("write_file", () => {
  it("shows as a fileChange whose kind is known before it runs", () => {
    writeFileSync(join(dir, "old.txt"), "x");
    expect(writeFileTool.itemType).toBe("fileChange");
    expect(writeFileTool.describe({ path: "old.txt", content: "" }, { cwd: dir })).toEqual({
      path: join(dir, "old.txt"),
      change_kind: "modify",
    });
    expect(writeFileTool.describe({ path: "new.txt", content: "" }, { cwd: dir })).toEqual({
      path: join(dir, "new.txt"),
      change_kind: "add",
    });
  });

  it("creates a file, with missing parent directories, and diffs it against nothing", async () => {
    const ctx = testContext(dir);
    const result = await writeFileTool.run({ path: "src/new.txt", content: "alpha\nbeta\n" }, ctx);
    const path = join(dir, "src", "new.txt");
    expect(readFileSync(path, "utf8")).toBe("alpha\nbeta\n");
    expect(result).toEqual({
      ok: true,
      content: `created ${path} (2 lines)`,
      item: {
        path,
        change_kind: "add",
        diff: "--- /dev/null\n+++ b/src/new.txt\n@@ -0,0 +1,2 @@\n+alpha\n+beta\n",
        output: `created ${path} (2 lines)`,
      },
    });
    expect(ctx.emitted).toEqual([{ stream: "file_change", delta: `created ${path} (2 lines)` }]);
  });

  it("modifies a file and returns a unified diff with context, as diff -u makes it", async () => {
    const before = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n";
    const after = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\nELEVEN\ntwelve\nthirteen";
    writeFileSync(join(dir, "n.txt"), before);
    const result = await writeFileTool.run({ path: "n.txt", content: after }, testContext(dir));
    expect(readFileSync(join(dir, "n.txt"), "utf8")).toBe(after);
    expect(result.item).toMatchObject({
      path: join(dir, "n.txt"),
      change_kind: "modify",
      output: `modified ${join(dir, "n.txt")}: +3 -2 lines`,
    });
    // The hunks are what GNU `diff -u` prints for the same two files.
    expect(result.item.diff).toBe(
      [
        "--- a/n.txt",
        "+++ b/n.txt",
        "@@ -1,5 +1,5 @@",
        " one",
        "-two",
        "+TWO",
        " three",
        " four",
        " five",
        "@@ -8,5 +8,6 @@",
        " eight",
        " nine",
        " ten",
        "-eleven",
        "+ELEVEN",
        " twelve",
        "+thirteen",
        "\\ No newline at end of file",
        "",
      ].join("\n"),
    );
  });

  it("labels a file outside the thread's directory by its absolute path", async () => {
    const outside = join(root, `outside-${n}.txt`);
    const result = await writeFileTool.run({ path: outside, content: "x\n" }, testContext(dir));
    expect(result.item.diff).toBe(`--- /dev/null\n+++ b/${outside}\n@@ -0,0 +1,1 @@\n+x\n`);
  });

  it("reports an unchanged file with an empty diff", async () => {
    writeFileSync(join(dir, "same.txt"), "same\n");
    const result = await writeFileTool.run({ path: "same.txt", content: "same\n" }, testContext(dir));
    expect(result.item).toMatchObject({
      change_kind: "modify",
      diff: "",
      output: `${join(dir, "same.txt")} already had this content: nothing changed`,
    });
  });

  it("reports writing over a directory as a result that is not ok", async () => {
    mkdirSync(join(dir, "d"));
    const result = await writeFileTool.run({ path: "d", content: "x" }, testContext(dir));
    expect(result).toMatchObject({ ok: false, content: `cannot write ${join(dir, "d")}: it is a directory` });
    expect(result.item).toMatchObject({ path: join(dir, "d"), error: { message: result.content } });
  });
});
