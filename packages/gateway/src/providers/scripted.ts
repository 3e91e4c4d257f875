/**
 * A deterministic model provider for tests and conformance runs. A turn's user message
 * carries the script: `{"script": [step, …]}`, one step per provider call of that turn.
 * The provider keeps no state: which step to play is derived from the conversation itself
 * (the number of assistant messages after the latest user message), because the agent
 * loop re-derives history from the event log on every call, including after a restart.
 *
 * The latest user message, not the first, holds the script, so each turn of a thread can
 * bring its own; in a single-turn conversation (a fresh thread, a sub-agent) the two are
 * the same message. Any other text gets an echo (`You said: <text>`), so a chat with the
 * reference gateway works without a model.
 *
 * Retries are scripted through the request's attempt number (`fail_attempts`), which the
 * gateway counts, for the same reason: the provider itself remembers nothing.
 */
import type { ModelProvider, ProviderEvent, ProviderRequest, ProviderStream, ToolCall } from "./provider.js";
import { ProviderError } from "./provider.js";

/** Fields every step may carry besides its kind. */
export interface ScriptStepExtras {
  /** Streamed as one `reasoning` event before anything else of the step. */
  readonly reasoning?: string;
  /** Milliseconds to wait before the step's first event; aborted by the request's signal. */
  readonly delay_ms?: number;
  /**
   * Reported as a `usage` event after the step's answer: a number is the output token
   * count (input 0); the object form sets both counts.
   */
  readonly tokens?: number | { readonly input_tokens: number; readonly output_tokens: number };
  /**
   * The first N attempts of this provider call fail in a retryable way (with `fail_message`,
   * or a default one); attempt N + 1 plays the step. Attempts count on across the gateway's
   * retries and across turn/resume, so a script can exercise a retry that succeeds and one
   * that exhausts the retry policy and blocks the turn.
   */
  readonly fail_attempts?: number;
  /** The message of the failures `fail_attempts` causes. */
  readonly fail_message?: string;
}

/** The final answer: `say` streamed as `chunks` text deltas (a few word groups by default). */
export interface ScriptSayStep extends ScriptStepExtras {
  readonly say: string;
  readonly chunks?: number;
  /**
   * Milliseconds between one delta and the next, so the answer streams at a model's pace;
   * without it every delta comes at once. Aborted by the request's signal.
   */
  readonly every_ms?: number;
}

/** One tool call in a step. `args` defaults to `{}`. */
export interface ScriptToolCall {
  readonly tool: string;
  readonly args?: Record<string, unknown>;
}

/** An answer with one tool call. */
export interface ScriptToolStep extends ScriptStepExtras, ScriptToolCall {}

/** An answer with several tool calls, in order. */
export interface ScriptToolsStep extends ScriptStepExtras {
  readonly tools: readonly ScriptToolCall[];
}

/** A failed provider call: throws ProviderError(fail, retryable). `retryable` defaults to false. */
export interface ScriptFailStep extends ScriptStepExtras {
  readonly fail: string;
  readonly retryable?: boolean;
}

export type ScriptStep = ScriptSayStep | ScriptToolStep | ScriptToolsStep | ScriptFailStep;

/** The document a turn's user message holds to drive the provider. Steps are numbered from 0, like the array. */
export interface Script {
  readonly script: readonly ScriptStep[];
}

/** The user message text that plays `steps`. */
export function scriptMessage(steps: readonly ScriptStep[]): string {
  return JSON.stringify({ script: steps } satisfies Script);
}

const KINDS = ["say", "tool", "tools", "fail"] as const;
const EXTRAS = ["reasoning", "delay_ms", "tokens", "fail_attempts", "fail_message"];
/** The keys each kind allows besides the extras: an unknown key is a typo worth reporting. */
const KEYS: Record<(typeof KINDS)[number], readonly string[]> = {
  say: ["say", "chunks", "every_ms"],
  tool: ["tool", "args"],
  tools: ["tools"],
  fail: ["fail", "retryable"],
};

/** How many word groups a `say` without `chunks` is streamed in, at most. */
const DEFAULT_PIECES = 4;

export class ScriptedProvider implements ModelProvider {
  readonly name = "scripted";

  async *stream(request: ProviderRequest): ProviderStream {
    request.signal.throwIfAborted();
    const latest = request.messages.map((m) => m.role).lastIndexOf("user");
    if (latest < 0) throw new ProviderError("the scripted provider needs a user message", false);
    const text = request.messages[latest]!.content;
    const steps = readScript(text);
    if (steps === undefined) {
      for (const piece of splitText(`You said: ${text}`)) yield { type: "text_delta", text: piece };
      return;
    }
    const index = request.messages.slice(latest + 1).filter((m) => m.role === "assistant").length;
    const step = steps[index];
    if (step === undefined) {
      const last = steps[steps.length - 1];
      const why =
        last !== undefined && "say" in last
          ? `the script has ${steps.length} step${steps.length === 1 ? "" : "s"} and already gave its final answer`
          : "it ended before a final answer";
      throw new ProviderError(`the script has no step ${index}: ${why}`, false);
    }
    // Played here, not by a nested generator: each event is one hop of the iteration, not two.
    const attempt = request.attempt ?? 1;
    if (step.delay_ms) await delay(step.delay_ms, request.signal);
    if (attempt <= (step.fail_attempts ?? 0))
      throw new ProviderError(step.fail_message ?? `scripted failure of attempt ${attempt} of step ${index}`, true);
    if (step.reasoning !== undefined) yield { type: "reasoning", text: step.reasoning };
    const usage = toUsage(step.tokens);
    if ("fail" in step) {
      if (usage) yield usage;
      throw new ProviderError(step.fail, step.retryable ?? false);
    }
    if ("say" in step) {
      const pieces = splitText(step.say, step.chunks).map((piece): ProviderEvent => ({ type: "text_delta", text: piece }));
      if (!step.every_ms) yield pieces;
      else
        for (const [n, piece] of pieces.entries()) {
          if (n > 0) await delay(step.every_ms, request.signal);
          yield piece;
        }
    } else {
      const calls = "tools" in step ? step.tools : [step];
      // Ids depend only on the step and position, so a replayed conversation gets the same ids.
      yield {
        type: "tool_calls",
        calls: calls.map((c, n): ToolCall => ({ id: `call_${index}_${n}`, name: c.tool, arguments: JSON.stringify(c.args ?? {}) })),
      };
    }
    if (usage) yield usage;
  }
}

/**
 * The steps of a script message, or undefined when the text is not a script. Text that
 * parses as an object with a `script` key is taken as meant to be one, so a malformed
 * script fails loudly instead of being echoed back.
 */
function readScript(text: string): readonly ScriptStep[] | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(doc) || !("script" in doc)) return undefined;
  if (!Array.isArray(doc.script)) throw invalid(`"script" must be an array of steps, got ${describe(doc.script)}`);
  // Every step is checked on every call, so a mistake late in a script shows on the first call.
  doc.script.forEach(checkStep);
  return doc.script as ScriptStep[];
}

function checkStep(step: unknown, index: number): void {
  const at = `step ${index}`;
  if (!isObject(step)) throw invalid(`${at} must be an object, got ${describe(step)}`);
  const kinds = KINDS.filter((k) => k in step);
  if (kinds.length !== 1) {
    throw invalid(
      `${at} must have exactly one of ${KINDS.map((k) => `"${k}"`).join(", ")}, got ${kinds.length ? kinds.map((k) => `"${k}"`).join(" and ") : "none"}`,
    );
  }
  const kind = kinds[0]!;
  for (const key of Object.keys(step)) {
    if (!KEYS[kind].includes(key) && !EXTRAS.includes(key))
      throw invalid(
        `${at} has an unknown field "${key}" (a "${kind}" step allows ${[...KEYS[kind], ...EXTRAS].map((k) => `"${k}"`).join(", ")})`,
      );
  }
  const field = (key: string, ok: (v: unknown) => boolean, expected: string) => {
    if (key in step && !ok(step[key])) throw invalid(`${at}: "${key}" must be ${expected}, got ${describe(step[key])}`);
  };
  const count = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
  field("reasoning", (v) => typeof v === "string", "a string");
  field("fail_attempts", count, "a non-negative integer");
  field("fail_message", (v) => typeof v === "string", "a string");
  field("delay_ms", count, "a non-negative integer");
  field(
    "tokens",
    (v) => count(v) || (isObject(v) && count(v.input_tokens) && count(v.output_tokens) && Object.keys(v).length === 2),
    "a non-negative integer or {input_tokens, output_tokens}",
  );
  switch (kind) {
    case "say":
      field("say", (v) => typeof v === "string", "a string");
      field("chunks", (v) => Number.isInteger(v) && (v as number) >= 1, "a positive integer");
      field("every_ms", count, "a non-negative integer");
      // A character is one or two code units, so a text has at least half its length in characters.
      if (
        "chunks" in step &&
        (step.chunks as number) > (step.say as string).length / 2 &&
        (step.chunks as number) > codePoints(step.say as string)
      ) {
        throw invalid(`${at}: "chunks" is ${String(step.chunks)} but the text has only ${codePoints(step.say as string)} characters`);
      }
      break;
    case "tool":
      checkCall(step, at);
      break;
    case "tools":
      field("tools", (v) => Array.isArray(v) && v.length > 0, "a non-empty array of {tool, args}");
      (step.tools as unknown[]).forEach((call, n) => {
        if (!isObject(call)) throw invalid(`${at}: tools[${n}] must be an object, got ${describe(call)}`);
        for (const key of Object.keys(call))
          if (key !== "tool" && key !== "args") throw invalid(`${at}: tools[${n}] has an unknown field "${key}"`);
        checkCall(call, `${at}: tools[${n}]`);
      });
      break;
    case "fail":
      field("fail", (v) => typeof v === "string", "a string");
      field("retryable", (v) => typeof v === "boolean", "a boolean");
      break;
  }
}

function checkCall(call: Record<string, unknown>, at: string): void {
  if (typeof call.tool !== "string" || call.tool === "")
    throw invalid(`${at}: "tool" must be a non-empty string, got ${describe(call.tool)}`);
  if ("args" in call && !isObject(call.args)) throw invalid(`${at}: "args" must be an object, got ${describe(call.args)}`);
}

function toUsage(tokens: ScriptStepExtras["tokens"]): ProviderEvent | undefined {
  if (tokens === undefined) return undefined;
  if (typeof tokens === "number") return { type: "usage", input_tokens: 0, output_tokens: tokens };
  return { type: "usage", input_tokens: tokens.input_tokens, output_tokens: tokens.output_tokens };
}

/**
 * Splits `text` into `pieces` non-empty parts whose concatenation is `text`: whole words
 * (each with the whitespace after it) when there are enough of them, else characters.
 * Without `pieces`, up to four word groups. Empty text gives no parts.
 */
export function splitText(text: string, pieces?: number): string[] {
  if (text === "") return [];
  // Leading whitespace alone, then each word with the whitespace after it.
  let units: string[] = text.match(/^\s+|\S+\s*/g)!;
  const want = pieces ?? Math.min(DEFAULT_PIECES, units.length);
  if (units.length < want) units = Array.from(text);
  // One part per unit: the units are the parts.
  if (units.length === want) return units;
  const parts: string[] = [];
  for (let i = 0; i < want; i++) {
    parts.push(units.slice(Math.floor((i * units.length) / want), Math.floor(((i + 1) * units.length) / want)).join(""));
  }
  return parts;
}

/** The characters (code points) of a text, as Array.from counts them, without building the array. */
function codePoints(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Waits `ms`, rejecting with the signal's reason as soon as it aborts. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function invalid(message: string): ProviderError {
  return new ProviderError(`invalid script: ${message}`, false);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= 60 ? text : `${text.slice(0, 59)}…`;
}
