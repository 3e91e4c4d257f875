/** The gateway configuration of windows, retries and context: defaults, overrides, and errors that name the place. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, readConfigFile, resolveConfig } from "../../packages/gateway/src/config.js";

function configFile(value: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), "turnspec-config-")), "gateway.json");
  writeFileSync(file, JSON.stringify(value));
  return file;
}

describe("execution windows, retries and context in the configuration", () => {
  it("has the documented defaults", () => {
    const config = resolveConfig();
    expect(config.windowLimits).toEqual({ max_agent_rounds_per_window: 10, max_tool_calls_per_window: 40, max_wall_clock_ms_per_window: 600_000, max_provider_tokens_per_window: 200_000 });
    expect(config.windowTotals).toEqual({ max_agent_rounds: 40, max_tool_calls: 160, max_wall_clock_ms: 3_600_000, max_provider_tokens: 1_000_000 });
    expect(config.providerRetry).toEqual({ max_attempts: 4, initial_delay_ms: 1000, backoff_multiplier: 2, max_delay_ms: 30_000 });
    expect(config.toolRetry).toEqual({ max_attempts: 3, initial_delay_ms: 500, backoff_multiplier: 2, max_delay_ms: 10_000 });
    expect(config.context).toEqual({ maxHistoryTokens: 100_000, keepRecentMessages: 8 });
    expect([config.maxAgentRounds, config.maxToolCalls]).toEqual([200, 800]);
  });

  it("takes each field from the file, keeping the defaults of the others", () => {
    const config = resolveConfig(
      readConfigFile(
        configFile({
          tools: { execution_windows: { max_tool_calls_per_window: 5, total: { max_provider_tokens: 9 } }, retry: { max_attempts: 1 } },
          providers: { retry: { initial_delay_ms: 7 } },
          context: { keep_recent_messages: 3 },
        }),
      ),
    );
    expect(config.windowLimits.max_tool_calls_per_window).toBe(5);
    expect(config.windowLimits.max_agent_rounds_per_window).toBe(10);
    expect(config.windowTotals).toMatchObject({ max_provider_tokens: 9, max_agent_rounds: 40 });
    expect(config.toolRetry).toMatchObject({ max_attempts: 1, initial_delay_ms: 500 });
    expect(config.providerRetry).toMatchObject({ max_attempts: 4, initial_delay_ms: 7 });
    expect(config.context).toEqual({ maxHistoryTokens: 100_000, keepRecentMessages: 3 });
  });

  it.each([
    [{ tools: { execution_windows: { max_tool_calls_per_window: 0 } } }, "tools/execution_windows/max_tool_calls_per_window"],
    [{ tools: { execution_windows: { total: { max_rounds: 3 } } } }, "tools/execution_windows/total"],
    [{ providers: { retry: { backoff_multiplier: 0.5 } } }, "providers/retry/backoff_multiplier"],
    [{ context: { max_history_tokens: "lots" } }, "context/max_history_tokens"],
  ])("refuses %j, naming where it is wrong", (value, pointer) => {
    const file = configFile(value);
    expect(() => readConfigFile(file)).toThrow(ConfigError);
    expect(() => readConfigFile(file)).toThrow(pointer);
  });
});
