/**
 * A broken client: the reference driver, but its answers to approval requests leave the
 * resolve_token out (as a client that never read the field would).
 *   node --import ./scripts/from-source.mjs test/conformance/broken-clients/no-approval-token.ts
 */
import { connectWebSocket } from "../../../packages/client/src/index.js";
import { sdkCommands, serveCommands } from "../../../examples/clients/typescript/driver.js";
import { wrapTransport } from "./wrap.js";

const { handlers, end } = sdkCommands({
  connect: async (url, token) =>
    wrapTransport(await connectWebSocket(url, { token }), {
      send: (frame) => {
        const message = JSON.parse(frame) as { method?: string; params?: { resolve_token?: string } };
        if (message.method !== "turn/permission/request/respond" || !message.params) return frame;
        delete message.params.resolve_token;
        return JSON.stringify(message);
      },
    }),
});
await serveCommands(handlers, end);
process.exit(0);
