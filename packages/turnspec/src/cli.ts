#!/usr/bin/env node
/**
 * The `turnspec` command line: argument parsing and exit codes only. The work is done by
 * the packages it loads, each when its command runs.
 */
// First: hides a --token value from the process's visible command line before anything else loads.
import { commandLineTokenWarning, tokenOnCommandLine } from "./command-line-token.js";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { LANGUAGES, OUTPUT_KINDS } from "@turnspec/generator/outputs";
// The gateway's configuration defaults, named by the help texts as its schema declares them (read when a help text is built).
import { configDefault } from "@turnspec/gateway/config-defaults";

/** `turnspec generate`'s options: yargs builds its --help and parses with them, and so does the quick path below. */
const GENERATE_OPTIONS = {
  schemas: { type: "string", describe: "The schemas folder (default: the config's, else schemas)" },
  out: { type: "string", describe: "The output folder (default: the config's, else generated)" },
  check: { type: "boolean", default: false, describe: "Write nothing; list stale files and exit 1 if any" },
  typecheck: { type: "boolean", default: false, describe: "Also type-check the output under strict settings" },
  support: {
    type: "string",
    describe: "Import specifier of the JSON-RPC support module (default: the config's, else @turnspec/rpc)",
    conflicts: "standalone",
  },
  standalone: {
    type: "boolean",
    describe:
      "Write the support module into <out>/support/ and import it from there: the output then depends on nothing (default: the config's, else off)",
  },
  outputs: {
    type: "string",
    array: true,
    choices: OUTPUT_KINDS,
    describe: "Emit only these outputs, each with what it imports (default: the config's, else all)",
  },
  lang: {
    type: "string",
    choices: LANGUAGES,
    describe:
      "The language of the output: typescript, a Python package, a Go module or a Rust crate written into --out (default: the config's, else typescript)",
  },
  "go-module": {
    type: "string",
    describe: "The module path of a Go output (default: the config's, else the protocol's title as one word)",
  },
  "crate-name": {
    type: "string",
    describe: "The crate name of a Rust output (default: the config's, else the protocol's title in snake case)",
  },
  config: { type: "string", describe: "The config file (default: turnspec.config.json in the working folder, when there is one)" },
  watch: { type: "boolean", default: false, describe: "Generate again whenever a schema file changes, until interrupted" },
  cache: {
    type: "boolean",
    default: true,
    describe:
      "Reuse the output of an earlier run of the same schemas, options and turnspec version, kept in node_modules/.cache/turnspec or $TURNSPEC_CACHE_DIR (--no-cache to generate afresh)",
  },
} as const;

interface GenerateArgs {
  readonly schemas?: string | undefined;
  readonly out?: string | undefined;
  readonly check: boolean;
  readonly typecheck: boolean;
  readonly support?: string | undefined;
  readonly standalone?: boolean | undefined;
  readonly outputs?: readonly string[] | undefined;
  readonly lang?: string | undefined;
  readonly "go-module"?: string | undefined;
  readonly "crate-name"?: string | undefined;
  readonly config?: string | undefined;
  readonly watch: boolean;
  readonly cache: boolean;
}

async function generate(argv: GenerateArgs): Promise<void> {
  // Each command loads its own modules, so `--help` and the other commands stay quick.
  const { runGenerate } = await import("@turnspec/generator/generate-command");
  process.exitCode = await runGenerate({
    ...(argv.schemas === undefined ? {} : { schemasDir: resolve(argv.schemas) }),
    ...(argv.out === undefined ? {} : { outDir: resolve(argv.out) }),
    check: argv.check,
    typecheck: argv.typecheck,
    ...(argv.support === undefined ? {} : { support: argv.support }),
    ...(argv.outputs === undefined ? {} : { outputs: argv.outputs as (typeof OUTPUT_KINDS)[number][] }),
    ...(argv.config === undefined ? {} : { configFile: argv.config }),
    watch: argv.watch,
    cache: argv.cache,
    ...(argv.standalone === undefined ? {} : { standalone: argv.standalone }),
    ...(argv.lang === undefined ? {} : { lang: argv.lang as (typeof LANGUAGES)[number] }),
    ...(argv["go-module"] === undefined ? {} : { goModule: argv["go-module"] }),
    ...(argv["crate-name"] === undefined ? {} : { crateName: argv["crate-name"] }),
  });
}

/**
 * `turnspec generate`, run on every save and in CI, without loading yargs: its flags read
 * with node:util's parseArgs from GENERATE_OPTIONS. Only a command line it reads exactly as
 * yargs would is taken (each flag as --name VALUE, --name or --no-name for a boolean, given
 * once but --outputs, choices among the allowed ones, no --help, --version or other
 * arguments); anything else returns false and goes to yargs, which answers or refuses it
 * with its own messages.
 */
async function quickGenerate(args: readonly string[]): Promise<boolean> {
  if (args[0] !== "generate") return false;
  const options: Record<string, { type: "string" | "boolean"; multiple?: boolean }> = {};
  for (const [name, option] of Object.entries(GENERATE_OPTIONS)) {
    options[name] = { type: option.type, ...("array" in option ? { multiple: true } : {}) };
    if (option.type === "boolean") options[`no-${name}`] = { type: "boolean" };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: args.slice(1), options, strict: true, allowPositionals: false, tokens: true });
  } catch {
    return false;
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option") return false;
    const name = token.name.startsWith("no-") && token.name.slice(3) in GENERATE_OPTIONS ? token.name.slice(3) : token.name;
    // A string value that looks like a flag, or "--name=value" of a boolean, is read otherwise by yargs.
    if (token.value?.startsWith("-")) return false;
    if (seen.has(name) && name !== "outputs") return false;
    seen.add(name);
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
  const flag = (name: "check" | "typecheck" | "watch" | "cache" | "standalone"): boolean | undefined =>
    values[name] === true ? true : values[`no-${name}`] === true ? false : undefined;
  const text = (name: "schemas" | "out" | "support" | "lang" | "go-module" | "crate-name" | "config") => values[name] as string | undefined;
  const outputs = values.outputs as string[] | undefined;
  const lang = text("lang");
  if (outputs?.some((kind) => !(OUTPUT_KINDS as readonly string[]).includes(kind))) return false;
  if (lang !== undefined && !(LANGUAGES as readonly string[]).includes(lang)) return false;
  // yargs refuses --support with --standalone (even --no-standalone).
  if (text("support") !== undefined && seen.has("standalone")) return false;
  await generate({
    schemas: text("schemas"),
    out: text("out"),
    check: flag("check") ?? false,
    typecheck: flag("typecheck") ?? false,
    support: text("support"),
    standalone: flag("standalone"),
    outputs,
    lang,
    "go-module": text("go-module"),
    "crate-name": text("crate-name"),
    config: text("config"),
    watch: flag("watch") ?? false,
    cache: flag("cache") ?? true,
  });
  return true;
}

if (!(await quickGenerate(process.argv.slice(2)))) await runYargs();

async function runYargs(): Promise<void> {
  const [{ default: yargs }, { hideBin }] = await Promise.all([import("yargs"), import("yargs/helpers")]);

  // turnspec's own version, wherever it is run from (yargs would read the nearest package.json of the working directory).
  const { version } = createRequire(import.meta.url)("../package.json") as { version: string };

  /** Exit codes: 0 success, 1 the check failed, 2 usage or unreadable input. */
  const cli = yargs(hideBin(process.argv))
    .scriptName("turnspec")
    .version(version)
    .usage("$0 <command> [options]")
    .command(
      "generate",
      "Generate types, validators, registry, client, server, OpenRPC and docs from the schemas",
      (y) => y.options(GENERATE_OPTIONS),
      (argv) => generate(argv),
    )
    .command(
      "init [dir]",
      "Scaffold a schemas folder that generates cleanly (one method, one notification, errors, a README), and a turnspec.config.json",
      (y) =>
        y
          .positional("dir", { type: "string", default: "schemas", describe: "The folder to create" })
          .option("title", { type: "string", default: "my protocol", describe: "The protocol's title" }),
      async (argv) => {
        const { runInit } = await import("@turnspec/generator/init");
        process.exitCode = runInit({ dir: argv.dir, title: argv.title });
      },
    )
    .command(
      "validate [files..]",
      "Validate JSON-RPC messages (a JSON value, an array, or JSON lines) or bare values against the schemas",
      (y) =>
        y
          .positional("files", { type: "string", array: true, describe: "Files to read; - or none reads standard input" })
          .option("schemas", {
            type: "string",
            describe:
              "The schemas folder of the protocol (default: the agent-gateway protocol built in); its validators are compiled at run time",
          })
          .option("type", { type: "string", describe: "Validate each value as this type instead of as a JSON-RPC message" })
          .option("tolerant", { type: "boolean", default: false, describe: "Accept unknown fields (tolerant mode)" })
          .option("json", { type: "boolean", default: false, describe: "Print the findings as JSON" })
          .option("ordering", {
            type: "boolean",
            default: true,
            describe: "Check the protocol's ordering rules across each file's messages (--no-ordering to skip)",
          }),
      async (argv) => {
        const { runValidate } = await import("@turnspec/generator/validate-command");
        process.exitCode = await runValidate({
          files: argv.files ?? [],
          ...(argv.schemas === undefined ? {} : { schemas: resolve(argv.schemas) }),
          ...(argv.type === undefined ? {} : { type: argv.type }),
          tolerant: argv.tolerant,
          json: argv.json,
          ordering: argv.ordering,
          // Without --schemas or a config file: the agent-gateway protocol, as generated.
          builtIn: (await import("./built-in.js")).builtInProtocol,
        });
      },
    )
    .command(
      "diff [old] [new]",
      "Judge a schema change: which deployed clients or servers it breaks, each with a counterexample",
      (y) =>
        y
          .positional("old", { type: "string", describe: "The old schemas folder; with --against, the new one (default: --schemas)" })
          .positional("new", { type: "string", describe: "The new schemas folder" })
          .option("against", {
            type: "string",
            describe: "Compare with the schemas folder at this git ref of the current repository, e.g. origin/main",
          })
          .option("schemas", {
            type: "string",
            default: "schemas",
            describe: "The schemas folder of the work tree (the new side with --against)",
          })
          .option("mode", { choices: ["strict", "tolerant"] as const, default: "strict" as const, describe: "How the receivers validate" })
          .option("category", {
            choices: ["wire", "code", "all"] as const,
            default: "wire" as const,
            describe: "Wire compatibility, generated-code compatibility, or both",
          })
          .option("json", { type: "boolean", default: false, describe: "Print the report as JSON (generator/diff/report.schema.json)" })
          .option("markdown", { type: "boolean", default: false, describe: "Print the report as a Markdown pull-request comment" })
          .option("strict-undetermined", { type: "boolean", default: false, describe: "Exit 1 when a change cannot be judged" })
          .option("config", {
            type: "string",
            describe:
              "The config file whose diff.accept lists the changes accepted for a release (default: turnspec.config.json in the working folder, when there is one)",
          })
          .check((argv) => {
            if (argv.json && argv.markdown) return "choose one of --json and --markdown";
            if (argv.against !== undefined && argv.new !== undefined) return "with --against, name at most one folder (the new schemas)";
            if (argv.against === undefined && (argv.old === undefined || argv.new === undefined))
              return "name OLD_DIR and NEW_DIR, or --against REF";
            return true;
          }),
      async (argv) => {
        const { runDiff } = await import("@turnspec/generator/diff-command");
        const against = argv.against !== undefined;
        process.exitCode = await runDiff({
          ...(against ? { against: argv.against! } : { oldDir: resolve(argv.old!) }),
          newDir: resolve(against ? (argv.old ?? argv.schemas) : argv.new!),
          mode: argv.mode,
          category: argv.category,
          format: argv.json ? "json" : argv.markdown ? "markdown" : "text",
          strictUndetermined: argv["strict-undetermined"],
          ...(argv.config === undefined ? {} : { configFile: argv.config }),
        });
      },
    )
    .command(
      "import <source>",
      "Import a protocol someone else wrote (a JSON Schema with $defs as MCP and ACP publish theirs, an OpenRPC document, LSP's meta model) as a schemas folder",
      (y) =>
        y
          .positional("source", { type: "string", demandOption: true, describe: "The file to import" })
          .option("out", { type: "string", demandOption: true, describe: "The schemas folder to write (its JSON files are the import's)" })
          .option("from", {
            choices: ["jsonschema", "openrpc", "lsp"] as const,
            describe: "The source's format (default: recognised from its content)",
          })
          .option("map", {
            type: "string",
            describe:
              "A map file with what the source does not say (meta/import-map.schema.json): the result of each request MCP lists apart, a title, how params are sent",
          })
          .option("check", { type: "boolean", default: false, describe: "Write nothing; exit 1 when --out is not what the source gives" })
          .option("json", { type: "boolean", default: false, describe: "Print the report as JSON" }),
      async (argv) => {
        const { runImport } = await import("@turnspec/generator/import-command");
        process.exitCode = await runImport({
          source: resolve(argv.source),
          out: resolve(argv.out),
          ...(argv.from === undefined ? {} : { from: argv.from }),
          ...(argv.map === undefined ? {} : { map: resolve(argv.map) }),
          check: argv.check,
          json: argv.json,
        });
      },
    )
    .command(
      "vectors",
      "Write the test vectors of a schemas folder: values per type, per message and per ordering rule, hazards, each with the TypeScript verdicts and canonical JSON",
      (y) =>
        y
          .option("schemas", { type: "string", default: "schemas", describe: "The schemas folder" })
          .option("out", { type: "string", describe: "The file to write (default: standard output)" })
          .option("check", { type: "boolean", default: false, describe: "Write nothing; exit 1 if the file of --out is stale" }),
      async (argv) => {
        const { runVectors } = await import("@turnspec/generator/vectors-command");
        process.exitCode = runVectors({
          schemasDir: resolve(argv.schemas),
          ...(argv.out === undefined ? {} : { out: resolve(argv.out) }),
          check: argv.check,
        });
      },
    )
    .command(
      "serve",
      "Run the reference gateway over stdio, WebSocket or AG-UI (HTTP and SSE)",
      (y) =>
        y
          .option("stdio", { type: "boolean", default: false, describe: "Serve one client on stdin/stdout (one JSON message per line)" })
          .option("port", { type: "number", describe: "Serve WebSocket on this port (0 picks a free one)" })
          .option("ag-ui", { type: "number", describe: "Serve AG-UI clients over HTTP and SSE on this port (0 picks a free one)" })
          .option("host", { type: "string", default: "127.0.0.1", describe: "Address to listen on" })
          .option("token", {
            type: "string",
            describe:
              "Bearer token clients must present (on the command line it is seen by other local users: prefer --token-file or $TURNSPEC_TOKEN; default a generated one)",
          })
          .option("token-file", { type: "string", describe: "File holding the bearer token on one line" })
          .option("auth", {
            type: "boolean",
            default: true,
            describe: "Require a bearer token (--no-auth turns it off; loopback addresses only)",
          })
          .option("allow-origin", {
            type: "string",
            array: true,
            describe: "Browser origin whose pages may connect (repeatable; default none)",
          })
          .option("store", {
            type: "string",
            describe:
              "Event log: a SQLite file, or a postgres://user:password@host:port/database URL shared by several instances (default: the config file's store, else .turnspec/gateway.sqlite when it exists, else a file of ~/.local/state/turnspec/ named for the working folder)",
          })
          .option("db", { type: "string", describe: "SQLite file of the event log (the same as --store FILE)" })
          .option("memory", { type: "boolean", default: false, describe: "Keep the event log in memory" })
          .option("config", { type: "string", describe: "JSON configuration file (schemas/gateway_config.json)" })
          .option("provider-url", { type: "string", describe: "Base URL of an OpenAI-compatible endpoint, used as the default provider" })
          .option("max-frame-bytes", {
            type: "number",
            describe: `Largest frame accepted, in bytes (default: the config file's limits.max_frame_bytes, else ${configDefault("/limits/max_frame_bytes")})`,
          })
          .option("question-timeout-ms", {
            type: "number",
            describe: `How long a question the model asks stays open before it expires (default: the config file's questions.timeout_ms, else ${configDefault("/questions/timeout_ms")})`,
          })
          .check((argv) => {
            // A string is yargs' usage failure: reported by .fail() with exit 2.
            if ([argv.stdio, argv.port !== undefined, argv["ag-ui"] !== undefined].filter(Boolean).length !== 1)
              return "Choose one transport: --stdio, --port N or --ag-ui N.";
            const agUi = argv["ag-ui"];
            if (agUi !== undefined && (!Number.isInteger(agUi) || agUi < 0 || agUi > 65535))
              return `--ag-ui must be an integer from 0 to 65535, got ${agUi}`;
            // The AG-UI endpoint reads HTTP bodies, not frames: a frame limit would be ignored.
            if (agUi !== undefined && argv["max-frame-bytes"] !== undefined)
              return "--ag-ui does not use --max-frame-bytes: the AG-UI endpoint takes request bodies of up to 1 MiB";
            if ([argv.store !== undefined, argv.db !== undefined, argv.memory].filter(Boolean).length > 1)
              return "Choose one event log: --store, --db or --memory.";
            if (argv.port !== undefined && (!Number.isInteger(argv.port) || argv.port < 0 || argv.port > 65535))
              return `--port must be an integer from 0 to 65535, got ${argv.port}`;
            const questions = argv["question-timeout-ms"];
            if (questions !== undefined && (!Number.isInteger(questions) || questions < 1 || questions > 2_147_483_647))
              return `--question-timeout-ms must be an integer from 1 to 2147483647, got ${questions}`;
            return true;
          }),
      async (argv) => {
        const { serve } = await import("@turnspec/gateway/serve");
        const { ConfigError } = await import("@turnspec/gateway/config");
        const { serveToken } = await import("@turnspec/gateway/serve-token");
        try {
          if (tokenOnCommandLine)
            console.error(commandLineTokenWarning("--token-file FILE (one line, readable by you only) or $TURNSPEC_TOKEN"));
          const token = serveToken({
            ...(argv.token === undefined ? {} : { token: argv.token }),
            ...(argv["token-file"] === undefined ? {} : { tokenFile: argv["token-file"] }),
          });
          if (argv["ag-ui"] !== undefined) {
            const [{ serveAgUiGateway }, { openGateway }, { isLoopbackHost }] = await Promise.all([
              import("@turnspec/client/ag-ui"),
              import("@turnspec/gateway/serve"),
              import("@turnspec/rpc/transport"),
            ]);
            // A run starts shell commands: the endpoint serves front ends on this machine only, with or without a token.
            if (!isLoopbackHost(argv.host))
              throw new ConfigError(
                `--ag-ui listens on a loopback address only (127.0.0.1, ::1, localhost), not on ${argv.host}: to serve AG-UI clients of other machines, mount the bridge in a server of your own`,
              );
            const gateway = {
              ...((argv.store ?? argv.db) === undefined ? {} : { store: (argv.store ?? argv.db)! }),
              memory: argv.memory,
              ...(argv.config === undefined ? {} : { configFile: argv.config }),
              ...(argv["token-file"] === undefined ? {} : { tokenFile: argv["token-file"] }),
              ...(argv["provider-url"] === undefined ? {} : { providerUrl: argv["provider-url"] }),
              ...(argv["question-timeout-ms"] === undefined ? {} : { questionTimeoutMs: argv["question-timeout-ms"] }),
            };
            await serveAgUiGateway((log) => openGateway(gateway, log), {
              port: argv["ag-ui"],
              host: argv.host,
              token: argv.auth ? (token === undefined || token === "" ? undefined : token) : null,
              ...(argv["allow-origin"] === undefined ? {} : { allowedOrigins: argv["allow-origin"].map(String) }),
            });
            return;
          }
          await serve({
            stdio: argv.stdio,
            ...(argv.port === undefined ? {} : { port: argv.port }),
            host: argv.host,
            ...(token === undefined || token === "" ? {} : { token }),
            noAuth: !argv.auth,
            ...(argv["token-file"] === undefined ? {} : { tokenFile: argv["token-file"] }),
            ...(argv["allow-origin"] === undefined ? {} : { allowedOrigins: argv["allow-origin"].map(String) }),
            ...((argv.store ?? argv.db) === undefined ? {} : { store: (argv.store ?? argv.db)! }),
            memory: argv.memory,
            ...(argv.config === undefined ? {} : { configFile: argv.config }),
            ...(argv["provider-url"] === undefined ? {} : { providerUrl: argv["provider-url"] }),
            ...(argv["max-frame-bytes"] === undefined ? {} : { maxFrameBytes: argv["max-frame-bytes"] }),
            ...(argv["question-timeout-ms"] === undefined ? {} : { questionTimeoutMs: argv["question-timeout-ms"] }),
          });
        } catch (error) {
          if (error instanceof ConfigError || ["StoreError", "MissingPackageError"].includes((error as { name?: string }).name ?? "")) {
            console.error(`turnspec serve: ${(error as Error).message}`);
            process.exit(2);
          }
          throw error;
        }
      },
    )
    .command(
      "certify",
      "Certify a gateway (or, with --client-cmd, a client) against the requirement catalogue: run the scenarios, report per requirement",
      (y) =>
        y
          .option("gateway-cmd", {
            type: "string",
            describe:
              "Start the gateway with this command, run through sh in the current folder (or --cwd), and talk to it on stdio; {provider_url} becomes the scripted model's URL, {question_timeout_ms} a question timeout the run can wait out",
          })
          .option("client-cmd", {
            type: "string",
            describe:
              "Certify a client instead: start it with this command (through sh, in the current folder or --cwd) and drive it over its stdin and stdout (see docs/certify-client.md), playing the gateway it connects to",
          })
          .option("cwd", { type: "string", describe: "The folder --gateway-cmd or --client-cmd runs in (default: the current folder)" })
          .option("gateway-url", { type: "string", describe: "Connect to the gateway at this WebSocket URL" })
          .option("token", { type: "string", describe: "Bearer token for --gateway-url (default: $TURNSPEC_TOKEN)" })
          .option("capabilities", {
            type: "string",
            describe: "Claimed capabilities, comma-separated: core,permissions,routes,work,windows,recovery,surface (default: all)",
          })
          .option("level", {
            choices: ["core", "full"] as const,
            default: "full" as const,
            describe: "The level to certify: core MUSTs, or the MUSTs of every claimed capability",
          })
          .option("only", {
            type: "string",
            array: true,
            default: [] as string[],
            describe: "Run only requirements matching these ids or patterns (PERM-*)",
          })
          .option("skip", {
            type: "string",
            array: true,
            default: [] as string[],
            describe: "Skip requirements matching these ids or patterns",
          })
          .option("expected-failures", { type: "string", describe: "JSON file of requirement ids known to fail, each with a reason" })
          .option("tool-map", {
            type: "string",
            describe: "JSON object, or a file holding one, mapping reference tool names to the gateway's",
          })
          .option("provider-port", {
            type: "number",
            describe:
              "Port of the scripted model server on 127.0.0.1 (default: a free one); point a gateway started beforehand at http://127.0.0.1:PORT/v1",
          })
          .option("gateway-id", {
            type: "string",
            describe: `The gateway's id, as delegation routes name it (default ${configDefault("/gateway_id")}, the reference gateway's)`,
          })
          .option("step-timeout", { type: "number", describe: "Longest wait of one step, in ms (default 15000)" })
          .option("json", { type: "string", describe: "Write the JSON report to this file" })
          .option("junit", { type: "string", describe: "Write a JUnit XML report to this file" })
          .option("html", { type: "string", describe: "Write the HTML report to this file" })
          .option("certificate", { type: "string", describe: "Write the certificate to this file" })
          .option("badge", { type: "string", describe: "Write the badge (JSON) to this file" })
          .option("sign-key", {
            type: "string",
            describe: "Sign the certificate with this Ed25519 private key (PEM); `turnspec certificate verify` checks it",
          })
          .option("subject", {
            type: "string",
            describe: "What you call the gateway certified (name and version), named in the reports and the certificate",
          })
          .option("suite", {
            type: "string",
            describe: "Certify against this suite version: its requirements, with their levels then (default: the current one)",
          })
          .option("changes", {
            type: "string",
            describe: "List what changed from this suite version to --suite (default: the current one), and run nothing",
          })
          .option("list", { type: "boolean", default: false, describe: "List the requirement catalogue, grouped by capability" })
          .option("explain", {
            type: "string",
            describe: "Explain one requirement: statement, level, reference, its check, what it covers, since which suite version",
          }),
      async (argv) => {
        const { runCertify } = await import("@turnspec/conformance/certify-command");
        if (tokenOnCommandLine) console.error(commandLineTokenWarning("$TURNSPEC_TOKEN"));
        const token = argv.token ?? process.env.TURNSPEC_TOKEN;
        const optional = <K extends string, V>(key: K, value: V | undefined) =>
          (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;
        process.exitCode = await runCertify({
          ...optional("gatewayCmd", argv["gateway-cmd"]),
          ...optional("clientCmd", argv["client-cmd"]),
          ...optional("cwd", argv.cwd),
          ...optional("gatewayUrl", argv["gateway-url"]),
          ...optional("token", token === "" ? undefined : token),
          ...optional("capabilities", argv.capabilities),
          level: argv.level,
          only: argv.only,
          skip: argv.skip,
          ...optional("expectedFailures", argv["expected-failures"]),
          ...optional("toolMap", argv["tool-map"]),
          ...optional("gatewayId", argv["gateway-id"]),
          ...optional("providerPort", argv["provider-port"]),
          ...optional("stepTimeoutMs", argv["step-timeout"]),
          ...optional("subject", argv.subject),
          ...optional("signKey", argv["sign-key"]),
          ...optional("suite", argv.suite),
          ...optional("changes", argv.changes),
          list: argv.list,
          ...optional("explain", argv.explain),
          reports: {
            ...optional("json", argv.json),
            ...optional("junit", argv.junit),
            ...optional("html", argv.html),
            ...optional("certificate", argv.certificate),
            ...optional("badge", argv.badge),
          },
        });
      },
    )
    .command(
      "certificate <action> <file>",
      "Check a certificate that turnspec certify wrote, offline: its Ed25519 signature by the given public key, and that not a byte of it changed",
      (y) =>
        y
          .positional("action", { choices: ["verify"] as const, describe: "verify: check the certificate" })
          .positional("file", { type: "string", demandOption: true, describe: "The certificate file" })
          .option("key", { type: "string", demandOption: true, describe: "The signer's Ed25519 public key (PEM)" })
          .option("report", { type: "string", describe: "The run's JSON report, checked against the sha256 the certificate names" }),
      async (argv) => {
        const { runCertificateVerify } = await import("@turnspec/conformance/certificate-command");
        process.exitCode = runCertificateVerify({
          file: argv.file,
          key: argv.key,
          ...(argv.report === undefined ? {} : { report: argv.report }),
        });
      },
    )

    .command(
      "inspect",
      "Open a local web page that drives a gateway and shows every frame, checked against the schemas and ordering rules",
      (y) =>
        y
          .option("gateway-cmd", {
            type: "string",
            describe: 'Start this stdio gateway (e.g. "turnspec serve --stdio --memory") and bridge it to the page',
            conflicts: "gateway-url",
          })
          .option("gateway-url", {
            type: "string",
            describe: "Connect to the gateway at this WebSocket URL (the inspector's server connects; the token stays there)",
          })
          .option("token", { type: "string", describe: "Bearer token for --gateway-url (default: $TURNSPEC_TOKEN)" })
          .option("port", { type: "number", default: 0, describe: "Port of the inspector's page (0 picks a free one)" })
          .option("host", {
            type: "string",
            default: "127.0.0.1",
            describe: "Loopback address the page is served on (127.0.0.1, ::1 or localhost)",
          })
          .check((argv) => {
            if (!Number.isInteger(argv.port) || argv.port < 0 || argv.port > 65535)
              return `--port must be an integer from 0 to 65535, got ${argv.port}`;
            if (argv.token !== undefined && argv["gateway-url"] === undefined)
              return "--token is the token of --gateway-url: give the URL too";
            return true;
          }),
      async (argv) => {
        const { runInspect } = await import("@turnspec/inspect");
        if (tokenOnCommandLine) console.error(commandLineTokenWarning("$TURNSPEC_TOKEN"));
        const token = argv.token ?? (argv["gateway-url"] === undefined ? undefined : process.env.TURNSPEC_TOKEN);
        process.exitCode = await runInspect({
          ...(argv["gateway-cmd"] === undefined ? {} : { gatewayCmd: argv["gateway-cmd"] }),
          ...(argv["gateway-url"] === undefined ? {} : { gatewayUrl: argv["gateway-url"] }),
          ...(token === undefined || token === "" ? {} : { gatewayToken: token }),
          port: argv.port,
          host: argv.host,
        });
      },
    )
    .demandCommand(1, "Name a command: init, generate, validate, vectors, diff, import, serve, certify, certificate or inspect.")
    .strict()
    .recommendCommands()
    .fail((message, error) => {
      // yargs reports usage mistakes as a message (or a YError, or the string a check
      // returned); anything else thrown is a bug and keeps its stack.
      const usage = message ?? (typeof error === "string" ? error : error?.name === "YError" ? error.message : undefined);
      if (usage === undefined) throw error;
      console.error(`turnspec: ${usage}\nRun "turnspec --help" for usage.`);
      process.exit(2);
    })
    .help();

  await cli.parseAsync();
}
