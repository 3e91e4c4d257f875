/**
 * A provider may yield several events at once, as one array (the scripted model does, for
 * the pieces of an answer): the gateway takes them exactly as if they had come one by one,
 * including across the points where a long burst yields to the event loop.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNotification } from "../../generated/registry.js";
import type { ModelProvider, ProviderEvent, ProviderStream } from "../../packages/gateway/src/providers/provider.js";
import { ofTurn, startHarness, text, type Harness } from "./harness.js";

/** Plays fixed events, one step per yield: each step an event alone or several in an array. */
class Playing implements ModelProvider {
  readonly name = "scripted";
  constructor(private readonly steps: readonly (ProviderEvent | readonly ProviderEvent[])[]) {}
  async *stream(): ProviderStream {
    for (const step of this.steps) yield step;
  }
}

const deltas = (from: number, to: number): ProviderEvent[] =>
  Array.from({ length: to - from }, (_, i) => ({ type: "text_delta", text: `w${from + i} ` }));
const events: ProviderEvent[] = [
  { type: "reasoning", text: "thinking" },
  ...deltas(0, 700),
  { type: "usage", input_tokens: 3, output_tokens: 700 },
];

/** What a client sees of a turn, without the ids and times that differ from one gateway to another. */
function seen(ns: readonly AnyNotification[]): unknown[] {
  return ns.map((n) => {
    const p = n.params as unknown as Record<string, unknown>;
    if (n.method === "item/agent_message/delta") return [n.method, p.sequence, p.delta];
    if (n.method === "item/completed")
      return [n.method, p.sequence, (p.item as { type: string; text?: string }).type, (p.item as { text?: string }).text];
    if (n.method === "turn/completed") return [n.method, p.sequence, (p.turn as { usage?: unknown }).usage];
    return [n.method, p.sequence];
  });
}

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    expect(h.protocolErrors, "every frame the gateway sent is valid in strict mode").toEqual([]);
    await h.close();
  }
});

async function play(steps: readonly (ProviderEvent | readonly ProviderEvent[])[]): Promise<unknown[]> {
  const h = await startHarness({ providers: new Map([["scripted", new Playing(steps)]]) });
  harnesses.push(h);
  const thread = await h.thread();
  const end = await h.runTurn({ thread_id: thread, turn_id: "trn_batches", input: text("go") });
  expect(end.method).toBe("turn/completed");
  return seen(ofTurn(h.received, "trn_batches"));
}

describe("events a provider yields at once", () => {
  it("give the same turn as the same events yielded one by one", async () => {
    const one = await play(events);
    expect(one.filter((e) => (e as unknown[])[0] === "item/agent_message/delta")).toHaveLength(700);
    // Split unevenly: an event alone, arrays across the 256-event bursts, an empty array, the usage inside one.
    const grouped = await play([events[0]!, events.slice(1, 300), [], events.slice(300, 301), events.slice(301, 600), events.slice(600)]);
    expect(grouped).toEqual(one);
    const allAtOnce = await play([events]);
    expect(allAtOnce).toEqual(one);
  });
});
