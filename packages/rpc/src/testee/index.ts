/**
 * The testee of a generated TypeScript output: answers the contract harness's commands, one
 * JSON object per line in and one per line out (docs/languages.md, "The testee protocol"),
 * with the output's own validators, ordering rules and this module's canonical encoder.
 * Every generated language ships a testee that speaks the same lines.
 *
 *   {"id":1,"op":"validate","type":"T","mode":"strict","json":"…"}   → {"id":1,"valid":false,"pointers":["/a"]}
 *   {"id":2,"op":"roundtrip","type":"T","mode":"tolerant","json":"…"} → {"id":2,"ok":true,"json":"<canonical>"}
 *   {"id":3,"op":"encode","json":"…"}                                 → {"id":3,"json":"<canonical>"}
 *   {"id":4,"op":"messages","mode":"strict","frames":["…"]}            → {"id":4,"findings":[{"frame":0,"pointer":"/params/a"}]}
 *   {"id":5,"op":"ordering","frames":[{"from":"server_to_client","json":"…"}]} → {"id":5,"violations":[{"frame":1,"rule":"R"}]}
 *
 * A JSON text that does not parse is answered `{"id":…,"parse_error":"…"}`; a command the
 * testee does not know, `{"id":…,"unsupported":"…"}`.
 */
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { canonicalJson } from "../canonical-json.js";
import { MessageChecker } from "../check-messages.js";
import type { FrameDirection } from "../ordering.js";
import type { ProtocolView, ValidationMode } from "../protocol-view.js";

type Command = { readonly id?: unknown; readonly op?: unknown; readonly [key: string]: unknown };

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

class ParseError extends Error {}

function parse(text: unknown): unknown {
  if (typeof text !== "string") throw new ParseError("json must be a string holding JSON text");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ParseError((error as Error).message);
  }
}

const modeOf = (command: Command): ValidationMode => (command.mode === "tolerant" ? "tolerant" : "strict");

/** The answer to one command, without its id. */
export function answerTesteeCommand(view: ProtocolView, command: Command, language = "typescript"): Record<string, unknown> {
  try {
    switch (command.op) {
      case "hello":
        return { language, protocol: view.title };
      case "validate": {
        const result = view.validate(String(command.type), parse(command.json), modeOf(command));
        return result.ok
          ? { valid: true, pointers: [] }
          : { valid: false, pointers: [...new Set(result.errors.map((e) => e.pointer))].sort(byCodeUnits) };
      }
      case "roundtrip": {
        // Decoding in TypeScript is parsing and validating: the typed value is the parsed one, kept whole.
        const value = parse(command.json);
        const result = view.validate(String(command.type), value, modeOf(command));
        if (!result.ok) return { ok: false, pointers: [...new Set(result.errors.map((e) => e.pointer))].sort(byCodeUnits) };
        return { ok: true, json: canonicalJson(value) };
      }
      case "encode": {
        const value = parse(command.json);
        try {
          return { json: canonicalJson(value) };
        } catch (error) {
          // 1e400 parses to Infinity, which no JSON text denotes.
          return { unencodable: (error as Error).message };
        }
      }
      case "messages": {
        const checker = new MessageChecker(modeOf(command), { protocol: view, ordering: false });
        const frames = Array.isArray(command.frames) ? command.frames : [];
        const findings = frames.flatMap((frame, index) =>
          checker
            .check(parse(frame), index)
            .map((f) => ({ frame: index, pointer: f.part === "" ? f.issue.pointer : `/${f.part}${f.issue.pointer}` })),
        );
        const seen = new Set<string>();
        return {
          findings: findings
            .filter((f) => !seen.has(`${f.frame} ${f.pointer}`) && seen.add(`${f.frame} ${f.pointer}`))
            .sort((a, b) => a.frame - b.frame || byCodeUnits(a.pointer, b.pointer)),
        };
      }
      case "ordering": {
        const checker = view.createOrderingChecker();
        const frames = Array.isArray(command.frames) ? (command.frames as { from: FrameDirection; json: string }[]) : [];
        const violations: { frame: number | null; rule: string }[] = [];
        for (const frame of frames)
          violations.push(...checker.accept(parse(frame.json), frame.from).map((v) => ({ frame: v.frameIndex, rule: v.rule })));
        violations.push(...checker.end().map((v) => ({ frame: null, rule: v.rule })));
        return { violations };
      }
      default:
        return { unsupported: `no command "${String(command.op)}"` };
    }
  } catch (error) {
    if (error instanceof ParseError) return { parse_error: error.message };
    throw error;
  }
}

/** Reads commands from `input` until it ends, writing one answer line each to `output`. */
export async function serveTestee(view: ProtocolView, input: Readable = process.stdin, output: Writable = process.stdout): Promise<void> {
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    let command: Command;
    try {
      command = JSON.parse(line) as Command;
    } catch (error) {
      output.write(`${JSON.stringify({ id: null, bad_command: (error as Error).message })}\n`);
      continue;
    }
    output.write(`${JSON.stringify({ id: command.id ?? null, ...answerTesteeCommand(view, command) })}\n`);
  }
}
