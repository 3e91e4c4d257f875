#!/usr/bin/env node
// The turnspec command: the compiled command line. `turnspec --help` alone is answered from the
// help text the build wrote (dist/help.txt: the command line's own output for it), so that it
// starts as fast as Node does; when that text would differ (a locale other than English, a
// terminal narrower than the 80 columns it is wrapped to) or is missing, the command line answers.
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const locale = process.env.LC_ALL || process.env.LC_MESSAGES || process.env.LANG || "";
const english = locale === "" || locale === "C" || locale === "POSIX" || /^(C|en)([._-]|$)/.test(locale);
const wideEnough = !process.stdout.isTTY || (process.stdout.columns ?? 80) >= 80;
let help;
if (args.length === 1 && args[0] === "--help" && english && wideEnough) {
  try {
    help = readFileSync(new URL("../dist/help.txt", import.meta.url), "utf8");
  } catch {
    help = undefined;
  }
}
if (help !== undefined) process.stdout.write(help);
else await import("../dist/cli.js");
