/** A ToolContext for tests that records what the tool streams. */
import type { ToolContext } from "../../packages/gateway/src/tools/tool.js";

export interface RecordedContext extends ToolContext {
  readonly emitted: { stream: string; delta: string }[];
}

export function testContext(cwd: string, overrides: Partial<ToolContext> = {}): RecordedContext {
  const emitted: { stream: string; delta: string }[] = [];
  return {
    cwd,
    signal: new AbortController().signal,
    env: { PATH: process.env.PATH },
    maxTimeoutMs: 60_000,
    emitted,
    ...overrides,
    emit: (stream, delta) => {
      emitted.push({ stream, delta });
      overrides.emit?.(stream, delta);
    },
  };
}
