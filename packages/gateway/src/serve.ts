/**
 * `turnspec serve`: assembles the reference gateway (store, providers, tools, config) and
 * serves it over stdio or WebSocket. Logs go to stderr only: on stdio, stdout carries
 * nothing but protocol frames.
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import type { GatewayConfig } from "@turnspec/protocol/types";
import { ConfigError, readConfigFile, resolveConfig, type ResolvedConfig } from "./config.js";
import { Gateway } from "./engine/gateway.js";
import type { Connection } from "./views/connections.js";
import { OpenAIProvider } from "./providers/openai.js";
import type { ModelProvider } from "./providers/provider.js";
import { ScriptedProvider } from "./providers/scripted.js";
import { isPostgresUrl, openStore } from "./store/open.js";
import { GatewayFiles, type OwnFile } from "./permissions/own-files.js";
import { redact } from "./store/postgres.js";
import type { EventStore } from "./store/store.js";
import { builtinTools } from "./tools/registry.js";
import { payloadTooLargeFrame } from "./payload-too-large.js";
import { exposedSecrets, exposedSecretsWarning, gatewaySecretVariables, ownStartBlock } from "./serve-secrets.js";
import { StdioTransport } from "@turnspec/rpc/transport";
import { isLoopbackHost } from "@turnspec/rpc/transport";
import { startWebSocketServer, type RunningWebSocketServer, type UpgradeRefusal, type WebSocketTransport } from "@turnspec/rpc/transport";

export interface ServeOptions {
  readonly stdio: boolean;
  readonly port?: number;
  readonly host: string;
  /** The bearer token; undefined with `noAuth` false means "generate one and print it". */
  readonly token?: string;
  readonly noAuth: boolean;
  /** The file the token was read from (--token-file): one of the gateway's own files, out of every tool's reach. */
  readonly tokenFile?: string;
  /** Browser origins whose pages may connect (--allow-origin); default none. */
  readonly allowedOrigins?: readonly string[];
  /** Where the event log is: a SQLite file or a postgres:// URL (`--store`, or `--db` for a file); default the config file's `store`, then defaultStore(). */
  readonly store?: string;
  readonly memory: boolean;
  readonly configFile?: string;
  readonly providerUrl?: string;
  readonly maxFrameBytes?: number;
  /** How long a question stays open (--question-timeout-ms); overrides the config file's questions.timeout_ms. */
  readonly questionTimeoutMs?: number;
}

/** Where the event log was kept, in the working folder, when neither the command line nor the config file named one: still used when it exists. */
export const LEGACY_STORE = ".turnspec/gateway.sqlite";

/**
 * The event log of `turnspec serve` when neither the command line nor the config file names
 * one: a file of the user's state folder ($XDG_STATE_HOME, else ~/.local/state), one per
 * working folder (named for it), out of every thread's default working folder, where a
 * turn's command (an `rm -rf`, a `git clean -fdx`) could delete it. A log at the old place,
 * `.turnspec/gateway.sqlite` in the working folder, is still used while it exists
 * (`legacy`), so no thread is lost; the operator is told how to move it.
 */
export function defaultStore(
  cwd: string = process.cwd(),
  env: Readonly<Record<string, string | undefined>> = process.env,
): { readonly path: string; readonly legacy: boolean } {
  const legacy = resolve(cwd, LEGACY_STORE);
  if (existsSync(legacy)) return { path: legacy, legacy: true };
  return { path: stateStore(cwd, env), legacy: false };
}

/** The event log of the working folder `cwd` in the user's state folder. */
export function stateStore(cwd: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(homedir(), ".local", "state");
  const name =
    basename(cwd)
      .replace(/[^A-Za-z0-9._-]/g, "_")
      .slice(0, 40) || "root";
  const tag = createHash("sha256").update(cwd, "utf8").digest("hex").slice(0, 12);
  return join(state, "turnspec", `${name}-${tag}`, "gateway.sqlite");
}

/** The model providers a configuration provides. */
export function providersFor(
  config: ResolvedConfig,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Map<string, ModelProvider> {
  const providers = new Map<string, ModelProvider>([["scripted", new ScriptedProvider()]]);
  if (config.openai) {
    providers.set(
      "openai",
      new OpenAIProvider({
        baseURL: config.openai.baseURL,
        model: config.openai.model,
        apiKey: env[config.openai.apiKeyEnv] ?? "not-needed-for-local-servers",
      }),
    );
  }
  // Each named endpoint is its own provider; a turn's model, when given, overrides the endpoint's.
  for (const [name, endpoint] of config.namedProviders) {
    providers.set(
      name,
      new OpenAIProvider({
        baseURL: endpoint.baseURL,
        model: endpoint.model,
        apiKey: env[endpoint.apiKeyEnv] ?? "not-needed-for-local-servers",
      }),
    );
  }
  return providers;
}

export function createGateway(store: EventStore, config: ResolvedConfig, log: (message: string) => void, ownFiles?: GatewayFiles): Gateway {
  const tools = builtinTools({ shellTimeoutMs: config.shellTimeoutMs, webFetchTimeoutMs: config.webFetchTimeoutMs });
  // What this process's /proc entries still show of its secrets goes into every snapshot.
  const exposed = exposedSecrets(ownStartBlock(), gatewaySecretVariables(config));
  if (exposed.length > 0) {
    log(exposedSecretsWarning(exposed, process.pid));
  }
  return new Gateway({
    store,
    config,
    providers: providersFor(config),
    tools,
    log,
    exposedSecrets: exposed,
    ...(ownFiles ? { ownFiles } : {}),
  });
}

export interface RunningGateway {
  readonly gateway: Gateway;
  readonly server?: RunningWebSocketServer;
  close(): Promise<void>;
}

/** The gateway of a configuration, on its store, not yet serving any transport (for an in-process client, such as the AG-UI bridge). */
export async function openGateway(
  options: Pick<ServeOptions, "store" | "memory" | "configFile" | "providerUrl" | "maxFrameBytes" | "questionTimeoutMs" | "tokenFile">,
  log: (message: string) => void,
): Promise<{ gateway: Gateway; config: ResolvedConfig; described: string; storeFile?: string; close(): Promise<void> }> {
  const fileConfig: GatewayConfig = options.configFile ? readConfigFile(options.configFile) : {};
  const config = resolveConfig(fileConfig, {
    ...(options.providerUrl ? { providerUrl: options.providerUrl } : {}),
    ...(options.maxFrameBytes ? { maxFrameBytes: options.maxFrameBytes } : {}),
    ...(options.questionTimeoutMs ? { questionTimeoutMs: options.questionTimeoutMs } : {}),
  });
  const fallback = options.memory || options.store !== undefined || fileConfig.store !== undefined ? undefined : defaultStore();
  const location = options.store ?? fileConfig.store ?? fallback?.path ?? ":memory:";
  if (fallback?.legacy) {
    log(
      `warning: the event log is ${LEGACY_STORE} in the working folder, where it was kept by default before, and is used while it is there. ` +
        `That folder is every thread's default working folder, so a turn's command (rm -rf, git clean -fdx) could delete it. ` +
        `To move it, stop the gateway and move ${LEGACY_STORE} and the files beside it whose names start with gateway.sqlite into ${dirname(stateStore(process.cwd()))}/, ` +
        `or give its place with --store to keep it where it is without this warning.`,
    );
  }
  const sqliteFile = options.memory || isPostgresUrl(location) ? undefined : location;
  // A log of its own folder: other users need not see it (SQLite makes the folder with the process's umask otherwise).
  if (sqliteFile && fallback && !fallback.legacy) mkdirSync(dirname(sqliteFile), { recursive: true, mode: 0o700 });
  const store = openStore(options.memory ? { memory: true } : isPostgresUrl(location) ? { url: location } : { file: location });
  const described = options.memory ? "memory store" : `store ${isPostgresUrl(location) ? redact(location) : location}`;
  const own: OwnFile[] = [
    ...(sqliteFile ? [{ path: sqliteFile, what: "event log", withSiblings: true }] : []),
    ...(options.configFile ? [{ path: options.configFile, what: "configuration file" }] : []),
    ...(options.tokenFile ? [{ path: options.tokenFile, what: "token file" }] : []),
  ];
  const gateway = createGateway(store, config, log, new GatewayFiles(own));
  // On a shared store: no client is served before this instance hears the others' commits.
  await gateway.ready;
  return {
    gateway,
    config,
    described,
    // The SQLite file of the log, for what is kept beside it (the AG-UI bridge's thread map).
    ...(sqliteFile === undefined ? {} : { storeFile: sqliteFile }),
    close: async () => {
      await gateway.close();
      store.close();
    },
  };
}

export async function serve(
  options: ServeOptions,
  log: (message: string) => void = (m) => process.stderr.write(`${m}\n`),
): Promise<RunningGateway> {
  if (options.noAuth && !options.stdio) refuseUnauthenticatedHost(options.host, "--no-auth");
  const { gateway, config, described, close } = await openGateway(options, log);
  const shutdown = async (server?: RunningWebSocketServer) => {
    await server?.close();
    await close();
  };

  if (options.stdio) {
    const transport: StdioTransport = new StdioTransport({
      input: process.stdin,
      output: process.stdout,
      maxFrameBytes: config.maxFrameBytes,
      // Every frame the gateway sends is JSON.stringify's text, or a notification spliced
      // from the stored JSON of its params (see eventFrame).
      compactJson: true,
      // Behind the commit barrier like every other frame, so it cannot overtake a reply.
      onOversized: (bytes) => connection.send(payloadTooLargeFrame(config.maxFrameBytes, bytes)),
    });
    const connection: Connection = gateway.connect(transport);
    const closed = transport.onclose;
    transport.onclose = () => {
      // stdin ended: the client sent its last frame. Every request it sent is answered
      // and flushed before the gateway stops; turns still running are Blocked, for turn/resume.
      void (async () => {
        await connection.settled();
        await shutdown();
        await transport.close();
        closed?.();
        process.exit(0);
      })();
    };
    log(`turnspec gateway serving on stdio (${described})`);
    return { gateway, close: () => shutdown() };
  }

  const connections = new WeakMap<WebSocketTransport, Connection>();
  const token = options.noAuth ? undefined : (options.token ?? randomBytes(24).toString("base64url"));
  const server = await startWebSocketServer({
    host: options.host,
    port: options.port ?? 0,
    token,
    ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
    maxFrameBytes: config.maxFrameBytes,
    oversizedReply: payloadTooLargeFrame,
    onConnection: (transport) => connections.set(transport, gateway.connect(transport)),
    // Behind the commit barrier like every other frame, so it cannot overtake a reply.
    sendOversizedAnswer: (frame, transport) => connections.get(transport)?.send(frame),
    onOversized: (bytes) => log(`refused a ${bytes}-byte frame (limit ${config.maxFrameBytes})`),
    onError: (error) => log(`server error: ${error.message}`),
    onRefused: (refusal) => log(refusalLine(refusal)),
  });
  log(`listening on ws://${options.host}:${server.port} (${described})`);
  if (token && options.token === undefined) log(`token: ${token}`);
  if (!token) log("warning: authentication is off (--no-auth): any local user or process that reaches this port can run commands as you");
  return { gateway, server, close: () => shutdown(server) };
}

/**
 * The log line of a refused WebSocket upgrade: its cause, and what lets it in when it should
 * be. A browser is told nothing of why (its page only sees the connection close), so this
 * line is where a developer finds out.
 */
export function refusalLine(refusal: UpgradeRefusal): string {
  const from = `from ${refusal.remoteAddress ?? "an unknown address"}${refusal.origin === undefined ? "" : ` (origin ${shownOrigin(refusal.origin)})`}`;
  switch (refusal.cause) {
    case "origin": {
      const origin = shownOrigin(refusal.origin ?? "");
      return `refused a WebSocket upgrade from origin ${origin}: not allowed; start with --allow-origin ${origin} to allow it`;
    }
    case "no_token":
      return `refused a WebSocket upgrade ${from}: no bearer token; a client sends it as Authorization: Bearer <token>, a browser page as ?token=<token>`;
    case "wrong_token":
      return `refused a WebSocket upgrade ${from}: the bearer token does not match the one this gateway was started with (--token, --token-file or $TURNSPEC_TOKEN)`;
    case "authenticate":
      return `refused a WebSocket upgrade ${from}: not authenticated`;
  }
}

/** An Origin header as the log shows it: at most 200 characters, so that a hostile header cannot flood the log. */
function shownOrigin(origin: string): string {
  return origin.length > 200 ? `${origin.slice(0, 200)}…` : origin;
}

/**
 * Without a token, whoever reaches the port runs commands: only this machine may. Throws a
 * ConfigError naming `what` serves without authentication when `host` is not a loopback address.
 */
export function refuseUnauthenticatedHost(host: string, what: string): void {
  if (!isLoopbackHost(host))
    throw new ConfigError(
      `${what} serves without authentication, which is allowed on a loopback address only (127.0.0.1, ::1, localhost), not on ${host}`,
    );
}
