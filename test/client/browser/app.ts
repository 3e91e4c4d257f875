/**
 * What the browser test runs in Chromium: the browser entry of the client SDK, bundled on
 * its own. It connects with the standard WebSocket (token in the query), starts a scripted
 * turn, answers the permission request, and reports what it saw.
 */
import { connectBrowserWebSocket, GatewayConnection, streamTurn, type TurnStreamEvent } from "../../../client/browser.js";

export interface BrowserRunResult {
  readonly types: TurnStreamEvent["type"][];
  readonly text: string;
  readonly approvals: string[];
  readonly stdout: string;
  readonly status: string | undefined;
}

async function runTurn(url: string, token: string, input: string): Promise<BrowserRunResult> {
  const connection = await GatewayConnection.open({ connect: () => connectBrowserWebSocket(url, { token }), validateIncoming: "strict" });
  try {
    const { thread } = await connection.client.threadStart({});
    const result = { types: [] as TurnStreamEvent["type"][], text: "", approvals: [] as string[], stdout: "", status: undefined as string | undefined };
    const turn = { thread_id: thread.id, turn_id: "trn_browser", input: [{ type: "text" as const, text: input, textElements: [] }], permission_profile: { mode: "supervised" as const } };
    for await (const event of streamTurn(connection, turn)) {
      result.types.push(event.type);
      if (event.type === "text_delta") result.text = event.text;
      if (event.type === "tool_output") result.stdout += event.delta;
      if (event.type === "approval_pending") {
        result.approvals.push(event.request.tool_name);
        await event.respond("allow_once");
      }
      if (event.type === "done") result.status = event.status;
    }
    return result;
  } finally {
    await connection.close();
  }
}

/** Whether a connection with a wrong token is refused, and how the error reads. */
async function refusedWith(url: string, token: string): Promise<string> {
  try {
    await connectBrowserWebSocket(url, { token });
    return "connected";
  } catch (error) {
    return (error as Error).message;
  }
}

Object.assign(globalThis, { turnspec: { runTurn, refusedWith } });
