/**
 * The `turnspec` command line: argument parsing and exit codes only. The work is done by
 * generator/ and conformance/.
 */
import { resolve } from "node:path";
import yargs from "yargs";
import { hideBin } from "yargs/helpers";

/** Exit codes: 0 success, 1 the check failed, 2 usage or unreadable input. */
const cli = yargs(hideBin(process.argv))
  .scriptName("turnspec")
  .usage("$0 <command> [options]")
  .command(
    "generate",
    "Generate types, validators, registry, client, server, OpenRPC and docs from the schemas",
    (y) =>
      y
        .option("schemas", { type: "string", default: "schemas", describe: "The schemas folder" })
        .option("out", { type: "string", default: "generated", describe: "The output folder" })
        .option("check", { type: "boolean", default: false, describe: "Write nothing; list stale files and exit 1 if any" })
        .option("typecheck", { type: "boolean", default: false, describe: "Also type-check the output under strict settings" })
        .option("support", { type: "string", default: "turnspec/rpc", describe: "Import specifier of the JSON-RPC support module" }),
    async (argv) => {
      // Each command loads its own modules, so `--help` and the other commands stay quick.
      const { runGenerate } = await import("../generator/command.js");
      process.exitCode = await runGenerate({
        schemasDir: resolve(argv.schemas),
        outDir: resolve(argv.out),
        check: argv.check,
        typecheck: argv.typecheck,
        support: argv.support,
      });
    },
  )
  .command(
    "validate [files..]",
    "Validate JSON-RPC messages (a JSON value, an array, or JSON lines) or bare values against the schemas",
    (y) =>
      y
        .positional("files", { type: "string", array: true, describe: "Files to read; - or none reads standard input" })
        .option("type", { type: "string", describe: "Validate each value as this type instead of as a JSON-RPC message" })
        .option("tolerant", { type: "boolean", default: false, describe: "Accept unknown fields (tolerant mode)" })
        .option("json", { type: "boolean", default: false, describe: "Print the findings as JSON" }),
    async (argv) => {
      const { runValidate } = await import("../conformance/validate-command.js");
      process.exitCode = await runValidate({
        files: argv.files ?? [],
        ...(argv.type === undefined ? {} : { type: argv.type }),
        tolerant: argv.tolerant,
        json: argv.json,
      });
    },
  )
  .demandCommand(1, "Name a command: generate or validate.")
  .strict()
  .recommendCommands()
  .fail((message, error, y) => {
    if (error) throw error;
    console.error(`${y.help() && ""}turnspec: ${message}\nRun "turnspec --help" for usage.`);
    process.exit(2);
  })
  .help();

await cli.parseAsync();
