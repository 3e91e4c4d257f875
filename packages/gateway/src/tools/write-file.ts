/**
 * `write_file`: creates or replaces a file with the given content, and reports the change
 * as a unified diff.
 */
import { existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import { FILE_HEADERS_ONLY, formatPatch, structuredPatch } from "diff";
import { defineTool } from "./arguments.js";
import { openConfined, PathRefused } from "./confined-open.js";
import type { ToolResult } from "./tool.js";

/** Lines of context around each change in the diff, as `diff -u` and git use. */
const DIFF_CONTEXT = 3;
/** Past this, diffing is given up: a diff of two huge, very different files costs more than it tells. */
const DIFF_TIMEOUT_MS = 2_000;

export const writeFileTool = defineTool({
  spec: {
    name: "write_file",
    description: "Write a UTF-8 text file, replacing it if it exists and creating missing parent directories.",
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["path", "content"],
      properties: {
        path: { type: "string", minLength: 1, description: "File path; a relative path resolves against the thread's directory." },
        content: { type: "string", description: "The file's complete new content." },
      },
    },
  },
  itemType: "fileChange",

  // change_kind is a required item field, so it is known before the write: it can only be
  // wrong if something else creates or deletes the file in between, and run() reports
  // what it actually found.
  describe(args, ctx) {
    const path = resolve(ctx.cwd, args.path);
    return { path, change_kind: existsSync(path) ? "modify" : "add" };
  },

  async run(args, ctx) {
    const { path: pathArg, content } = args;
    const path = resolve(ctx.cwd, pathArg);
    const seen = await stat(path).catch(() => undefined);
    const failed = (message: string, kind: "add" | "modify" = seen ? "modify" : "add"): ToolResult => ({
      ok: false,
      content: message,
      item: { path, change_kind: kind, output: message, error: { message } },
    });
    if (seen?.isDirectory()) return failed(`cannot write ${path}: it is a directory`);

    // Resolved once and opened without following a link swapped in since the check; the
    // content is read and replaced through that one open file.
    let existing: boolean;
    let before = "";
    try {
      const file = await openConfined(path, "write", ctx.files, ctx.ownFiles);
      existing = file.existed;
      try {
        if (existing) before = await file.handle.readFile("utf8");
        await file.handle.truncate(0);
        await file.handle.write(content, 0, "utf8");
      } finally {
        await file.handle.close();
      }
    } catch (error) {
      if (error instanceof PathRefused) return failed(`cannot write: ${error.message}`);
      return failed(`cannot write ${path}: ${(error as Error).message}`);
    }
    const changeKind = existing ? "modify" : "add";

    const change = unifiedDiff(label(path, ctx.cwd), existing ? before : undefined, content);
    let output: string;
    if (!existing) output = `created ${path} (${lineCount(content)} lines)`;
    else if (before === content) output = `${path} already had this content: nothing changed`;
    else output = `modified ${path}` + (change ? `: +${change.added} -${change.removed} lines` : "");
    if (change === undefined && before !== content) output += " (no diff: the files are binary or too large to compare)";
    ctx.emit("file_change", output);
    return { ok: true, content: output, item: { path, change_kind: changeKind, ...(change ? { diff: change.text } : {}), output } };
  },
});

/** Where the diff headers say the file is: relative to the thread's directory when inside it, like git. */
function label(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel === "" || rel.startsWith("..") || isAbsolute(rel) ? path : rel;
}

/**
 * The unified diff from `before` (undefined: the file did not exist) to `after`, or
 * undefined when no meaningful diff can be made (binary content, or too slow to compute).
 * Unchanged content gives an empty diff.
 */
function unifiedDiff(
  name: string,
  before: string | undefined,
  after: string,
): { text: string; added: number; removed: number } | undefined {
  if ((before ?? "").includes("\0") || after.includes("\0")) return undefined;
  const oldName = before === undefined ? "/dev/null" : `a/${name}`;
  const patch = structuredPatch(oldName, `b/${name}`, before ?? "", after, undefined, undefined, {
    context: DIFF_CONTEXT,
    timeout: DIFF_TIMEOUT_MS,
  });
  if (!patch) return undefined;
  if (patch.hunks.length === 0) return { text: "", added: 0, removed: 0 };
  const lines = patch.hunks.flatMap((h) => h.lines);
  return {
    text: formatPatch(patch, FILE_HEADERS_ONLY),
    added: lines.filter((l) => l.startsWith("+")).length,
    removed: lines.filter((l) => l.startsWith("-")).length,
  };
}

function lineCount(text: string): number {
  if (text === "") return 0;
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}
