/**
 * How deep a JSON value nests, found without recursion. A value nested thousands of
 * arrays deep is small on the wire (two bytes a level) but overflows the stack of any
 * recursive walk over it (JSON.stringify, a validator, a store), so whoever takes such
 * values from outside measures them first, with these.
 */

/**
 * The JSON pointer of the first value in `value` that sits `limit` or more levels deep
 * (arrays and objects count as levels), with the deepest level of the whole value; or
 * undefined when nothing nests that deep.
 */
export function tooDeep(value: unknown, limit: number, base = ""): string | undefined {
  return measureDepth(value, limit, base)?.pointer;
}

/** Where `value` first goes past `limit` levels, and how deep it goes in all; undefined when it stays within. */
export function measureDepth(value: unknown, limit: number, base = ""): { pointer: string; depth: number } | undefined {
  const stack: [unknown, string, number][] = [[value, base, 0]];
  let first: string | undefined;
  let deepest = 0;
  while (stack.length > 0) {
    const [node, pointer, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    deepest = Math.max(deepest, depth + 1);
    if (depth >= limit) {
      first ??= pointer;
      // Past the limit only the depth is still wanted: no pointers are built for it.
      const entries = Array.isArray(node) ? node : Object.values(node);
      for (const child of entries) stack.push([child, pointer, depth + 1]);
      continue;
    }
    const entries = Array.isArray(node) ? node.map((v, i) => [String(i), v] as const) : Object.entries(node);
    for (const [key, child] of entries) stack.push([child, `${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`, depth + 1]);
  }
  return first === undefined ? undefined : { pointer: first, depth: deepest };
}
