/**
 * Reading a JSON file a person wrote (a configuration file): a file that cannot be read is
 * reported with its path and why, and one that is not JSON with the line and column of the
 * syntax error, so it can be fixed without a hunt. Node only (it reads the file system).
 */
import { readFileSync } from "node:fs";

/** A JSON file that could not be read or parsed; the message names the file and where. */
export class JsonFileError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
    this.name = "JsonFileError";
  }
}

/** The parsed content of `file`; `what` names it in errors ("the config file"). Throws JsonFileError. */
export function readJsonFile(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new JsonFileError(
      file,
      `cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new JsonFileError(file, `${what} ${file} is not valid JSON: ${describeJsonSyntaxError(text, error as Error)}`);
  }
}

/** Line and column (both from 1) of a character offset in `text`. */
function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}

/** The syntax error of JSON text as "line L, column C: what", from the parser's own message. */
export function describeJsonSyntaxError(text: string, error: Error): string {
  const message = error.message.replace(/^JSON\.parse: /, "");
  const position = /at position (\d+)/.exec(message);
  const offset = position ? Number(position[1]) : /end of JSON input/.test(message) ? text.length : undefined;
  const what = message.replace(/ in JSON at position \d+.*$/, "").replace(/ \(line \d+ column \d+\)$/, "");
  if (offset === undefined) return what;
  const { line, column } = lineAndColumn(text, offset);
  return `line ${line}, column ${column}: ${what}`;
}
