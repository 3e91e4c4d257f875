/**
 * Runs one shell tool call and nothing else, for the test that kills the process running
 * it: `node --import ./scripts/from-source.mjs test/tools/shell-host.ts <cwd> <command>`.
 */
import { shellTool } from "../../packages/gateway/src/tools/shell.js";
import { testContext } from "./context.js";

const [cwd, command] = process.argv.slice(2);
if (cwd === undefined || command === undefined) throw new Error("usage: shell-host.ts <cwd> <command>");
await shellTool.run({ command }, testContext(cwd));
