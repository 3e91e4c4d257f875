/**
 * What every importer builds: a protocol in turnspec's format (protocol.json, errors.json
 * and one file per named type), written the same way byte for byte from the same source,
 * and the report of the import: the names and texts the importer had to make up (each by
 * the one rule of `madeUpName`), the source's envelope types it dropped, and anything the
 * source says that the folder cannot.
 */
import type { Json, JsonObject } from "../model.js";
import { isObject, mapSchema } from "../walk.js";

export type ImportDirection = "client_to_server" | "server_to_client" | "both";

export interface ImportedMessage {
  readonly name: string;
  readonly direction: ImportDirection;
  readonly summary: string;
  /** The params' type title; undefined when the message takes no params. */
  readonly params?: string;
  readonly paramsOptional?: boolean;
  readonly paramStructure?: "by-name" | "by-position" | "either";
  /** Methods only. */
  readonly result?: string;
  readonly partialResult?: string;
  readonly errorData?: string;
  readonly errors?: readonly string[];
  /** x-… facts of the source about the message. */
  readonly extensions?: JsonObject;
}

export interface ImportedError {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  readonly description: string;
  readonly data?: string;
  /** Any request may get it (the source ties it to no method). */
  readonly anyMethod?: boolean;
}

export interface ImportedProtocol {
  readonly title: string;
  readonly version: string;
  readonly description: string;
  readonly schemaBaseUri: string;
  readonly objects: "closed" | "open";
  readonly batches: boolean;
  readonly methods: readonly ImportedMessage[];
  readonly notifications: readonly ImportedMessage[];
  readonly errors: readonly ImportedError[];
  /** Every named type by title, its schema referring to others as `{"$ref": "<file of the title>"}` (see `refTo`). */
  readonly types: ReadonlyMap<string, JsonObject>;
}

/** One entry of the report. */
export interface ReportEntry {
  /** What it is about: a type, a method, an error, a field. */
  readonly subject: string;
  readonly detail: string;
}

export interface ImportReport {
  readonly format: "jsonschema" | "openrpc" | "lsp";
  /** The conventions the source was read by (MCP, ACP, OpenRPC, LSP meta model). */
  readonly conventions: string;
  readonly counts: { readonly methods: number; readonly notifications: number; readonly types: number; readonly errors: number };
  /** Names and texts the importer made up, each with the rule it followed. */
  readonly madeUp: readonly ReportEntry[];
  /** Types of the source left out, with why (JSON-RPC envelopes, message wrappers). */
  readonly dropped: readonly ReportEntry[];
  /** What the source says that the folder cannot; empty for the sources turnspec knows. */
  readonly notExpressible: readonly ReportEntry[];
  /** Entries of the map file the source did not need (a method it does not have): said, not silently ignored. */
  readonly unusedMap: readonly ReportEntry[];
}

/** A report being filled in by an importer. */
export class Reporter {
  readonly madeUp: ReportEntry[] = [];
  readonly dropped: ReportEntry[] = [];
  readonly notExpressible: ReportEntry[] = [];
  readonly unusedMap: ReportEntry[] = [];

  made(subject: string, detail: string): void {
    this.madeUp.push({ subject, detail });
  }

  finish(format: ImportReport["format"], conventions: string, protocol: ImportedProtocol): ImportReport {
    const byText = (a: ReportEntry, b: ReportEntry) =>
      a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : a.detail < b.detail ? -1 : a.detail > b.detail ? 1 : 0;
    return {
      format,
      conventions,
      counts: {
        methods: protocol.methods.length,
        notifications: protocol.notifications.length,
        types: protocol.types.size,
        errors: protocol.errors.length,
      },
      madeUp: [...this.madeUp].sort(byText),
      dropped: [...this.dropped].sort(byText),
      notExpressible: [...this.notExpressible].sort(byText),
      unusedMap: [...this.unusedMap].sort(byText),
    };
  }
}

const IDENTIFIER = /^[A-Z][A-Za-z0-9]*$/;

/** `turn_start` / `tools/call` / `textDocument/didOpen` / `$/cancelRequest` → `TurnStart` / `ToolsCall` / `TextDocumentDidOpen` / `CancelRequest`. */
export function pascalCase(text: string): string {
  return text
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("");
}

/** `CallToolResult` → `call_tool_result`; acronyms kept together (`JSONRPCError` → `jsonrpc_error`). */
export function snakeCase(title: string): string {
  return title
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();
}

/** `URLElicitationRequired` → `url_elicitation_required`, a reason of errors.json. */
export const reasonOf = (name: string): string => snakeCase(pascalCase(name)).replace(/^[^a-z]+/, "");

/** The file a title lives in. */
export const fileOf = (title: string): string => `${snakeCase(title)}.json`;

/** A reference to the named type `title`, as a type file writes it. */
export const refTo = (title: string): JsonObject => ({ $ref: fileOf(title) });

/**
 * Names for the types of an import. A source name that is a PascalCase identifier is kept;
 * any other is made one (its letters and digits, each word capitalised); a name two things
 * would have (or two files would) gets the smallest number from 2 that makes it unique.
 * Every name changed or made up is reported with its rule.
 */
export class Names {
  private readonly taken = new Map<string, string>();
  private readonly files = new Set<string>();
  constructor(private readonly reporter: Reporter) {}

  /** Claims the source's own name of a thing (`key` says which), making it a PascalCase identifier if it is not one. */
  source(name: string, key: string): string {
    const known = this.taken.get(key);
    if (known) return known;
    const ident = IDENTIFIER.test(name) ? name : pascalCase(name);
    const unique = this.unique(ident || "Unnamed");
    if (unique !== name)
      this.reporter.made(
        unique,
        `named after the source's "${name}", which is not a PascalCase name${unique !== ident ? ` (and ${ident} is taken)` : ""}`,
      );
    this.taken.set(key, unique);
    return unique;
  }

  /**
   * A name the source does not give: the name of what holds the schema followed by its
   * role (`CallToolRequest` + `Params`, `ToolsCall` + `Result`), reported with `why`.
   */
  made(owner: string, role: string, key: string, why: string): string {
    const known = this.taken.get(key);
    if (known) return known;
    const name = this.unique(`${pascalCase(owner)}${role}`);
    this.reporter.made(name, why);
    this.taken.set(key, name);
    return name;
  }

  /** The name already given to `key`, if any. */
  get(key: string): string | undefined {
    return this.taken.get(key);
  }

  private unique(name: string): string {
    let candidate = name;
    for (let n = 2; [...this.taken.values()].includes(candidate) || this.files.has(fileOf(candidate)); n++) candidate = `${name}${n}`;
    this.files.add(fileOf(candidate));
    return candidate;
  }
}

/** The first paragraph of a description, on one line: a summary for protocol.json's tables. */
export function summaryOf(description: string | undefined, fallback: string): string {
  const text = (description ?? "").trim();
  if (!text) return fallback;
  return text
    .split(/\n\s*\n/)[0]!
    .replace(/\s*\n\s*/g, " ")
    .trim();
}

/** The JSON of a file as written: two spaces, a final newline. */
const text = (value: Json) => `${JSON.stringify(value, null, 2)}\n`;

const META = "https://turnspec.dev/schemas/meta/";
const DRAFT = "https://json-schema.org/draft/2020-12/schema";

/** The files of the folder, by name: the same protocol always gives the same bytes. */
export function folderFiles(protocol: ImportedProtocol): Map<string, string> {
  const files = new Map<string, string>();
  const entry = (m: ImportedMessage, method: boolean): JsonObject => {
    const out: JsonObject = { name: m.name, direction: m.direction, summary: m.summary };
    if (m.params !== undefined) {
      out.params = refTo(m.params);
      if (m.paramsOptional) out.params_optional = true;
      if (m.paramStructure && m.paramStructure !== "by-name") out.param_structure = m.paramStructure;
    }
    if (method) {
      out.result = refTo(m.result!);
      if (m.partialResult !== undefined) out.partial_result = refTo(m.partialResult);
      if (m.errorData !== undefined) out.error_data = refTo(m.errorData);
      out.errors = [...(m.errors ?? [])];
    }
    for (const [key, value] of Object.entries(m.extensions ?? {})) out[key] = value;
    return out;
  };
  const protocolJson: JsonObject = {
    $schema: `${META}protocol.schema.json`,
    title: protocol.title,
    version: protocol.version,
    description: protocol.description,
    schemaBaseUri: protocol.schemaBaseUri,
    objects: protocol.objects,
    batches: protocol.batches,
    errors: { $ref: "errors.json" },
    methods: protocol.methods.map((m) => entry(m, true)),
    notifications: protocol.notifications.map((n) => entry(n, false)),
  };
  files.set("protocol.json", text(protocolJson));
  files.set(
    "errors.json",
    text({
      $schema: `${META}errors.schema.json`,
      description: `The errors of ${protocol.title} ${protocol.version} beyond the five of JSON-RPC 2.0, which are implied.`,
      errors: protocol.errors.map((e) => ({
        code: e.code,
        reason: e.reason,
        message: e.message,
        description: e.description,
        ...(e.anyMethod ? { anyMethod: true } : {}),
        ...(e.data === undefined ? {} : { data: refTo(e.data) }),
      })),
    }),
  );
  for (const [title, schema] of [...protocol.types].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    // The source's own title of the schema, where it is not the type's name, is kept as an annotation.
    const { description, title: sourceTitle, ...rest } = schema;
    const kept: JsonObject =
      typeof sourceTitle === "string" && sourceTitle !== title && rest["x-title"] === undefined ? { "x-title": sourceTitle } : {};
    files.set(
      fileOf(title),
      text({ $schema: DRAFT, $id: protocol.schemaBaseUri + fileOf(title), title, description: description ?? "", ...rest, ...kept }),
    );
  }
  return files;
}

/** The titles a schema refers to (its `{"$ref": "<file>"}` references). */
export function referencedFiles(schema: Json): string[] {
  const out: string[] = [];
  mapSchema(schema, (node) => {
    if (typeof node.$ref === "string" && !node.$ref.startsWith("#")) out.push(node.$ref);
    return undefined;
  });
  return out;
}

export { isObject };
