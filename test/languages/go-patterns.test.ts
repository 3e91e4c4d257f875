/**
 * The ECMAScript patterns the Go output checks, translated to Go's regexp (RE2), match the
 * same strings in Go as in JavaScript with the u flag: every pattern of this protocol's
 * schemas and patterns that use what the two engines read differently (`.` and line
 * terminators, `\s` and Unicode spaces, `$` before a final newline, classes and their
 * complements, astral characters, a lone surrogate, which Go reads as U+FFFD), against the
 * same subjects. The Go side runs the translations with Go's regexp in a program of its own.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { translatePattern } from "../../packages/generator/src/emit/go/regexp.js";
import { GO_AVAILABLE, NO_GO } from "./go-toolchain.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Every pattern of this protocol's schemas. */
function schemaPatterns(): string[] {
  const found = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "pattern" && typeof value === "string") found.add(value);
        else walk(value);
      }
    }
  };
  for (const file of readdirSync(join(root, "schemas")).filter((f) => f.endsWith(".json"))) walk(JSON.parse(readFileSync(join(root, "schemas", file), "utf8")));
  return [...found];
}

const PATTERNS = [
  ...schemaPatterns(),
  "^a.b$", ".", "^.*$", "\\s", "^\\S+$", "^\\s*$", "x$", "^$", "\\d\\D", "\\w+\\W", "\\bfoo\\b", "\\Bo",
  "a{2,3}?b", "(?:ab|cd)+", "[\\-.]", "[^a]", "[^]", "[]", "^[\\u00e0-\\u00ff]+$", "\\u{1F600}", "^.$", "[^\\n]", "\\t|\\v|\\f", "\\cJ", "\\0", "\\x41",
  "(?<word>[a-z]+)-\\d", "[\\s\\d]", "[\\S]", "[\\W\\d]",
];

const SUBJECTS = ["", "a", "ab", "a\nb", "a\rb", "a\u2028b", "a\u2029b", "axb", "é", "ÿ", "😀", "\ud800", "a\udc00b", " ", "\u00a0", "\u3000", "\ufeff", "\u200b", "foo bar", "foobar", "x\n", "x", "aab", "aaab", "abcd", "-", ".", "/", "\t", "\u000b", "\u000c", "\u0000", "A", "word-7", "a/b", "cert_x.y-z", "_id9", "9id"];

if (!GO_AVAILABLE) console.log(NO_GO);

const PROGRAM = `package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
)

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var c struct {
			Pattern  string   \`json:"pattern"\`
			Subjects []string \`json:"subjects"\`
		}
		if err := json.Unmarshal(scanner.Bytes(), &c); err != nil {
			panic(err)
		}
		re := regexp.MustCompile(c.Pattern)
		out := make([]bool, len(c.Subjects))
		for i, s := range c.Subjects {
			out[i] = re.MatchString(s)
		}
		line, _ := json.Marshal(out)
		fmt.Println(string(line))
	}
}
`;

it.skipIf(!GO_AVAILABLE)("every translated pattern matches in Go what it matches in JavaScript", () => {
  const dir = mkdtempSync(join(tmpdir(), "turnspec-go-patterns-"));
  writeFileSync(join(dir, "go.mod"), "module patterns\n\ngo 1.23\n");
  writeFileSync(join(dir, "main.go"), PROGRAM);
  const translated = PATTERNS.map((source) => {
    const t = translatePattern(source);
    if (!t.ok) throw new Error(`${source}: ${t.reason}`);
    return t.go;
  });
  // encoding/json reads a lone surrogate escape as U+FFFD, as the Go output reads one for a pattern (jsonrpc.ForPattern).
  const input = translated.map((go) => JSON.stringify({ pattern: go, subjects: SUBJECTS })).join("\n") + "\n";
  const answers = execFileSync("go", ["run", "."], { cwd: dir, input, encoding: "utf8", env: { ...process.env, GOWORK: "off", GOFLAGS: "-mod=mod" } })
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as boolean[]);
  const differences: string[] = [];
  PATTERNS.forEach((source, i) => {
    const js = new RegExp(source, "u");
    SUBJECTS.forEach((subject, j) => {
      const expected = js.test(subject);
      if (answers[i]![j] !== expected) differences.push(`/${source}/u on ${JSON.stringify(subject)}: JavaScript ${expected}, Go ${answers[i]![j]} (as ${translated[i]})`);
    });
  });
  expect(differences).toEqual([]);
  expect(answers.length * SUBJECTS.length).toBe(PATTERNS.length * SUBJECTS.length);
}, 120_000);
