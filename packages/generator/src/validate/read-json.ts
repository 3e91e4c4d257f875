/**
 * Reads the inputs `turnspec validate` accepts: one JSON value, an array of values, or
 * JSON lines (a captured transcript), keeping the line each value starts on.
 */

export interface LocatedValue {
  readonly line: number;
  readonly value: unknown;
}

export type ReadResult = { ok: true; values: LocatedValue[] } | { ok: false; line: number; message: string };

/** Line (1-based) of each top-level element of a JSON array text, in order. */
function arrayElementLines(text: string): number[] {
  const lines: number[] = [];
  let line = 1;
  let depth = 0;
  let inString = false;
  let expectingValue = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\n") line++;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === " " || c === "\t" || c === "\r" || c === "\n") continue;
    if (depth === 1 && expectingValue && c !== "]") {
      lines.push(line);
      expectingValue = false;
    }
    if (c === '"') inString = true;
    else if (c === "[" || c === "{") {
      depth++;
      if (depth === 1) expectingValue = true;
    } else if (c === "]" || c === "}") depth--;
    else if (c === "," && depth === 1) expectingValue = true;
  }
  return lines;
}

export function readJsonValues(text: string): ReadResult {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: false, line: 1, message: "the input is empty" };
  try {
    const whole = JSON.parse(text) as unknown;
    const firstLine = text.slice(0, text.indexOf(trimmed[0]!)).split("\n").length;
    if (Array.isArray(whole)) {
      const lines = arrayElementLines(text);
      return { ok: true, values: whole.map((value, i) => ({ line: lines[i] ?? firstLine, value })) };
    }
    return { ok: true, values: [{ line: firstLine, value: whole }] };
  } catch {
    // Not one JSON document: read it as JSON lines.
  }
  const values: LocatedValue[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "") continue;
    try {
      values.push({ line: i + 1, value: JSON.parse(line) as unknown });
    } catch (error) {
      return { ok: false, line: i + 1, message: `not valid JSON (neither one JSON document nor JSON lines): ${(error as Error).message}` };
    }
  }
  return { ok: true, values };
}
