/** Helpers to compare recorded notifications in gateway tests. */
import type { AnyNotification } from "../../generated/registry.js";

/** Each notification whose method is in `methods`, in order, flattened to `{ method, ...params }`. */
export function flatEvents(ns: readonly AnyNotification[], methods: ReadonlySet<string>): Record<string, unknown>[] {
  return ns.filter((n) => methods.has(n.method)).map((n): Record<string, unknown> => ({ method: n.method, ...n.params }));
}
