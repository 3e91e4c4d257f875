/**
 * The generated Go client drives the reference gateway (`turnspec serve --stdio --memory`,
 * spawned over stdio) through a supervised turn: the scripted model asks for a shell command,
 * the gateway opens a permission request, the Go client approves it, the command's output and
 * the model's answer stream back, and the turn completes (examples/go-client).
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { buildGo, GO_AVAILABLE, NO_GO } from "./go-toolchain.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

if (!GO_AVAILABLE) console.log(NO_GO);

it.skipIf(!GO_AVAILABLE)("the Go client approves a shell command and the turn completes", () => {
  const client = buildGo(join(root, "examples/go-client"), ".", "go-client");
  const output = execFileSync(client, [], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, TURNSPEC_STDIO_COMMAND: `${process.execPath} bin/turnspec.js serve --stdio --memory` },
    timeout: 90_000,
  });
  expect(output).toMatch(/^\[commandExecution: echo hello\]\n\[approving shell: .+\]\nhello\nThe command said hello\.\n\[Completed\]\n$/);
}, 120_000);
