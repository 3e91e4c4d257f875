// A connection that reconnects by itself, and a turn followed across the drop: nothing missed, nothing twice.
import { connectWebSocket, GatewayConnection } from "@turnspec/client";

const url = process.env.TURNSPEC_URL ?? "ws://127.0.0.1:8787/";
const connection = await GatewayConnection.open({
  connect: () => connectWebSocket(url, { token: process.env.TURNSPEC_TOKEN }),
  reconnect: { delaysMs: [100, 500, 1000], maxAttempts: 20 },
});
connection.onChange((change) => console.log(`[connection ${change.type}]`));
const { thread } = await connection.client.threadStart({});
const turnId = `trn_${Date.now()}`;

const script = {
  script: [
    { tool: "shell", args: { command: "echo working" } },
    { say: "Finished while you were away.", chunks: 2 },
  ],
};
const turn = { thread_id: thread.id, turn_id: turnId, input: [{ type: "text" as const, text: JSON.stringify(script), textElements: [] }] };

// Streams across reconnects by itself: a dropped connection is caught up from turn/items.
let seen = 0;
for await (const event of connection.streamTurn(turn)) {
  seen = event.sequence;
  if (event.type === "tool_started") break; // say the UI closes here...
}

// ...and opens again later: the turn goes on from the last event it showed.
for await (const event of connection.streamExistingTurn({ thread_id: thread.id, turn_id: turnId, after_sequence: seen })) {
  if (event.type === "text_delta") process.stdout.write(event.delta);
  if (event.type === "done") console.log(`\n[${event.status}]`);
}
await connection.close();
