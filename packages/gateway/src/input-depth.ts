/**
 * How deep a client's free-form JSON may nest. The turn's input is stored and sent again in
 * every view of the turn; a value nested thousands deep fails that (recursion in the strict
 * check, the store or a client), so it is refused where it comes in, before anything of
 * the turn exists.
 */
import { tooDeep as firstTooDeep } from "@turnspec/rpc";

/** Levels of arrays and objects a turn's input may nest (the text elements' free-form objects included). */
export const MAX_INPUT_DEPTH = 64;

/**
 * The JSON pointer of the first value in `value` that sits deeper than `limit` levels, or
 * undefined when none does. Iterative, so it cannot itself overflow the stack.
 */
export function tooDeep(value: unknown, limit = MAX_INPUT_DEPTH, base = ""): string | undefined {
  return firstTooDeep(value, limit, base);
}
