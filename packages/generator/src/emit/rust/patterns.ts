/**
 * A JSON Schema `pattern` (ECMA-262 with the `u` flag) read into the nodes of the Rust
 * support module's matcher (jsonrpc/pattern.rs), which matches exactly what ECMA-262 matches:
 * it backtracks as ECMA-262 does, over code points.
 *
 * - `.` is any code point but \n, \r, U+2028 and U+2029; `^` and `$` the very start and end;
 * - `\d`, `\w`, `\b` are ASCII, `\s` is ECMA-262's white space and line terminators;
 * - character classes (negated ones too) become sorted ranges of code points.
 *
 * What the matcher has no node for (back references, lookbehind, Unicode property escapes,
 * flags) is refused with a message naming the pattern, never approximated.
 */
import { rustString, UnsupportedForRust } from "./names.js";

type Node =
  | { readonly kind: "start" | "end" | "any" }
  | { readonly kind: "boundary"; readonly wanted: boolean }
  | { readonly kind: "char"; readonly code: number }
  | { readonly kind: "class"; readonly ranges: readonly (readonly [number, number])[] }
  | { readonly kind: "group"; readonly alternatives: readonly (readonly Node[])[] }
  | { readonly kind: "look"; readonly alternatives: readonly (readonly Node[])[]; readonly negative: boolean }
  | { readonly kind: "repeat"; readonly node: Node; readonly min: number; readonly max: number; readonly greedy: boolean };

const MAX = 0x10ffff;
const DIGIT: [number, number][] = [[0x30, 0x39]];
const WORD: [number, number][] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
/** ECMA-262 WhiteSpace and LineTerminator. */
const SPACE: [number, number][] = [
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

function normalize(ranges: readonly (readonly [number, number])[]): [number, number][] {
  const sorted = [...ranges].map((r) => [r[0], r[1]] as [number, number]).sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const r of sorted) {
    const last = out.at(-1);
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push(r);
  }
  return out;
}

function complement(ranges: readonly (readonly [number, number])[]): [number, number][] {
  const out: [number, number][] = [];
  let next = 0;
  for (const [low, high] of normalize(ranges)) {
    if (low > next) out.push([next, low - 1]);
    next = high + 1;
  }
  if (next <= MAX) out.push([next, MAX]);
  return out;
}

const CLASS_ESCAPES: Record<string, () => [number, number][]> = {
  d: () => DIGIT,
  D: () => complement(DIGIT),
  w: () => WORD,
  W: () => complement(WORD),
  s: () => SPACE,
  S: () => complement(SPACE),
};

const CONTROL: Record<string, number> = { f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b };
const SYNTAX = new Set([..."^$\\.*+?()[]{}|/"]);

/** Reads one pattern; throws UnsupportedForRust naming what it cannot read. */
class Reader {
  private i = 0;
  private readonly chars: string[];

  constructor(private readonly pattern: string) {
    this.chars = [...pattern];
  }

  private fail(what: string): never {
    throw new UnsupportedForRust(`the pattern ${JSON.stringify(this.pattern)} uses ${what}, which the Rust validators do not read`);
  }

  private invalid(what: string): never {
    throw new UnsupportedForRust(`the pattern ${JSON.stringify(this.pattern)} is not a valid ECMA-262 pattern with the u flag: ${what}`);
  }

  private peek(offset = 0): string | undefined {
    return this.chars[this.i + offset];
  }

  private eat(c: string): boolean {
    if (this.peek() === c) {
      this.i++;
      return true;
    }
    return false;
  }

  read(): Node[][] {
    const alternatives = this.disjunction();
    if (this.i < this.chars.length) this.invalid(`an unmatched ${this.peek()}`);
    return alternatives;
  }

  private disjunction(): Node[][] {
    const alternatives = [this.alternative()];
    while (this.eat("|")) alternatives.push(this.alternative());
    return alternatives;
  }

  private alternative(): Node[] {
    const nodes: Node[] = [];
    while (this.i < this.chars.length && this.peek() !== "|" && this.peek() !== ")") {
      const atom = this.term();
      nodes.push(this.quantified(atom));
    }
    return nodes;
  }

  private quantified(atom: Node): Node {
    let min: number;
    let max: number;
    const c = this.peek();
    if (c === "*") [min, max] = [0, Infinity];
    else if (c === "+") [min, max] = [1, Infinity];
    else if (c === "?") [min, max] = [0, 1];
    else if (c === "{") {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.chars.slice(this.i).join(""));
      if (!match) this.invalid("a lone {");
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === "" ? Infinity : Number(match[3]);
      if (max < min) this.invalid("a quantifier whose maximum is below its minimum");
      this.i += match[0].length - 1;
    } else return atom;
    this.i++;
    const greedy = !this.eat("?");
    if (atom.kind === "start" || atom.kind === "end" || atom.kind === "boundary" || atom.kind === "look")
      this.invalid("a quantified assertion");
    if (min > 0xfffffffe || (max !== Infinity && max > 0xfffffffe)) this.fail("a quantifier beyond 4294967294");
    return { kind: "repeat", node: atom, min, max, greedy };
  }

  private term(): Node {
    const c = this.peek()!;
    this.i++;
    switch (c) {
      case "^":
        return { kind: "start" };
      case "$":
        return { kind: "end" };
      case ".":
        return { kind: "any" };
      case "(":
        return this.group();
      case "[":
        return this.characterClass();
      case "\\":
        return this.escape();
      case "*":
      case "+":
      case "?":
        return this.invalid(`nothing to repeat before ${c}`);
      case "{":
      case "}":
      case "]":
        return this.invalid(`a lone ${c}`);
      default:
        return { kind: "char", code: c.codePointAt(0)! };
    }
  }

  private group(): Node {
    let look: boolean | undefined;
    if (this.eat("?")) {
      if (this.eat(":")) look = undefined;
      else if (this.eat("=")) look = false;
      else if (this.eat("!")) look = true;
      else if (this.peek() === "<" && (this.peek(1) === "=" || this.peek(1) === "!")) this.fail("a lookbehind");
      else if (this.eat("<")) {
        while (this.peek() !== undefined && this.peek() !== ">") this.i++;
        if (!this.eat(">")) this.invalid("an unterminated group name");
      } else this.fail("a group modifier");
    }
    const alternatives = this.disjunction();
    if (!this.eat(")")) this.invalid("an unterminated group");
    return look === undefined ? { kind: "group", alternatives } : { kind: "look", alternatives, negative: look };
  }

  /** A `\` escape outside a class. */
  private escape(): Node {
    const c = this.peek();
    if (c === undefined) this.invalid("a trailing backslash");
    if (c === "b" || c === "B") {
      this.i++;
      return { kind: "boundary", wanted: c === "b" };
    }
    if (CLASS_ESCAPES[c]) {
      this.i++;
      return { kind: "class", ranges: CLASS_ESCAPES[c]() };
    }
    if (/[1-9]/.test(c) || c === "k") this.fail("a back reference");
    return { kind: "char", code: this.characterEscape() };
  }

  /** A character escape (after the backslash): its code point. */
  private characterEscape(): number {
    const c = this.peek()!;
    this.i++;
    if (c === "p" || c === "P") this.fail("a Unicode property escape");
    if (CONTROL[c] !== undefined) return CONTROL[c];
    if (c === "c") {
      const letter = this.peek();
      if (letter === undefined || !/[A-Za-z]/.test(letter)) this.invalid("\\c without a letter");
      this.i++;
      return letter.codePointAt(0)! % 32;
    }
    if (c === "0") {
      if (this.peek() !== undefined && /\d/.test(this.peek()!)) this.invalid("a legacy octal escape");
      return 0;
    }
    if (c === "x") {
      const hex = this.chars.slice(this.i, this.i + 2).join("");
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) this.invalid("\\x without two hex digits");
      this.i += 2;
      return parseInt(hex, 16);
    }
    if (c === "u") {
      if (this.eat("{")) {
        let hex = "";
        while (this.peek() !== undefined && this.peek() !== "}") hex += this.chars[this.i++];
        if (!this.eat("}") || !/^[0-9A-Fa-f]+$/.test(hex) || parseInt(hex, 16) > MAX) this.invalid("a bad \\u{…}");
        return parseInt(hex, 16);
      }
      const unit = this.hex4();
      // A surrogate pair written as two escapes is one code point.
      if (
        unit >= 0xd800 &&
        unit <= 0xdbff &&
        this.peek() === "\\" &&
        this.peek(1) === "u" &&
        /^[0-9A-Fa-f]{4}$/.test(this.chars.slice(this.i + 2, this.i + 6).join(""))
      ) {
        const low = parseInt(this.chars.slice(this.i + 2, this.i + 6).join(""), 16);
        if (low >= 0xdc00 && low <= 0xdfff) {
          this.i += 6;
          return 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
        }
      }
      return unit;
    }
    if (SYNTAX.has(c) || c === "-") return c.codePointAt(0)!;
    return this.invalid(`the identity escape \\${c}`);
  }

  private hex4(): number {
    const hex = this.chars.slice(this.i, this.i + 4).join("");
    if (!/^[0-9A-Fa-f]{4}$/.test(hex)) this.invalid("\\u without four hex digits");
    this.i += 4;
    return parseInt(hex, 16);
  }

  private characterClass(): Node {
    const negated = this.eat("^");
    const ranges: [number, number][] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.invalid("an unterminated character class");
      if (c === "]") {
        this.i++;
        break;
      }
      const low = this.classAtom();
      if (this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== undefined) {
        this.i++;
        const high = this.classAtom();
        if (typeof low !== "number" || typeof high !== "number") this.invalid("a range with a class escape at an end");
        if (high < low) this.invalid("a range out of order");
        ranges.push([low, high]);
      } else if (typeof low === "number") ranges.push([low, low]);
      else ranges.push(...low);
    }
    return { kind: "class", ranges: negated ? complement(ranges) : normalize(ranges) };
  }

  /** One atom of a class: a code point, or the ranges of a class escape. */
  private classAtom(): number | [number, number][] {
    const c = this.peek()!;
    this.i++;
    if (c !== "\\") return c.codePointAt(0)!;
    const next = this.peek();
    if (next === undefined) this.invalid("a trailing backslash");
    if (CLASS_ESCAPES[next]) {
      this.i++;
      return CLASS_ESCAPES[next]();
    }
    if (next === "b") {
      this.i++;
      return 0x08;
    }
    if (/[1-9]/.test(next)) this.fail("a back reference");
    return this.characterEscape();
  }
}

/** The alternatives of a pattern, as the matcher's nodes. */
export function readPattern(pattern: string): readonly (readonly Node[])[] {
  return new Reader(pattern).read();
}

const hex = (n: number) => `0x${n.toString(16)}`;

function nodeCode(node: Node): string {
  switch (node.kind) {
    case "start":
      return "Node::Start";
    case "end":
      return "Node::End";
    case "any":
      return "Node::Any";
    case "boundary":
      return `Node::WordBoundary(${node.wanted})`;
    case "char":
      return `Node::Char(${hex(node.code)})`;
    case "class":
      return `Node::Class(&[${node.ranges.map(([a, b]) => `(${hex(a)}, ${hex(b)})`).join(", ")}])`;
    case "group":
      return `Node::Group(${alternativesCode(node.alternatives)})`;
    case "look":
      return `Node::Look(${alternativesCode(node.alternatives)}, ${node.negative})`;
    case "repeat":
      return `Node::Repeat(&${nodeCode(node.node)}, ${node.min}, ${node.max === Infinity ? "u32::MAX" : node.max}, ${node.greedy})`;
  }
}

function alternativesCode(alternatives: readonly (readonly Node[])[]): string {
  return `&[${alternatives.map((a) => `&[${a.map(nodeCode).join(", ")}]`).join(", ")}]`;
}

/** A `static NAME: Pattern` of the support module for a pattern, one item per line. */
export function patternStatic(name: string, pattern: string): string[] {
  const alternatives = readPattern(pattern);
  const lines = [
    `/// \`${pattern.replace(/`/g, "'")}\``,
    `static ${name}: Pattern = Pattern {`,
    `    source: ${rustString(pattern)},`,
    "    alternatives: &[",
  ];
  for (const alternative of alternatives) {
    lines.push("        &[");
    for (const node of alternative) lines.push(`            ${nodeCode(node)},`);
    lines.push("        ],");
  }
  lines.push("    ],", "};");
  return lines;
}
