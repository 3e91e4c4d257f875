// In a web page: stream a turn into an element, asking the user before a tool runs.
import { connectBrowserWebSocket, GatewayConnection } from "@turnspec/client/browser";

export async function runTurn(url: string, token: string, text: string, output: HTMLElement): Promise<void> {
  // A browser cannot set headers on a WebSocket: the token goes in the query (?token=).
  const connection = await GatewayConnection.open({ connect: () => connectBrowserWebSocket(url, { token }) });
  try {
    const { thread } = await connection.client.threadStart({});
    const answer = output.appendChild(document.createElement("p"));
    const turn = {
      thread_id: thread.id,
      turn_id: `trn_${Date.now()}`,
      input: [{ type: "text" as const, text, textElements: [] }],
      permission_profile: { mode: "supervised" as const },
    };
    for await (const event of connection.streamTurn(turn)) {
      if (event.type === "text_delta") answer.textContent = event.text;
      if (event.type === "approval_pending") {
        const allowed = window.confirm(`Allow ${event.request.tool_name}? ${event.request.summary ?? event.request.reason}`);
        await event.respond(allowed ? "allow_once" : "deny");
      }
      if (event.type === "failed") output.dataset.failure = event.kind;
      if (event.type === "done") output.dataset.status = event.status;
    }
  } finally {
    await connection.close();
  }
}
