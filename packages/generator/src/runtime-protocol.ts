/**
 * A loaded schemas folder as a `ProtocolView` with validators compiled at run time, for
 * checking the messages of any protocol (`turnspec validate --schemas DIR`) without
 * generating code first. The validators are compiled from the same schemas, with the same
 * ajv options and strict/tolerant readings, as the precompiled ones; each type is compiled
 * the first time it is used.
 */
import { createOrderingEngine, type OrderingRule } from "@turnspec/rpc";
import type { ProtocolView, ValidationMode } from "@turnspec/rpc";
import { runValidator, type RawValidator } from "@turnspec/rpc";
import { checkMetaSchema, createAjv, schemasFor, type SchemaCompiler } from "./emit/validators.js";
import type { ParamsEntry } from "@turnspec/rpc";
import { namedParams } from "./compose.js";
import type { MethodModel, NotificationModel, ProtocolModel } from "./model.js";

export function compileProtocol(model: ProtocolModel): ProtocolView {
  const ids = new Map(model.types.map((t) => [t.title, t.id]));
  const compilers = new Map<"strict" | "tolerant" | "report", SchemaCompiler>();
  const compiler = (set: "strict" | "tolerant" | "report"): SchemaCompiler => {
    let ajv = compilers.get(set);
    if (!ajv) {
      checkMetaSchema(model);
      const schemas = schemasFor(model, set === "tolerant" ? "tolerant" : "strict");
      ajv = createAjv(schemas, { allErrors: set === "report" });
      for (const schema of schemas) ajv.addSchema(schema as object);
      compilers.set(set, ajv);
    }
    return ajv;
  };
  const validator = (set: "strict" | "tolerant" | "report", type: string): RawValidator => {
    const id = ids.get(type);
    const compiled = id === undefined ? undefined : compiler(set).getSchema(id);
    if (!compiled) throw new Error(`"${type}" is not a type of ${model.title}`);
    return compiled as unknown as RawValidator;
  };
  const rules = model.ordering.map((r) => r.rule) as unknown as OrderingRule[];
  const facts = (m: MethodModel | NotificationModel): ParamsEntry => {
    const type = m.params === undefined ? undefined : model.types.find((t) => t.title === m.params)!;
    return {
      ...(m.params === undefined ? {} : { params: m.params }),
      paramsOptional: m.paramsOptional,
      paramStructure: m.paramStructure,
      ...(m.paramStructure === "either" && type && namedParams(type.schema, type.file, model)
        ? { paramNames: namedParams(type.schema, type.file, model)! }
        : {}),
    };
  };
  return {
    title: model.title,
    batches: model.batches,
    methods: Object.fromEntries(
      model.methods.map((m) => [
        m.name,
        {
          direction: m.direction,
          ...facts(m),
          result: m.result,
          errors: m.errors,
          ...(m.errorData === undefined ? {} : { errorData: m.errorData }),
        },
      ]),
    ),
    notifications: Object.fromEntries(model.notifications.map((n) => [n.name, { direction: n.direction, ...facts(n) }])),
    errors: Object.fromEntries(
      model.errors.map((e) => [e.reason, { code: e.code, anyMethod: e.anyMethod, ...(e.data === undefined ? {} : { data: e.data }) }]),
    ),
    typeNames: model.types.map((t) => t.title),
    validate: (type: string, value: unknown, mode: ValidationMode) =>
      runValidator(validator(mode, type), value, validator("report", type), mode),
    createOrderingChecker: () => createOrderingEngine(rules),
  };
}
