/**
 * LSP's meta model (metaModel.json): requests and notifications with their message
 * direction (both ways included), params, results, partial results, error data and
 * registration options; structures (their `extends` and `mixins` as allOf), enumerations
 * (open ones, `supportsCustomValues`, as x-open), type aliases (LSPAny, LSPObject, LSPArray
 * and the rest, recursive ones included), and the error codes (the enumerations named
 * `…ErrorCodes`).
 *
 * Each meta-model type becomes JSON Schema: `base` types by their JSON type (integer and
 * uinteger with their 32-bit bounds, URIs as strings), `reference` as a reference, `array`,
 * `map` (an object of values, its keys by propertyNames), `and` as allOf, `or` as anyOf,
 * `tuple` as prefixItems, `literal` as an inline object, and string, integer and boolean
 * literals as const. Objects are left open (protocol.json's `objects: "open"`): LSP peers
 * ignore fields they do not know. A message whose params, result, partial result or error
 * data is not a reference gets a type named after the method (`TextDocumentHover` +
 * `Result`). What turnspec has no field for (registration options and method, since,
 * proposed, deprecation messages, the documentation past its first paragraph, the names
 * and documentation of enum values) is kept in x-… entries.
 */
import type { JsonObject } from "../model.js";
import { STANDARD_ERRORS } from "../load.js";
import {
  Names,
  pascalCase,
  reasonOf,
  refTo,
  Reporter,
  summaryOf,
  type ImportedError,
  type ImportedMessage,
  type ImportedProtocol,
  type ImportReport,
} from "./folder.js";
import { ImportError, protocolIdentity } from "./jsonschema.js";
import type { ImportMap } from "./map.js";

export interface LspOptions {
  readonly map: ImportMap;
  readonly sourceName: string;
}

interface MetaType {
  readonly kind: string;
  readonly name?: string;
  readonly items?: MetaType[];
  readonly element?: MetaType;
  readonly key?: MetaType;
  readonly value?: MetaType | string | number | boolean | { properties: MetaProperty[] };
}

interface MetaProperty {
  readonly name: string;
  readonly type: MetaType;
  readonly optional?: boolean;
  readonly documentation?: string;
  readonly since?: string;
  readonly proposed?: boolean;
  readonly deprecated?: string;
}

const INT32 = { minimum: -2147483648, maximum: 2147483647 };
const UINT32 = { minimum: 0, maximum: 2147483647 };

/** The annotations of a meta-model element: its documentation, and since, proposed and deprecated as x-… (deprecated also as JSON Schema's own). */
function notes(element: { documentation?: string; since?: string; proposed?: boolean; deprecated?: string }): JsonObject {
  return {
    ...(element.documentation ? { description: element.documentation } : {}),
    ...(element.since ? { "x-since": element.since } : {}),
    ...(element.proposed ? { "x-proposed": true } : {}),
    ...(element.deprecated !== undefined ? { deprecated: true, "x-deprecated": element.deprecated } : {}),
  };
}

export function importLsp(model: JsonObject, options: LspOptions): { protocol: ImportedProtocol; report: ImportReport } {
  const reporter = new Reporter();
  const names = new Names(reporter);
  const map = options.map;
  const metaData = (model.metaData ?? {}) as JsonObject;
  const identity = protocolIdentity({ version: metaData.version ?? null }, map, reporter, options.sourceName);
  const structures = (model.structures ?? []) as unknown as ({
    name: string;
    properties: MetaProperty[];
    extends?: MetaType[];
    mixins?: MetaType[];
  } & Parameters<typeof notes>[0])[];
  const enumerations = (model.enumerations ?? []) as unknown as ({
    name: string;
    type: MetaType;
    values: { name: string; value: string | number; documentation?: string }[];
    supportsCustomValues?: boolean;
  } & Parameters<typeof notes>[0])[];
  const aliases = (model.typeAliases ?? []) as unknown as ({ name: string; type: MetaType } & Parameters<typeof notes>[0])[];
  const known = new Set([...structures, ...enumerations, ...aliases].map((t) => t.name));
  // Names that are identifiers first, so that a name made from another (LSP's _InitializeParams) never takes theirs.
  const all = [...structures, ...enumerations, ...aliases].map((t) => t.name);
  for (const name of [...all.filter((n) => /^[A-Z][A-Za-z0-9]*$/.test(n)), ...all.filter((n) => !/^[A-Z][A-Za-z0-9]*$/.test(n))])
    names.source(name, `type:${name}`);
  const nameOf = (name: string): string => {
    if (!known.has(name)) throw new ImportError(`the meta model refers to the type ${name}, which it does not define`);
    return names.source(name, `type:${name}`);
  };

  /** A meta-model type as JSON Schema. */
  const schemaOf = (type: MetaType): JsonObject => {
    switch (type.kind) {
      case "base":
        switch (type.name) {
          case "string":
            return { type: "string" };
          case "integer":
            return { type: "integer", ...INT32 };
          case "uinteger":
            return { type: "integer", ...UINT32 };
          case "decimal":
            return { type: "number" };
          case "boolean":
            return { type: "boolean" };
          case "null":
            return { type: "null" };
          case "DocumentUri":
          case "URI":
            return { type: "string", "x-lsp-base": type.name };
          case "RegExp":
            return { type: "string", "x-lsp-base": type.name };
          default:
            throw new ImportError(`the meta model uses the base type ${type.name}, which turnspec does not know`);
        }
      case "reference":
        return refTo(nameOf(type.name!));
      case "array":
        return { type: "array", items: schemaOf(type.element!) };
      case "map": {
        const key = type.key!;
        const keys: JsonObject | undefined =
          key.kind === "base" && (key.name === "integer" || key.name === "uinteger")
            ? { pattern: key.name === "integer" ? "^-?[0-9]+$" : "^[0-9]+$" }
            : key.kind === "reference"
              ? refTo(nameOf(key.name!))
              : undefined;
        return { type: "object", additionalProperties: schemaOf(type.value as MetaType), ...(keys ? { propertyNames: keys } : {}) };
      }
      case "and":
        return { allOf: type.items!.map(schemaOf) };
      case "or": {
        const items = type.items!.map(schemaOf);
        return { anyOf: items };
      }
      case "tuple":
        return { type: "array", prefixItems: type.items!.map(schemaOf), items: false, minItems: type.items!.length };
      case "literal": {
        const properties = (type.value as { properties: MetaProperty[] }).properties;
        return objectOf(properties);
      }
      case "stringLiteral":
        return { type: "string", const: type.value as string };
      case "integerLiteral":
        return { type: "integer", const: type.value as number };
      case "booleanLiteral":
        return { type: "boolean", const: type.value as boolean };
      default:
        throw new ImportError(`the meta model uses a type of kind ${type.kind}, which turnspec does not know`);
    }
  };
  const objectOf = (properties: readonly MetaProperty[]): JsonObject => {
    const required = properties.filter((p) => !p.optional).map((p) => p.name);
    return {
      type: "object",
      properties: Object.fromEntries(properties.map((p) => [p.name, { ...schemaOf(p.type), ...notes(p) }])),
      ...(required.length ? { required } : {}),
    };
  };

  const types = new Map<string, JsonObject>();
  const described = (name: string, schema: JsonObject, element: Parameters<typeof notes>[0], fallback: string): JsonObject => {
    const note = notes(element);
    if (!note.description) reporter.made(name, "description: the meta model documents it not");
    return {
      description: (note.description as string | undefined) ?? fallback,
      ...Object.fromEntries(Object.entries(note).filter(([k]) => k !== "description")),
      ...schema,
    };
  };
  for (const s of structures) {
    const name = nameOf(s.name);
    const bases = [...(s.extends ?? []), ...(s.mixins ?? [])].map(schemaOf);
    const own = objectOf(s.properties);
    const schema = bases.length ? { allOf: bases, ...own } : own;
    types.set(name, described(name, schema, s, `The ${name} structure of LSP.`));
    if (s.mixins?.length) types.set(name, { ...types.get(name)!, "x-mixins": s.mixins.map((m) => nameOf(m.name!)) });
  }
  for (const e of enumerations) {
    const name = nameOf(e.name);
    const base = schemaOf(e.type);
    const schema: JsonObject = {
      ...base,
      enum: e.values.map((v) => v.value),
      ...(e.supportsCustomValues ? { "x-open": true } : {}),
      "x-enum-names": e.values.map((v) => v.name),
      ...(e.values.some((v) => v.documentation) ? { "x-enum-descriptions": e.values.map((v) => v.documentation ?? "") } : {}),
    };
    delete schema.minimum;
    delete schema.maximum;
    types.set(name, described(name, schema, e, `The ${name} values of LSP.`));
  }
  for (const a of aliases) {
    const name = nameOf(a.name);
    types.set(name, described(name, schemaOf(a.type), a, `The ${name} type of LSP.`));
  }

  /** Whether a value of a meta-model type may be a JSON array (through references to aliases). */
  const admitsArray = (type: MetaType, seen: Set<string>): boolean => {
    if (type.kind === "array" || type.kind === "tuple") return true;
    if (type.kind === "or" || type.kind === "and") return type.items!.some((t) => admitsArray(t, seen));
    if (type.kind === "reference" && !seen.has(type.name!)) {
      seen.add(type.name!);
      const alias = aliases.find((a) => a.name === type.name);
      return alias ? admitsArray(alias.type, seen) : false;
    }
    return false;
  };

  /** A message's params, result, partial result or error data: a reference, or a type named after the method. */
  const typeFor = (type: MetaType, method: string, role: string): string => {
    if (type.kind === "reference") return nameOf(type.name!);
    const name = names.made(
      method,
      role,
      `${role}:${method}`,
      `the ${role.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()} of ${method}, which the meta model gives inline (${type.kind})`,
    );
    types.set(name, { description: `The ${role.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()} of ${method}.`, ...schemaOf(type) });
    return name;
  };
  const DIRECTIONS: Record<string, ImportedMessage["direction"]> = {
    clientToServer: "client_to_server",
    serverToClient: "server_to_client",
    both: "both",
  };
  const messageOf = (r: JsonObject, request: boolean): ImportedMessage => {
    const method = r.method as string;
    const override = map.method(method);
    const direction = DIRECTIONS[r.messageDirection as string];
    if (!direction)
      throw new ImportError(
        `${method} has messageDirection ${JSON.stringify(r.messageDirection)}; the meta model's are clientToServer, serverToClient and both`,
      );
    const documentation = r.documentation as string | undefined;
    const summary = summaryOf(documentation, `The ${method} ${request ? "request" : "notification"}.`);
    if (!documentation) reporter.made(method, "summary: the meta model documents it not");
    const extensions: JsonObject = {};
    if (documentation && summary !== documentation.replace(/\s*\n\s*/g, " ").trim()) extensions["x-documentation"] = documentation;
    if (r.since) extensions["x-since"] = r.since as string;
    if (r.proposed) extensions["x-proposed"] = true;
    if (r.registrationMethod) extensions["x-registration-method"] = r.registrationMethod as string;
    if (r.registrationOptions)
      extensions["x-registration-options"] = typeFor(r.registrationOptions as unknown as MetaType, method, "RegistrationOptions");
    const params = r.params === undefined ? undefined : typeFor(r.params as unknown as MetaType, method, "Params");
    // Params that may be an array (LSPAny, as telemetry/event's) are an object or an array taken as it is: "either".
    const paramStructure =
      r.params !== undefined && admitsArray(r.params as unknown as MetaType, new Set()) ? ("either" as const) : undefined;
    if (Array.isArray(r.params)) throw new ImportError(`${method} has a list of params types; LSP 3.17's messages take one`);
    const base: ImportedMessage = {
      name: method,
      direction: override.direction ?? direction,
      summary,
      ...(params === undefined
        ? {}
        : {
            params,
            ...(override.params_optional !== undefined ? { paramsOptional: override.params_optional } : {}),
            ...((override.param_structure ?? paramStructure) ? { paramStructure: override.param_structure ?? paramStructure } : {}),
          }),
      extensions,
    };
    if (!request) return base;
    return {
      ...base,
      result: typeFor(r.result as unknown as MetaType, method, "Result"),
      ...(r.partialResult ? { partialResult: typeFor(r.partialResult as unknown as MetaType, method, "PartialResult") } : {}),
      ...(r.errorData ? { errorData: typeFor(r.errorData as unknown as MetaType, method, "ErrorData") } : {}),
      errors: override.errors ?? [],
    };
  };
  const methods = ((model.requests ?? []) as JsonObject[]).map((r) => messageOf(r, true));
  const notifications = ((model.notifications ?? []) as JsonObject[]).map((n) => messageOf(n, false));

  // The error codes: every value of the enumerations named …ErrorCodes, one error per code.
  const errors: ImportedError[] = [];
  for (const e of enumerations.filter((x) => /ErrorCodes$/.test(x.name))) {
    for (const v of e.values) {
      if (typeof v.value !== "number") continue;
      const standard = STANDARD_ERRORS.find((s) => s.code === v.value);
      const clash = errors.find((x) => x.code === v.value);
      if (clash) {
        reporter.notExpressible.push({
          subject: `${e.name}.${v.name}`,
          detail: `code ${v.value} is also ${clash.reason}; errors.json gives each code one reason, so the value is only named in ${e.name}'s x-enum-names`,
        });
        continue;
      }
      const reason = standard?.reason ?? reasonOf(v.name);
      if (!standard) reporter.made(`errors.json ${reason}`, `reason made from ${e.name}.${v.name}`);
      errors.push({
        code: v.value,
        reason,
        message: pascalCase(v.name).replace(/([a-z])([A-Z])/g, "$1 $2"),
        description: summaryOf(v.documentation, `${e.name}.${v.name}.`),
        anyMethod: true,
      });
    }
  }
  errors.push(...map.extraErrors());
  map.reportUnused(reporter);
  const protocol: ImportedProtocol = {
    ...identity,
    objects: "open",
    batches: map.file.batches ?? false,
    methods,
    notifications,
    errors,
    types,
  };
  return { protocol, report: reporter.finish("lsp", `LSP meta model ${String(metaData.version ?? "")}`.trim(), protocol) };
}
