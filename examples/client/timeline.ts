// Keep a turn's work timeline up to date from change notifications, targeted refreshes and pages.
import { connectWebSocket, emptyTimeline, GatewayConnection, reduceTimeline, timelineRows, type TimelineInput } from "@turnspec/client";

const url = process.env.TURNSPEC_URL ?? "ws://127.0.0.1:8787/";
const connection = await GatewayConnection.open({ connect: () => connectWebSocket(url, { token: process.env.TURNSPEC_TOKEN }) });
const { client } = connection;
const { thread } = await client.threadStart({});
const turnId = `trn_${Date.now()}`;

let timeline = emptyTimeline(thread.id, turnId);
const refreshes: Promise<void>[] = [];
const apply = (input: TimelineInput) => {
  timeline = reduceTimeline(timeline, input);
  // Rows a notification named are fetched by id; the reducer ignores answers older than what it holds.
  if (timeline.staleIds.length > 0) {
    refreshes.push(
      client
        .turnWorkItemsGet({ threadId: thread.id, turnId, workItemIds: [...timeline.staleIds] })
        .then((response) => apply({ kind: "items", response })),
    );
  }
};
client.on("turn/work/items/changed", (notification) => apply({ kind: "items_changed", notification }));
client.on("turn/work/state/changed", (notification) => apply({ kind: "state_changed", notification }));

const finished = new Promise<void>((resolve) => {
  client.on("turn/work/state/changed", ({ turnId: id, work }) => {
    if (id === turnId && work.state !== "running" && work.state !== "awaiting_approval") resolve();
  });
});
const script = {
  script: [{ tool: "shell", args: { command: "echo first" } }, { tool: "shell", args: { command: "echo second" } }, { say: "Both done." }],
};
await client.turnStart({
  thread_id: thread.id,
  turn_id: turnId,
  input: [{ type: "text", text: JSON.stringify(script), textElements: [] }],
});
await finished;
await Promise.all(refreshes); // answers still on their way are applied before the connection closes

// A full page at the end; had it been older than what the notifications brought, it would be ignored.
apply({ kind: "page", response: await client.turnWorkPage({ threadId: thread.id, turnId, anchor: { kind: "newest" } }) });
for (const row of timelineRows(timeline)) console.log(`${row.itemType} ${row.status}`);
console.log(`block ${timeline.work?.state}, ${timeline.work?.counts.total} rows`);
await connection.close();
