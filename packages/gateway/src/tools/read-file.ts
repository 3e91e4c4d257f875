/**
 * `read_file`: returns a text file's content. There is no TurnItem kind for reading, so
 * its calls are shown as dynamic tool calls, the content as their `output`.
 */
import { resolve } from "node:path";
import { defineTool } from "./arguments.js";
import { openConfined, PathRefused } from "./confined-open.js";
import type { ToolResult } from "./tool.js";

/** Bytes read at most: a huge file would flood the model's context and the event log. */
export const READ_FILE_LIMIT_BYTES = 100 * 1024;

const TOOL_NAME = "read_file";

export const readFileTool = defineTool({
  spec: {
    name: TOOL_NAME,
    description: `Read a UTF-8 text file. Files over ${READ_FILE_LIMIT_BYTES} bytes are cut, and the result says so.`,
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["path"],
      properties: {
        path: { type: "string", minLength: 1, description: "File path; a relative path resolves against the thread's directory." },
      },
    },
  },
  itemType: "dynamicToolCall",

  describe() {
    return { tool_name: TOOL_NAME };
  },

  async run(args, ctx) {
    const path = resolve(ctx.cwd, args.path);
    const failed = (message: string): ToolResult => ({
      ok: false,
      content: message,
      item: { tool_name: TOOL_NAME, output: message, error: { message } },
    });
    let file;
    try {
      // Resolved once and opened without following a link swapped in since the check.
      file = (await openConfined(path, "read", ctx.files, ctx.ownFiles)).handle;
    } catch (error) {
      if (error instanceof PathRefused) return failed(`cannot read: ${error.message}`);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return failed(`no such file: ${path}`);
      if (code === "EACCES") return failed(`permission denied: ${path}`);
      return failed(`cannot read ${path}: ${(error as Error).message}`);
    }
    try {
      const info = await file.stat();
      if (info.isDirectory()) return failed(`${path} is a directory, not a file`);
      const buffer = Buffer.alloc(Math.min(info.size, READ_FILE_LIMIT_BYTES));
      const { bytesRead } = await file.read(buffer, 0, buffer.length, 0);
      const bytes = buffer.subarray(0, bytesRead);
      if (bytes.includes(0)) return failed(`${path} is a binary file (${info.size} bytes); read_file shows text files only`);
      let output = new TextDecoder().decode(bytes);
      if (info.size > bytesRead) {
        // The cut may fall inside a multi-byte character, which decodes as U+FFFD.
        output = `${output.replace(/\uFFFD$/, "")}\n[… truncated: showing the first ${bytesRead} of ${info.size} bytes]`;
      }
      return { ok: true, content: output, item: { tool_name: TOOL_NAME, output } };
    } finally {
      await file.close();
    }
  },
});
