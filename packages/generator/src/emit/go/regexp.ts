/**
 * ECMAScript patterns (as JSON Schema reads `pattern`: ECMA-262 with the `u` flag) in Go's
 * regexp syntax (RE2), with the same meaning: `.` stops at every ECMAScript line terminator,
 * `\s` is ECMAScript's white space, `$` is the end of the input, escapes become code points.
 * What RE2 cannot do (lookaround, backreferences) or does differently (Unicode property
 * classes, whose tables differ between engines' Unicode versions) is refused with a reason,
 * never approximated. Strings are matched code point by code point in both; a lone surrogate
 * reads as U+FFFD in Go, so a pattern that names a surrogate or U+FFFD is refused too.
 */

export type PatternTranslation = { readonly ok: true; readonly go: string } | { readonly ok: false; readonly reason: string };

class Refused extends Error {}

/** ECMAScript's WhiteSpace and LineTerminator code points, as ranges. */
const WHITE_SPACE: readonly (readonly [number, number])[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const LINE_TERMINATORS: readonly (readonly [number, number])[] = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const DIGITS: readonly (readonly [number, number])[] = [[0x30, 0x39]];
const WORD: readonly (readonly [number, number])[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const MAX_CODE_POINT = 0x10ffff;
/** Go's regexp refuses a counted repetition above this. */
const MAX_REPEAT = 1000;

function complement(ranges: readonly (readonly [number, number])[]): [number, number][] {
  const out: [number, number][] = [];
  let next = 0;
  for (const [lo, hi] of [...ranges].sort((a, b) => a[0] - b[0])) {
    if (lo > next) out.push([next, lo - 1]);
    next = Math.max(next, hi + 1);
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

/** A code point inside a Go character class or as a literal: printable ASCII as itself (escaped where Go reads it specially), anything else as \x{…}. */
function codePoint(cp: number, inClass: boolean): string {
  if (cp >= 0xd800 && cp <= 0xdfff) throw new Refused("it names a surrogate code point, which a Go string cannot hold on its own");
  if (cp === 0xfffd) throw new Refused("it names U+FFFD, which Go reads a lone surrogate as");
  if (cp > 0x20 && cp < 0x7f) {
    const c = String.fromCodePoint(cp);
    const special = inClass ? "\\[]-^" : "\\.+*?()|[]{}^$";
    return special.includes(c) ? `\\${c}` : c;
  }
  return `\\x{${cp.toString(16)}}`;
}

function rangesText(ranges: readonly (readonly [number, number])[]): string {
  return ranges.map(([lo, hi]) => (lo === hi ? codePoint(lo, true) : `${codePoint(lo, true)}-${codePoint(hi, true)}`)).join("");
}

const isSyntaxCharacter = (c: string) => "^$\\.*+?()[]{}|/".includes(c);

/** One parsed class escape or atom: a set of ranges, or text to splice into a class as it is. */
type ClassPart =
  { readonly kind: "ranges"; readonly ranges: readonly (readonly [number, number])[] } | { readonly kind: "char"; readonly cp: number };

class Translator {
  private pos = 0;

  constructor(private readonly source: string) {}

  translate(): string {
    const out = this.disjunction();
    if (this.pos < this.source.length) throw new Refused(`unexpected ${JSON.stringify(this.source[this.pos])} at ${this.pos}`);
    return out;
  }

  private peek(offset = 0): string | undefined {
    return this.source[this.pos + offset];
  }

  private eat(text: string): boolean {
    if (this.source.startsWith(text, this.pos)) {
      this.pos += text.length;
      return true;
    }
    return false;
  }

  private disjunction(): string {
    const alternatives = [this.alternative()];
    while (this.eat("|")) alternatives.push(this.alternative());
    return alternatives.join("|");
  }

  private alternative(): string {
    let out = "";
    while (this.pos < this.source.length && this.peek() !== "|" && this.peek() !== ")") out += this.term();
    return out;
  }

  private term(): string {
    const c = this.peek()!;
    if (c === "^" || c === "$") {
      this.pos++;
      return c;
    }
    if (this.eat("\\b")) return "\\b";
    if (this.eat("\\B")) return "\\B";
    if (this.source.startsWith("(?=", this.pos) || this.source.startsWith("(?!", this.pos))
      throw new Refused("lookahead (?= …) and (?! …) have no equivalent in Go's regexp (RE2)");
    if (this.source.startsWith("(?<=", this.pos) || this.source.startsWith("(?<!", this.pos))
      throw new Refused("lookbehind (?<= …) and (?<! …) have no equivalent in Go's regexp (RE2)");
    const start = this.pos;
    const atom = this.atom();
    return this.quantified(atom, start);
  }

  private quantified(atom: string, start: number): string {
    const c = this.peek();
    let quantifier: string;
    if (c === "*" || c === "+" || c === "?") {
      this.pos++;
      quantifier = c;
    } else if (c === "{") {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.pos));
      if (!match) throw new Refused(`a { at ${this.pos} that is no quantifier`);
      this.pos += match[0].length;
      const min = Number(match[1]);
      const max = match[3] === undefined || match[3] === "" ? undefined : Number(match[3]);
      if (min > MAX_REPEAT || (max !== undefined && max > MAX_REPEAT))
        throw new Refused(`a repetition count over ${MAX_REPEAT} (Go's regexp limit)`);
      quantifier = match[0];
    } else return atom;
    if (this.eat("?")) quantifier += "?";
    void start;
    return atom + quantifier;
  }

  private atom(): string {
    const c = this.peek()!;
    if (c === ".") {
      this.pos++;
      return `[^${rangesText(LINE_TERMINATORS)}]`;
    }
    if (c === "(") return this.group();
    if (c === "[") return this.characterClass();
    if (c === "\\") return this.atomEscape();
    if (")]{}|*+?".includes(c)) throw new Refused(`unexpected ${JSON.stringify(c)} at ${this.pos}`);
    const cp = this.source.codePointAt(this.pos)!;
    this.pos += cp > 0xffff ? 2 : 1;
    return codePoint(cp, false);
  }

  private group(): string {
    this.pos++; // (
    let open = "(";
    if (this.eat("?:")) open = "(?:";
    else if (this.eat("?<")) {
      const match = /^([A-Za-z_$][A-Za-z0-9_$]*)>/.exec(this.source.slice(this.pos));
      if (!match) throw new Refused(`a group name at ${this.pos} that Go's regexp cannot take`);
      this.pos += match[0].length;
      open = `(?P<${match[1]}>`;
    } else if (this.peek() === "?")
      throw new Refused(`the group (${this.source.slice(this.pos, this.pos + 3)} … ) has no equivalent in Go's regexp`);
    const inner = this.disjunction();
    if (!this.eat(")")) throw new Refused("a group that is not closed");
    // A group's quantifier multiplies what is inside it: checked by quantified() through repeat.
    const after = this.peek();
    if (after === "{") {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.pos));
      if (match) {
        const count = Math.max(Number(match[1]), match[3] ? Number(match[3]) : 0, 1);
        const inside = innerRepeat(inner);
        if (count * inside > MAX_REPEAT) throw new Refused(`nested repetitions over ${MAX_REPEAT} in all (Go's regexp limit)`);
      }
    }
    return `${open}${inner})`;
  }

  private atomEscape(): string {
    const part = this.escape(false);
    if (part.kind === "char") return codePoint(part.cp, false);
    return `[${rangesText(part.ranges)}]`;
  }

  /** An escape after a backslash at pos (in a class when inClass). */
  private escape(inClass: boolean): ClassPart {
    this.pos++; // backslash
    const c = this.peek();
    if (c === undefined) throw new Refused("a pattern ending in a backslash");
    this.pos++;
    switch (c) {
      case "d":
        return { kind: "ranges", ranges: DIGITS };
      case "D":
        return { kind: "ranges", ranges: complement(DIGITS) };
      case "w":
        return { kind: "ranges", ranges: WORD };
      case "W":
        return { kind: "ranges", ranges: complement(WORD) };
      case "s":
        return { kind: "ranges", ranges: WHITE_SPACE };
      case "S":
        return { kind: "ranges", ranges: complement(WHITE_SPACE) };
      case "t":
        return { kind: "char", cp: 0x09 };
      case "n":
        return { kind: "char", cp: 0x0a };
      case "v":
        return { kind: "char", cp: 0x0b };
      case "f":
        return { kind: "char", cp: 0x0c };
      case "r":
        return { kind: "char", cp: 0x0d };
      case "b":
        if (inClass) return { kind: "char", cp: 0x08 };
        break;
      case "-":
        if (inClass) return { kind: "char", cp: 0x2d };
        break;
      case "c": {
        const letter = this.peek();
        if (letter === undefined || !/[A-Za-z]/.test(letter)) throw new Refused("\\c without a letter");
        this.pos++;
        return { kind: "char", cp: letter.charCodeAt(0) % 32 };
      }
      case "0":
        if (this.peek() !== undefined && /[0-9]/.test(this.peek()!)) throw new Refused("an octal escape");
        return { kind: "char", cp: 0 };
      case "x": {
        const match = /^[0-9A-Fa-f]{2}/.exec(this.source.slice(this.pos));
        if (!match) throw new Refused("\\x without two hex digits");
        this.pos += 2;
        return { kind: "char", cp: parseInt(match[0], 16) };
      }
      case "u":
        return { kind: "char", cp: this.unicodeEscape() };
      case "p":
      case "P":
        throw new Refused("Unicode property classes (\\p{…}) depend on each engine's Unicode tables, which differ between versions");
      case "k":
        throw new Refused("backreferences have no equivalent in Go's regexp (RE2)");
    }
    if (/[1-9]/.test(c)) throw new Refused("backreferences have no equivalent in Go's regexp (RE2)");
    if (isSyntaxCharacter(c)) return { kind: "char", cp: c.charCodeAt(0) };
    throw new Refused(`the escape \\${c}, which ECMAScript's u flag does not allow`);
  }

  private unicodeEscape(): number {
    if (this.eat("{")) {
      const match = /^([0-9A-Fa-f]+)\}/.exec(this.source.slice(this.pos));
      if (!match) throw new Refused("\\u{ without hex digits and }");
      this.pos += match[0].length;
      const cp = parseInt(match[1]!, 16);
      if (cp > MAX_CODE_POINT) throw new Refused("a code point above U+10FFFF");
      return cp;
    }
    const unit = (): number => {
      const match = /^[0-9A-Fa-f]{4}/.exec(this.source.slice(this.pos));
      if (!match) throw new Refused("\\u without four hex digits");
      this.pos += 4;
      return parseInt(match[0], 16);
    };
    const first = unit();
    if (first >= 0xd800 && first <= 0xdbff && this.source.startsWith("\\u", this.pos)) {
      const save = this.pos;
      this.pos += 2;
      const second = unit();
      if (second >= 0xdc00 && second <= 0xdfff) return 0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00);
      this.pos = save;
    }
    return first;
  }

  private characterClass(): string {
    this.pos++; // [
    const negated = this.eat("^");
    const ranges: [number, number][] = [];
    const atom = (): ClassPart => {
      if (this.peek() === "\\") return this.escape(true);
      const cp = this.source.codePointAt(this.pos);
      if (cp === undefined) throw new Refused("a character class that is not closed");
      this.pos += cp > 0xffff ? 2 : 1;
      return { kind: "char", cp };
    };
    while (this.peek() !== "]") {
      if (this.pos >= this.source.length) throw new Refused("a character class that is not closed");
      const from = atom();
      if (this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== undefined) {
        this.pos++;
        const to = atom();
        if (from.kind !== "char" || to.kind !== "char") throw new Refused("a class range with a class escape at one end");
        if (from.cp > to.cp) throw new Refused("a class range out of order");
        ranges.push([from.cp, to.cp]);
      } else if (from.kind === "char") ranges.push([from.cp, from.cp]);
      else ranges.push(...from.ranges.map(([lo, hi]) => [lo, hi] as [number, number]));
    }
    this.pos++; // ]
    const merged = merge(ranges);
    const set = negated ? complement(merged) : merged;
    // [^…] reads the same in Go when what it leaves out names no surrogate and not U+FFFD.
    const plainNegation =
      negated && merged.length > 0 && !merged.some(([lo, hi]) => (lo <= 0xdfff && hi >= 0xd800) || (lo <= 0xfffd && hi >= 0xfffd));
    // Go has no empty class: a class that matches nothing is the complement of everything.
    if (set.length === 0) return `[^${rangesText([[0, MAX_CODE_POINT]])}]`;
    // A lone surrogate is a code point of its own in ECMAScript and U+FFFD in Go: a class must
    // hold all of the surrogates or none, and U+FFFD exactly when it holds them.
    const holds = (cp: number) => set.some(([lo, hi]) => lo <= cp && cp <= hi);
    const allSurrogates = set.some(([lo, hi]) => lo <= 0xd800 && hi >= 0xdfff);
    const someSurrogate = set.some(([lo, hi]) => lo <= 0xdfff && hi >= 0xd800);
    if (someSurrogate && !allSurrogates) throw new Refused("a class that holds some surrogate code points but not all");
    if (holds(0xfffd) !== allSurrogates)
      throw new Refused("a class that holds U+FFFD without the surrogates, or the surrogates without U+FFFD, which Go cannot tell apart");
    if (plainNegation) return `[^${rangesText(merged)}]`;
    return `[${rangesText(set.flatMap(([lo, hi]) => splitSurrogates(lo, hi)))}]`;
  }
}

/** A range with the surrogates taken out (a Go class cannot name them; strings never hold them there). */
function splitSurrogates(lo: number, hi: number): [number, number][] {
  if (hi < 0xd800 || lo > 0xdfff) return [[lo, hi]];
  const out: [number, number][] = [];
  if (lo < 0xd800) out.push([lo, 0xd7ff]);
  if (hi > 0xdfff) out.push([0xe000, hi]);
  return out;
}

function merge(ranges: readonly (readonly [number, number])[]): [number, number][] {
  const sorted = [...ranges].map(([a, b]) => [a, b] as [number, number]).sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [lo, hi] of sorted) {
    const last = out.at(-1);
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/** The largest count of the counted repetitions in translated text (a rough upper bound for nesting). */
function innerRepeat(text: string): number {
  let most = 1;
  for (const match of text.matchAll(/\{(\d+)(?:,(\d*))?\}/g)) most = Math.max(most, Number(match[1]), match[2] ? Number(match[2]) : 0);
  return most;
}

/** The Go (RE2) form of an ECMAScript pattern with the u flag, or why there is none. */
export function translatePattern(source: string): PatternTranslation {
  try {
    new RegExp(source, "u");
  } catch (error) {
    return { ok: false, reason: `it is not a valid ECMAScript pattern: ${(error as Error).message}` };
  }
  try {
    return { ok: true, go: new Translator(source).translate() };
  } catch (error) {
    if (error instanceof Refused) return { ok: false, reason: error.message };
    throw error;
  }
}
