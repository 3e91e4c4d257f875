/**
 * "Did you mean": the names closest to one a user misspelt (a method, a notification, an
 * error reason, a type, a requirement id), by edit distance, case aside. Protocol-free: the
 * caller gives the names it knows.
 */

/** Edit distance between two names. */
export function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The known names close to `name`, closest first, at most `max` of them: within two edits,
 * or a quarter of the name's length for a long one.
 */
export function closest(name: string, known: Iterable<string>, max = 3): string[] {
  const lower = name.toLowerCase();
  return [...new Set(known)]
    .map((k) => ({ k, d: distance(lower, k.toLowerCase()) }))
    .filter(({ k, d }) => d <= Math.max(2, Math.floor(name.length / 4)) && k !== name)
    .sort((a, b) => a.d - b.d || (a.k < b.k ? -1 : 1))
    .slice(0, max)
    .map(({ k }) => k);
}

/** " (did you mean turn/start?)" (or "turn/start or turn/stop"), or "" when nothing is close. */
export function didYouMean(name: string, known: Iterable<string>, quote = false): string {
  const names = closest(name, known).map((n) => (quote ? JSON.stringify(n) : n));
  if (names.length === 0) return "";
  return ` (did you mean ${names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`}?)`;
}
