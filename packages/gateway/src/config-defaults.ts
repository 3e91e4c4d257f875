/**
 * The defaults of the gateway's configuration, as its schema declares them: the `default`
 * keywords of gateway_config.json, written nowhere else. The gateway fills in with them
 * what a configuration file leaves out (config.ts), and the command line's help texts name
 * them. They are read, on first use, from the protocol package's OpenRPC document, which
 * carries every schema of the protocol.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { GatewayRetryPolicy } from "@turnspec/protocol/types";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

let configSchema: Json | undefined;

/** The GatewayConfig schema of the protocol's OpenRPC document. */
function schema(): Json {
  if (configSchema === undefined) {
    const file = createRequire(import.meta.url).resolve("@turnspec/protocol/openrpc.json");
    const document = JSON.parse(readFileSync(file, "utf8")) as Json;
    configSchema = member(member(member(document, "components"), "schemas"), "GatewayConfig");
    if (configSchema === undefined) throw new Error(`${file} has no components.schemas.GatewayConfig`);
  }
  return configSchema;
}

function member(value: Json | undefined, key: string): Json | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value[key] : undefined;
}

/**
 * The default the configuration schema declares for the field at `path`, a JSON pointer
 * into a configuration file ("/tools/shell_timeout_ms"), where "*" stands for any key of a
 * map or any item of a list ("/mcp_servers/*\/startup_timeout_ms"). Throws when the schema
 * declares none there.
 */
export function configDefault(path: string): Json {
  let node: Json | undefined = schema();
  for (const segment of path.split("/").slice(1)) {
    node = segment === "*" ? (member(node, "additionalProperties") ?? member(node, "items")) : member(member(node, "properties"), segment);
  }
  const value = member(node, "default");
  if (value === undefined) throw new Error(`the configuration schema (gateway_config.json) declares no default for ${path}`);
  return value;
}

function typed<T extends Json>(path: string, expected: string, is: (value: Json) => value is T): T {
  const value = configDefault(path);
  if (!is(value)) throw new Error(`the configuration schema's default for ${path} is ${JSON.stringify(value)}, not ${expected}`);
  return value;
}

export const defaultNumber = (path: string): number => typed(path, "a number", (v): v is number => typeof v === "number");
export const defaultString = (path: string): string => typed(path, "a string", (v): v is string => typeof v === "string");
export const defaultBoolean = (path: string): boolean => typed(path, "a boolean", (v): v is boolean => typeof v === "boolean");
export const defaultStrings = (path: string): string[] =>
  typed(path, "a list of strings", (v): v is string[] => Array.isArray(v) && v.every((s) => typeof s === "string"));

/** A retry policy's default, every field of it given. */
export function defaultRetryPolicy(path: string): Required<GatewayRetryPolicy> {
  const field = (name: keyof GatewayRetryPolicy) => {
    const value = member(configDefault(path), name);
    if (typeof value !== "number")
      throw new Error(`the configuration schema's default for ${path} gives ${name} ${JSON.stringify(value)}, not a number`);
    return value;
  };
  return {
    max_attempts: field("max_attempts"),
    initial_delay_ms: field("initial_delay_ms"),
    backoff_multiplier: field("backoff_multiplier"),
    max_delay_ms: field("max_delay_ms"),
  };
}
