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
}

/** A tagged union: a `oneOf` with a discriminator, and the tag value of each variant. */
export interface UnionModel {
  readonly id: string;
  readonly title: string;
  readonly propertyName: string;
  readonly variants: readonly { readonly tag: string; readonly title: string }[];
}

export type Direction = "client_to_server" | "server_to_client";

export interface MethodModel {
  readonly name: string;
  readonly direction: Direction;
  readonly summary: string;
  readonly params: string;
  readonly result: string;
  readonly errors: readonly string[];
  /** Ids of the certification requirements protocol.json links to this method. */
  readonly requirements: readonly string[];
}

export interface NotificationModel {
  readonly name: string;
  readonly direction: Direction;
  readonly summary: string;
  readonly params: string;
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
