/**
 * Where `turnspec serve` takes its bearer token from, in order: --token-file (a file only
 * its owner should read), --token (visible to every local user in /proc/<pid>/cmdline, so
 * discouraged), then $TURNSPEC_TOKEN. The variable is removed from the gateway's own
 * environment once read, so nothing the gateway starts inherits it.
 */
import { readFileSync } from "node:fs";
import { ConfigError } from "./config.js";

export interface TokenSources {
  readonly token?: string;
  readonly tokenFile?: string;
  /** The environment to read TURNSPEC_TOKEN from and remove it from (default process.env). */
  readonly env?: Record<string, string | undefined>;
}

/** The configured token, or undefined when none is (serve then generates one). */
export function serveToken(sources: TokenSources): string | undefined {
  const env = sources.env ?? process.env;
  const fromEnv = env.TURNSPEC_TOKEN;
  delete env.TURNSPEC_TOKEN;
  if (sources.tokenFile !== undefined && sources.token !== undefined)
    throw new ConfigError("--token and --token-file both name a token: give one");
  if (sources.tokenFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(sources.tokenFile, "utf8");
    } catch (error) {
      throw new ConfigError(`--token-file ${sources.tokenFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    // One line; the newline an editor or `echo` adds is not part of the token.
    const token = text.replace(/\r?\n$/, "");
    if (token === "" || /[\r\n]/.test(token))
      throw new ConfigError(
        `--token-file ${sources.tokenFile}: the file must hold the token on one line, got ${token === "" ? "an empty file" : "several lines"}`,
      );
    return token;
  }
  if (sources.token !== undefined && sources.token !== "") return sources.token;
  return fromEnv === undefined || fromEnv === "" ? undefined : fromEnv;
}
