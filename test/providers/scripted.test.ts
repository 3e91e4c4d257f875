/**
 * The scripted provider plays one step per call, chosen from the conversation alone: the
 * latest user message holds the script, the assistant messages after it say how far it
 * got. It fails loudly, naming the step, on a script it cannot play.
 */
import { describe, expect, it } from "vitest";
import type { ChatMessage, ProviderEvent } from "../../packages/gateway/src/providers/provider.js";
import { ProviderError } from "../../packages/gateway/src/providers/provider.js";
import { ScriptedProvider, scriptMessage, splitText, type ScriptStep } from "../../packages/gateway/src/providers/scripted.js";

const provider = new ScriptedProvider();

/** The events of one step of the stream: a provider may yield several at once. */
const flat = (step: ProviderEvent | readonly ProviderEvent[]): readonly ProviderEvent[] =>
  Array.isArray(step) ? step : [step as ProviderEvent];

async function collect(messages: readonly ChatMessage[], signal = new AbortController().signal): Promise<ProviderEvent[]> {
  const events: ProviderEvent[] = [];
  for await (const event of provider.stream({ model: "script", messages, tools: [], signal })) events.push(...flat(event));
  return events;
}

/** The conversation at the first call of a script. */
function first(steps: unknown[]): ChatMessage[] {
  return [
    { role: "system", content: "be brief" },
    { role: "user", content: JSON.stringify({ script: steps }) },
  ];
}

async function failure(messages: readonly ChatMessage[]): Promise<ProviderError> {
  const error = await collect(messages).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

const texts = (events: ProviderEvent[]) => events.flatMap((e) => (e.type === "text_delta" ? [e.text] : []));

describe("ScriptedProvider", () => {
  it("is named scripted", () => {
    expect(provider.name).toBe("scripted");
  });

  it("streams a say step in several deltas that add up to the text", async () => {
    const events = await collect(first([{ say: "one two three four five six seven" }]));
    expect(events.every((e) => e.type === "text_delta")).toBe(true);
    expect(texts(events)).toEqual(["one ", "two three ", "four five ", "six seven"]);
  });

  it("streams exactly `chunks` deltas when asked, by words or else by characters", async () => {
    expect(texts(await collect(first([{ say: "hello big world", chunks: 2 }])))).toEqual(["hello ", "big world"]);
    expect(texts(await collect(first([{ say: "hello", chunks: 5 }])))).toEqual(["h", "e", "l", "l", "o"]);
    expect(texts(await collect(first([{ say: "hello world", chunks: 1 }])))).toEqual(["hello world"]);
  });

  it("splits text without losing or breaking characters", () => {
    for (const [text, pieces] of [
      ["  spaced   out  text ", undefined],
      ["héllo 🌍 wörld", 7],
      ["a\nb\nc", 2],
      ["x", undefined],
    ] as const) {
      const parts = splitText(text, pieces);
      expect(parts.join("")).toBe(text);
      if (pieces) expect(parts).toHaveLength(pieces);
      expect(parts.every((p) => p !== "" && !/^[\uDC00-\uDFFF]/.test(p))).toBe(true);
    }
    expect(splitText("")).toEqual([]);
  });

  it("answers a tool step with one call whose id is derived from the step", async () => {
    const events = await collect(first([{ tool: "shell", args: { command: "ls -la" } }]));
    expect(events).toEqual([{ type: "tool_calls", calls: [{ id: "call_0_0", name: "shell", arguments: '{"command":"ls -la"}' }] }]);
  });

  it("answers a tools step with all its calls in order, and {} for missing args", async () => {
    const events = await collect(
      first([{ tools: [{ tool: "read_file", args: { path: "a" } }, { tool: "web_fetch", args: { url: "http://x" } }, { tool: "noop" }] }]),
    );
    expect(events).toEqual([
      {
        type: "tool_calls",
        calls: [
          { id: "call_0_0", name: "read_file", arguments: '{"path":"a"}' },
          { id: "call_0_1", name: "web_fetch", arguments: '{"url":"http://x"}' },
          { id: "call_0_2", name: "noop", arguments: "{}" },
        ],
      },
    ]);
  });

  it("puts reasoning first and usage last", async () => {
    const events = await collect(first([{ say: "done", reasoning: "think first", tokens: 7 }]));
    expect(events).toEqual([
      { type: "reasoning", text: "think first" },
      { type: "text_delta", text: "done" },
      { type: "usage", input_tokens: 0, output_tokens: 7 },
    ]);
    const both = await collect(first([{ tool: "t", tokens: { input_tokens: 100, output_tokens: 3 } }]));
    expect(both.map((e) => e.type)).toEqual(["tool_calls", "usage"]);
    expect(both[1]).toEqual({ type: "usage", input_tokens: 100, output_tokens: 3 });
  });

  it("picks the step from the number of assistant messages after the first user message", async () => {
    const steps: ScriptStep[] = [
      { tool: "shell", args: { command: "a" } },
      { tools: [{ tool: "shell", args: { command: "b" } }] },
      { say: "all done" },
    ];
    const start: ChatMessage[] = [
      { role: "system", content: "sys" },
      { role: "user", content: scriptMessage(steps) },
    ];
    const afterOne: ChatMessage[] = [
      ...start,
      { role: "assistant", content: "", tool_calls: [{ id: "call_0_0", name: "shell", arguments: '{"command":"a"}' }] },
      { role: "tool", tool_call_id: "call_0_0", content: "ok" },
    ];
    const afterTwo: ChatMessage[] = [
      ...afterOne,
      { role: "assistant", content: "", tool_calls: [{ id: "call_1_0", name: "shell", arguments: '{"command":"b"}' }] },
      { role: "tool", tool_call_id: "call_1_0", content: "ok" },
    ];
    expect(await collect(start)).toEqual([
      { type: "tool_calls", calls: [{ id: "call_0_0", name: "shell", arguments: '{"command":"a"}' }] },
    ]);
    expect(await collect(afterOne)).toEqual([
      { type: "tool_calls", calls: [{ id: "call_1_0", name: "shell", arguments: '{"command":"b"}' }] },
    ]);
    expect(texts(await collect(afterTwo)).join("")).toBe("all done");
    // The same conversation gives the same answer: no state is kept between calls.
    expect(await collect(afterOne)).toEqual(await collect(afterOne));
  });

  it("takes each turn's script from that turn's user message", async () => {
    const earlier: ChatMessage[] = [
      { role: "user", content: scriptMessage([{ tool: "shell", args: { command: "a" } }, { say: "first turn done" }]) },
      { role: "assistant", content: "", tool_calls: [{ id: "call_0_0", name: "shell", arguments: '{"command":"a"}' }] },
      { role: "tool", tool_call_id: "call_0_0", content: "ok" },
      { role: "assistant", content: "first turn done" },
    ];
    const second: ChatMessage[] = [
      ...earlier,
      { role: "user", content: scriptMessage([{ tool: "read_file", args: { path: "x" } }, { say: "second turn done" }]) },
    ];
    expect(await collect(second)).toEqual([
      { type: "tool_calls", calls: [{ id: "call_0_0", name: "read_file", arguments: '{"path":"x"}' }] },
    ]);
    const secondLater: ChatMessage[] = [
      ...second,
      { role: "assistant", content: "", tool_calls: [{ id: "call_0_0", name: "read_file", arguments: '{"path":"x"}' }] },
      { role: "tool", tool_call_id: "call_0_0", content: "x" },
    ];
    expect(texts(await collect(secondLater)).join("")).toBe("second turn done");
    // A plain-text turn after a scripted one is echoed, not played from the old script.
    expect(texts(await collect([...earlier, { role: "user", content: "thanks" }])).join("")).toBe("You said: thanks");
  });

  it("throws the fail step's ProviderError, after its reasoning", async () => {
    const events: ProviderEvent[] = [];
    const stream = provider.stream({
      model: "m",
      messages: first([{ fail: "overloaded", retryable: true, reasoning: "hmm" }]),
      tools: [],
      signal: new AbortController().signal,
    });
    const error = await (async () => {
      for await (const e of stream) events.push(...flat(e));
    })().catch((e: unknown) => e);
    expect(events).toEqual([{ type: "reasoning", text: "hmm" }]);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ message: "overloaded", retryable: true });
    expect(await failure(first([{ fail: "bad request" }]))).toMatchObject({ message: "bad request", retryable: false });
  });

  it("fails when the script runs out before a final answer", async () => {
    const messages: ChatMessage[] = [
      { role: "user", content: scriptMessage([{ tool: "shell", args: { command: "a" } }]) },
      { role: "assistant", content: "", tool_calls: [{ id: "call_0_0", name: "shell", arguments: "{}" }] },
      { role: "tool", tool_call_id: "call_0_0", content: "ok" },
    ];
    const error = await failure(messages);
    expect(error.message).toBe("the script has no step 1: it ended before a final answer");
    expect(error.retryable).toBe(false);
    // Only an agent loop that calls again after the final answer gets here.
    const afterFinal = await failure([
      { role: "user", content: scriptMessage([{ say: "bye" }]) },
      { role: "assistant", content: "bye" },
    ]);
    expect(afterFinal.message).toBe("the script has no step 1: the script has 1 step and already gave its final answer");
  });

  it.each([
    ["a script that is not an array", { script: { say: "x" } }, 'invalid script: "script" must be an array of steps, got {"say":"x"}'],
    ["a step that is not an object", { script: [{ say: "a" }, "say hi"] }, 'invalid script: step 1 must be an object, got "say hi"'],
    [
      "a step with no kind",
      { script: [{ reasoning: "x" }] },
      'invalid script: step 0 must have exactly one of "say", "tool", "tools", "fail", got none',
    ],
    [
      "a step with two kinds",
      { script: [{ say: "a", tool: "b" }] },
      'invalid script: step 0 must have exactly one of "say", "tool", "tools", "fail", got "say" and "tool"',
    ],
    [
      "an unknown field",
      { script: [{ say: "a" }, { tool: "b", delay: 5 }] },
      'invalid script: step 1 has an unknown field "delay" (a "tool" step allows "tool", "args", "reasoning", "delay_ms", "tokens", "fail_attempts", "fail_message")',
    ],
    ["a field of another kind", { script: [{ say: "a", retryable: true }] }, 'invalid script: step 0 has an unknown field "retryable"'],
    [
      "a negative every_ms",
      { script: [{ say: "a", every_ms: -5 }] },
      'invalid script: step 0: "every_ms" must be a non-negative integer, got -5',
    ],
    ["every_ms on a tool step", { script: [{ tool: "a", every_ms: 5 }] }, 'invalid script: step 0 has an unknown field "every_ms"'],
    ["chunks of zero", { script: [{ say: "a", chunks: 0 }] }, 'invalid script: step 0: "chunks" must be a positive integer, got 0'],
    [
      "more chunks than characters",
      { script: [{ say: "ab", chunks: 3 }] },
      'invalid script: step 0: "chunks" is 3 but the text has only 2 characters',
    ],
    ["a non-string say", { script: [{ say: 42 }] }, 'invalid script: step 0: "say" must be a string, got 42'],
    ["an empty tool name", { script: [{ tool: "" }] }, 'invalid script: step 0: "tool" must be a non-empty string, got ""'],
    ["args that are not an object", { script: [{ tool: "t", args: [1] }] }, 'invalid script: step 0: "args" must be an object, got [1]'],
    [
      "an empty tools list",
      { script: [{ tools: [] }] },
      'invalid script: step 0: "tools" must be a non-empty array of {tool, args}, got []',
    ],
    [
      "a bad call in tools",
      { script: [{ tools: [{ tool: "a" }, { name: "b" }] }] },
      'invalid script: step 0: tools[1] has an unknown field "name"',
    ],
    [
      "a negative delay",
      { script: [{ say: "a", delay_ms: -1 }] },
      'invalid script: step 0: "delay_ms" must be a non-negative integer, got -1',
    ],
    [
      "fractional tokens",
      { script: [{ say: "a", tokens: 1.5 }] },
      'invalid script: step 0: "tokens" must be a non-negative integer or {input_tokens, output_tokens}, got 1.5',
    ],
    [
      "a non-boolean retryable",
      { script: [{ fail: "x", retryable: "yes" }] },
      'invalid script: step 0: "retryable" must be a boolean, got "yes"',
    ],
    [
      "a fractional fail_attempts",
      { script: [{ say: "a", fail_attempts: 0.5 }] },
      'invalid script: step 0: "fail_attempts" must be a non-negative integer, got 0.5',
    ],
  ])("rejects %s, naming the step", async (_name, doc, message) => {
    const error = await failure([{ role: "user", content: JSON.stringify(doc) }]);
    expect(error.message.startsWith(message)).toBe(true);
    expect(error.retryable).toBe(false);
  });

  it("fails the first fail_attempts attempts of a call in a retryable way, then plays the step", async () => {
    const messages = first([{ say: "made it", fail_attempts: 2, fail_message: "rate limited" }]);
    const attempt = async (n: number) => {
      const events: ProviderEvent[] = [];
      for await (const event of provider.stream({ model: "script", messages, tools: [], signal: new AbortController().signal, attempt: n }))
        events.push(...flat(event));
      return events;
    };
    for (const n of [1, 2]) {
      const error = await attempt(n).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderError);
      expect(error).toMatchObject({ message: "rate limited", retryable: true });
    }
    expect(texts(await attempt(3)).join("")).toBe("made it");
    // Without an attempt number a call is its first attempt.
    expect(await failure(messages)).toMatchObject({ retryable: true });
  });

  it("rejects a mistake in a later step already at the first call", async () => {
    const error = await failure(first([{ say: "fine" }, { say: "bad", chunks: "two" }]));
    expect(error.message).toBe('invalid script: step 1: "chunks" must be a positive integer, got "two"');
  });

  it("echoes text that is not a script, in a few deltas", async () => {
    const events = await collect([{ role: "user", content: "hello there, gateway" }]);
    expect(events.length).toBeGreaterThan(1);
    expect(texts(events).join("")).toBe("You said: hello there, gateway");
    // JSON that is not a script is text too.
    expect(texts(await collect([{ role: "user", content: '{"scripts": []}' }])).join("")).toBe('You said: {"scripts": []}');
  });

  it("echoes the latest user message of a chat", async () => {
    const messages: ChatMessage[] = [
      { role: "user", content: "first" },
      { role: "assistant", content: "You said: first" },
      { role: "user", content: "second" },
    ];
    expect(texts(await collect(messages)).join("")).toBe("You said: second");
  });

  it("fails without a user message", async () => {
    expect((await failure([{ role: "system", content: "x" }])).message).toBe("the scripted provider needs a user message");
  });

  it("waits delay_ms before the step", async () => {
    const started = performance.now();
    const events = await collect(first([{ say: "late", delay_ms: 50 }]));
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(texts(events)).toEqual(["late"]);
  });

  it("paces a say step's deltas every_ms apart, one at a time, and stops between them on abort", { timeout: 5_000 }, async () => {
    const steps = [{ say: "one two three", chunks: 3, every_ms: 40 }];
    const gaps: number[] = [];
    let last = performance.now();
    const iterator = provider
      .stream({ model: "m", messages: first(steps), tools: [], signal: new AbortController().signal })
      [Symbol.asyncIterator]();
    const seen: string[] = [];
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) {
      // Each delta is its own step of the stream, not a batch.
      expect(Array.isArray(r.value)).toBe(false);
      seen.push(...texts([...flat(r.value)]));
      gaps.push(performance.now() - last);
      last = performance.now();
    }
    expect(seen).toEqual(["one ", "two ", "three"]);
    expect(gaps.slice(1).every((gap) => gap >= 35)).toBe(true);

    const controller = new AbortController();
    const paced = provider
      .stream({ model: "m", messages: first([{ say: "a b", chunks: 2, every_ms: 60_000 }]), tools: [], signal: controller.signal })
      [Symbol.asyncIterator]();
    expect(texts([...flat((await paced.next()).value as ProviderEvent)])).toEqual(["a "]);
    const next = paced.next();
    const reason = new Error("turn cancelled");
    controller.abort(reason);
    await expect(next).rejects.toBe(reason);
  });

  it("stops waiting when the signal aborts, with the signal's reason", { timeout: 5_000 }, async () => {
    const controller = new AbortController();
    const iterator = provider
      .stream({ model: "m", messages: first([{ say: "never", delay_ms: 60_000 }]), tools: [], signal: controller.signal })
      [Symbol.asyncIterator]();
    const next = iterator.next();
    const reason = new Error("turn cancelled");
    controller.abort(reason);
    await expect(next).rejects.toBe(reason);
  });

  it("does not start when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort(new Error("gone"));
    await expect(collect(first([{ say: "x" }]), controller.signal)).rejects.toThrow("gone");
  });
});
