/**
 * What the browser test runs in Chromium, bundled on its own: the guide's browser example
 * (examples/client/browser.ts) and a probe of a refused connection.
 */
import { connectBrowserWebSocket } from "../../../packages/client/src/browser.js";
import { runTurn } from "../../../examples/client/browser.js";

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
