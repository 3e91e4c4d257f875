/** The loaded, checked form of a schemas folder that every emitter reads. */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** One named type: a file of the schemas folder. */
export interface TypeModel {
  /** File name inside the schemas folder, e.g. `turn_start_params.json`. */
  readonly file: string;
  /** The schema's absolute `$id`. */
  readonly id: string;
  /** The TypeScript name. */
  readonly title: string;
  readonly description: string;
  readonly schema: JsonObject;
  /** The file's local definitions (`$defs`), each declared as a type of its own. */
  readonly defs: readonly DefModel[];
}

/** A local definition of a type file: `#/$defs/<key>`, referred to only inside its file. */
export interface DefModel {
  readonly key: string;
  /** Its TypeScript name: its own `title`, else the file's title followed by the key in PascalCase. */
  readonly title: string;
  readonly pointer: string;
  readonly schema: JsonObject;
}

/** A tagged union: a `oneOf` with a discriminator, and the tag value of each variant. */
export interface UnionModel {
  readonly id: string;
  readonly title: string;
  readonly propertyName: string;
  readonly variants: readonly { readonly tag: string; readonly title: string }[];
}

/** Who sends a message: the client, the server, or either side. */
export type Direction = "client_to_server" | "server_to_client" | "both";

/** How a message's params are sent: a JSON object, a JSON array, or either (see protocol.json's `param_structure`). */
export type ParamStructure = "by-name" | "by-position" | "either";

/** What a message carries as params. */
interface ParamsModel {
  /** The title of the params' type; undefined when the message takes no params (a frame carries none). */
  readonly params: string | undefined;
  /** The frame may leave params out. */
  readonly paramsOptional: boolean;
  readonly paramStructure: ParamStructure;
}

export interface MethodModel extends ParamsModel {
  readonly name: string;
  readonly direction: Direction;
  readonly summary: string;
  readonly result: string;
  /** The title of the type of the partial results it may stream (protocol.json's `partial_result`). */
  readonly partialResult?: string;
  /** The title of the type of error.data of any error it answers with (protocol.json's `error_data`). */
  readonly errorData?: string;
  /** The `x-…` entries of the method in protocol.json. */
  readonly extensions: JsonObject;
  readonly errors: readonly string[];
  /** Ids of the certification requirements protocol.json links to this method. */
  readonly requirements: readonly string[];
}

export interface NotificationModel extends ParamsModel {
  readonly name: string;
  readonly direction: Direction;
  readonly summary: string;
  /** The `x-…` entries of the notification in protocol.json. */
  readonly extensions: JsonObject;
  /** Ids of the certification requirements protocol.json links to this notification. */
  readonly requirements: readonly string[];
}

export interface ErrorModel {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  readonly description: string;
  readonly standard: boolean;
  /** Any request may get this error (standard and connection-level errors). */
  readonly anyMethod: boolean;
  readonly details: readonly { readonly detail: string; readonly description: string }[];
  /** The title of the type `error.data` has, when errors.json describes it. */
  readonly data?: string;
}

/** One ordering rule of protocol.json, checked and in the explicit form the checker is generated from. */
export interface OrderingRuleModel {
  readonly id: string;
  readonly requirement: string;
  readonly description: string;
  readonly kind: string;
  readonly scope: readonly { readonly name: string; readonly pointer: string }[];
  /** The whole rule as emitted: key names resolved to pointers, every notification set listed. */
  readonly rule: JsonObject;
}

export interface ProtocolModel {
  readonly title: string;
  readonly version: string;
  readonly description: string;
  readonly baseUri: string;
  /** Whether a frame may be a JSON-RPC batch. */
  readonly batches: boolean;
  /** What an object schema without `additionalProperties` means in strict mode. */
  readonly objects: "closed" | "open";
  /**
   * sha256 (hex) over the folder's `*.json` files: for each, in order of name, the name, a
   * NUL, the byte length in decimal, a NUL, and the bytes. Two folders digest alike only when
   * they hold the same files with the same contents.
   */
  readonly digest: string;
  /** Every named type, sorted by title. */
  readonly types: readonly TypeModel[];
  readonly unions: readonly UnionModel[];
  readonly methods: readonly MethodModel[];
  readonly notifications: readonly NotificationModel[];
  readonly errors: readonly ErrorModel[];
  /** The ordering rules; empty when protocol.json has no ordering section. */
  readonly ordering: readonly OrderingRuleModel[];
  /** The raw file contents, for hashing and for the OpenRPC/components emitters. */
  readonly byFile: ReadonlyMap<string, TypeModel>;
}
