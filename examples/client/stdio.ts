// Start a gateway as a child process and talk to it over its stdin and stdout.
import { GatewayConnection, spawnStdioTransport } from "@turnspec/client";

const [command, ...args] = (process.env.TURNSPEC_STDIO_COMMAND ?? "npx turnspec serve --stdio --memory").split(" ");
const connection = await GatewayConnection.open({ connect: () => spawnStdioTransport(command!, args, { stderr: "collect" }) });
const { thread } = await connection.client.threadStart({});

const script = { script: [{ say: "Hello over stdio.", chunks: 2 }] };
const turn = {
  thread_id: thread.id,
  turn_id: "trn_stdio",
  input: [{ type: "text" as const, text: JSON.stringify(script), textElements: [] }],
};
for await (const event of connection.streamTurn(turn)) {
  if (event.type === "text_delta") process.stdout.write(event.delta);
  if (event.type === "done") console.log(`\n[${event.status}]`);
}
// Closing the transport ends the gateway process.
await connection.close();
