// A stdio "gateway" for the inspector tests that answers thread/start with a thread whose
// mode is not one of the protocol's (an invalid frame), and every other request with an
// error (turn/get's after 300 ms, to have an answer in flight); it reads one JSON-RPC
// message per line and writes one per line.
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  if (message.method === "thread/start") {
    const thread = { id: "thr_fake", workspace_id: "ws_default", cwd: "/srv", mode: "Bogus", created_at: "2026-01-01T00:00:00.000Z" };
    process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { thread } })}\n`);
    return;
  }
  const answer = () =>
    process.stdout.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `the fake gateway has no ${message.method}` } })}\n`,
    );
  if (message.method === "turn/get") setTimeout(answer, 300);
  else answer();
});
lines.on("close", () => process.exit(0));
