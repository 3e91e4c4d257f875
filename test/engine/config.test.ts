/** The gateway configuration: its defaults (the schema's default keywords), overrides, and errors that name the place. */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, readConfigFile, resolveConfig } from "../../packages/gateway/src/config.js";
import { configDefault } from "../../packages/gateway/src/config-defaults.js";

function configFile(value: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), "turnspec-config-")), "gateway.json");
  writeFileSync(file, JSON.stringify(value));
  return file;
}

describe("execution windows, retries and context in the configuration", () => {
  it("has the documented defaults", () => {
    const config = resolveConfig();
    expect(config.windowLimits).toEqual({
      max_agent_rounds_per_window: 10,
      max_tool_calls_per_window: 40,
      max_wall_clock_ms_per_window: 600_000,
      max_provider_tokens_per_window: 200_000,
    });
    expect(config.windowTotals).toEqual({
      max_agent_rounds: 40,
      max_tool_calls: 160,
      max_wall_clock_ms: 3_600_000,
      max_provider_tokens: 1_000_000,
    });
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

describe("the configuration's defaults", () => {
  const schema = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "schemas", "gateway_config.json"), "utf8")) as Record<
    string,
    unknown
  >;

  /** Every `default` keyword of the schema, by the pointer of its field in a configuration file ("*" for any key or item). */
  function declared(node: unknown, path = ""): [string, unknown][] {
    if (typeof node !== "object" || node === null) return [];
    const n = node as Record<string, unknown>;
    const own: [string, unknown][] = path !== "" && "default" in n ? [[path, n.default]] : [];
    const properties = Object.entries((n.properties as Record<string, unknown> | undefined) ?? {}).flatMap(([name, sub]) =>
      declared(sub, `${path}/${name}`),
    );
    const each = [n.additionalProperties, n.items].flatMap((sub) => declared(sub, `${path}/*`));
    return [...own, ...properties, ...each];
  }

  it("are read from the schema's default keywords, each of them", () => {
    const defaults = declared(schema);
    expect(defaults.length).toBeGreaterThan(40);
    for (const [path, value] of defaults) expect(configDefault(path), path).toEqual(value);
  });

  it("are what a configuration that leaves everything out resolves to", () => {
    const config = resolveConfig();
    const read = (path: string) => configDefault(path);
    expect([config.shellTimeoutMs, config.maxShellTimeoutMs, config.webFetchTimeoutMs, config.restrictedMaxShellTimeoutMs]).toEqual(
      [
        "/tools/shell_timeout_ms",
        "/tools/max_shell_timeout_ms",
        "/tools/web_fetch_timeout_ms",
        "/tools/restricted_max_shell_timeout_ms",
      ].map(read),
    );
    expect([
      config.maxFrameBytes,
      config.maxBatchSize,
      config.maxSpawnDepth,
      config.gatewayId,
      config.leaseTimeoutMs,
      config.questionTimeoutMs,
    ]).toEqual(
      [
        "/limits/max_frame_bytes",
        "/limits/max_batch_size",
        "/limits/max_spawn_depth",
        "/gateway_id",
        "/lease_timeout_ms",
        "/questions/timeout_ms",
      ].map(read),
    );
    expect(config.agent).toMatchObject({
      identityId: read("/agent/identity_id"),
      displayName: read("/agent/display_name"),
      revision: read("/agent/revision"),
    });
  });

  it("refuses a field the schema declares no default for, naming it", () => {
    expect(() => configDefault("/tools/default_cwd")).toThrow(
      "the configuration schema (gateway_config.json) declares no default for /tools/default_cwd",
    );
    expect(() => configDefault("/no/such/field")).toThrow("declares no default for /no/such/field");
  });

  it("are stated by the default keywords only: no description repeats one in prose", () => {
    const prose: string[] = [];
    const visit = (node: unknown, path: string) => {
      if (typeof node !== "object" || node === null) return;
      for (const [key, value] of Object.entries(node)) {
        if (key === "description" && typeof value === "string" && /\bDefault \S/.test(value)) prose.push(`${path}: ${value}`);
        else visit(value, `${path}/${key}`);
      }
    };
    visit(schema, "");
    expect(prose).toEqual([]);
  });
});

describe("a configuration file that is not JSON", () => {
  it("is refused with the line and column of the syntax error", () => {
    const file = join(mkdtempSync(join(tmpdir(), "turnspec-config-")), "gateway.json");
    writeFileSync(file, '{\n  "tools": {\n    "shell_timeout_ms": 30000,\n  }\n}\n');
    expect(() => readConfigFile(file)).toThrow(ConfigError);
    expect(() => readConfigFile(file)).toThrow(/^the config file .*gateway\.json is not valid JSON: line 4, column 3: /);
  });
});
