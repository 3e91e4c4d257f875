/**
 * What a checker of messages needs to know about a protocol, whether its validators were
 * generated ahead of time (this package's own protocol) or compiled at run time from a
 * schemas folder (`turnspec validate --schemas DIR`): the method and notification tables,
 * the error registry, validation of any named type, and the ordering rules.
 */
import type { OrderingChecker } from "./ordering.js";
import type { MessageDirection, ParamsEntry } from "./params.js";
import type { ValidationResult } from "./validation.js";

export type ValidationMode = "strict" | "tolerant";

export interface MethodView extends ParamsEntry {
  readonly direction: MessageDirection;
  readonly result: string;
  readonly errors: readonly string[];
  /** The type of error.data of any error the method answers with, when the protocol gives one. */
  readonly errorData?: string;
}

export interface NotificationView extends ParamsEntry {
  readonly direction: MessageDirection;
}

export interface ProtocolView {
  readonly title: string;
  /** Whether a frame may be a JSON-RPC batch; absent means it may. */
  readonly batches?: boolean;
  readonly methods: Readonly<Record<string, MethodView>>;
  readonly notifications: Readonly<Record<string, NotificationView>>;
  /** By reason: the code, whether any request may get it, and the type of its data when the registry describes it. */
  readonly errors: Readonly<Record<string, { readonly code: number; readonly anyMethod: boolean; readonly data?: string }>>;
  /** Every named type's title. */
  readonly typeNames: readonly string[];
  /** Validates `value` as the named type; the name must be one of `typeNames`. */
  validate(type: string, value: unknown, mode: ValidationMode): ValidationResult<unknown>;
  /** A fresh checker of the protocol's ordering rules (one without rules accepts everything). */
  createOrderingChecker(): OrderingChecker;
}
