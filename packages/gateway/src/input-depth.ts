/**
 * How deep a client's free-form JSON may nest. The turn's input is stored and sent again in
 * every view of the turn; a value nested thousands deep fails that (recursion in the strict
 * check, the store or a client), so it is refused where it comes in, before anything of
 * the turn exists.
 */

/** Levels of arrays and objects a turn's input may nest (the text elements' free-form objects included). */
export const MAX_INPUT_DEPTH = 64;

/**
 * The JSON pointer of the first value in `value` that sits deeper than `limit` levels, or
 * undefined when none does. Iterative, so it cannot itself overflow the stack.
 */
export function tooDeep(value: unknown, limit = MAX_INPUT_DEPTH, base = ""): string | undefined {
  const stack: [unknown, string, number][] = [[value, base, 0]];
  while (stack.length > 0) {
    const [node, pointer, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    if (depth >= limit) return pointer;
    const entries = Array.isArray(node) ? node.map((v, i) => [String(i), v] as const) : Object.entries(node);
    for (const [key, child] of entries) stack.push([child, `${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`, depth + 1]);
  }
  return undefined;
}
