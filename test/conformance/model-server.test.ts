/** The scripted model server, consumed by the official `openai` client as a gateway would. */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelServer } from "../../packages/conformance/src/model-server.js";

const server = new ModelServer({ toolMap: { shell: "run_command", write_file: { name: "create_file", args: { path: "file_path" } } } });
let client: OpenAI;
beforeAll(async () => {
  client = new OpenAI({ baseURL: await server.start(), apiKey: "unused", maxRetries: 0 });
});
afterAll(() => server.close());

const user = (content: string) => [{ role: "user" as const, content }];

describe("ModelServer", () => {
  it("streams the scripted text in pieces, with reasoning, tool calls under the mapped name and usage", async () => {
    const token = ModelServer.newToken();
    const script = server.script(token, [
      {
        reply: {
          reasoning: "thinking",
          text: "Hello there",
          chunks: 3,
          toolCalls: [{ tool: "shell", args: { command: "ls" } }],
          usage: { prompt_tokens: 7, completion_tokens: 5 },
        },
      },
    ]);
    const stream = await client.chat.completions.create({
      model: "m",
      messages: user(`hi ${token}`),
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let reasoning = "";
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    const calls: { name?: string; arguments?: string }[] = [];
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      text += choice.delta.content ?? "";
      reasoning += (choice.delta as { reasoning_content?: string }).reasoning_content ?? "";
      for (const call of choice.delta.tool_calls ?? []) calls.push({ ...call.function });
      finish = choice.finish_reason ?? finish;
    }
    expect(text).toBe("Hello there");
    expect(reasoning).toBe("thinking");
    expect(calls).toEqual([{ name: "run_command", arguments: '{"command":"ls"}' }]);
    expect(finish).toBe("tool_calls");
    expect(usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 });
    expect(script.calls).toHaveLength(1);
    expect(script.problems).toEqual([]);
  });

  it("answers a non-streaming call with one completion", async () => {
    const token = ModelServer.newToken();
    server.script(token, [{ reply: { text: "plain answer", usage: { prompt_tokens: 1, completion_tokens: 2 } } }]);
    const completion = await client.chat.completions.create({ model: "m", messages: user(token) });
    expect(completion.choices[0]?.message.content).toBe("plain answer");
    expect(completion.choices[0]?.finish_reason).toBe("stop");
    expect(completion.usage?.total_tokens).toBe(3);
  });

  it("answers a non-streaming call with reasoning_content beside the content, and tool calls under the mapped tool and argument names", async () => {
    const token = ModelServer.newToken();
    const exchanges: [string, unknown][] = [];
    const script = server.script(token, [
      { reply: { reasoning: "first this", toolCalls: [{ tool: "write_file", args: { path: "a.txt", content: "x" } }] } },
    ]);
    script.onExchange = (kind, frame) => exchanges.push([kind, frame]);
    const completion = await client.chat.completions.create({ model: "m", messages: user(token) });
    const message = completion.choices[0]?.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(message.reasoning_content).toBe("first this");
    expect(message.tool_calls?.map((c) => (c.type === "function" ? [c.function.name, JSON.parse(c.function.arguments)] : c))).toEqual([
      ["create_file", { file_path: "a.txt", content: "x" }],
    ]);
    expect(completion.choices[0]?.finish_reason).toBe("tool_calls");
    expect(exchanges).toEqual([
      ["request", { http: "POST /v1/chat/completions", body: expect.objectContaining({ model: "m" }) }],
      ["response", { status: 200, body: completion }],
    ]);
  });

  it("keeps concurrent scripts apart by token and records failed expectations", async () => {
    const [a, b] = [ModelServer.newToken(), ModelServer.newToken()];
    const sa = server.script(a, [{ reply: { text: "for a" }, expect: (r) => (r.tools ? undefined : "tools were not offered") }]);
    const sb = server.script(b, [{ reply: { text: "for b" } }]);
    const [ra, rb] = await Promise.all([
      client.chat.completions.create({ model: "m", messages: user(`question ${a}`) }),
      client.chat.completions.create({ model: "m", messages: user(`question ${b}`) }),
    ]);
    expect(ra.choices[0]?.message.content).toBe("for a");
    expect(rb.choices[0]?.message.content).toBe("for b");
    expect(sa.problems).toEqual(["model call 1: tools were not offered"]);
    expect(sb.problems).toEqual([]);
  });

  it("fails an unscripted call loudly: HTTP 400 naming it, recorded for the scenario", async () => {
    const token = ModelServer.newToken();
    const script = server.script(token, [{ reply: { text: "only one" } }]);
    await client.chat.completions.create({ model: "m", messages: user(token) });
    const second = client.chat.completions.create({ model: "m", messages: user(`${token} again`) });
    await expect(second).rejects.toMatchObject({ status: 400, message: expect.stringContaining(`call 2 for ${token}`) });
    expect(script.problems).toEqual([expect.stringContaining("an unscripted model call: call 2")]);
    await expect(client.chat.completions.create({ model: "m", messages: user("no token here") })).rejects.toMatchObject({ status: 400 });
    expect(server.unscripted.at(-1)).toContain('"no token here"');
  });

  it("answers a scripted HTTP error and holds an answer until released", async () => {
    const token = ModelServer.newToken();
    let release!: () => void;
    const script = server.script(token, [
      { reply: { error: { status: 400, message: "model refused" } } },
      { reply: { text: "released", hold: new Promise<void>((resolve) => (release = resolve)) } },
    ]);
    await expect(client.chat.completions.create({ model: "m", messages: user(token) })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("model refused"),
    });
    const held = client.chat.completions.create({ model: "m", messages: user(token) });
    await script.waitForCall(2);
    release();
    expect((await held).choices[0]?.message.content).toBe("released");
  });
});
