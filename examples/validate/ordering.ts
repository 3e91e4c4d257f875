// Check a recorded transcript against the protocol's ordering rules with the generated checker.
import { readFileSync } from "node:fs";
import { createOrderingChecker } from "@turnspec/protocol";

const file = process.argv[2] ?? "examples/validate/swapped.jsonl";
const frames = readFileSync(file, "utf8")
  .trimEnd()
  .split("\n")
  .map((line) => JSON.parse(line) as Record<string, unknown>);

const checker = createOrderingChecker();
for (const frame of frames) {
  // Feed both directions: a resumed turn is recognised by the response to the client's turn/resume.
  // In this transcript the client sends the requests and the gateway everything else.
  checker.accept(frame, "method" in frame && "id" in frame ? "client_to_server" : "server_to_client");
}
// The transcript may stop while a turn still runs.
for (const v of [...checker.violations, ...checker.end({ openTurnsAllowed: true })])
  console.log(`${v.rule} (frame ${v.frameIndex}): ${v.message}`);
console.log(`${frames.length} frames, ${checker.violations.length} violations`);
