/**
 * A testee with a known bug, for the harness's own test: the protocol's validators compiled
 * at run time with string lengths counted in UTF-16 code units (ajv's `unicode: false`), as
 * the TypeScript output did before the contract. Everything else is the real testee.
 */
import Ajv2020 from "ajv/dist/2020.js";
import { compileProtocol } from "../../../packages/generator/src/runtime-protocol.js";
import { ajvOptions, schemasFor } from "../../../packages/generator/src/emit/validators.js";
import { loadSchemas } from "../../../packages/generator/src/load.js";
import { runValidator, type ProtocolView, type RawValidator } from "@turnspec/rpc";
import { serveTestee } from "@turnspec/rpc/testee";

const model = loadSchemas(process.argv[2]!);
const compiled = (mode: "strict" | "tolerant", allErrors: boolean) => {
  const ajv = new Ajv2020({ ...ajvOptions, unicode: false, allErrors, logger: false });
  for (const schema of schemasFor(model, mode)) ajv.addSchema(schema as object);
  return (title: string) => ajv.getSchema(model.types.find((t) => t.title === title)!.id) as unknown as RawValidator;
};
const fast = { strict: compiled("strict", false), tolerant: compiled("tolerant", false) };
const report = compiled("strict", true);
const view: ProtocolView = { ...compileProtocol(model), validate: (type, value, mode) => runValidator(fast[mode](type), value, report(type), mode) };
await serveTestee(view);
