// Start a turn and print it as it streams; answer its permission request; Ctrl-C cancels it.
import { connectWebSocket, GatewayConnection } from "@turnspec/client";

const url = process.env.TURNSPEC_URL ?? "ws://127.0.0.1:8787/";
const connection = await GatewayConnection.open({ connect: () => connectWebSocket(url, { token: process.env.TURNSPEC_TOKEN }) });
const { thread } = await connection.client.threadStart({});

// The gateway's default model is scripted: this input is its script. A real model takes plain text.
const script = {
  script: [
    { tool: "shell", args: { command: "echo hello" } },
    { say: "The command said hello.", chunks: 3 },
  ],
};
const turn = {
  thread_id: thread.id,
  turn_id: `trn_${Date.now()}`,
  input: [{ type: "text" as const, text: JSON.stringify(script), textElements: [] }],
  permission_profile: { mode: "supervised" as const },
};

const abort = new AbortController();
process.once("SIGINT", () => abort.abort());

for await (const event of connection.streamTurn(turn, { signal: abort.signal })) {
  switch (event.type) {
    case "tool_started":
      console.log(`[${event.name}]`);
      break;
    case "tool_output":
      process.stdout.write(event.delta);
      break;
    case "approval_pending":
      console.log(`[approving ${event.request.tool_name}: ${event.request.reason}]`);
      await event.respond("allow_once");
      break;
    case "text_delta":
      process.stdout.write(event.delta);
      break;
    case "failed":
      console.log(`\n[failed: ${event.kind}${event.retryable ? ", worth retrying" : ""}]`);
      break;
    case "done":
      console.log(`\n[${event.status}]`);
      break;
  }
}
await connection.close();
