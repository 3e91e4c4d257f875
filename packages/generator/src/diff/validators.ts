/**
 * The validators a counterexample is confirmed with: ajv compiled at run time from a
 * loaded schemas folder, from the same schemas and options as the generated validators
 * (`schemasFor` and `ajvOptions` of the validators emitter), in strict or tolerant mode.
 */
import Ajv2020 from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv";
import { ajvOptions, schemasFor, type ValidationMode } from "../emit/validators.js";
import type { Json, ProtocolModel } from "../model.js";
import { SchemaError, SchemaErrors } from "../schema-error.js";

export interface Check {
  readonly valid: boolean;
  /** The first error, as instance path and keyword, when the value is rejected. */
  readonly error?: string;
}

export class ModelValidators {
  private readonly compiled = new Map<ValidationMode, Ajv2020>();
  constructor(private readonly model: ProtocolModel) {}

  private ajv(mode: ValidationMode): Ajv2020 {
    let ajv = this.compiled.get(mode);
    if (!ajv) {
      ajv = new Ajv2020({ ...ajvOptions, allErrors: false, messages: true });
      try {
        for (const schema of schemasFor(this.model, mode)) ajv.addSchema(schema as object);
      } catch (error) {
        throw new SchemaErrors([new SchemaError("(schemas)", "", `ajv rejected a schema: ${(error as Error).message}`)]);
      }
      this.compiled.set(mode, ajv);
    }
    return ajv;
  }

  /** Validates a value as the type of the given file. */
  check(file: string, mode: ValidationMode, value: Json): Check {
    const type = this.model.byFile.get(file);
    if (!type) return { valid: false, error: `no type ${file}` };
    let validate: ValidateFunction;
    try {
      validate = this.ajv(mode).getSchema(type.id) as ValidateFunction;
    } catch (error) {
      if (error instanceof SchemaErrors) throw error;
      throw new SchemaErrors([new SchemaError(file, "", `ajv cannot compile it: ${(error as Error).message}`)]);
    }
    if (validate(value)) return { valid: true };
    const error = (validate.errors as ErrorObject[])[0]!;
    return {
      valid: false,
      error:
        `${error.instancePath || "(root)"}: ${error.keyword} ${error.message ?? ""} ${error.params ? JSON.stringify(error.params) : ""}`.trim(),
    };
  }
}
