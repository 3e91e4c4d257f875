// Follow a turn's domain status: running, awaiting input while a permission request is open, and how it ended.
import { connectWebSocket, foldTurnStatus, GatewayConnection, initialTurnStatus, wireStatus } from "@turnspec/client";

const url = process.env.TURNSPEC_URL ?? "ws://127.0.0.1:8787/";
const connection = await GatewayConnection.open({ connect: () => connectWebSocket(url, { token: process.env.TURNSPEC_TOKEN }) });
const { thread } = await connection.client.threadStart({});
const turnId = `trn_${Date.now()}`;

let status = initialTurnStatus;
connection.client.onAny((notification) => {
  if (!("turn_id" in notification.params) || notification.params.turn_id !== turnId) return;
  const next = foldTurnStatus(status, notification);
  if (next.status !== status.status) console.log(`${next.status} (on the wire: ${wireStatus(next)})`);
  status = next;
});

const script = { script: [{ tool: "shell", args: { command: "echo checked" } }, { say: "Checked." }] };
const turn = {
  thread_id: thread.id,
  turn_id: turnId,
  input: [{ type: "text" as const, text: JSON.stringify(script), textElements: [] }],
  permission_profile: { mode: "supervised" as const },
};
for await (const event of connection.streamTurn(turn)) {
  if (event.type === "approval_pending") await event.respond("allow_once");
}
await connection.close();
