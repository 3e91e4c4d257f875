/** The words of a name written in any case, for the emitters' identifiers: split at `_ - . / :` and spaces, and at lower-to-upper case changes (`turnStart`, `turn_start`, `TurnStart`, `turn/start`, `HTTPServer`). */
export function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
}
