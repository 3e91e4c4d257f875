/**
 * The gateway's secrets that stay readable from its process after start-up. Linux keeps
 * a process's starting environment and command line in /proc/<pid>/environ and
 * /proc/<pid>/cmdline for its whole life: removing TURNSPEC_TOKEN from process.env (as
 * serve does) changes neither. Any process of the same user outside a PID namespace can
 * read them, which is what a shell command of a turn is when it runs unconfined (no
 * bubblewrap, full_access, an approved escape_sandbox). The command line can be written
 * over, and the CLI does so for a --token value (bin/command-line-token.ts); the
 * environment cannot: Node 20 cannot re-execute itself in place, and a relaunched child
 * would leave its parent alive holding the same block. So the gateway says so in every
 * turn's security snapshot instead (the `gateway_secret_isolation` degradation) and the
 * operator closes it by starting the gateway with --token-file and without the secret
 * variables.
 */
import { readFileSync } from "node:fs";
import { GATEWAY_TOKEN_VARIABLE } from "./permissions/security.js";
import type { ResolvedConfig } from "./config.js";

/** The variables whose values are the gateway's own secrets under `config`: its token and the providers' API keys. */
export function gatewaySecretVariables(config: Pick<ResolvedConfig, "openai" | "namedProviders" | "cliRuntimes">): string[] {
  const names = new Set([GATEWAY_TOKEN_VARIABLE, "OPENAI_API_KEY"]);
  if (config.openai) names.add(config.openai.apiKeyEnv);
  for (const endpoint of config.namedProviders.values()) names.add(endpoint.apiKeyEnv);
  for (const runtime of config.cliRuntimes.values()) names.add(runtime.apiKeyEnv);
  return [...names];
}

/** What a process's start-up block shows: its environment (NUL-separated NAME=value) and its arguments (NUL-separated). */
export interface StartBlock {
  readonly environ: string;
  readonly cmdline: string;
}

/** This process's start-up block, or undefined where /proc does not exist (not Linux). */
export function ownStartBlock(): StartBlock | undefined {
  try {
    return { environ: readFileSync("/proc/self/environ", "latin1"), cmdline: readFileSync("/proc/self/cmdline", "latin1") };
  } catch {
    return undefined;
  }
}

/**
 * The secrets `block` exposes, by name: each of `secretNames` set (non-empty) in its
 * environment, and `--token` when the token was given on the command line.
 */
export function exposedSecrets(block: StartBlock | undefined, secretNames: readonly string[]): string[] {
  if (!block) return [];
  const set = new Set(
    block.environ
      .split("\0")
      .filter((entry) => /^[^=]+=./s.test(entry))
      .map((entry) => entry.slice(0, entry.indexOf("="))),
  );
  const exposed = secretNames.filter((name) => set.has(name));
  const args = block.cmdline.split("\0");
  if (args.some((arg) => arg === "--token" || arg.startsWith("--token="))) exposed.push("--token");
  return exposed;
}

/**
 * The start-up warning for secrets the process still shows: what, where, who can read
 * them, and (for the token) what keeps it from them. $TURNSPEC_TOKEN is not discouraged:
 * it keeps the token out of the process list; only --token-file keeps it from this user's
 * own unconfined commands too.
 */
export function exposedSecretsWarning(exposed: readonly string[], pid: number): string {
  const names = exposed.length === 1 ? exposed[0]! : `${exposed.slice(0, -1).join(", ")} and ${exposed.at(-1)}`;
  const files = [exposed.some((n) => n !== "--token") && "environ", exposed.includes("--token") && "cmdline"].filter(Boolean).join(" and ");
  const token = exposed.includes("--token") || exposed.includes(GATEWAY_TOKEN_VARIABLE);
  return (
    `warning: ${names} ${exposed.length === 1 ? "stays" : "stay"} readable in /proc/${pid}/${files} while the gateway runs, ` +
    `so a shell command that a turn runs unconfined can read ${exposed.length === 1 ? "it" : "them"}` +
    (token ? "; --token-file keeps the token out of its reach" : "")
  );
}
