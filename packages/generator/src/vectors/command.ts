/** `turnspec vectors`: writes (or, with --check, compares) the vectors of a schemas folder. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, relative } from "node:path";
import { loadSchemas } from "../load.js";
import { SchemaErrors } from "../schema-error.js";
import { isDirectory } from "../command.js";
import { buildVectors, vectorCounts, vectorsText } from "./index.js";

export interface VectorsCommand {
  readonly schemasDir: string;
  /** The file to write; undefined writes to standard output. */
  readonly out?: string;
  /** Write nothing; exit 1 when `out` differs from what the schemas give now. */
  readonly check: boolean;
}

type Sink = { write(text: string): unknown };

export function runVectors(command: VectorsCommand, out: Sink = process.stdout, err: Sink = process.stderr): number {
  if (!isDirectory(command.schemasDir)) {
    err.write(`turnspec vectors: no schemas folder at ${command.schemasDir}\n`);
    return 2;
  }
  if (command.check && command.out === undefined) {
    err.write("turnspec vectors: --check compares with the file of --out; name it\n");
    return 2;
  }
  let text: string;
  let summary: string;
  try {
    const vectors = buildVectors(loadSchemas(command.schemasDir));
    text = vectorsText(vectors);
    const n = vectorCounts(vectors);
    summary = `${n.types} type cases, ${n.hazards} hazards, ${n.messages} message cases, ${n.transcripts} transcripts`;
    if (vectors.hazardsWithoutPlace.length) summary += ` (no place in these schemas for: ${vectors.hazardsWithoutPlace.join("; ")})`;
  } catch (error) {
    if (error instanceof SchemaErrors) {
      err.write(`turnspec vectors: the schemas in ${command.schemasDir} have mistakes.\n${error.message}\n`);
      return 1;
    }
    throw error;
  }
  if (command.out === undefined) {
    out.write(text);
    return 0;
  }
  const name = relative(process.cwd(), command.out) || command.out;
  if (command.check) {
    if (existsSync(command.out) && readFileSync(command.out, "utf8") === text) {
      out.write(`${name} is up to date (${summary}).\n`);
      return 0;
    }
    err.write(
      `turnspec vectors --check: ${name} is ${existsSync(command.out) ? "stale" : "missing"}. Run "turnspec vectors --schemas ${relative(process.cwd(), command.schemasDir) || "."} --out ${name}".\n`,
    );
    return 1;
  }
  mkdirSync(dirname(command.out), { recursive: true });
  writeFileSync(command.out, text);
  out.write(`wrote ${name}: ${summary}\n`);
  return 0;
}
