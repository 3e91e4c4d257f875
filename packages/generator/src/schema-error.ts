/**
 * A mistake in the schemas folder. Local to the generator (never sent anywhere): the
 * message names the file and the JSON pointer of the offending node.
 */
export class SchemaError extends Error {
  readonly file: string;
  readonly pointer: string;

  constructor(file: string, pointer: string, problem: string) {
    super(`${problem}\n  at ${file}#${pointer}`);
    this.name = "SchemaError";
    this.file = file;
    this.pointer = pointer;
  }
}

/** Several schema mistakes found in one pass; each is listed. */
export class SchemaErrors extends Error {
  readonly errors: readonly SchemaError[];

  constructor(errors: readonly SchemaError[]) {
    super(`${errors.length} schema error${errors.length === 1 ? "" : "s"}:\n${errors.map((e) => `- ${e.message}`).join("\n")}`);
    this.name = "SchemaErrors";
    this.errors = errors;
  }
}
