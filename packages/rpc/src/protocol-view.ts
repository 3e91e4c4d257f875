/**
 * What a checker of messages needs to know about a protocol, whether its validators were
 * generated ahead of time (this package's own protocol) or compiled at run time from a
 * schemas folder (`turnspec validate --schemas DIR`): the method and notification tables,
 * the error registry, validation of any named type, and the ordering rules.
 */
import type { FrameDirection as Direction, OrderingChecker } from "./ordering.js";
import type { ValidationResult } from "./validation.js";

export type ValidationMode = "strict" | "tolerant";

export interface ProtocolView {
  readonly title: string;
  readonly methods: Readonly<Record<string, { readonly direction: Direction; readonly params: string; readonly result: string; readonly errors: readonly string[] }>>;
  readonly notifications: Readonly<Record<string, { readonly direction: Direction; readonly params: string }>>;
  readonly errors: Readonly<Record<string, { readonly code: number; readonly anyMethod: boolean }>>;
  /** Every named type's title. */
  readonly typeNames: readonly string[];
  /** Validates `value` as the named type; the name must be one of `typeNames`. */
  validate(type: string, value: unknown, mode: ValidationMode): ValidationResult<unknown>;
  /** A fresh checker of the protocol's ordering rules (one without rules accepts everything). */
  createOrderingChecker(): OrderingChecker;
}
