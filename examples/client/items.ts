// Rebuild a turn's items from their deltas while it runs, and compare them with the gateway's log.
import {
  accumulateItem,
  accumulateItems,
  connectWebSocket,
  emptyItems,
  followTurn,
  GatewayConnection,
  replayedNotifications,
} from "@turnspec/client";

const url = process.env.TURNSPEC_URL ?? "ws://127.0.0.1:8787/";
const connection = await GatewayConnection.open({ connect: () => connectWebSocket(url, { token: process.env.TURNSPEC_TOKEN }) });
const { thread } = await connection.client.threadStart({});
const turnId = `trn_${Date.now()}`;

let items = emptyItems;
const ended = new Promise<void>((resolve, reject) => {
  // Subscribed before the turn starts: every notification of the turn, once, in order.
  followTurn(
    connection,
    thread.id,
    turnId,
    {
      event: (notification) => {
        items = accumulateItem(items, notification);
        if (notification.method === "turn/completed" || notification.method === "turn/failed") resolve();
      },
      error: reject,
    },
    { catchUp: false },
  );
});

const script = {
  script: [
    { tool: "shell", args: { command: "printf 'one\\ntwo\\n'" } },
    { say: "Two lines.", chunks: 4 },
  ],
};
await connection.client.turnStart({
  thread_id: thread.id,
  turn_id: turnId,
  input: [{ type: "text", text: JSON.stringify(script), textElements: [] }],
});
await ended;

for (const id of items.order) {
  const item = items.items[id]!;
  if (item.type === "commandExecution") console.log(`${item.command} -> ${JSON.stringify(item.stdout)}`);
  if (item.type === "agentMessage") console.log(`answer: ${item.text}`);
}

// The same items, rebuilt from the persisted log.
const log = await connection.client.turnItems({ thread_id: thread.id, turn_id: turnId });
const replayed = accumulateItems(replayedNotifications(log.events, turnId));
console.log(
  JSON.stringify(replayed) === JSON.stringify(items.order.map((id) => items.items[id]))
    ? "live and replayed items agree"
    : "live and replayed items differ",
);
await connection.close();
