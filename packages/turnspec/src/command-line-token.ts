/**
 * A token given on the command line (`--token VALUE`, or `--token=VALUE`) is readable by
 * every local user and process in /proc/<pid>/cmdline and `ps`, and a shell keeps it in
 * its history. This module is the CLI's first import, so it runs before anything else is
 * loaded: it overwrites the command line the process shows (Node's process.title writes
 * over the memory /proc/<pid>/cmdline is read from) with one where the token's value is
 * replaced. process.argv, which the CLI parses, keeps the value. What it cannot undo is
 * the moment between the start of the process and this module, and the shell's history:
 * the command that took the token says so (commandLineTokenWarning).
 */

/** What the process shows in place of the token's value. */
const HIDDEN = "(hidden)";

/** Whether the command line holds `--token`, and the arguments with its value replaced. */
export function hideCommandLineToken(argv: readonly string[]): { readonly given: boolean; readonly shown: readonly string[] } {
  let given = false;
  const shown = argv.map((arg, i) => {
    if (arg.startsWith("--token=")) {
      given = true;
      return `--token=${HIDDEN}`;
    }
    // `--token VALUE`: the value is the next argument.
    if (i > 0 && argv[i - 1] === "--token") {
      given = true;
      return HIDDEN;
    }
    return arg;
  });
  return { given, shown };
}

const hidden = hideCommandLineToken(process.argv);

/** Whether this process was given a token on its command line. */
export const tokenOnCommandLine = hidden.given;

if (hidden.given) process.title = hidden.shown.join(" ");

/** The warning a command prints when it took its token from the command line; `instead` names the better ways. */
export function commandLineTokenWarning(instead: string): string {
  return (
    `warning: --token puts the token on the command line, where other local users and processes can read it ` +
    `(in ps and /proc/${process.pid}/cmdline) while the command starts, and where your shell's history keeps it. ` +
    `This process has replaced it with "${HIDDEN}" in its visible command line, but anything that looked before then has it. ` +
    `Give the token with ${instead} instead.`
  );
}
