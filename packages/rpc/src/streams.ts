/**
 * Streamed text: a notification that carries a piece of text to append to a field of an
 * object both ends hold (an item's answer, a command's output). Which stream appends to
 * which field is the protocol's fact (its schemas state it); how a piece is appended is
 * the same for every protocol and both ends, so it is written once, here.
 */

/**
 * `target` with `piece` appended to its string field `field` (a missing or non-string
 * field counts as empty). A new object: the one given is never changed.
 */
export function appendToField<T extends object>(target: T, field: string, piece: string): T {
  const before = (target as Record<string, unknown>)[field];
  return { ...target, [field]: `${typeof before === "string" ? before : ""}${piece}` };
}
