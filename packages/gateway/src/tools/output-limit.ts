/**
 * Bounds on the text tools hand back. Tool output lands in the event log, on the wire and
 * in the model's context, so none of them may grow without limit; whatever is cut says so
 * in the text itself, so neither a person nor the model mistakes it for the whole.
 */

/** Keeps the first `limit` characters of `text`, with a note of how much was left out. */
export function truncateEnd(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const head = text.slice(0, cutPoint(text, limit));
  return `${head}\n[… truncated: showing the first ${head.length} of ${text.length} characters]`;
}

/**
 * Keeps the start and the end of `text` within `limit` characters: for command output the
 * end (the error, the summary) matters as much as the start.
 */
export function truncateMiddle(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const headEnd = cutPoint(text, Math.ceil(limit / 2));
  const tailStart = cutPoint(text, text.length - Math.floor(limit / 2));
  return `${text.slice(0, headEnd)}\n[… ${tailStart - headEnd} characters omitted …]\n${text.slice(tailStart)}`;
}

/**
 * Collects streamed text in bounded memory: the first half of `limit` characters and the
 * latest half, however much passes through.
 */
export class OutputCapture {
  readonly #half: number;
  #head = "";
  // The tail is kept as chunks and trimmed by whole chunks: re-slicing one long string on
  // every small chunk would copy the whole tail each time.
  #tail: string[] = [];
  #tailLength = 0;
  #total = 0;

  constructor(limit: number) {
    this.#half = Math.max(1, Math.floor(limit / 2));
  }

  push(chunk: string): void {
    this.#total += chunk.length;
    if (this.#head.length < this.#half && this.#tail.length === 0) {
      const room = this.#half - this.#head.length;
      this.#head += chunk.slice(0, room);
      chunk = chunk.slice(room);
      if (chunk === "") return;
    }
    this.#tail.push(chunk);
    this.#tailLength += chunk.length;
    while (this.#tail.length > 1 && this.#tailLength - this.#tail[0]!.length >= this.#half) this.#tailLength -= this.#tail.shift()!.length;
  }

  /** Everything pushed when it fit, else head and tail around a note of what was dropped. */
  text(): string {
    const tail = this.#tail.join("");
    const kept = tail.length > this.#half ? tail.slice(cutPoint(tail, tail.length - this.#half)) : tail;
    const omitted = this.#total - this.#head.length - kept.length;
    return omitted === 0 ? this.#head + kept : `${this.#head}\n[… ${omitted} characters omitted …]\n${kept}`;
  }
}

/** `at`, moved back by one when it would split a surrogate pair. */
function cutPoint(text: string, at: number): number {
  const code = text.charCodeAt(at);
  return at > 0 && code >= 0xdc00 && code <= 0xdfff ? at - 1 : at;
}
